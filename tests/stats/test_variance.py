import warnings

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf

from contextecho.stats import (DegenerateDataError, InvalidScoreError, TooFewClustersError,
                               variance_decomposition)
from contextecho.stats.variance import _neg_reml


def frame(seed, n_groups=4, between=0.3, within=1.2, targets=False):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(20, 120, n_groups)
    g = np.repeat(np.arange(n_groups), sizes)
    y = rng.normal(0, np.sqrt(between), n_groups)[g] + rng.normal(0, np.sqrt(within), len(g))
    out = pd.DataFrame(dict(log_ratio=y, session=g, target=rng.integers(0, 4, len(g))))
    if targets:
        out["log_ratio"] += 0.4 * out.target
    return out


def mixedlm(data, formula):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = smf.mixedlm(formula, data, groups=data.session).fit(reml=True)
    return float(fit.cov_re.iloc[0, 0]), float(fit.scale)


@pytest.mark.parametrize("seed", range(4))
def test_reml_matches_statsmodels_mixedlm(seed):
    data = frame(seed)
    r = variance_decomposition(data)
    between, within = mixedlm(data, "log_ratio ~ 1")
    # statsmodels stops its optimizer earlier; agreement to 1e-3 relative, and our
    # optimum is at least as good on the REML criterion
    assert r.sigma2_between == pytest.approx(between, rel=1e-3, abs=1e-6)
    assert r.sigma2_within == pytest.approx(within, rel=1e-4)
    assert r.share_between == pytest.approx(between / (between + within), rel=1e-3)
    assert r.sigma2_total == pytest.approx(data.log_ratio.var(ddof=1))
    assert (r.n, r.n_groups, r.method) == (len(data), 4, "reml")


def test_reml_with_fixed_target_effects_matches_statsmodels():
    data = frame(7, targets=True)
    r = variance_decomposition(data, fixed=("target",))
    between, within = mixedlm(data, "log_ratio ~ C(target)")
    assert r.sigma2_between == pytest.approx(between, rel=1e-3)
    assert r.sigma2_within == pytest.approx(within, rel=1e-4)
    assert r.fixed == ("target",)


def test_boundary_between_zero_like_table_2_sonnet():
    # balanced, session means spread less than within-noise predicts (MSB < MSW):
    # REML and ANOVA both put the between variance on the boundary 0
    rng = np.random.default_rng(3)
    y = rng.normal(0, 1.4, (3, 100))
    y = y - y.mean(axis=1, keepdims=True) + np.array([[0.01], [-0.02], [0.015]])
    data = pd.DataFrame(dict(log_ratio=y.ravel(), session=np.repeat([1, 2, 3], 100)))
    r = variance_decomposition(data)
    assert r.sigma2_between == 0.0 and r.at_boundary and r.share_between == 0.0
    assert variance_decomposition(data, method="anova").sigma2_between == 0.0
    # at lambda = 0 the REML residual variance is the ordinary sample variance
    assert r.sigma2_within == pytest.approx(data.log_ratio.var(ddof=1), rel=1e-9)
    # (statsmodels MixedLM raises a singular-matrix error on this boundary case)


def test_balanced_reml_equals_anova_hand_computed():
    # 3 sessions x 4 cells; group means 1, 2, 6; within deviations -1, 1, -1, 1 (x1)
    y = np.concatenate([m + np.array([-1.0, 1.0, -1.0, 1.0]) for m in (1.0, 2.0, 6.0)])
    data = pd.DataFrame(dict(log_ratio=y, session=np.repeat(["a", "b", "c"], 4)))
    msw = 12 * 1.0 / (12 - 3)                  # SSW = 12
    grand = 3.0
    msb = 4 * ((1 - grand) ** 2 + (2 - grand) ** 2 + (6 - grand) ** 2) / 2   # = 28
    between = (msb - msw) / 4
    anova = variance_decomposition(data, method="anova")
    reml = variance_decomposition(data, method="reml")
    assert anova.sigma2_within == pytest.approx(msw, abs=1e-12)
    assert anova.sigma2_between == pytest.approx(between, abs=1e-12)
    assert reml.sigma2_within == pytest.approx(msw, rel=1e-6)
    assert reml.sigma2_between == pytest.approx(between, rel=1e-6)


def test_our_reml_optimum_is_not_worse_than_statsmodels():
    data = frame(11)
    r = variance_decomposition(data)
    between, within = mixedlm(data, "log_ratio ~ 1")
    y = data.log_ratio.to_numpy()
    X = np.ones((len(y), 1))
    g = data.session.to_numpy()
    sizes = np.bincount(g).astype(float)
    args = (y, X, sizes, np.bincount(g, weights=y), np.bincount(g)[:, None].astype(float),
            X.T @ X, X.T @ y, y @ y)
    assert _neg_reml(r.sigma2_between / r.sigma2_within, *args) <= \
        _neg_reml(between / within, *args) + 1e-9


def test_degenerate_inputs():
    with pytest.raises(TooFewClustersError):
        variance_decomposition(pd.DataFrame(dict(log_ratio=[1.0, 2.0], session=["a", "a"])))
    flat = pd.DataFrame(dict(log_ratio=[1.0, 1.0, 2.0, 2.0], session=["a", "a", "b", "b"]))
    with pytest.raises(DegenerateDataError):
        variance_decomposition(flat)
    with pytest.raises(InvalidScoreError):
        variance_decomposition(pd.DataFrame(dict(log_ratio=[1.0, np.nan, 2.0], session=[1, 2, 2])))
