"""Behavioural axes: each assistant turn judged HELD or DEVIATED on role, boundaries,
values and style, one blind question per (turn, axis, judge), reported per axis.

- :mod:`.rubric`: the axes and the judge's request;
- :mod:`.verdicts`: reading the judge's reply as a verdict;
- :mod:`.turns`: which turns are judged, real ones and forked ones;
- :mod:`.report`: judging turns into a tidy frame, held rates and judge agreement.
"""
