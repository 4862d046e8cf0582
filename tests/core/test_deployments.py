"""Where a deployment's flow run works, and which Prefect servers a worker trusts (no server needed: seconds).

* Every deployment's pull step enters the checkout that ``ICML25_CHECKOUT`` names in the *worker's* environment,
  read when the run starts: never the folder ``prefect deploy`` ran in (``{{ $PWD }}`` is resolved at deploy time,
  so a worker in another clone ran the flow in the deploying clone). The stored pull steps are built as
  ``prefect deploy`` builds them (its env placeholders resolved in the deploying shell) and run with Prefect's own
  ``run_steps``. A worker that names no checkout fails the run with one message saying how to name it; a flow that
  finds itself in another checkout than its worker's fails naming both.
* ``icml25 worker`` refuses a server on another host that it would reach without Prefect's API authentication
  (``PREFECT_API_AUTH_STRING``): anyone who reaches such a server runs commands on every worker.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import yaml

CHECKOUT_ENV = "ICML25_CHECKOUT"


def _checkout(path: Path) -> Path:
    path.mkdir(parents=True)
    (path / "dvc.yaml").write_text("stages: {}\n")
    (path / "params.yaml").write_text("papers: {}\n")
    return path.resolve()


def _as_deployed(steps: list, deployed_from: Path, monkeypatch) -> list:
    """The pull steps as `prefect deploy` stores them, run in ``deployed_from``: it resolves ``{{ $VAR }}``
    placeholders from its own environment (prefect/cli/deploy/_core.py: ``apply_values(pull_steps, ...)``)."""
    from prefect.utilities.templating import apply_values

    with monkeypatch.context() as m:
        m.setenv("PWD", str(deployed_from))
        m.delenv(CHECKOUT_ENV, raising=False)
        m.chdir(deployed_from)
        return apply_values(steps, {}, remove_notset=False)


def _run_pull_steps(steps: list, worker_env: dict[str, str], monkeypatch, start: Path) -> Path:
    """Prefect's own pull-step runner in a flow run whose worker has ``worker_env``; the folder it ends in.

    The steps open an API client (for ``{{ prefect.variables.* }}``, none here) that makes no request: an address
    nothing answers on keeps Prefect from starting a temporary server of its own."""
    from prefect.deployments.steps.core import run_steps
    from prefect.settings import PREFECT_API_URL, temporary_settings

    monkeypatch.delenv(CHECKOUT_ENV, raising=False)
    for key, value in worker_env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(start)  # the flow run starts in a temporary folder; monkeypatch restores the cwd after
    with temporary_settings(updates={PREFECT_API_URL: "http://127.0.0.1:9/api"}):
        asyncio.run(run_steps(steps, print_function=lambda *a, **k: None))
    return Path.cwd().resolve()


def _step_error(exc: BaseException) -> str:
    """What the flow run reports of a failed pull step: Prefect's StepExecutionError names the step, its cause
    says why (the workspace resolver hands both to the run: ``error_message`` and ``cause_message``)."""
    return f"{exc} {exc.__cause__ or ''}"


def _prefect_yaml_pull_steps(root: Path) -> list:
    from icml25.pipeline import generated

    return yaml.safe_load(generated(root)["prefect.yaml"])["pull"]


def test_prefect_yaml_runs_in_the_workers_checkout_not_the_deploying_one(root, tmp_path, monkeypatch):
    deployer = _checkout(tmp_path / "clone-a")
    worker = _checkout(tmp_path / "clone-b")
    start = _checkout(tmp_path / "flow-run-tmp")
    stored = _as_deployed(_prefect_yaml_pull_steps(root), deployer, monkeypatch)
    assert str(deployer) not in str(stored), stored  # nothing of the deploying clone is frozen in
    assert (
        _run_pull_steps(stored, {CHECKOUT_ENV: str(worker), "PWD": str(worker)}, monkeypatch, start) == worker
    )


def test_reproduce_on_worker_runs_in_the_workers_checkout(tmp_path, monkeypatch):
    from flows.distributed import PULL_STEPS

    worker = _checkout(tmp_path / "clone-b")
    start = _checkout(tmp_path / "flow-run-tmp")
    assert _run_pull_steps(PULL_STEPS, {CHECKOUT_ENV: str(worker)}, monkeypatch, start) == worker


@pytest.mark.parametrize("which", ["prefect.yaml", "reproduce-on-worker"])
def test_a_worker_that_names_no_checkout_fails_the_run_saying_how(which, root, tmp_path, monkeypatch):
    from flows.distributed import PULL_STEPS

    deployer = _checkout(tmp_path / "clone-a")
    start = _checkout(tmp_path / "flow-run-tmp")
    steps = PULL_STEPS if which != "prefect.yaml" else _prefect_yaml_pull_steps(root)
    stored = _as_deployed(steps, deployer, monkeypatch)
    with pytest.raises(Exception) as err:  # noqa: PT011 - Prefect's step runner decides the type
        _run_pull_steps(stored, {"PWD": str(deployer)}, monkeypatch, start)
    message = _step_error(err.value)
    assert CHECKOUT_ENV in message and "icml25 worker" in message and "prefect worker start" in message, (
        message
    )


def test_a_worker_checkout_that_is_no_checkout_is_named(tmp_path, monkeypatch):
    from flows.distributed import PULL_STEPS

    start = _checkout(tmp_path / "flow-run-tmp")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(Exception) as err:  # noqa: PT011
        _run_pull_steps(PULL_STEPS, {CHECKOUT_ENV: str(empty)}, monkeypatch, start)
    message = _step_error(err.value)
    assert f"{CHECKOUT_ENV}={empty}" in message and "dvc.yaml" in message, message


@pytest.mark.parametrize("flow", ["reproduce_paper", "reproduce_all"])
def test_a_flow_in_another_checkout_than_its_workers_fails_naming_both(flow, tmp_path, monkeypatch):
    """The run-time check behind the pull step: a deployment registered with another pull step (an older
    prefect.yaml's ``{{ $PWD }}``) moves the run elsewhere; the flow refuses before it takes any lock."""
    import flows.reproduce as reproduce

    elsewhere = _checkout(tmp_path / "clone-a")
    worker = _checkout(tmp_path / "clone-b")
    monkeypatch.setenv(CHECKOUT_ENV, str(worker))
    monkeypatch.chdir(elsewhere)
    fn = getattr(reproduce, flow).fn
    args = ("model_independence",) if flow == "reproduce_paper" else ()
    with pytest.raises(RuntimeError) as err:
        fn(*args)
    message = str(err.value)
    assert str(elsewhere) in message and str(worker) in message and "prefect deploy" in message, message
    assert not (elsewhere / ".dvc").exists()  # refused before the run lock (.dvc/tmp/icml25-run.lock)


def test_a_flow_in_its_workers_checkout_or_with_a_root_is_not_refused(tmp_path, monkeypatch):
    from flows.reproduce import _root

    elsewhere = _checkout(tmp_path / "clone-a")
    worker = _checkout(tmp_path / "clone-b")
    monkeypatch.setenv(CHECKOUT_ENV, str(worker))
    monkeypatch.chdir(worker)
    assert _root(None) == worker
    monkeypatch.chdir(elsewhere)
    assert _root(str(elsewhere)) == elsewhere  # `icml25 run` and reproduce-on-worker name their root
    monkeypatch.delenv(CHECKOUT_ENV)
    assert _root(None) == elsewhere  # no worker: the flow works where it was started


class _Spawned(Exception):
    """Raised instead of starting `prefect worker start`: the worker would have started."""


@pytest.fixture
def worker_cli(tmp_path, monkeypatch):
    """``icml25 worker [args]`` in a scratch checkout against ``url`` (with ``auth``: an auth string, or an API key
    ``pnu_...``), the worker process replaced by :class:`_Spawned`; returns the exit code or raises _Spawned."""
    from prefect.settings import PREFECT_API_AUTH_STRING, PREFECT_API_KEY, PREFECT_API_URL, temporary_settings

    import flows.workers as workers
    import icml25.store
    from flows.cli import main

    def spawn(cmd, **kwargs):
        raise _Spawned(kwargs.get("env", {}))

    monkeypatch.setattr(workers.procs, "spawn", spawn)
    monkeypatch.setattr(icml25.store, "configured_remote", lambda root, name=None: None)
    monkeypatch.chdir(_checkout(tmp_path / "clone"))

    def run(url: str, auth: str | None = None, *args: str) -> int:
        updates: dict = {PREFECT_API_URL: url}
        if auth:  # a Prefect Cloud API key (pnu_...) or a self-hosted server's auth string
            updates[PREFECT_API_KEY if auth.startswith("pnu_") else PREFECT_API_AUTH_STRING] = auth
        unset = {PREFECT_API_AUTH_STRING, PREFECT_API_KEY} - set(updates)
        with temporary_settings(updates=updates, restore_defaults=unset):
            return main(["worker", "--pool", "icml25", *args])

    return run


@pytest.mark.parametrize("url", ["http://10.0.0.7:4200/api", "http://prefect.example.org:4200/api"])
def test_icml25_worker_refuses_an_unauthenticated_server_elsewhere(worker_cli, url, capsys):
    assert worker_cli(url) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("icml25: error: "), err
    assert "PREFECT_API_AUTH_STRING" in err and "ssh -N -L" in err and "--allow-unauthenticated" in err, err


@pytest.mark.parametrize(
    "url,auth,args",
    [
        ("http://127.0.0.1:4200/api", None, ()),  # this machine, or an SSH tunnel's end
        ("http://localhost:4200/api", None, ()),
        ("http://[::1]:4200/api", None, ()),
        ("http://10.0.0.7:4200/api", "icml25:secret", ()),  # Prefect's basic authentication
        ("https://api.prefect.cloud/api/accounts/a/workspaces/w", "pnu_key", ()),  # Prefect Cloud's API key
        ("http://10.0.0.7:4200/api", None, ("--allow-unauthenticated",)),
    ],
)
def test_icml25_worker_starts_against_loopback_or_with_authentication(worker_cli, url, auth, args):
    with pytest.raises(_Spawned):
        worker_cli(url, auth, *args)
