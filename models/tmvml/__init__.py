"""TMvML: tensorized multi-view multi-label learning (Zhong et al., ICML 2025): the method. TODO: modules and their math.

``from models.tmvml import TMvML`` gives the estimator (:mod:`.model`, imported on first use); :mod:`.cli` is
``icml25 tmvml fit-predict``.
"""

__all__ = ["TMvML"]


def __getattr__(name: str):  # the estimator (numpy, scipy) is imported only when asked for: a fast `--help`
    if name == "TMvML":
        from .model import TMvML

        return TMvML
    raise AttributeError(name)
