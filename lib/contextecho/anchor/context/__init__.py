"""ANCHOR: context."""
