"""APO fronts for symbolic regression (Fong & Motani, ICML 2025): ``grammar`` (expressions, canonical forms,
enumerations), ``fit`` (the paper's optimiser protocol), ``batch`` (the vectorised fast path), ``front``
(evaluation of every expression and the fronts), ``search`` (a data set's whole search: the train stage's
driver), ``evaluation`` (fronts compared, gplearn against the front, counts, the report's summary), ``data``
(planted, Friedman, diabetes, PMLB, prepared sets), ``peer`` (gplearn), ``cli`` (``icml25 sr_pareto front``)."""
