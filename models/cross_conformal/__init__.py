"""Efficient cross-conformal prediction (Gasparin & Ramdas, ICML 2025): ``core`` (fold p-values, the mod /
e / u / eu statistics, exact sets from the score breakpoints), ``regressor`` (:class:`CrossConformalRegressor`
for any scikit-learn regressor), ``baselines`` (split conformal, CV+ / jackknife+, exact full conformal for
OLS), ``data`` (the OLS simulation, diabetes, CSV tables), ``cli`` (``icml25 cross_conformal predict``)."""

from .core import METHODS, alpha_prime
from .regressor import CrossConformalRegressor, MinNormOLS

__all__ = ["METHODS", "CrossConformalRegressor", "MinNormOLS", "alpha_prime"]
