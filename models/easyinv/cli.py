"""``icml25 easyinv``: invert an image with the trained eps-model and reconstruct it.

    icml25 easyinv invert IMAGE.png [--steps 50] [--eta 0.5] [--window 0.05,0.2] [--precision fp32|bf16]
                          [--model data/easyinv/trained/main/model.safetensors] -o OUT.npz

The image is read in grayscale and resized to the model's size (8x8 for the digits model), scaled to [-1, 1];
``--eta 1`` is plain DDIM inversion. OUT.npz holds ``z_T``, ``reconstruction`` and ``image``; the last line
printed is the reconstruction's PSNR (dB, range 2). Bad input (eta outside [0, 1], a window outside [0, 1] or
s + l > 1, steps < 2 or not dividing 1000, an unreadable image or model) is a one-line error naming the value,
exit status 2, and nothing is written; the image and the model file are checked before the model is loaded.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from icml25.cli import ToolParser
from icml25.errors import UserError
from icml25.inputs import check_file, check_weights
from icml25.outputs import atomic_output, check_output

DEFAULT_MODEL = Path("data/easyinv/trained/main/model.safetensors")


def build_parser() -> argparse.ArgumentParser:
    parser = ToolParser(
        prog="icml25 easyinv",
        description="EasyInv (ICML 2025): DDIM inversion with latent aggregation, on this project's small "
        "pixel-space eps-model.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    p = sub.add_parser("invert", help="invert an image to z_T and reconstruct it")
    p.add_argument("image", type=Path, metavar="IMAGE.png")
    p.add_argument("--steps", type=int, default=50, help="inversion steps N (default 50)")
    p.add_argument("--eta", type=float, default=0.5, help="EasyInv's weight of the current latent (1: DDIM)")
    p.add_argument("--window", default="0.05,0.2", metavar="S,L", help="the window (s, l) (default 0.05,0.2)")
    p.add_argument("--precision", default="fp32", choices=("fp32", "bf16"))
    p.add_argument(
        "--model", type=Path, default=DEFAULT_MODEL, help=f"the eps-model (default {DEFAULT_MODEL})"
    )
    p.add_argument("-o", "--output", type=Path, required=True, metavar="OUT.npz")
    return parser


def _image(path: Path, size: int):
    from .data import read_image

    check_file(path, what="an image")
    try:
        return read_image(path, size)
    except ValueError as exc:
        raise UserError(str(exc)) from None


def cmd_invert(args: argparse.Namespace) -> int:
    import numpy as np
    import torch

    from . import experiment
    from .api import check, invert, reconstruct

    try:
        window = tuple(float(v) for v in args.window.split(","))
    except ValueError:
        raise UserError(f"--window {args.window!r}: expected two numbers s,l") from None
    check(args.steps, args.eta, window, 0, args.precision)
    check_output(args.output)
    # Every input before the model loads (Lightning's import and the weights: seconds, a minute on a busy machine):
    # the image decodes (read again below at the model's size), the model file is an eps-model's.
    _image(args.image, 8)
    if args.model == DEFAULT_MODEL and not args.model.exists():
        raise UserError(f"{args.model}: no such file (run `dvc repro train@easyinv` first, or give --model)")
    check_weights(args.model, experiment.KIND)
    model = experiment.load_model(args.model)
    image = _image(args.image, model.shape[-1])
    x = torch.tensor(image[None], dtype=torch.float32)
    out = invert(model, x, None, args.steps, args.eta, window, 0, args.precision)
    rec, _ = reconstruct(model, out.z_T, None, args.steps, args.precision)
    with atomic_output(args.output) as tmp:
        with open(tmp, "wb") as fh:
            np.savez(fh, z_T=out.z_T.numpy()[0], reconstruction=rec.numpy()[0], image=image)
    print(
        f"inverted {args.image} in {args.steps} steps ({out.calls} network calls), eta {args.eta:g}; wrote {args.output}"
    )
    print(f"PSNR {float(experiment.psnr(rec, x)[0]):.3f} dB")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return {"invert": cmd_invert}[args.command](args)
