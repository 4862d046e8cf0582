"""UCB-OGD: adaptive data collection across K sources (ICML 2025; no public code, the method is reconstructed
from the abstract). A UCB sampler over sources (the max player, fed the loss of each collected sample under the
model of its round) against projected online gradient descent (the min player), for the worst-source objective
min_theta max_k L_k(theta).

Modules: ``sampler`` (:class:`UCBSampler` and the baselines' samplers), ``ogd`` (the projection, the step size
and the one round loop), ``learners`` (multinomial logistic regression and the planted quadratic in NumPy, any
torch module through autograd, each with its gradient bound), ``sources`` (label-shifted digits, a folder of
CSV files, the pre-drawn streams), ``planted`` (closed-form risks and the exact F* from the dual QP),
``experiment`` (the drivers the stages call and the summaries), ``api`` (:func:`ucb_ogd`), ``lit`` (the batched
Lightning variant). Importing this package imports neither torch nor Lightning.
"""

from .api import UCBOGDResult, ucb_ogd
from .sampler import UCBSampler, uniform_stub_sampler

__all__ = ["UCBOGDResult", "UCBSampler", "ucb_ogd", "uniform_stub_sampler"]
