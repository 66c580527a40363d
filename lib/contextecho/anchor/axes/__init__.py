"""ANCHOR: axes."""
