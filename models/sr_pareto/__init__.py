"""APO fronts for symbolic regression (Fong & Motani, ICML 2025): ``grammar`` (expressions, canonical forms,
enumerations), ``fit`` (the paper's optimiser protocol), ``batch`` (the vectorised fast path), ``front``
(evaluation of every expression and the fronts), ``data`` (planted, Friedman, diabetes, PMLB), ``peer``
(gplearn), ``cli`` (``icml25 sr_pareto front``)."""
