"""ANCHOR's released banks (persona card, transcript, items), scored with our recall layout.

- :mod:`.bank`: a bank directory, loaded and validated;
- :mod:`.window`: the turns an item is answered from (``causal``, or ``none``: blind);
- :mod:`.scorer`: one cached batch per bank, per-item records and run files.
"""
