"""Which project code each stage runs: the static import graph, per-stage closures and their fingerprints, and
the layering rule.

Why: a DVC stage must re-run when code that can change its outputs changes, and only then. A paper's stages
import a few modules each (its own stage module, some of ``models/<slug>``, ``models/common``, a few core
modules); depending on whole folders re-ran a nine-minute training for an edit to a report sentence. DVC's
templated stages (``foreach``) cannot take a per-paper list of dependencies, so each paper gets one cheap stage,
``code@<slug>``, that depends on the folders and writes one fingerprint per stage,
``data/<slug>/code/<stage>.json``: a hash of every file that stage's code imports, found here by reading the
source (nothing is imported). Each stage depends on its own fingerprint, so DVC re-runs exactly the stages whose
code changed; ``code@<slug>`` itself re-runs on any edit under those folders and costs a fraction of a second.

A Python file is hashed by what it does, not how it is written (:func:`source_digest`): the md5 of its syntax
tree without comments, docstrings and other bare constants, line numbers or layout, so an edit to a comment, a
docstring or the formatting of ``icml25/stage.py`` re-runs nothing, while a changed constant re-runs every stage
that imports it. Other files are hashed byte for byte. The document names the method (:data:`HASH`, which
includes the Python version: ``ast.dump``'s text is not stable across Python versions).

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
import sys
from collections.abc import Iterator
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
    """The project's modules (``icml25``, ``flows``, ``stages``, ``models``) and their imports, from source.

    With ``keep_trees`` (the default) the syntax tree parsed for a module's imports is kept until
    :meth:`digest` hashes it, so a fingerprint parses each file once; the layering check, which hashes nothing,
    passes False to keep memory flat (the project's trees take some 80 MB)."""

    def __init__(self, root: Path, keep_trees: bool = True):
        self.root = Path(root)
        self.files: dict[str, Path] = {}
        for package in PACKAGES:
            for path in sorted((self.root / package).rglob("*.py")):
                if "__pycache__" not in path.parts:
                    rel = path.relative_to(self.root)
                    self.files[module_name(rel)] = rel
        self._modules: dict[str, Module] = {}
        self._keep_trees = keep_trees
        self._trees: dict[str, ast.Module] = {}
        self._digests: dict[str, str] = {}

    def is_package(self, name: str) -> bool:
        return name in self.files and self.files[name].name == "__init__.py"

    def _parse(self, name: str) -> ast.Module:
        path = self.files[name]
        return ast.parse((self.root / path).read_text(), str(path))

    def module(self, name: str) -> Module:
        if name not in self._modules:
            tree = self._parse(name)
            imports, dynamic = _imports(tree, name, self.is_package(name))
            resolved: list[str] = []
            for target in imports:
                resolved += self._resolve(target)
            self._modules[name] = Module(
                name, self.files[name], tuple(dict.fromkeys(resolved)), tuple(dynamic)
            )
            if self._keep_trees and name not in self._digests:
                self._trees[name] = tree
        return self._modules[name]

    def digest(self, name: str) -> str:
        """:func:`tree_digest` of module ``name`` (computed once; the kept tree, if any, is then dropped)."""
        if name not in self._digests:
            tree = self._trees.pop(name, None) or self._parse(name)
            self._digests[name] = tree_digest(tree)
        return self._digests[name]

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


# ------------------------------------------------------------------------------------------- fingerprints
#: How :func:`fingerprint` hashes a Python file, recorded in every fingerprint document: the version of the
#: normalisation below and the Python whose ``ast`` module produced the text (``ast.dump`` is not stable across
#: versions: node fields come and go, 3.13 leaves out empty ones), so running ``code@<slug>`` under another
#: Python re-runs every stage once, which a new interpreter may warrant anyway. Bump ``v1`` when
#: :func:`_normalise` changes.
HASH = f"ast-v1 (python {sys.version_info.major}.{sys.version_info.minor})"


def _normalise(body: list[ast.stmt], keep_empty: bool = False) -> list[ast.stmt]:
    """``body`` without the statements that compile to nothing, ``pass`` and a bare constant (``"docstring"``,
    ``...``), at every depth (modifies the nodes in place).

    Python emits no code for an expression statement whose value is a constant; the first one of a module,
    class or function body becomes its ``__doc__``, which no stage reads (a stage that did would need its
    docstrings hashed). A block left empty gets one ``pass`` back (a module may stay empty), so the tree stays
    valid Python and ``def f(): "doc"``, ``def f(): ...`` and ``def f(): pass`` hash the same: the three define
    the same function but for ``__doc__``. f-strings (``JoinedStr``) are evaluated, so they stay. Statements
    only nest in statements (a lambda's body is an expression), so the walk skips expressions."""
    kept = [s for s in body if not _compiles_to_nothing(s)]
    for stmt in kept:
        for owner, field_name in _blocks(stmt):
            value = getattr(owner, field_name)
            if value:  # an empty orelse / finalbody stays empty
                setattr(owner, field_name, _normalise(value))
    return kept or ([] if keep_empty else [ast.Pass()])


def _blocks(stmt: ast.stmt) -> Iterator[tuple[ast.AST, str]]:
    """The statement lists inside ``stmt`` as (node, field name): bodies, else and finally blocks, the bodies
    of except handlers and match cases."""
    for field_name in ("body", "orelse", "finalbody"):
        if isinstance(getattr(stmt, field_name, None), list):
            yield stmt, field_name
    for inner in (*getattr(stmt, "handlers", ()), *getattr(stmt, "cases", ())):
        yield inner, "body"


def _compiles_to_nothing(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Pass) or (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant))


def tree_digest(tree: ast.Module) -> str:
    """md5 of ``ast.dump`` of ``tree`` normalised by :func:`_normalise`, without line and column numbers
    (modifies ``tree``).

    Comments, blank lines, line breaks, redundant parentheses, quoting style and the spelling of a number
    (``1e3`` and ``1000.0``) never reach the tree; docstrings and other bare constants are dropped. Everything
    else is kept: names, constants, annotations, the order of statements, string literals that may end up in
    an output (error messages included). Equal digests mean the same code for Python, up to ``__doc__``."""
    tree.body = _normalise(tree.body, keep_empty=True)
    return hashlib.md5(ast.dump(tree, annotate_fields=True, include_attributes=False).encode()).hexdigest()


def source_digest(source: str, filename: str = "<source>") -> str:
    """:func:`tree_digest` of Python ``source`` (raises SyntaxError if it does not parse)."""
    return tree_digest(ast.parse(source, filename))


def md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


def fingerprint(root: Path, slug: str, stage: str, graph: ImportGraph | None = None) -> dict:
    """What ``data/<slug>/code/<stage>.json`` holds: ``{"stage": "<stage>@<slug>", "hash": HASH, "files":
    {path: hex digest}}``, sorted by path, for each file the stage runs (its direct deps excluded, DVC hashes
    them itself) and the paper's benchmark results for the report (``"absent"`` without them).

    A Python file's digest is :meth:`ImportGraph.digest` (comments, docstrings and formatting ignored, see
    :func:`tree_digest`); any other file's is the md5 of its bytes. Deterministic: the same code under the same
    Python gives the same document, byte for byte once written by ``icml25.io.write_json``."""
    root = Path(root)
    graph = graph or ImportGraph(root)
    direct = set(direct_files(slug, stage))
    names = {str(path): name for name, path in graph.files.items()}
    files = {
        f: graph.digest(names[f]) if f in names else md5(root / f)
        for f in stage_files(root, slug, stage, graph)
        if f not in direct
    }
    if stage == "report":
        bench = f"benchmarks/results/{slug}.json"
        files[bench] = md5(root / bench) if (root / bench).exists() else "absent"
    return {"stage": f"{stage}@{slug}", "hash": HASH, "files": dict(sorted(files.items()))}


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
    graph = ImportGraph(root, keep_trees=False)
    out = []
    for name in sorted(graph.files):
        mod = graph.module(name)
        for imported in mod.imports:
            rule = allowed(name, imported)
            if rule:
                out.append(Violation(mod.path, imported, rule))
    return out
