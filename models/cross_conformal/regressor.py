"""The user-facing estimator: cross-conformal prediction sets for any scikit-learn regressor.

    >>> from models.cross_conformal import CrossConformalRegressor
    >>> ccr = CrossConformalRegressor(Ridge(), n_folds=5, random_state=0).fit(X, y)
    >>> ccr.predict_set(X_test, alpha=0.1, method="e-mod")   # per test point: sorted disjoint (low, high)

fit draws a uniformly random permutation and cuts it into K folds of m = floor(n/K) points; the folds keep the
permutation's (random) order, which the e-variants use through their running means. When K does not divide n
the n - K m surplus points of the permutation are left out of every fold (``uneven="drop"``, the default, so
that the fold p-values stay exchangeable), or fit refuses (``uneven="error"``). The models mu_{-k} are clones
of the estimator fit on everything outside S_k (the dropped points included: they are training data, not
calibration data). predict_set draws one U ~ Unif(0, 1) per test point, from a stream seeded by random_state,
or takes ``u``.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin, clone

from .core import METHODS, CrossSets, FoldScores, canonical_method, check_alpha, cross_sets


class MinNormOLS(RegressorMixin, BaseEstimator):
    """Least squares without intercept, beta = X^+ y (the minimum-norm solution when p > n, as R's ginv)."""

    def fit(self, X, y):
        X, y = np.asarray(X, float), np.asarray(y, float)
        self.coef_ = np.linalg.pinv(X) @ y
        self.n_features_in_ = X.shape[1]
        return self

    def predict(self, X):
        return np.asarray(X, float) @ self.coef_


def make_estimator(name: str, seed: int = 0, lasso_alpha: float = 0.1, trees: int = 25):
    """ols (min-norm, no intercept), linear (OLS with intercept), ridge, lasso, rf."""
    from sklearn.ensemble import RandomForestRegressor
    from sklearn.linear_model import Lasso, LinearRegression, Ridge

    makers = {
        "ols": lambda: MinNormOLS(),
        "linear": lambda: LinearRegression(),
        "ridge": lambda: Ridge(alpha=1.0),
        "lasso": lambda: Lasso(alpha=lasso_alpha, max_iter=10_000),
        "rf": lambda: RandomForestRegressor(n_estimators=trees, random_state=seed, n_jobs=1),
    }
    if name not in makers:
        raise ValueError(f"unknown model {name!r}; one of {', '.join(makers)}")
    return makers[name]()


def random_folds(n: int, K: int, rng: np.random.Generator, uneven: str = "drop") -> np.ndarray:
    """Fold label (0..K-1, in the split's random order) of each of n points; -1 for the dropped surplus.

    Like the official ``split(sample(1:n), cut(1:n, K))``: fold k is the k-th block of a random permutation."""
    check_folds(n, K, uneven)
    m = n // K
    perm = rng.permutation(n)
    labels = np.full(n, -1, dtype=np.int64)
    labels[perm[: K * m]] = np.repeat(np.arange(K), m)
    return labels


def check_folds(n: int, K: int, uneven: str = "drop") -> None:
    if uneven not in ("drop", "error"):
        raise ValueError(f"uneven must be 'drop' or 'error', got {uneven!r}")
    if not isinstance(K, int | np.integer) or K < 2:
        raise ValueError(f"the number of folds K must be an integer >= 2, got {K!r}")
    if K > n:
        raise ValueError(f"the number of folds K = {K} exceeds the number of training points n = {n}")
    if uneven == "error" and n % K:
        raise ValueError(
            f"K = {K} does not divide n = {n} (uneven='error'); {n % K} points would be left over"
        )


def check_xy(X, y=None, n_features: int | None = None) -> tuple[np.ndarray, np.ndarray | None]:
    X = np.asarray(X, dtype=float)
    if X.ndim == 1:
        X = X[:, None]
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (n, p), got shape {X.shape}")
    bad = np.flatnonzero(~np.all(np.isfinite(X), axis=1))
    if len(bad):
        raise ValueError(f"X has NaN or infinite values in {len(bad)} rows (first: row {bad[0]})")
    if n_features is not None and X.shape[1] != n_features:
        raise ValueError(f"X has {X.shape[1]} features, the model was fit on {n_features}")
    if y is None:
        return X, None
    y = np.asarray(y, dtype=float).ravel()
    if len(y) != len(X):
        raise ValueError(f"X has {len(X)} rows but y has {len(y)}")
    bad = np.flatnonzero(~np.isfinite(y))
    if len(bad):
        raise ValueError(f"y has NaN or infinite values in {len(bad)} rows (first: row {bad[0]})")
    return X, y


class CrossConformalRegressor:
    """K-fold cross-conformal prediction sets (Vovk's, mod-cross, and the e/u/eu variants), computed exactly.

    Parameters: estimator (any scikit-learn regressor; default min-norm OLS), n_folds K >= 2, random_state
    (seeds the folds and the U's), uneven ("drop" or "error", when K does not divide n)."""

    def __init__(
        self, estimator=None, n_folds: int = 5, random_state: int | None = None, uneven: str = "drop"
    ):
        self.estimator = estimator
        self.n_folds = n_folds
        self.random_state = random_state
        self.uneven = uneven

    # ------------------------------------------------------------------------------------------------ fit
    def fit(self, X, y, folds: np.ndarray | None = None) -> CrossConformalRegressor:
        """Fit the K out-of-fold models. ``folds``: an explicit fold label per point (0..K-1 in the split's
        order, -1 = not calibrating), e.g. from :func:`random_folds`; drawn from random_state otherwise."""
        X, y = check_xy(X, y)
        n = len(y)
        rng = np.random.default_rng(self.random_state)
        if folds is None:
            folds = random_folds(n, self.n_folds, rng, self.uneven)
        else:
            folds = np.asarray(folds, dtype=np.int64)
            if folds.shape != (n,):
                raise ValueError(
                    f"folds must give one label per training point ({n}), got shape {folds.shape}"
                )
            sizes = np.bincount(folds[folds >= 0], minlength=self.n_folds)
            if folds.max() != self.n_folds - 1 or folds.min() < -1 or len(set(sizes)) != 1:
                raise ValueError(
                    f"folds must label {self.n_folds} folds of equal size (-1 = unused), got sizes {sizes}"
                )
        K = self.n_folds
        base = self.estimator if self.estimator is not None else MinNormOLS()
        self.models_, residuals = [], []
        for k in range(K):
            inside = folds == k
            model = clone(base).fit(X[~inside], y[~inside])
            self.models_.append(model)
            residuals.append(np.abs(y[inside] - model.predict(X[inside])))
        self.scores_ = FoldScores(np.array(residuals))
        self.folds_ = folds
        self.n_features_in_ = X.shape[1]
        self.n_dropped_ = int(np.sum(folds < 0))
        self._u_seed = rng.integers(2**63)
        return self

    def fold_predictions(self, X) -> np.ndarray:
        """mu_{-k}(x) for every test point and fold: (T, K)."""
        self._check_fitted()
        X, _ = check_xy(X, n_features=self.n_features_in_)
        return np.column_stack([m.predict(X) for m in self.models_])

    def draw_u(self, n: int) -> np.ndarray:
        """One U ~ Unif(0, 1) per test point; the same for every call (a fixed stream of the fit's seed)."""
        self._check_fitted()
        return np.random.default_rng(self._u_seed).random(n)

    # ------------------------------------------------------------------------------------------------ sets
    def predict_sets(self, X, alpha: float = 0.1, methods=tuple(METHODS), u=None) -> CrossSets:
        """Every requested method's exact sets for the rows of X (flat arrays; see :class:`core.SetBatch`)."""
        check_alpha(alpha)
        methods = [canonical_method(m) for m in methods]
        mu = self.fold_predictions(X)
        if u is None:
            u = self.draw_u(len(mu))
        return cross_sets(self.scores_, mu, alpha, methods, u=np.asarray(u, float))

    def predict_set(
        self, X, alpha: float = 0.1, method: str = "mod", u=None
    ) -> list[list[tuple[float, float]]]:
        """Per test point, its prediction set as a sorted list of disjoint closed intervals (low, high)."""
        name = canonical_method(method)
        return self.predict_sets(X, alpha, [name], u).sets[name].as_lists()

    def _check_fitted(self) -> None:
        if not hasattr(self, "scores_"):
            raise ValueError("this CrossConformalRegressor is not fitted yet: call fit(X, y) first")
