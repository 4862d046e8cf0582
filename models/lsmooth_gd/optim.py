"""LSmoothGD: the ell-GD step as a torch optimizer (usable in any Lightning module).

One step: s = ||g||, the norm of ALL parameters' gradients together (the paper's ||grad f(x)|| is the
Euclidean norm of the full gradient), gamma = int_0^1 dv / ell(s (1 + v)), then p <- p - gamma g for every
parameter. With ell constant (= L) this is GD with step 1/L.
"""

from __future__ import annotations

import torch

from .ell import Ell, step_size


class LSmoothGD(torch.optim.Optimizer):
    def __init__(self, params, ell: Ell | str):
        if isinstance(ell, str):
            ell = Ell.parse(ell)
        if not isinstance(ell, Ell):
            raise TypeError(f"ell must be an Ell or an expression in s, got {type(ell).__name__}")
        super().__init__(params, {})
        self.ell = ell
        self.last_gamma = float("nan")
        self.last_grad_norm = float("nan")

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        grads = [p.grad for group in self.param_groups for p in group["params"] if p.grad is not None]
        if not grads:
            return loss
        s = float(torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads])))
        gamma = step_size(self.ell, s)
        self.last_gamma, self.last_grad_norm = gamma, s
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    p.add_(p.grad, alpha=-gamma)
        return loss
