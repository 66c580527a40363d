import dataclasses
import json

import numpy as np
import pandas as pd
import pytest

from contextecho import stats as S


def all_records(cells):
    d = np.random.default_rng(0).normal(0.2, 1, 12)
    pairs = S.log_verbosity_ratios(cells.assign(length=np.exp(cells.score)),
                                   pair=("session", "position", "probe"))
    return [
        S.drift_gap(cells, n_resamples=200),
        S.bootstrap_mean(d, n_resamples=200),
        S.sign_flip_test(d),
        S.wilcoxon_test(d),
        S.paired_contrast(d, np.zeros(12), n_resamples=200),
        S.holm([0.01, 0.2]),
        S.tost_paired(d),
        S.equivalence_bootstrap(d, n_resamples=200),
        S.variance_decomposition(pairs),
        S.judge_agreement([0, 1, 2, 3, 2], [0, 2, 2, 3, 1]),
        S.direction_agreement({"a": 0.4}, {"a": -0.2}),
        S.attrition_contrast(cells, arms=("filler", "real"), unit=("session", "position"),
                             n_resamples=200),
    ]


def test_every_record_is_frozen_flat_and_json_serializable(cells):
    for record in all_records(cells):
        assert isinstance(record, S.Record)
        with pytest.raises(dataclasses.FrozenInstanceError):
            record.method = "x"  # type: ignore[misc]
        flat = record.to_dict()
        json.dumps(flat)
        assert not any(isinstance(v, (dict, np.generic)) for v in flat.values())
        assert not any(isinstance(v, float) and np.isnan(v) for v in flat.values())


def test_records_make_a_table(cells):
    table = pd.DataFrame([S.drift_gap(cells[cells.category == c], n_resamples=200).to_dict()
                          for c in ("coding-self", "identity")])
    assert {"estimate", "ci_low", "ci_high", "n", "n_clusters", "method", "seed",
            "n_resamples"} <= set(table.columns)


def test_table_errors_name_the_group(cells):
    cells = cells.copy()
    cells.loc[(cells.category == "identity") & (cells.arm == "real"), "score"] = np.nan
    with pytest.raises(S.EmptyArmError, match="identity"):
        S.drift_gap_table(cells, by="category", n_resamples=200)
