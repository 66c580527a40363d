"""Pattern consistency of scoring trajectories: TC and OC (CAPE §3.2).

TC, for ``n`` aligned trajectories (3 in the paper):

1. moving average with window ω = 4, ŷ_t = (1/ω) Σ_{j=0}^{ω−1} y_{t−j} (the paper's
   formula prints ``y_{i,t−1}`` inside the sum, a typo for ``y_{i,t−j}``); trailing
   and only where the window is full, so m − ω + 1 points remain;
2. mean/SD normalisation per trajectory (population SD; a constant trajectory, SD 0,
   is only centred);
3. one Gaussian-process regression per trajectory, scikit-learn's
   ``GaussianProcessRegressor`` with its marginal-likelihood hyper-parameter fitting;
4. 95 % support interval at each point, μ ± 1.96 σ of the posterior predictive;
5. W_int = max(0, min_i U_i − max_i L_i); W_union = total length of the union of the
   intervals (sorted by lower bound, overlapping ones merged);
6. TC = (1/(x_m − x_1)) ∫ W_int / W_union dx, trapezoid rule over the item positions.

Kernel (our reading, the paper says only "RBF, scikit-learn hyper-parameter tuning"):
``RBF + WhiteKernel``. With a bare RBF and sklearn's default ``alpha = 1e-10`` the
posterior interpolates every point, σ ≈ 0 at each item and W_int / W_union is 0/0;
the white-noise term is the observation noise of the predictive distribution, fitted
with the length scale. Pass ``kernel=`` to use another.

TC lies in [0, 1]; identical trajectories give exactly 1 (the fits are deterministic).

OC: each run's OCEAN vector s_i = (O, C, E, A, N); the same 5! = 120 permutations are
applied to every run and appended into a 600-point series, then the TC procedure.
The paper does not say in which order the permutations are appended. In
``permutation_order="lexicographic"`` they follow ``itertools.permutations`` of the
trait positions, so relabelling the traits reorders the series; the default
``"canonical"`` sorts the permutations by the values they produce across all runs
(jointly, so runs stay aligned), which makes the series — and OC — exactly invariant
to the order in which the traits are given.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from itertools import permutations

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from threadpoolctl import threadpool_limits
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, Kernel, WhiteKernel

from .metrics import NoComparableItems, as_trajectories

OMEGA = 4
Z = {0.95: 1.96}  # the paper's footnote: L, U = μ ∓ 1.96 σ
#: Fits kept in this process, by what determines them (the points, the level, the kernel): a
#: fit is deterministic, and the same trajectory is fitted again by every table that reads it
#: (Table 1 under each answer, then the notebook's consistency table). At most this many.
FITS_KEPT = 4096
_fits: dict[tuple, tuple[np.ndarray, np.ndarray, str]] = {}


def default_kernel() -> Kernel:
    return RBF(length_scale=1.0, length_scale_bounds=(1.0, 1e4)) + \
        WhiteKernel(noise_level=0.5, noise_level_bounds=(1e-3, 1e1))


@dataclass(frozen=True)
class TrajectoryConsistency:
    value: float  # TC (or OC) in [0, 1]
    x: np.ndarray = field(repr=False)  # positions the ratio is evaluated at
    ratio: np.ndarray = field(repr=False)  # W_int / W_union per position
    lower: np.ndarray = field(repr=False)  # (n_runs, n_points) support bounds
    upper: np.ndarray = field(repr=False)
    kernels: tuple[str, ...] = ()  # the fitted kernel of each run
    n_missing: int = 0  # items dropped because some run had no valid score


def moving_average(y: np.ndarray, omega: int = OMEGA) -> np.ndarray:
    """Trailing mean over ``omega`` points, where the window is full (last axis)."""
    y = np.asarray(y, dtype=float)
    if omega < 1 or omega > y.shape[-1]:
        raise ValueError(f"window {omega} does not fit {y.shape[-1]} points")
    c = np.cumsum(np.concatenate([np.zeros(y.shape[:-1] + (1,)), y], axis=-1), axis=-1)
    return (c[..., omega:] - c[..., :-omega]) / omega


def mean_normalise(y: np.ndarray) -> np.ndarray:
    y = np.asarray(y, dtype=float)
    centred = y - y.mean()
    sd = y.std()
    return centred / sd if sd > 0 else centred


def support_interval(x: np.ndarray, y: np.ndarray, level: float = 0.95,
                     kernel: Kernel | None = None) -> tuple[np.ndarray, np.ndarray, str]:
    """(L, U, fitted kernel) of a GP fitted to (x, y), evaluated at x (read-only arrays; a
    fit this process made before is returned again, :data:`FITS_KEPT`)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    key = (x.tobytes(), y.tobytes(), x.shape, y.shape, float(level), _kernel_key(kernel))
    if key not in _fits:
        if len(_fits) >= FITS_KEPT:
            _fits.clear()
        _fits[key] = _fit(x, y, level, kernel)
    return _fits[key]


def _kernel_key(kernel: Kernel | None) -> str:
    """The kernel with every hyperparameter and bound (its repr leaves the bounds out)."""
    chosen = kernel if kernel is not None else default_kernel()
    return type(chosen).__name__ + repr(sorted((k, repr(v)) for k, v in chosen.get_params(deep=True).items()))


def _fit(x: np.ndarray, y: np.ndarray, level: float, kernel: Kernel | None) -> tuple[np.ndarray, np.ndarray, str]:
    z = Z.get(level)
    if z is None:
        from scipy.stats import norm
        z = float(norm.ppf(0.5 + level / 2))
    gp = GaussianProcessRegressor(kernel=kernel if kernel is not None else default_kernel(),
                                  optimizer="fmin_l_bfgs_b", n_restarts_optimizer=0)
    X = np.asarray(x, dtype=float).reshape(-1, 1)
    # One BLAS thread: these matrices are small, and threads only fight on a shared CPU.
    with warnings.catch_warnings(), threadpool_limits(1):
        warnings.simplefilter("ignore", ConvergenceWarning)
        gp.fit(X, y)
        mean, sd = gp.predict(X, return_std=True)
    lower, upper = mean - z * sd, mean + z * sd
    lower.flags.writeable = upper.flags.writeable = False
    return lower, upper, str(gp.kernel_)


def overlap_ratio(lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """W_int / W_union per column of (n_intervals, n_points) bounds (1 where both are 0)."""
    lower, upper = np.asarray(lower, float), np.asarray(upper, float)
    inter = np.maximum(0.0, upper.min(axis=0) - lower.max(axis=0))
    order = np.argsort(lower, axis=0, kind="stable")
    lo = np.take_along_axis(lower, order, axis=0)
    hi = np.take_along_axis(upper, order, axis=0)
    union = np.zeros(lower.shape[1])
    start, end = lo[0].copy(), hi[0].copy()
    for k in range(1, lo.shape[0]):  # merge sorted intervals, point by point (vectorised)
        gap = lo[k] > end
        union += np.where(gap, end - start, 0.0)
        start = np.where(gap, lo[k], start)
        end = np.where(gap, hi[k], np.maximum(end, hi[k]))
    union += end - start
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(union > 0, inter / np.where(union > 0, union, 1.0), 1.0)


def _integrate(x: np.ndarray, ratio: np.ndarray) -> float:
    if len(x) == 1:
        return float(ratio[0])
    return float(np.trapezoid(ratio, x) / (x[-1] - x[0]))


def trajectory_consistency(trajectories, *, omega: int = OMEGA, level: float = 0.95,
                           kernel: Kernel | None = None) -> TrajectoryConsistency:
    """TC of ``(n_runs, m)`` aligned trajectories; see the module doc."""
    array = as_trajectories(trajectories)
    keep = ~np.isnan(array).any(axis=0)
    array = array[:, keep]
    if array.shape[1] < omega:  # not one full smoothing window of comparable items
        raise NoComparableItems(f"{array.shape[1]} items are valid in every run; "
                                f"TC needs at least omega={omega}")
    smoothed = moving_average(array, omega)
    x = np.arange(omega, array.shape[1] + 1, dtype=float)  # the item ending each window
    bounds = [support_interval(x, mean_normalise(row), level, kernel) for row in smoothed]  # each distinct once
    lower = np.stack([b[0] for b in bounds])
    upper = np.stack([b[1] for b in bounds])
    ratio = overlap_ratio(lower, upper)
    return TrajectoryConsistency(_integrate(x, ratio), x, ratio, lower, upper,
                                 tuple(b[2] for b in bounds), int((~keep).sum()))


def ocean_series(ocean: np.ndarray, permutation_order: str = "canonical") -> np.ndarray:
    """(n_runs, 5) OCEAN vectors → (n_runs, 5·5!) series of all trait permutations."""
    ocean = np.asarray(ocean, dtype=float)
    if ocean.ndim != 2 or ocean.shape[1] < 2:
        raise ValueError(f"need (n_runs, n_traits) OCEAN scores, got shape {ocean.shape}")
    perms = np.array(list(permutations(range(ocean.shape[1]))))
    blocks = ocean[:, perms]  # (runs, n_perms, traits)
    if permutation_order == "canonical":
        joint = blocks.transpose(1, 0, 2).reshape(len(perms), -1)  # one key per permutation
        blocks = blocks[:, np.lexsort(joint.T[::-1])]
    elif permutation_order != "lexicographic":
        raise ValueError(f"permutation_order must be 'canonical' or 'lexicographic', "
                         f"got {permutation_order!r}")
    return blocks.reshape(ocean.shape[0], -1)


def ocean_consistency(ocean, *, permutation_order: str = "canonical", omega: int = OMEGA,
                      level: float = 0.95, kernel: Kernel | None = None) -> TrajectoryConsistency:
    """OC of ``(n_runs, 5)`` OCEAN score vectors (NaN traits are not allowed)."""
    ocean = np.asarray(ocean, dtype=float)
    if np.isnan(ocean).any():
        raise ValueError("an OCEAN vector has a missing trait score; OC needs all five")
    return trajectory_consistency(ocean_series(ocean, permutation_order), omega=omega,
                                  level=level, kernel=kernel)
