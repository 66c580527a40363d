"""ANCHOR: recall."""
