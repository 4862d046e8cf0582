"""DVC with a fast lock file: what the flows run as ``python -m icml25 dvc <args>`` instead of ``dvc <args>``.

Every ``dvc repro`` of a stage rewrites dvc.lock, and DVC 3 does that by parsing the whole lock file with
ruamel.yaml's round-trip parser (pure Python, built to keep comments) and dumping it again: about 1.4 s for this
project's 145 KB lock file, most of what DVC costs per stage. A lock file has no comments to keep (DVC writes it
whole), so :func:`patched` reads and writes *lock files only* with ruamel's safe loader and emitter (the libyaml
C extension, ruamel.yaml.clib): about 0.35 s for the same file. The bytes written are the ones DVC writes
(tested on the project's dvc.lock and on lock entries with every kind of value a lock file holds: floats,
strings that need quotes, lists, nested params, booleans, null); every other file DVC modifies (dvc.yaml and
.dvc files, which may carry comments) keeps DVC's own round trip. Without the C extension nothing is patched.

Plain ``dvc`` stays correct on the same checkout: the two write the same bytes.
"""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Iterator
from pathlib import PurePath
from typing import Any


def _fast_yaml():
    from ruamel.yaml import YAML

    yaml = YAML(typ="safe")
    if "CParser" not in getattr(yaml.Parser, "__name__", ""):
        return None  # no ruamel.yaml.clib: the pure-Python safe path is no faster than DVC's
    return yaml


def load_lock(text: str) -> dict:
    """A lock file's text as plain Python values (the safe loader)."""
    yaml = _fast_yaml() or _stock_yaml(typ="safe")
    return yaml.load(text) or {}


def dump_lock(data: Any) -> str:
    """A lock file's text as DVC writes it: by libyaml's emitter where that writes the same bytes as ruamel's
    round-trip emitter (DVC's), else (:func:`_emits_alike`) by DVC's own dumper."""
    yaml = _fast_yaml()
    if yaml is None or not _emits_alike(data):
        from dvc.utils.serialize._yaml import _dump

        out = io.StringIO()
        _dump(data, out)
        return out.getvalue()
    yaml.default_flow_style = False
    yaml.sort_base_mapping_type_on_output = False
    out = io.StringIO()
    yaml.dump(_plain(data), out)
    return out.getvalue()


def _emits_alike(data: Any) -> bool:
    """Whether the two emitters agree on ``data``: they differ on a null (``key:`` against ``key: ``), a string
    that spans lines (quoted against folded) and an object met twice (an anchor against a copy)."""
    seen: set[int] = set()
    stack = [data]
    while stack:
        value = stack.pop()
        if value is None:
            return False
        if isinstance(value, str):
            if "\n" in value or "\r" in value:
                return False
        elif isinstance(value, dict | list | tuple):
            if id(value) in seen:
                return False
            seen.add(id(value))
            if isinstance(value, dict):
                stack.extend(value.keys())
                stack.extend(value.values())
            else:
                stack.extend(value)
    return True


def _plain(value: Any) -> Any:
    """Mappings as plain dicts, in their order (DVC builds lock entries from OrderedDicts, which the safe
    emitter would tag ``!!omap``), sequences as lists."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _stock_yaml(typ: str):
    from ruamel.yaml import YAML

    return YAML(typ=typ)


def _is_lock(path: Any) -> bool:
    return PurePath(os.fspath(path)).suffix == ".lock"


@contextlib.contextmanager
def patched() -> Iterator[bool]:
    """Within the block, DVC reads and writes lock files through :func:`load_lock` / :func:`dump_lock`
    (module docstring). Yields whether the patch applies (False without ruamel.yaml.clib)."""
    import dvc.dvcfile as dvcfile
    from dvc.utils.serialize import _common

    if _fast_yaml() is None:
        yield False
        return
    stock = dvcfile.modify_yaml

    @contextlib.contextmanager
    def modify_yaml(path, fs=None):
        if not _is_lock(path):
            with stock(path, fs=fs) as data:
                yield data
            return
        exists = fs.exists(os.fspath(path)) if fs else os.path.exists(path)
        data = _common._load_data(path, parser=lambda text, _p: load_lock(text), fs=fs) if exists else {}
        yield data
        open_fn = fs.open if fs else open
        with open_fn(path, "w+", encoding="utf-8") as fd:
            fd.write(dump_lock(data))

    dvcfile.modify_yaml = modify_yaml
    try:
        yield True
    finally:
        dvcfile.modify_yaml = stock


def main(argv: list[str]) -> int:
    """``dvc <argv>`` in this process with :func:`patched`; DVC's exit status."""
    os.environ.setdefault("DVC_NO_ANALYTICS", "1")
    from dvc.cli import main as dvc_main

    with patched():
        return int(dvc_main(argv) or 0)
