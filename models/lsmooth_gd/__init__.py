"""Gradient descent under ell-generalized smoothness (Tyurin, ICML 2025): ``ell`` (ell functions, the step-size
rule gamma = int_0^1 dv / ell(s (1 + v)) with its closed forms), ``gd`` (test functions with a known ell and GD
with each step rule), ``optim`` (:class:`LSmoothGD`, a torch optimizer), ``cli`` (``icml25 lsmooth_gd step``)."""

from .ell import Ell, step_size

__all__ = ["Ell", "LSmoothGD", "step_size"]


def __getattr__(name: str):  # torch is imported only when the optimizer is asked for
    if name == "LSmoothGD":
        from .optim import LSmoothGD

        return LSmoothGD
    raise AttributeError(name)
