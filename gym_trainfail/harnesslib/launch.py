"""Launching a workspace pipeline the way its README documents (run phase; untrusted side).

A case describes its entry point once, as a :class:`Pipeline`: the module every rank runs
(``python -m MODULE``), the config file and how overrides are passed, the libraries a warm
launcher imports once, and the observers started in every rank. :meth:`Pipeline.run` then runs
one scenario either as a fresh ``torchrun --standalone`` (:func:`warm_launch.launch_cold`) or
with its ranks forked from the group's warm launcher, with the same module, arguments and rank
environment either way, and answers a :class:`RunResult`.

Observers are ``module:function`` names called in each rank before the pipeline's module runs.
In a cold launch a ``sitecustomize`` (``harnesslib/observers/``, put first on the job's
``PYTHONPATH``) calls them at interpreter start-up; a warm launch calls the same list through
``start_observers.start_from_env``. They are inert outside the training job: the run kit sets
``TRAINFAIL_OBSERVERS`` only in the job's environment. The rest of the harness library is not
on the ranks' path. Standard library only.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__:  # imported as part of the package
    from . import warm_launch
else:  # imported from /harnesslib by a case's run kit
    import warm_launch  # type: ignore[no-redef,import-not-found,unused-ignore]

HERE = Path(__file__).resolve().parent
#: Rank-side code: the ``sitecustomize`` that starts observers in cold-launched ranks, and the
#: observer building blocks (``rank_observer``) a case's observers import.
OBSERVERS_DIR = HERE / "observers"
#: What a warm-launched rank calls before the pipeline's module (what the sitecustomize calls).
OBSERVE_SETUP = "start_observers:start_from_env"
#: The job environment variable naming the observers to start (``module:function``, comma-separated).
OBSERVERS_ENV = "TRAINFAIL_OBSERVERS"
#: Variables the gym's sandboxes set that a user's own launch would not: a pipeline must take its
#: rank count from the process group, so its jobs never see them.
GYM_ONLY_ENV = ("NPROC", "TRAINFAIL_DEVICES")


@dataclass(frozen=True)
class RunResult:
    """How a launched job ended (exit code ``None``: killed at its time limit) and where its
    combined output went."""

    returncode: int | None
    timed_out: bool
    started: float
    ended: float
    log_path: Path


def dotted(values: Mapping[str, Any]) -> list[str]:
    """``{"train.lr": 0.1}`` -> ``["train.lr=0.1"]``: the ``key=value`` overrides most configs
    take on the command line (booleans lower-case, as YAML and TOML write them)."""
    out = []
    for key, value in values.items():
        text = str(value).lower() if isinstance(value, bool) else str(value)
        out.append(f"{key}={text}")
    return out


def observe_settings(folder: Path, steps: int, **more: object) -> dict[str, str]:
    """The job settings that switch a ``rank_observer.RankObserver`` on (``Pipeline.run``'s
    ``observe``): its records go to ``folder``, it watches the first ``steps`` optimizer steps,
    and each of ``more`` becomes ``TRAINFAIL_OBSERVE_<NAME>`` (``full_every=4`` ->
    ``TRAINFAIL_OBSERVE_FULL_EVERY=4``) for the case's own observer to read."""
    settings = {"TRAINFAIL_OBSERVE_DIR": str(folder), "TRAINFAIL_OBSERVE_STEPS": str(int(steps))}
    settings.update({f"TRAINFAIL_OBSERVE_{name.upper()}": str(value) for name, value in more.items()})
    return settings


@dataclass(frozen=True)
class Pipeline:
    """A workspace's entry point, as its README says a user runs it."""

    #: What every rank runs: ``python -m MODULE``.
    module: str
    #: Arguments every launch starts with (e.g. ``["--config", "configs/train.yaml"]``).
    base_args: tuple[str, ...] = ()
    #: Libraries a warm launcher imports once for a scenario group (what the pipeline imports).
    preload: tuple[str, ...] = ("torch", "torch.distributed")
    #: Observers started in every rank (``module:function``) and the folders they are found in.
    observers: tuple[str, ...] = ()
    observer_path: tuple[Path, ...] = ()
    #: Variables every job gets (beyond the backend's).
    env: Mapping[str, str] = field(default_factory=dict)

    def launch_env(self, backend: str) -> dict[str, str]:
        """The environment a warm launcher and the job's ranks start from (observers inert)."""
        env = dict(os.environ)
        # replaced, not extended: the harness library the kit runs from stays off the ranks' path
        env["PYTHONPATH"] = os.pathsep.join([str(OBSERVERS_DIR), *(str(p) for p in self.observer_path)])
        env["TRAINFAIL_BACKEND"] = backend
        env.setdefault("OMP_NUM_THREADS", "1")
        env["PYTHONUNBUFFERED"] = "1"
        # the job sees what a user's torchrun gives it: not the device count the gym's run_job adds
        for name in (OBSERVERS_ENV, *GYM_ONLY_ENV):
            env.pop(name, None)
        env.update(self.env)
        return env

    def job_env(self, backend: str, observe: Mapping[str, str] | None = None) -> dict[str, str]:
        """The job's environment: the observers switched on with ``observe``'s settings."""
        env = self.launch_env(backend)
        if self.observers and observe is not None:
            env[OBSERVERS_ENV] = ",".join(self.observers)
            env.update(observe)
        return env

    def command(self, nproc: int, args: Sequence[str]) -> list[str]:
        """``torchrun --standalone --nproc_per_node=N -m MODULE BASE_ARGS ARGS``."""
        return [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}",
                "-m", self.module, *self.base_args, *args]  # fmt: skip

    def run(
        self,
        *,
        workspace: Path,
        args: Sequence[str],
        nproc: int,
        log_path: Path,
        timeout_s: float,
        backend: str = "gloo",
        warm: Any | None = None,
        observe: Mapping[str, str] | None = None,
        argv: Sequence[str] | None = None,
    ) -> RunResult:
        """Run the job to completion or ``timeout_s``, killing its whole process group then.

        With ``warm`` (the group's ``WarmLauncher``) the ranks are forked from its server;
        otherwise a fresh ``torchrun`` runs, or ``argv`` when the README launches some other
        way (a shell script): a warm launch then is not possible and ``warm`` is ignored."""
        env = self.job_env(backend, observe)
        if warm is None or argv is not None:
            command = list(argv) if argv is not None else self.command(nproc, args)
            ended = warm_launch.launch_cold(command, workspace, env, log_path, timeout_s)
        else:
            setup = OBSERVE_SETUP if env.get(OBSERVERS_ENV) else ""
            ended = warm.launch(self.module, [*self.base_args, *args], nproc, workspace, env, log_path, timeout_s,
                                setup=setup)  # fmt: skip
        return RunResult(ended.returncode, ended.timed_out, ended.started, ended.ended, log_path)
