"""Persona Retention: how much of the persona card's effect on a questionnaire remains.

- :mod:`.measure`: R per facet, the projection of the later answers' displacement from
  generic on the card's own;
- :mod:`.runs`: where the questionnaire is asked (generic, card only, card + session
  prefix or its filler at each checkpoint), and the per-facet table from the answers.
"""
