"""Launching the workspace pipeline the way its README documents.

The grader forks every launch's ranks from the warm launcher of the gym's harness library
(``warm_launch.py``, mounted at ``/harnesslib`` in grading sandboxes); without one (a run after
the warm launcher failed) a fresh ``torchrun --standalone -m surrogate.train`` runs them. Outside the gym, point
``$TRAINFAIL_HARNESSLIB`` at ``gym_trainfail/harnesslib``; a run from a clone of the gym
repository finds it on its own.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fixtures import InputFiles
from scenario import Scenario

BASE_CONFIG = "configs/tp2.yaml"
#: What ``torchrun`` runs on every rank: ``python -m surrogate.train --config BASE ...``.
MODULE = "surrogate.train"
#: Libraries a warm launcher imports once for a scenario group (what the pipeline imports).
PRELOAD = ["torch", "torch.distributed", "deepspeed", "megatron.core",
           "megatron.core.parallel_state", "megatron.core.tensor_parallel", "yaml"]


def harnesslib_candidates() -> list[Path]:
    """``$TRAINFAIL_HARNESSLIB``, the gym's mount point, then the gym clone this kit sits in."""
    found = [Path(p) for p in [os.environ.get("TRAINFAIL_HARNESSLIB", "")] if p]
    found.append(Path("/harnesslib"))
    here = Path(__file__).resolve()
    if len(here.parents) > 4:  # <repo>/envs/tp_clip_grad_norm/grader/kit/pipeline.py
        found.append(here.parents[4] / "gym_trainfail" / "harnesslib")
    return found


def import_harnesslib() -> Any:
    """The ``warm_launch`` module from the first harness-library folder that has it."""
    for folder in harnesslib_candidates():
        if (folder / "warm_launch.py").is_file():
            sys.path.append(str(folder))
            break
    import warm_launch  # noqa: PLC0415 - its folder is only known at run time

    return warm_launch


warm_launch = import_harnesslib()
WarmLauncher = warm_launch.WarmLauncher


@dataclass(frozen=True)
class RunResult:
    """How the launched job ended, and where its combined output went."""

    returncode: int | None
    timed_out: bool
    started: float
    ended: float
    log_path: Path


def overrides(sc: Scenario, files: InputFiles, output_dir: Path) -> list[str]:
    """Config overrides (README keys) that pin everything the reference depends on."""
    return [
        f"run_name={sc.name}",
        f"output_dir={output_dir}",
        f"parallel.tensor_model_parallel_size={sc.tp}",
        f"model.input_dim={sc.input_dim}",
        f"model.hidden_size={sc.hidden_size}",
        f"model.ffn_hidden_size={sc.ffn_hidden_size}",
        f"model.num_layers={sc.num_layers}",
        f"model.output_dim={sc.output_dim}",
        f"model.init_checkpoint={files.init_path}",
        f"data.path={files.data_path}",
        f"data.batch_size={sc.batch_size}",
        f"train.steps={sc.steps}",
        f"train.lr={sc.lr}",
        f"deepspeed.gradient_clipping={sc.max_norm}",
    ]


def command(sc: Scenario, args: list[str]) -> list[str]:
    """``torchrun --standalone --nproc_per_node=TP -m surrogate.train --config ...``."""
    return [sys.executable, "-m", "torch.distributed.run", "--standalone",
            f"--nproc_per_node={sc.tp}", "-m", MODULE, "--config", BASE_CONFIG, *args]


def launch_env(backend: str) -> dict[str, str]:
    """The environment the job's ranks run with."""
    env = dict(os.environ)
    env["TRAINFAIL_BACKEND"] = backend
    env.setdefault("OMP_NUM_THREADS", "1")
    env["PYTHONUNBUFFERED"] = "1"
    return env


def run_pipeline(sc: Scenario, workspace: Path, args: list[str], log_path: Path,
                 launcher: Any | None = None) -> RunResult:
    """Run the job to completion or until the scenario's timeout, killing its whole group.

    With a ``launcher`` (a ``WarmLauncher``) the ranks are forked from
    its warm server instead of a fresh ``torchrun``; same module, arguments and rank
    environment.
    """
    env = launch_env(sc.backend)
    if launcher is None:
        ended = warm_launch.launch_cold(command(sc, args), workspace, env, log_path, sc.run_timeout_s)
    else:
        ended = launcher.launch(MODULE, ["--config", BASE_CONFIG, *args], sc.tp, workspace, env,
                                log_path, sc.run_timeout_s)
    return RunResult(ended.returncode, ended.timed_out, ended.started, ended.ended, log_path)
