"""Launching the workspace pipeline the way its README documents, with the observer on.

Single scenarios run a fresh ``torchrun --standalone -m surrogate.train``; groups fork their
ranks from the warm launcher of the gym's harness library (``warm_launch.py``), mounted at
``/harnesslib`` in grading sandboxes. Outside the gym, point ``$TRAINFAIL_HARNESSLIB`` at
``gym_trainfail/harnesslib``; a run from a clone of the gym repository finds it on its own.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fixtures import InputFiles
from scenario import Scenario

BASE_CONFIG = "configs/dp2.yaml"
#: What ``torchrun`` runs on every rank: ``python -m surrogate.train --config BASE ...``.
MODULE = "surrogate.train"
#: Libraries a warm launcher imports once for a scenario group (what the pipeline imports).
#: DeepSpeed imports its Muon optimizer module (and with it torch's inductor, about 2.5 s) lazily in
#: its optimizer sanity check: preloading it saves that on every rank of a group.
PRELOAD = ["torch", "torch.distributed", "deepspeed", "deepspeed.runtime.engine", "deepspeed.runtime.bf16_optimizer",
           "deepspeed.runtime.zero.muon.muon_optimizer", "yaml"]
#: The observer (``observe/step_observer.py``): on ``PYTHONPATH`` through its ``sitecustomize``,
#: and started explicitly in ranks forked from a warm launcher.
OBSERVE_DIR = Path(__file__).resolve().parent / "observe"
OBSERVER_SETUP = "step_observer:warm_setup"


def harnesslib_candidates() -> list[Path]:
    """``$TRAINFAIL_HARNESSLIB``, the gym's mount point, then the gym clone this kit sits in."""
    found = [Path(p) for p in [os.environ.get("TRAINFAIL_HARNESSLIB", "")] if p]
    found.append(Path("/harnesslib"))
    here = Path(__file__).resolve()
    if len(here.parents) > 4:  # <repo>/envs/zero1_boundary_microbatch/grader/kit/pipeline.py
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
        f"parallel.data_parallel_size={sc.devices}",
        f"model.input_dim={sc.input_dim}",
        f"model.hidden_size={sc.hidden_size}",
        f"model.num_layers={sc.num_layers}",
        f"model.output_dim={sc.output_dim}",
        f"model.init_checkpoint={files.init_path}",
        f"data.path={files.data_path}",
        f"data.micro_batch_size={sc.micro_rows}",
        f"data.gradient_accumulation_steps={sc.accumulation}",
        f"train.steps={sc.steps}",
        f"train.lr={sc.lr}",
        "precision.bf16=true",
        "precision.grad_accum_dtype=fp32",
        "deepspeed.gradient_clipping=0.0",
    ]


def command(sc: Scenario, args: list[str]) -> list[str]:
    """``torchrun --standalone --nproc_per_node=W -m surrogate.train --config ...``."""
    return [sys.executable, "-m", "torch.distributed.run", "--standalone",
            f"--nproc_per_node={sc.devices}", "-m", MODULE, "--config", BASE_CONFIG, *args]


def launch_env(backend: str) -> dict[str, str]:
    """The environment a warm launcher and the job's ranks start from (observer inert)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(OBSERVE_DIR), *([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])])
    env["TRAINFAIL_BACKEND"] = backend
    env.setdefault("OMP_NUM_THREADS", "1")
    env["PYTHONUNBUFFERED"] = "1"
    return env


def job_env(sc: Scenario, observe_dir: Path) -> dict[str, str]:
    """The job's environment: the observer switched on for ``sc.steps`` optimizer steps."""
    env = launch_env(sc.backend)
    env["TRAINFAIL_OBSERVE_DIR"] = str(observe_dir)
    env["TRAINFAIL_OBSERVE_STEPS"] = str(sc.steps)
    return env


def run_pipeline(sc: Scenario, workspace: Path, args: list[str], log_path: Path, observe_dir: Path,
                 launcher: Any | None = None) -> RunResult:
    """Run the job to completion or until the scenario's timeout, killing its whole group.

    With a ``launcher`` (a ``WarmLauncher``, for scenario groups) the ranks are forked from its
    warm server instead of a fresh ``torchrun``; same module, arguments and rank environment.
    """
    env = job_env(sc, observe_dir)
    if launcher is None:
        ended = warm_launch.launch_cold(command(sc, args), workspace, env, log_path, sc.run_timeout_s)
    else:
        ended = launcher.launch(MODULE, ["--config", BASE_CONFIG, *args], sc.devices, workspace, env,
                                log_path, sc.run_timeout_s, setup=OBSERVER_SETUP)
    return RunResult(ended.returncode, ended.timed_out, ended.started, ended.ended, log_path)
