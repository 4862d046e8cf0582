"""Loading and checking params.yaml (and the profile overlays) with OmegaConf.

params.yaml holds literal values only (DVC reads it too, and ``${...}`` there would be DVC's own templating).
Each paper declares one dataclass per params section in ``stages/<slug>.py``; :func:`check_paper` walks the
user's values against it and reports the first problem with its full key path, e.g.
``papers.model_independence.train.steps: must be >= 1, got -5``, before any work starts.

Field constraints go into ``dataclasses.field(metadata=...)``: ``ge``/``gt``/``le`` bounds and ``choices``. A
float must be finite unless its metadata says ``allow_nonfinite: True``.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from pathlib import Path
from typing import Any

from .errors import UserError

PROFILES = ("smoke", "quick", "paper")


def _yaml_problem(path: Path, exc: Exception) -> str:
    """One line for a YAML error: ``file:line:column: problem`` (PyYAML's marks are 0-based), not its traceback."""
    mark = getattr(exc, "problem_mark", None)
    problem = " ".join(str(getattr(exc, "problem", None) or exc).split())
    context = getattr(exc, "context", None)
    if context and mark is not None:
        problem = f"{' '.join(str(context).split())}: {problem}"
    where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)
    return f"{where}: invalid YAML: {problem}"


def load_yaml(path: Path) -> dict[str, Any]:
    import yaml
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    if not path.exists():
        raise UserError(f"{path}: no such file")
    try:
        cfg = OmegaConf.load(path)
    except yaml.YAMLError as exc:  # syntax errors, duplicate keys (PyYAML's, not ValueError subclasses)
        raise UserError(_yaml_problem(path, exc)) from None
    except (OmegaConfBaseException, ValueError, OSError) as exc:
        raise UserError(f"{path}: cannot be read as YAML: {' '.join(str(exc).split())}") from None
    data = OmegaConf.to_container(cfg, resolve=False)
    if not isinstance(data, dict):
        raise UserError(f"{path}: the top level must be a mapping")
    return data


def load_params(root: Path) -> dict[str, Any]:
    """params.yaml of a checkout as plain containers (values are literal, nothing to resolve); it must name the
    profile and hold a ``papers`` mapping (an empty file is an error, not a checkout with no papers)."""
    path = root / "params.yaml"
    data = load_yaml(path)
    missing = [k for k in ("profile", "papers") if k not in data]
    if missing:
        raise UserError(f"{path}: missing top-level key(s) {', '.join(missing)} (is the file empty?)")
    if not isinstance(data["papers"], dict):
        raise UserError(f"{path}: papers must be a mapping of slug -> sections, got {data['papers']!r}")
    return data


def merged_profile(root: Path, profile: str) -> dict[str, Any]:
    """params.yaml with ``profiles/<profile>.yaml`` merged over it (``quick`` is params.yaml itself)."""
    from omegaconf import OmegaConf

    if profile not in PROFILES:
        raise UserError(f"unknown profile {profile!r}; profiles are {', '.join(PROFILES)}")
    base = load_params(root)
    if profile == "quick":
        return base
    overlay = load_yaml(root / "profiles" / f"{profile}.yaml")
    unknown = set(overlay.get("papers", {})) - set(base.get("papers", {}))
    if unknown:
        raise UserError(f"profiles/{profile}.yaml: papers {sorted(unknown)} are not in params.yaml")
    merged = OmegaConf.to_container(OmegaConf.merge(base, overlay), resolve=False)
    assert isinstance(merged, dict)
    merged["profile"] = profile
    return merged


def implemented(params: dict[str, Any]) -> list[str]:
    """Slugs with a params section, in params.yaml order (what dvc.yaml's foreach iterates over)."""
    return list((params.get("papers") or {}).keys())


# ---------------------------------------------------------------------------------------------------- checking


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", None) or str(tp).replace("typing.", "")


def _check_value(path: str, value: Any, tp: Any, meta: typing.Mapping[str, Any]) -> None:
    origin = typing.get_origin(tp)
    if origin is typing.Literal:
        choices = typing.get_args(tp)
        if value not in choices:
            raise UserError(f"{path}: must be one of {list(choices)}, got {value!r}")
        return
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        if value is None and type(None) in args:
            return
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                _check_value(path, value, arg, meta)
                return
            except UserError as exc:
                errors.append(str(exc))
        raise UserError(errors[0] if errors else f"{path}: invalid value {value!r}")
    if origin in (list, tuple):
        (item_tp, *_) = typing.get_args(tp) or (Any,)
        if not isinstance(value, list | tuple):
            raise UserError(f"{path}: must be a list, got {type(value).__name__} {value!r}")
        for i, item in enumerate(value):
            _check_value(f"{path}[{i}]", item, item_tp, meta)
        return
    if dataclasses.is_dataclass(tp):
        check_section(path, value, tp)
        return
    if tp is Any:
        return
    if tp is float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
    elif tp is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    else:
        ok = isinstance(value, tp)
    if not ok:
        raise UserError(f"{path}: must be {_type_name(tp)}, got {type(value).__name__} {value!r}")
    if tp is float and not math.isfinite(value) and not meta.get("allow_nonfinite", False):
        raise UserError(f"{path}: must be a finite number, got {value!r}")  # `.inf`, `.nan` are YAML floats
    for key, test, word in (
        ("ge", lambda v, b: v >= b, ">="),
        ("gt", lambda v, b: v > b, ">"),
        ("le", lambda v, b: v <= b, "<="),
        ("lt", lambda v, b: v < b, "<"),
    ):
        if key in meta and not test(value, meta[key]):
            raise UserError(f"{path}: must be {word} {meta[key]}, got {value!r}")
    if "choices" in meta and value not in meta["choices"]:
        raise UserError(f"{path}: must be one of {list(meta['choices'])}, got {value!r}")


def check_section(path: str, values: Any, schema: type) -> None:
    """Check one mapping against a dataclass schema: unknown keys, missing keys, types and bounds."""
    if values is None:
        values = {}
    if not isinstance(values, dict):
        raise UserError(f"{path}: must be a mapping, got {type(values).__name__} {values!r}")
    hints = typing.get_type_hints(schema)
    fields = {f.name: f for f in dataclasses.fields(schema)}
    for key in values:
        if key not in fields:
            known = ", ".join(fields) or "none"
            raise UserError(f"{path}.{key}: unknown key (known keys: {known})")
    for name, f in fields.items():
        if name not in values:
            has_default = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
            if not has_default:
                raise UserError(f"{path}.{name}: missing")
            continue
        _check_value(f"{path}.{name}", values[name], hints[name], f.metadata)


def check_paper(params: dict[str, Any], slug: str, schema: dict[str, type]) -> None:
    """Check ``papers.<slug>`` of a params tree against the paper's section schemas (all five, plus seed)."""
    from .registry import STAGES

    prefix = f"papers.{slug}"
    section = (params.get("papers") or {}).get(slug)
    if not isinstance(section, dict):
        raise UserError(f"{prefix}: missing from params.yaml")
    allowed = set(STAGES) | {"seed"}
    for key in section:
        if key not in allowed:
            raise UserError(f"{prefix}.{key}: unknown key (known keys: seed, {', '.join(STAGES)})")
    for name in STAGES:
        if name not in section:
            raise UserError(
                f"{prefix}.{name}: missing (every implemented paper has all five sections; use {{}})"
            )
        check_section(f"{prefix}.{name}", section[name], schema.get(name, Empty))
    _check_value(f"{prefix}.seed", section.get("seed"), int, {"ge": 0})
    if params.get("profile") not in PROFILES:
        raise UserError(f"profile: must be one of {list(PROFILES)}, got {params.get('profile')!r}")


@dataclasses.dataclass(frozen=True)
class Empty:
    """The schema of a section that takes no parameters."""


def build_section(schema: type, values: dict[str, Any] | None) -> Any:
    """A frozen dataclass instance of a checked section (what a stage sees as ``ctx.params.<section>``)."""
    values = dict(values or {})
    hints = typing.get_type_hints(schema)
    kwargs = {}
    for f in dataclasses.fields(schema):
        if f.name in values:
            v = values[f.name]
            if dataclasses.is_dataclass(hints[f.name]):
                v = build_section(hints[f.name], v)
            elif isinstance(v, list):
                v = tuple(v)
            kwargs[f.name] = v
    return schema(**kwargs)
