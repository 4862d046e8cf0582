"""Efficient cross-conformal prediction (Gasparin & Ramdas, ICML 2025): ``core`` (fold p-values, the mod /
e / u / eu statistics, exact sets from the score breakpoints), ``regressor`` (:class:`CrossConformalRegressor`
for any scikit-learn regressor), ``baselines`` (split conformal, CV+ / jackknife+, exact full conformal for
OLS), ``data`` (the OLS simulation, diabetes, CSV tables, the prepared files), ``experiment`` (the
reproduction's drivers: folds, fits, sets of every method, summaries), ``cli`` (``icml25 cross_conformal
predict``)."""

__all__ = ["METHODS", "CrossConformalRegressor", "MinNormOLS", "alpha_prime"]


def __getattr__(name: str):  # scikit-learn is imported only when the estimator is asked for (fast `--help`)
    if name in ("METHODS", "alpha_prime"):
        from . import core

        return getattr(core, name)
    if name in ("CrossConformalRegressor", "MinNormOLS"):
        from . import regressor

        return getattr(regressor, name)
    raise AttributeError(name)
