"""Trajectory recall: four-option questions about what happened earlier in the session.

- :mod:`.events`: the session's commands, edits and requests, as typed events;
- :mod:`.items`: a recall item, its prompt and its seeded randomness;
- :mod:`.families`: the question families, generated from the events (no model);
- :mod:`.asking`: the requests that ask items, blind or with context, and their answers;
- :mod:`.filters`: ANCHOR's blind, with-history and calibration filters.
"""
