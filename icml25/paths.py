"""Every artifact path of a paper, built in one place (stages never build paths themselves)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

# stage -> the folder it writes under data/<slug>/ (validate writes one file, see PaperPaths.validation)
STAGE_DIRS = {"prepare": "prepared", "train": "trained", "evaluate": "evaluated"}


@dataclass(frozen=True)
class PaperPaths:
    root: Path
    slug: str

    @property
    def data(self) -> Path:
        return self.root / "data" / self.slug

    def stage_dir(self, stage: str) -> Path:
        """The ``main/`` folder a templated stage writes (and the next stage depends on)."""
        return self.data / STAGE_DIRS[stage] / "main"

    @property
    def prepared(self) -> Path:
        return self.stage_dir("prepare")

    @property
    def trained(self) -> Path:
        return self.stage_dir("train")

    @property
    def evaluated(self) -> Path:
        return self.stage_dir("evaluate")

    @property
    def inputs(self) -> Path:
        """The user's input files (a CSV, raw graph files): prepare@<slug> depends on this whole folder."""
        return self.data / "input"

    @property
    def code(self) -> Path:
        """The per-stage code fingerprints written by code@<slug> (see icml25.codedeps)."""
        return self.data / "code"

    @property
    def validation(self) -> Path:
        return self.data / "validated" / "validation.json"

    @property
    def report(self) -> Path:
        return self.root / "reports" / self.slug

    @property
    def claims(self) -> Path:
        return self.report / "claims.json"

    @property
    def metrics(self) -> Path:
        return self.report / "metrics.json"

    @property
    def figures(self) -> Path:
        return self.report / "figures"

    @property
    def readme(self) -> Path:
        return self.report / "README.md"

    @property
    def timing(self) -> Path:
        return self.report / "timing.json"

    @property
    def benchmark(self) -> Path:
        return self.root / "benchmarks" / "results" / f"{self.slug}.json"

    @property
    def stage_timings(self) -> Path:
        """Wall times of the last run of each stage (untracked: .dvc/tmp is DVC's scratch space)."""
        return self.root / ".dvc" / "tmp" / "icml25-timing" / self.slug


def index_path(root: Path) -> Path:
    return root / "reports" / "README.md"
