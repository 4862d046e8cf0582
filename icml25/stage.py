"""What a stage sees: :class:`StageContext`.

A stage module ``stages/<slug>/<stage>.py`` defines ``run(ctx)``; the runner builds ``ctx`` and moves what the
stage wrote into place when it returns. ``ctx`` carries only the stage's own params section (the report sees all
five), the paper's paths, its seed and named random streams, a logger, and ``out``: the fresh folder to write
into. Stages never parse argv, read params.yaml or build paths; they write through these helpers so that every
artifact has the same layout.
"""

from __future__ import annotations

import logging
import shutil
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from . import io, random
from .errors import UserError
from .paths import PaperPaths


@dataclass(frozen=True)
class StageContext:
    slug: str
    stage: str
    params: SimpleNamespace  # one frozen dataclass per section the stage sees: ctx.params.train.steps
    paths: PaperPaths
    seed: int
    profile: str
    log: logging.Logger
    out: Path  # write everything here; the runner moves it into place on success

    # ---- random streams (icml25.random): no seed offsets in paper code
    def rng(self, name: str, *keys: int | str) -> Any:
        """A NumPy Generator on the named stream, e.g. ``ctx.rng("folds", p)``."""
        return random.rng(self.seed, name, *keys)

    def seed_for(self, name: str, *keys: int | str) -> int:
        """An integer seed on the named stream, for torch / Lightning / scikit-learn."""
        return random.seed_for(self.seed, name, *keys)

    # ---- writing into out/
    def write_json(self, name: str, obj: Any) -> Path:
        path = self.out / name
        path.parent.mkdir(parents=True, exist_ok=True)
        io.write_json(path, obj)
        return path

    def write_jsonl(self, name: str, rows: Any) -> int:
        path = self.out / name
        path.parent.mkdir(parents=True, exist_ok=True)
        return io.write_jsonl(path, rows)

    def carry(self, source: Path, *names: str) -> None:
        """Copy files of an upstream stage's folder into out/ unchanged (what the report needs from train)."""
        for name in names:
            shutil.copyfile(Path(source) / name, self.out / name)

    def carry_meta(self, source: Path, /, **extra: Any) -> dict:
        """out/meta.json = ``source``/meta.json updated with ``extra``; returns it."""
        meta = {**io.read_json(Path(source) / "meta.json"), **extra}
        self.write_json("meta.json", meta)
        return meta

    # ---- reading
    @staticmethod
    def read_json(path: Path) -> Any:
        return io.read_json(path)

    def input_path(self, key: str, value: str) -> Path:
        """A user's input file or folder named by the params key ``key`` (a path relative to
        ``data/<slug>/input/``, the folder that ``prepare@<slug>`` tracks, so editing the file re-runs it)."""
        rel = Path(value)
        full = (self.paths.inputs / rel).resolve()
        if rel.is_absolute() or not full.is_relative_to(self.paths.inputs.resolve()):
            raise UserError(
                f"papers.{self.slug}.{self.stage}.{key}: {value!r} must be a path inside "
                f"data/{self.slug}/input/ (relative to it), the folder prepare@{self.slug} tracks"
            )
        return full
