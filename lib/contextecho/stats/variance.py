"""Between- vs within-session variance of the per-cell log verbosity ratio (Table 2).

Model (one-way random effects): ``y_ij = x_ij'β + b_i + e_ij`` with session effects
``b_i ~ N(0, σ²_between)`` and residuals ``e_ij ~ N(0, σ²_within)``; ``x`` holds an
intercept plus optional fixed-effect columns (``fixed=("target",)`` for a pooled fit
with target means removed).

* ``method="reml"`` (default): restricted maximum likelihood, as statsmodels
  ``MixedLM(...).fit(reml=True)``. With ``λ = σ²_between / σ²_within`` and
  ``H = I + λ ZZ'`` (block-diagonal, closed-form inverse per session), the profiled
  restricted log-likelihood ``−½[(N − p) log σ̂² + log|H| + log|X'H⁻¹X|]``
  (``σ̂² = r'H⁻¹r / (N − p)``) is maximized over ``λ >= 0`` (log grid, then bounded
  Brent). A boundary optimum gives ``σ²_between = 0`` and ``at_boundary=True``.
* ``method="anova"``: method of moments for unbalanced groups, ``σ²_within = MSW``,
  ``σ²_between = max(0, (MSB − MSW) / n0)``, ``n0 = (N − Σn_i²/N) / (k − 1)``
  (intercept only). For balanced data and a positive estimate it equals REML.

``sigma2_total`` is the sample variance (ddof=1) of the value, the paper's
σ²_total column; ``share_between = σ²_between / (σ²_between + σ²_within)``.
Fewer than 2 sessions raise :class:`TooFewClustersError`; no within-session variance
raises :class:`DegenerateDataError`.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import optimize

from ._inputs import as_columns, codes, finite_1d, require_columns
from .errors import DegenerateDataError, StatsInputError, TooFewClustersError
from .records import VarianceDecomposition


def _reml_parts(lam: float, y, X, sizes, ysum, xsum, xtx, xty, yty):
    c = lam / (1.0 + sizes * lam)                              # H_i^{-1} = I - c_i 11'
    xhx = xtx - (xsum * c[:, None]).T @ xsum
    xhy = xty - (xsum * c[:, None]).T @ ysum
    yhy = yty - np.sum(c * ysum**2)
    beta = np.linalg.solve(xhx, xhy)
    rss = yhy - beta @ xhy
    return xhx, rss


def _neg_reml(lam: float, y, X, sizes, ysum, xsum, xtx, xty, yty) -> float:
    n, p = X.shape
    xhx, rss = _reml_parts(lam, y, X, sizes, ysum, xsum, xtx, xty, yty)
    sigma2 = rss / (n - p)
    if sigma2 <= 0:
        return np.inf
    logdet_h = np.sum(np.log1p(sizes * lam))
    return 0.5 * ((n - p) * np.log(sigma2) + logdet_h + np.linalg.slogdet(xhx)[1])


def _reml(y: np.ndarray, X: np.ndarray, group: np.ndarray) -> tuple[float, float]:
    sizes = np.bincount(group).astype(float)
    ysum = np.bincount(group, weights=y)
    xsum = np.stack([np.bincount(group, weights=col) for col in X.T], axis=1)
    args = (y, X, sizes, ysum, xsum, X.T @ X, X.T @ y, y @ y)
    grid = np.concatenate([[0.0], np.logspace(-8, 6, 71)])
    values = np.array([_neg_reml(lam, *args) for lam in grid])
    best = int(np.argmin(values))
    lo = grid[max(best - 1, 0)]
    hi = grid[min(best + 1, len(grid) - 1)]
    if best == 0:
        fit = optimize.minimize_scalar(lambda lam: _neg_reml(lam, *args), bounds=(0.0, hi),
                                       method="bounded", options={"xatol": 1e-12})
    else:
        fit = optimize.minimize_scalar(lambda t: _neg_reml(np.exp(t), *args),
                                       bounds=(np.log(max(lo, 1e-12)), np.log(hi)),
                                       method="bounded", options={"xatol": 1e-10})
        fit.x = float(np.exp(fit.x))
    lam = float(fit.x) if fit.fun <= values[best] else float(grid[best])
    if _neg_reml(0.0, *args) <= _neg_reml(lam, *args):
        lam = 0.0
    _, rss = _reml_parts(lam, *args)
    within = float(rss / (len(y) - X.shape[1]))
    return lam * within, within


def _anova(y: np.ndarray, group: np.ndarray) -> tuple[float, float]:
    sizes = np.bincount(group).astype(float)
    k, n = len(sizes), len(y)
    means = np.bincount(group, weights=y) / sizes
    msw = np.sum((y - means[group]) ** 2) / (n - k)
    msb = np.sum(sizes * (means - y.mean()) ** 2) / (k - 1)
    n0 = (n - np.sum(sizes**2) / n) / (k - 1)
    return max(0.0, float((msb - msw) / n0)), float(msw)


def variance_decomposition(data: pd.DataFrame, *, value: str = "log_ratio",
                           group: str = "session", fixed: Sequence[str] = (),
                           method: str = "reml") -> VarianceDecomposition:
    """Random-intercept decomposition of ``data[value]`` by ``group`` (module docstring)."""
    fixed_cols = as_columns(fixed)
    require_columns(data, [value, group, *fixed_cols], "variance_decomposition")
    y = finite_1d(data[value].to_numpy(dtype=float), value)
    group_code, keys = codes(data, [group])
    k, n = len(keys), len(y)
    if k < 2:
        raise TooFewClustersError(f"between-{group} variance needs at least 2 groups, got {k}")
    X = np.ones((n, 1))
    if fixed_cols:
        dummies = pd.get_dummies(data[list(fixed_cols)].astype(str), drop_first=True)
        X = np.column_stack([X, dummies.to_numpy(dtype=float)])
        if np.linalg.matrix_rank(X) < X.shape[1]:
            raise StatsInputError(f"fixed effects {fixed_cols} are collinear")
    if n - k < 1 or n - X.shape[1] < 1:
        raise DegenerateDataError("no within-group replication: within variance undefined")
    group_mean = np.bincount(group_code, weights=y) / np.bincount(group_code)
    spread = np.sum((y - y.mean()) ** 2)
    if np.sum((y - group_mean[group_code]) ** 2) <= 1e-12 * max(spread, 1e-300):
        raise DegenerateDataError(
            f"no within-{group} variance in {value!r} (all values equal within groups); "
            "the decomposition is undefined")
    if method == "reml":
        between, within = _reml(y, X, group_code)
    elif method == "anova":
        if fixed_cols:
            raise ValueError("method='anova' supports no fixed effects; use 'reml'")
        between, within = _anova(y, group_code)
    else:
        raise ValueError("method must be 'reml' or 'anova'")
    if not within > 0:
        raise DegenerateDataError(f"within-{group} variance estimate is {within}")
    between = max(0.0, between)
    return VarianceDecomposition(
        sigma2_between=between, sigma2_within=within, sigma2_total=float(np.var(y, ddof=1)),
        share_between=between / (between + within), n=n, n_groups=k, method=method,
        at_boundary=between == 0.0, fixed=fixed_cols)
