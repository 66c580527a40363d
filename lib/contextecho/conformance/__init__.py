"""Conformance with the authors' harness: fixture folders of three kinds checked against our code.

A layer above the experiments (it runs them on canned replies); only the command line
imports it. :mod:`.driver` tells a folder's kind and runs it.
"""
