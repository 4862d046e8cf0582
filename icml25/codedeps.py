"""Which project code each stage runs: the static import graph, per-stage closures and their fingerprints, and
the layering rule.

Why: a DVC stage must re-run when code that can change its outputs changes, and only then. A paper's stages
import a few modules each (its own stage module, some of ``models/<slug>``, ``models/common``, a few core
modules); depending on whole folders re-ran a nine-minute training for an edit to a report sentence. DVC's
templated stages (``foreach``) cannot take a per-paper list of dependencies, so each paper gets one cheap stage,
``code@<slug>``, that depends on the folders and writes one fingerprint per stage,
``data/<slug>/code/<stage>.json``: the md5 of every file that stage's code imports, found here by reading the
source (nothing is imported). Each stage depends on its own fingerprint, so DVC re-runs exactly the stages whose
code changed; ``code@<slug>`` itself re-runs on any edit under those folders and costs a fraction of a second.

The closure of a stage starts from its own module and the paper package (its params schema) plus the framework
modules that execute the stage (:data:`STAGE_ROOTS`) and follows every ``import`` / ``from ... import`` in the
source, also inside functions (lazy imports are how stages keep start-up light), except under
``if TYPE_CHECKING:``. Plumbing modules that cannot change an artifact (:data:`PLUMBING`: errors, paths, the
registry, the runner, params checking, the CLI) are neither tracked nor followed. A paper module that imports by a
computed name (``importlib.import_module(f"...")``) cannot be tracked and is reported as an error.

The same graph enforces the layering (:func:`layering_violations`): flows -> stages -> models -> icml25, never
upward, never sideways between papers (``models/common`` is shared).
"""

from __future__ import annotations

import ast
import hashlib
from dataclasses import dataclass, field
from pathlib import Path

PACKAGES = ("icml25", "flows", "stages", "models")

#: Core modules that orchestrate but never change an artifact's bytes: not tracked, not followed.
PLUMBING = frozenset(
    {
        "icml25.cli",
        "icml25.errors",
        "icml25.params",
        "icml25.paths",
        "icml25.registry",
        "icml25.runner",
        "icml25.scratch",
        "icml25.store",
        "icml25.codedeps",
        "icml25.pipeline",
        "icml25.scaffold",
    }
)

#: Framework modules that run a stage whatever its own code imports (the stage context: I/O, random streams;
#: the report renderer for ``report``).
STAGE_ROOTS = {
    "prepare": ("icml25.stage",),
    "validate": ("icml25.stage",),
    "train": ("icml25.stage",),
    "evaluate": ("icml25.stage",),
    "report": ("icml25.stage", "icml25.reporting"),
}

#: Modules that are entry points for people, never imported by a stage (kept out of DVC's view: .dvcignore).
ENTRY_MODULES = ("cli",)


class UntrackableImport(Exception):
    """A module imports by a computed name: its stage's code dependencies cannot be known from the source."""


@dataclass(frozen=True)
class Module:
    name: str
    path: Path  # relative to the project root
    imports: tuple[str, ...]  # project modules it imports (absolute names, parents included)
    dynamic: tuple[int, ...] = field(default=())  # line numbers of imports by a computed name


def module_name(rel: Path) -> str:
    parts = list(rel.with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


class ImportGraph:
    """The project's modules (``icml25``, ``flows``, ``stages``, ``models``) and their imports, from source."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self.files: dict[str, Path] = {}
        for package in PACKAGES:
            for path in sorted((self.root / package).rglob("*.py")):
                if "__pycache__" not in path.parts:
                    rel = path.relative_to(self.root)
                    self.files[module_name(rel)] = rel
        self._modules: dict[str, Module] = {}

    def is_package(self, name: str) -> bool:
        return name in self.files and self.files[name].name == "__init__.py"

    def module(self, name: str) -> Module:
        if name not in self._modules:
            path = self.files[name]
            source = (self.root / path).read_text()
            imports, dynamic = _imports(ast.parse(source, str(path)), name, self.is_package(name))
            resolved: list[str] = []
            for target in imports:
                resolved += self._resolve(target)
            self._modules[name] = Module(name, path, tuple(dict.fromkeys(resolved)), tuple(dynamic))
        return self._modules[name]

    def _resolve(self, target: str) -> list[str]:
        """The project modules that ``import target`` executes: every existing prefix (parents first)."""
        parts = target.split(".")
        if parts[0] not in PACKAGES:
            return []
        out = []
        for i in range(1, len(parts) + 1):
            name = ".".join(parts[:i])
            if name in self.files:
                out.append(name)
        return out

    def closure(self, roots: list[str], follow_plumbing: bool = False) -> list[str]:
        """Every project module that importing ``roots`` can execute (sorted), plumbing excluded unless asked."""
        seen: set[str] = set()
        todo = [r for r in roots if r in self.files]
        for r in list(todo):
            todo += self._resolve(r)
        while todo:
            name = todo.pop()
            if name in seen or (name in PLUMBING and not follow_plumbing):
                continue
            seen.add(name)
            todo += [m for m in self.module(name).imports if m not in seen]
        return sorted(seen)


def _imports(tree: ast.AST, name: str, is_package: bool) -> tuple[list[str], list[int]]:
    """Absolute names imported anywhere in ``tree`` (``from a import b`` gives ``a`` and ``a.b``), skipping
    ``if TYPE_CHECKING:`` blocks; and the lines of ``importlib.import_module`` / ``__import__`` calls whose
    argument is not a literal string."""
    package = name if is_package else name.rpartition(".")[0]
    found: list[str] = []
    dynamic: list[int] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            found.append(base)
            found.extend(f"{base}.{alias.name}" for alias in node.names if alias.name != "*")
        elif isinstance(node, ast.Call) and _is_import_call(node.func):
            arg = node.args[0] if node.args else None
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                found.append(arg.value)
            else:
                dynamic.append(node.lineno)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found, dynamic


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _is_import_call(func: ast.expr) -> bool:
    return (isinstance(func, ast.Name) and func.id == "__import__") or (
        isinstance(func, ast.Attribute)
        and func.attr == "import_module"
        and isinstance(func.value, ast.Name)
        and func.value.id == "importlib"
    )


# ------------------------------------------------------------------------------------------- stage closures
def stage_module(slug: str, stage: str) -> str:
    return f"stages.{slug}.{stage}"


def direct_files(slug: str, stage: str) -> list[str]:
    """The files ``<stage>@<slug>`` depends on directly in dvc.yaml: its own module (and the report's
    template). Everything else it runs is in its fingerprint."""
    files = [f"stages/{slug}/{stage}.py"]
    if stage == "report":
        files.append(f"stages/{slug}/report.md")
    return files


def stage_files(root: Path, slug: str, stage: str, graph: ImportGraph | None = None) -> list[str]:
    """Every project file that ``<stage>@<slug>`` executes, as paths relative to ``root`` (sorted).

    Raises :class:`UntrackableImport` when a paper module in the closure imports by a computed name."""
    graph = graph or ImportGraph(root)
    roots = [stage_module(slug, stage), f"stages.{slug}", *STAGE_ROOTS[stage]]
    missing = [r for r in roots[:2] if r not in graph.files]
    if missing:
        raise FileNotFoundError(f"{slug}: no module {missing[0]} (stages/{slug}/{stage}.py)")
    names = graph.closure(roots)
    for name in names:
        mod = graph.module(name)
        if mod.dynamic and not name.startswith("icml25."):
            raise UntrackableImport(
                f"{mod.path}:{mod.dynamic[0]}: imports a module by a computed name; stage {stage}@{slug} runs "
                "it, so its code dependencies cannot be read from the source (import it by name)"
            )
    return sorted(str(graph.files[n]) for n in names)


def md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


def fingerprint(root: Path, slug: str, stage: str, graph: ImportGraph | None = None) -> dict:
    """What ``data/<slug>/code/<stage>.json`` holds: the md5 of each file the stage runs (its direct deps
    excluded, DVC hashes them itself), and of the paper's benchmark results for the report."""
    root = Path(root)
    direct = set(direct_files(slug, stage))
    files = {f: md5(root / f) for f in stage_files(root, slug, stage, graph) if f not in direct}
    if stage == "report":
        bench = f"benchmarks/results/{slug}.json"
        files[bench] = md5(root / bench) if (root / bench).exists() else "absent"
    return {"stage": f"{stage}@{slug}", "files": dict(sorted(files.items()))}


# ------------------------------------------------------------------------------------------------ layering
@dataclass(frozen=True)
class Violation:
    path: Path
    imported: str
    rule: str

    def __str__(self) -> str:
        return f"{self.path}: imports {self.imported} ({self.rule})"


def _paper(name: str) -> str | None:
    parts = name.split(".")
    return parts[1] if len(parts) > 1 and parts[0] in ("stages", "models") else None


def allowed(importer: str, imported: str) -> str | None:
    """None when ``importer`` may import ``imported``; otherwise the rule it breaks.

    Layers, top to bottom: flows, stages, models, icml25. A paper's stages import only their own paper's models
    (and models.common); papers never import each other; a paper's ``cli`` module is an entry point that no
    stage imports."""
    order = {"flows": 3, "stages": 2, "models": 1, "icml25": 0}
    a, b = importer.split(".")[0], imported.split(".")[0]
    if order[b] > order[a]:
        return f"{a} is below {b}: imports go flows -> stages -> models -> icml25"
    pa, pb = _paper(importer), _paper(imported)
    if b == "models" and pb is not None and pb != "common" and a in ("stages", "models") and pa != pb:
        return (
            f"paper {pa or 'common'} may not import paper {pb} (shared code goes to models/common or icml25)"
        )
    if a == "stages" and b == "stages" and pb is not None and pa != pb:
        return f"paper {pa} may not import the stages of paper {pb}"
    if a == "stages" and imported.split(".")[-1] in ENTRY_MODULES and b == "models":
        return "a stage may not import a paper's command-line module"
    return None


def layering_violations(root: Path) -> list[Violation]:
    graph = ImportGraph(root)
    out = []
    for name in sorted(graph.files):
        mod = graph.module(name)
        for imported in mod.imports:
            rule = allowed(name, imported)
            if rule:
                out.append(Violation(mod.path, imported, rule))
    return out
