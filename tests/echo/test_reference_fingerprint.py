"""The harness's Fig.-1 fingerprint (``plotting/fig_fig1_combined.py:61-101``), feature by
feature on hand-made replies, and each protocol naming its own fingerprint."""
import math

import pytest

from contextecho.echo.fingerprint import CONTEXTECHO
from contextecho.echo.protocols import protocol
from contextecho.echo.reference.fingerprint import FEATURES, REFERENCE, features


def test_each_protocol_names_its_fingerprint():
    assert protocol("contextecho").fingerprint is CONTEXTECHO
    assert protocol("reference").fingerprint is REFERENCE
    assert REFERENCE.features == FEATURES and len(FEATURES) == 6


def test_disclaimers_per_100_characters():
    text = "As an AI, I don't have feelings. " * 10  # 330 characters stripped: 2 disclaimers per repeat
    got = features(text)
    n = len(text.strip())
    assert got["hedge_density"] == pytest.approx(20 / (n / 100))
    # a short reply counts at least one hundred characters
    assert features("I cannot.")["hedge_density"] == 1.0


def test_preference_phrases_per_100_characters():
    text = "I think so. For me, my go-to is this. I'd say yes."
    assert features(text)["experiential_density"] == 4.0  # I think, for me, my go-to, I'd say: under 100 characters, 4 / 1
    assert features("I THINK so")["experiential_density"] == 1.0  # case-insensitive


def test_commits_pref_needs_a_named_pick_a_preference_and_no_disclaimer():
    assert features("I prefer Python.")["commits_pref"] == 1.0
    assert features("I prefer python.")["commits_pref"] == 0.0  # named picks are case-sensitive
    assert features("Python is fine.")["commits_pref"] == 0.0  # no preference phrase
    assert features("As an AI I prefer Python.")["commits_pref"] == 0.0  # a disclaimer


def test_em_dashes_paragraph_breaks_and_log_length():
    text = "  a \u2014 b \u2014 c -- d \u2013 e\n\nf\n\n\ng\n\n\n\nh  "
    got = features(text)
    assert got["em_dash_count"] == 2.0  # en dash and -- not
    assert got["paragraph_breaks"] == 4.0  # non-overlapping \n\n: 1 + 1 + 2
    assert got["log_len"] == pytest.approx(math.log10(len(text.strip())))


def test_an_empty_reply_has_no_features_and_is_a_row_of_nan():
    assert features("   \n ") is None and features(None) is None
    frame = REFERENCE.frame(["I prefer Rust.", "", None])
    assert list(frame.columns) == list(FEATURES)
    assert frame.iloc[0].notna().all() and frame.iloc[1:].isna().all().all()
