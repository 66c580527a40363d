"""ANCHOR: banks."""
