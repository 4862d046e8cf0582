"""Speed and memory of RaRSQ (STAR's rotation-augmented residual quantizer) against vector-quantize-pytorch's
``ResidualVQ`` with the rotation trick (run by hand: python benchmarks/star.py); writes
benchmarks/results/star.json, which the report renders.

- Wall milliseconds of one forward + backward pass, at batch ``BATCHES`` = 256 and 4,096, same sizes for all:
  dimension 16, codebook size K = 32, 2 quantizers (depths), float32 on the CPU, torch on one thread
  (``torch.set_num_threads(1)``). One pass is: the gradients set to None, the forward, the loss
  ``(quantized * g).sum() + commitment loss`` (g a fixed N(0, 1) tensor of the output's shape) and
  ``loss.backward()``, so both implementations compute the input's and the codebooks' gradients. Inputs
  x ~ N(0, 0.1^2) (norm about 0.4 against codewords of norm about 0.25: every code is used), drawn once,
  outside the timing.

  * ``vector-quantize-pytorch ResidualVQ``: ``ResidualVQ(dim=16, num_quantizers=2, codebook_size=32,
    rotation_trick=True, learnable_codebook=True, ema_update=False)`` (the issue's configuration), in training
    mode (in eval mode the library skips both the rotation trick and the commitment loss), on x of shape
    (batch, 1, 16) (it takes (batch, sequence, dim)). What the library does with these arguments (read in its
    1.32.0 source, and checked below): ``learnable_codebook=True`` *requires* ``ema_update=False`` (an
    assertion); ``kmeans_init`` is off and ``threshold_ema_dead_code`` is 0 by default (no dead-code
    replacement), so the codebooks are only changed by gradients and the forward has no side effects;
    ``commitment_weight`` defaults to 1.0 and, with a learnable codebook, its loss is
    ``mse(quantize, residual)`` with the gradient to both sides, per layer, summed over layers by us.
  * ``ours, RaRSQ``: ``models.star.quantizer.RaRSQ(16, 32, 2, rotation=True, beta=1.0)`` on x of shape
    (batch, 16): ``beta`` = the library's commitment weight (STAR's default is 0.25; the weight does not change
    the cost).
  * ``ours, STE`` (``rotation=False``) and the library's ``rotation_trick=False`` (its plain STE), for context.

  Two warm-up passes each, then ``REPEAT`` repetitions; in each repetition every implementation runs a block of
  ``INNER[batch]`` passes (the block's mean is one run), the implementations alternated within the repetition
  and the order rotated from one repetition to the next, so a change in the machine's load (another process
  may use the second core) hits all alike. The median run is reported (every run is listed). Ratio = ours /
  library at the same batch; the issue's goal: RaRSQ / ResidualVQ(rotation_trick=True) <= 1.5 at both batches.
- Faithfulness, before any timing, at each batch: the library's codebooks (``rvq.layers[d]._codebook.embed``,
  shape (1, K, 16)) are copied into ours (``codebooks[d]``), both run on the same x and g, and the codes must be
  identical (asserted), the quantized outputs, the losses, the input gradients and the codebook gradients agree
  within ``AGREE_RTOL`` = 1e-5 times the largest magnitude of each (asserted; the max abs differences and
  the magnitudes are recorded). The two compute the same thing: nearest codeword by squared distance (the library: by a sqrt of
  it, same argmin), ``q~ = sg[lambda R] r`` with ``R r = r - 2 (w'r) w + 2 (r^'r) q^`` and lambda, w, r^, q^
  detached (its ``rotate_to``), the codebook's gradient only through the commitment loss, and the next residual
  ``r - sg[q~]`` (ours subtracts the codeword q itself; the library subtracts the rotated value, equal to q up
  to float rounding). Differences the check does not reach: the library gathers the codeword as a one-hot
  (N, K) matrix times the codebook in training mode, casts the input to float32, and has no STE fallback where
  r^ = -q^ or r = 0 (ours has; the fallback count is recorded, 0 on these inputs). No gradient differs for
  a reason other than float rounding: the largest relative difference is recorded (under 1e-6 when written).
- Where the library's time goes (a torch-profiler look at batch 4,096 when this was written, not part of the
  script): about a third of its CPU time is ``aten::bmm``, 22 calls a pass. Its
  ``efficient_rotation_trick_transform`` forms ``(e w) w'`` and ``(e u) q'`` as per-row (1, d) @ (d, 1) @ (1, d)
  batched matmuls, and in training mode the codeword lookup is a one-hot (N, K) matrix times the codebook;
  ours uses elementwise products, row sums and an index. A quirk seen on the way: in training mode
  ``VectorQuantize.forward`` calls ``requires_grad_()`` on its registered ``zero`` buffer (the loss starts as
  that buffer), so the buffer is left with ``requires_grad=True``; harmless here.
- Peak memory of one untimed pass each (the gradients set to None before it): the torch profiler's tensor
  allocations summed in time order (``tensor_peak_mib``: the peak of tensor memory live during the pass beyond
  what was live before it, the gradients included) and tracemalloc's peak (``traced_peak_mib``: Python
  allocations only; tracemalloc does not see torch's allocator).
"""

from __future__ import annotations

import gc
import os
import resource
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import (  # noqa: E402
    load_text,
    stage_times,
    stage_times_text,
    tensor_peak_mib,
    traced_peak_mib,
    write,
)

DIM, K, DEPTHS = 16, 32, 2
BATCHES = (256, 4096)
INNER = {256: 20, 4096: 5}  # passes per run (a run is their mean)
REPEAT = 41
WARMUP = 2
COMMIT = 1.0  # the library's default commitment_weight; ours' beta is set to it
X_SCALE = 0.1
SEED = 0
GOAL = 1.5
AGREE_RTOL = 1e-5
LIB_ROT = "vector-quantize-pytorch ResidualVQ"
OURS_ROT = "ours, RaRSQ"
LIB_STE = "vector-quantize-pytorch ResidualVQ (STE)"
OURS_STE = "ours, STE"


# ------------------------------------------------------------------------------------------------ set-up
def library(rotation: bool):
    from vector_quantize_pytorch import ResidualVQ

    rvq = ResidualVQ(
        dim=DIM,
        num_quantizers=DEPTHS,
        codebook_size=K,
        rotation_trick=rotation,
        learnable_codebook=True,
        ema_update=False,
    )
    rvq.train()
    for layer in rvq.layers:  # what the docstring says of the configuration, checked
        assert layer.rotation_trick == rotation and layer.learnable_codebook and not layer.ema_update
        assert layer.commitment_weight == COMMIT and layer.has_commitment_loss
        assert not layer._codebook.has_dead_code_replacement and bool(layer._codebook.initted)
        assert layer._codebook.embed.shape == (1, K, DIM)
    assert len(list(rvq.parameters())) == DEPTHS  # the codebooks only (no projections)
    return rvq


def ours(rotation: bool, source) -> object:
    """RaRSQ with the library's codebooks copied in."""
    import torch

    from models.star.quantizer import RaRSQ

    m = RaRSQ(DIM, K, DEPTHS, rotation=rotation, beta=COMMIT)
    with torch.no_grad():
        for d, layer in enumerate(source.layers):
            m.codebooks[d].copy_(layer._codebook.embed[0])
    return m


class Impl:
    """One implementation at one batch: its module, its leaf input, ``reset()`` and ``step()`` (one pass)."""

    def __init__(self, module, x0, g, is_library: bool):
        self.module, self.is_library = module, is_library
        self.x = (x0[:, None] if is_library else x0).clone().requires_grad_(True)
        self.g = g[:, None] if is_library else g
        self.params = list(module.parameters())

    def reset(self) -> None:
        self.x.grad = None
        for p in self.params:
            p.grad = None

    def forward(self):
        q, codes, loss = self.module(self.x)
        return q, codes, (loss.sum() if self.is_library else loss)

    def step(self) -> None:
        self.reset()
        q, _, loss = self.forward()
        ((q * self.g).sum() + loss).backward()


def inputs(batch: int):
    import torch

    gen = torch.Generator().manual_seed(SEED + batch)
    return torch.randn(batch, DIM, generator=gen) * X_SCALE, torch.randn(batch, DIM, generator=gen)


# ------------------------------------------------------------------------------------------------ faithfulness
def faithfulness(lib: Impl, our: Impl) -> dict:
    """Codes, outputs, loss and gradients of ours against the library's on the same input and codebooks."""
    lib.reset()
    our.reset()
    q_l, c_l, loss_l = lib.forward()
    ((q_l * lib.g).sum() + loss_l).backward()
    q_o, c_o, loss_o = our.forward()
    ((q_o * our.g).sum() + loss_o).backward()
    q_l, q_o, loss_l, loss_o = q_l.detach(), q_o.detach(), loss_l.detach(), loss_o.detach()
    c_l = c_l[:, 0]
    mismatched = int((c_l != c_o).any(-1).sum())
    assert mismatched == 0, f"{mismatched} rows got different codes from the library and ours"
    book_l = [p.grad[0] for p in lib.params]
    book_o = [our.module.codebooks.grad[d] for d in range(DEPTHS)]
    out = {
        "quantized": float((q_l[:, 0] - q_o).abs().max()),
        "loss": abs(float(loss_l) - float(loss_o)),
        "input_grad": float((lib.x.grad[:, 0] - our.x.grad).abs().max()),
        "codebook_grad": max(float((a - b).abs().max()) for a, b in zip(book_l, book_o, strict=True)),
        "scale_quantized": float(q_o.abs().max()),
        "scale_loss": abs(float(loss_o)),
        "scale_input_grad": float(our.x.grad.abs().max()),
        "scale_codebook_grad": max(float(b.abs().max()) for b in book_o),
        "codes_used": [int(c_o[:, d].unique().numel()) for d in range(DEPTHS)],
        "fallbacks": int(our.module.last_fallbacks),
        "rows": int(c_o.shape[0]),
    }
    for key in ("quantized", "loss", "input_grad", "codebook_grad"):
        bound = AGREE_RTOL * out[f"scale_{key}"]
        assert out[key] <= bound, f"library vs ours: {key} differs by {out[key]:.2e} (> {bound:.2e})"
        out[f"rel_{key}"] = out[key] / out[f"scale_{key}"] if out[f"scale_{key}"] > 0 else 0.0
    lib.reset()
    our.reset()
    return out


def check_text(c: dict) -> str:
    return (
        f"codes identical ({c['rows']} rows x {DEPTHS} depths; {c['codes_used'][0]} and {c['codes_used'][1]} of "
        f"{K} codes used; {c['fallbacks']} STE fallbacks), max abs diff quantized {c['quantized']:.1e} "
        f"(|z^| up to {c['scale_quantized']:.2f}), loss {c['loss']:.1e} (loss {c['scale_loss']:.4f}), input grad "
        f"{c['input_grad']:.1e} (|grad| up to {c['scale_input_grad']:.2f}), codebook grad {c['codebook_grad']:.1e} "
        f"(|grad| up to {c['scale_codebook_grad']:.1e}); largest relative difference "
        f"{max(c['rel_' + k] for k in ('quantized', 'loss', 'input_grad', 'codebook_grad')):.1e}"
    )


# ------------------------------------------------------------------------------------------------ timing
def timed(impls: dict[str, Impl], inner: int) -> dict[str, list[float]]:
    """Runs (ms per pass, each the mean of ``inner`` passes), the implementations alternated, order rotated."""
    names = list(impls)
    for name in names:
        for _ in range(WARMUP):
            impls[name].step()
    runs: dict[str, list[float]] = {name: [] for name in names}
    gc.collect()
    for rep in range(REPEAT):
        for name in names[rep % len(names) :] + names[: rep % len(names)]:
            step = impls[name].step
            t0 = time.perf_counter()
            for _ in range(inner):
                step()
            runs[name].append((time.perf_counter() - t0) / inner * 1e3)
    return runs


def memory(impl: Impl) -> tuple[float, float]:
    """(tensor peak MiB, tracemalloc peak MiB) of one pass, the gradients freed before each."""
    impl.reset()
    tensor = tensor_peak_mib(impl.step)
    impl.reset()
    traced = traced_peak_mib(impl.step)
    impl.reset()
    return tensor, traced


# ------------------------------------------------------------------------------------------------ main
def main() -> None:
    from importlib.metadata import version

    import torch

    start = time.perf_counter()
    load = load_text()
    torch.set_num_threads(1)
    torch.manual_seed(SEED)
    lib_version = version("vector-quantize-pytorch")

    rows, summary, checks, goal_ratios = [], [], {}, {}
    for batch in BATCHES:
        x0, g = inputs(batch)
        lib_rot, lib_ste = library(True), library(False)
        impls = {
            LIB_ROT: Impl(lib_rot, x0, g, True),
            OURS_ROT: Impl(ours(True, lib_rot), x0, g, False),
            LIB_STE: Impl(lib_ste, x0, g, True),
            OURS_STE: Impl(ours(False, lib_ste), x0, g, False),
        }
        checks[batch] = {
            "rotation": faithfulness(impls[LIB_ROT], impls[OURS_ROT]),
            "ste": faithfulness(impls[LIB_STE], impls[OURS_STE]),
        }
        for est, c in checks[batch].items():
            print(f"faithfulness, batch {batch}, {est}: {check_text(c)}", flush=True)

        runs = timed(impls, INNER[batch])
        med = {name: statistics.median(r) for name, r in runs.items()}
        mem = {name: memory(impl) for name, impl in impls.items()}
        goal_ratios[batch] = med[OURS_ROT] / med[LIB_ROT]
        for name in impls:
            is_ours = name.startswith("ours")
            rotation = name in (LIB_ROT, OURS_ROT)
            same = LIB_ROT if rotation else LIB_STE
            c = checks[batch]["rotation" if rotation else "ste"]
            row = {
                "implementation": name,
                "estimator": "rotation trick" if rotation else "STE",
                "batch": batch,
                "ms per forward+backward (median)": round(med[name], 3),
                "min ms": round(min(runs[name]), 3),
                "runs (ms)": ", ".join(f"{v:.2f}" for v in runs[name]),
                "this / library, same estimator": round(med[name] / med[same], 3) if is_ours else "",
                "this / library rotation trick": round(med[name] / med[LIB_ROT], 3),
                f"goal RaRSQ / library <= {GOAL}": (
                    ("met" if goal_ratios[batch] <= GOAL else "missed") + f" ({goal_ratios[batch]:.3f})"
                    if name == OURS_ROT
                    else ""
                ),
                "peak tensor MiB (torch profiler)": round(mem[name][0], 3),
                "tensor MiB / library, same estimator": (
                    round(mem[name][0] / mem[same][0], 3) if is_ours and mem[same][0] > 0 else ""
                ),
                "peak MiB (tracemalloc, Python allocations)": round(mem[name][1], 4),
                "faithfulness vs library (max abs diff: quantized, input grad, codebook grad)": (
                    f"codes identical; {c['quantized']:.1e}, {c['input_grad']:.1e}, {c['codebook_grad']:.1e}"
                    if is_ours
                    else ""
                ),
            }
            rows.append(row)
            summary.append(
                f"{name:<42} batch {batch:5d}  {med[name]:7.3f} ms (min {min(runs[name]):7.3f})  "
                f"/library-rot {med[name] / med[LIB_ROT]:5.3f}"
                + (f"  /library-same {med[name] / med[same]:5.3f}" if is_ours else "")
                + f"  tensors {mem[name][0]:.3f} MiB  tracemalloc {mem[name][1]:.4f} MiB"
            )
            print(summary[-1], flush=True)
        del impls, lib_rot, lib_ste
        gc.collect()

    columns = list(rows[0])
    stages = stage_times("star")
    if stages:
        rows.append(
            {
                "implementation": "`dvc repro` (last run's stage wall times)",
                "runs (ms)": f"{sum(stages.values()):.0f} s in all: {stage_times_text(stages)}",
            }
        )
    met = all(r <= GOAL for r in goal_ratios.values())
    wall = time.perf_counter() - start
    peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    faith = "; ".join(
        f"batch {b}, {est}: {check_text(c)}" for b, per in checks.items() for est, c in per.items()
    )
    note = (
        f"CPU, torch {torch.__version__} on one thread (torch.set_num_threads(1)), vector-quantize-pytorch "
        f"{lib_version}; {load} on {os.cpu_count()} cores (another process may have been using them, which "
        f"slows every implementation alike). Dimension {DIM}, K = {K}, {DEPTHS} quantizers, float32; one pass = "
        f"gradients set to None, forward, loss (quantized * g).sum() + commitment loss, backward (input and "
        f"codebook gradients). Library: ResidualVQ(dim={DIM}, num_quantizers={DEPTHS}, codebook_size={K}, "
        f"rotation_trick=True, learnable_codebook=True, ema_update=False), training mode, input (batch, 1, "
        f"{DIM}); its defaults checked: no k-means init, no dead-code replacement, commitment_weight "
        f"{COMMIT:g} (learnable_codebook=True asserts ema_update=False). Ours: RaRSQ({DIM}, {K}, {DEPTHS}, "
        f"rotation=True, beta={COMMIT:g}) on (batch, {DIM}); the STE rows (ours rotation=False, the library's "
        f"rotation_trick=False) are context. {WARMUP} warm-up passes each, then {REPEAT} repetitions in which "
        f"each implementation runs a block of {INNER[BATCHES[0]]} (batch {BATCHES[0]}) or "
        f"{INNER[BATCHES[1]]} (batch {BATCHES[1]}) passes (a run = the block's mean), the four alternated "
        f"and their order rotated each repetition; the median run is reported, every run listed. Goal RaRSQ / "
        f"library <= {GOAL}: "
        + ", ".join(f"batch {b} {r:.3f}" for b, r in goal_ratios.items())
        + f", {'met' if met else 'missed'}. Faithfulness before timing (the library's codebooks copied into "
        f"ours, same x ~ N(0, {X_SCALE:g}^2) and g ~ N(0, 1); asserted: identical codes, differences <= "
        f"{AGREE_RTOL:g} x the largest magnitude): {faith}. Memory: the torch profiler's peak of tensor memory "
        f"live during one untimed pass beyond what was live before it (tensor_peak_mib, gradients included) and "
        f"tracemalloc's peak of the same pass (traced_peak_mib; Python allocations only). The whole process "
        f"peaked at {peak_rss:.0f} MiB resident (ru_maxrss). Benchmark wall time {wall:.0f} s."
    )
    write("star", columns, rows, note=note)
    print("\n".join(["", "Summary:"] + summary), flush=True)


if __name__ == "__main__":
    main()
