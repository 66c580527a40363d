"""ANCHOR: retention."""
