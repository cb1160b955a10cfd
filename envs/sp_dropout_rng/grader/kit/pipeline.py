"""Launching the workspace pipeline the way its README documents, with the observer on.

Single scenarios run a fresh ``torchrun --standalone -m seqmodel.train``; groups fork their
ranks from the warm launcher of the gym's harness library (``warm_launch.py``, see
``harness.py``).
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import add_to_path
from scenario import Scenario

BASE_CONFIG = "configs/tp2-sp.toml"
#: What ``torchrun`` runs on every rank: ``python -m seqmodel.train --config BASE ...``.
MODULE = "seqmodel.train"
#: Libraries a warm launcher imports once for a scenario group (what the pipeline imports).
PRELOAD = ["torch", "torch.distributed", "megatron.core", "megatron.core.parallel_state",
           "megatron.core.tensor_parallel"]
#: The observer (``observe/dropout_observer.py``): on ``PYTHONPATH`` through its
#: ``sitecustomize``, and started explicitly in ranks forked from a warm launcher.
OBSERVE_DIR = Path(__file__).resolve().parent / "observe"
OBSERVER_SETUP = "dropout_observer:install_from_env"


add_to_path()
import warm_launch  # noqa: E402 - its folder is only known at run time

WarmLauncher = warm_launch.WarmLauncher


@dataclass(frozen=True)
class RunResult:
    """How the launched job ended, and where its combined output went."""

    returncode: int | None
    timed_out: bool
    started: float
    ended: float
    log_path: Path


def overrides(sc: Scenario, output_dir: Path) -> list[str]:
    """Config overrides (README keys) that pin everything the judge's step depends on."""
    pinned = [f"run_name={sc.name}", f"output_dir={output_dir}", f"train.steps={sc.steps}"]
    if sc.config == "shipped":
        return pinned
    return pinned + [
        f"parallel.tensor_model_parallel_size={sc.tp}",
        f"parallel.sequence_parallel={str(sc.sequence_parallel).lower()}",
        f"model.input_dim={sc.input_dim}",
        f"model.hidden_size={sc.hidden_size}",
        f"model.ffn_hidden_size={sc.ffn_hidden_size}",
        f"model.num_layers={sc.num_layers}",
        f"model.output_dim={sc.output_dim}",
        f"model.hidden_dropout={sc.hidden_dropout}",
        f"model.embed_dropout={sc.embed_dropout}",
        f"model.bf16={str(sc.bf16).lower()}",
        f"data.seq_length={sc.seq_length}",
        f"data.batch_size={sc.batch_size}",
        f"data.seed={sc.data_seed}",
        f"train.lr={sc.lr}",
        f"train.seed={sc.seed}",
    ]


def command(sc: Scenario, args: list[str]) -> list[str]:
    """``torchrun --standalone --nproc_per_node=TP -m seqmodel.train --config ...``."""
    return [sys.executable, "-m", "torch.distributed.run", "--standalone",
            f"--nproc_per_node={sc.tp}", "-m", MODULE, "--config", BASE_CONFIG, *args]


def launch_env(backend: str) -> dict[str, str]:
    """The environment a warm launcher and the job's ranks start from (observer inert)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(OBSERVE_DIR), *([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])])
    env["TRAINFAIL_BACKEND"] = backend
    env.setdefault("OMP_NUM_THREADS", "1")
    env["PYTHONUNBUFFERED"] = "1"
    return env


def job_env(sc: Scenario, observe_dir: Path) -> dict[str, str]:
    """The job's environment: the observer switched on for ``sc.steps`` optimizer steps, with
    its autocast probe when the scenario's config asks for bf16."""
    env = launch_env(sc.backend)
    env["TRAINFAIL_OBSERVE_DIR"] = str(observe_dir)
    env["TRAINFAIL_OBSERVE_STEPS"] = str(sc.steps)
    if sc.bf16:
        env["TRAINFAIL_OBSERVE_AUTOCAST"] = "record"
    return env


def run_pipeline(sc: Scenario, workspace: Path, args: list[str], log_path: Path, observe_dir: Path,
                 launcher: Any | None = None) -> RunResult:
    """Run the job to completion or its time limit (whole group killed).

    With a ``launcher`` (a ``WarmLauncher``, for scenario groups) the ranks are forked from its
    warm server instead of a fresh ``torchrun``; same module, arguments and rank environment.
    """
    env = job_env(sc, observe_dir)
    if launcher is None:
        ended = warm_launch.launch_cold(command(sc, args), workspace, env, log_path, sc.run_timeout_s)
    else:
        ended = launcher.launch(MODULE, ["--config", BASE_CONFIG, *args], sc.tp, workspace, env,
                                log_path, sc.run_timeout_s, setup=OBSERVER_SETUP)
    return RunResult(ended.returncode, ended.timed_out, ended.started, ended.ended, log_path)
