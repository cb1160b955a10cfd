"""Launch the workspace pipeline the way its README does, with the observer injected.

One scenario: a fresh ``torchrun``. A scenario group: ranks forked from a warm launcher that
imported torch and Transformers once (``warm_launch.py`` from the gym's harness library), with
the same module, arguments and environment, the observer installed in each rank before the
pipeline starts.

The harness library is mounted at ``/harnesslib`` in grading sandboxes. Outside them, point
``TRAINFAIL_HARNESSLIB`` at it (or put it on ``PYTHONPATH``); from a clone of the gym the
kit also finds ``gym_trainfail/harnesslib`` on its own.
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from tokkit.scenario import Scenario

KIT_DIR = Path(__file__).resolve().parent.parent


def harnesslib_candidates() -> list[Path]:
    """Where the harness library may be, in order of preference."""
    candidates = [Path(p) for p in (os.environ.get("TRAINFAIL_HARNESSLIB", ""), "/harnesslib") if p]
    if len(KIT_DIR.parents) > 3:  # envs/<case>/grader/kit inside a clone of the gym
        candidates.append(KIT_DIR.parents[3] / "gym_trainfail" / "harnesslib")
    return candidates


def _add_harnesslib() -> None:
    for folder in harnesslib_candidates():
        if (folder / "warm_launch.py").is_file():
            sys.path.append(str(folder))
            return


_add_harnesslib()
from warm_launch import Ended, WarmLauncher, launch_cold  # noqa: E402

#: What the pipeline imports that costs start-up time; a warm launcher imports it once.
PRELOAD = [
    "torch",
    "torch.distributed",
    "transformers",
    "transformers.trainer",
    "transformers.training_args",
    "transformers.models.gpt_neox.modeling_gpt_neox",
    "yaml",
]
MODULE = "sft.train"
OBSERVER_SETUP = "update_observer:install_from_env"

OBSERVE_DIR = KIT_DIR / "observe"
CONFIG = "configs/sft_tiny.yaml"


@dataclass(frozen=True)
class RunPaths:
    """Files of one scenario run, all under the scenario's scratch directory."""

    data: Path
    output: Path
    observations: Path
    log: Path


def torchrun_command() -> list[str]:
    """``torchrun`` of the running interpreter's environment (the README's launcher)."""
    beside = Path(sys.executable).with_name("torchrun")
    if beside.exists():
        return [str(beside)]
    on_path = shutil.which("torchrun")
    if on_path:
        return [on_path]
    return [sys.executable, "-m", "torch.distributed.run"]


def training_command(scenario: Scenario, paths: RunPaths) -> list[str]:
    """The README's launch line with the scenario's overrides."""
    return [
        *torchrun_command(),
        "--standalone",
        "--nproc_per_node",
        str(scenario.world_size),
        "-m",
        MODULE,
        *training_args(scenario, paths),
    ]


def training_args(scenario: Scenario, paths: RunPaths) -> list[str]:
    """The pipeline's arguments: the README config and the scenario's overrides."""
    return [
        "--config",
        CONFIG,
        f"data.train_file={paths.data}",
        f"training.per_device_train_batch_size={scenario.per_device_batch_size}",
        f"training.gradient_accumulation_steps={scenario.grad_accum}",
        f"training.seed={scenario.seed}",
        f"training.max_steps={scenario.steps}",
        # 0 turns clipping off; the judge's oracle clips by the same global norm otherwise.
        f"training.max_grad_norm={scenario.max_grad_norm!r}",
        f"training.output_dir={paths.output}",
    ]


def launcher_env(backend: str) -> dict[str, str]:
    """What a warm launcher starts with: the ranks' environment minus the observer's
    switches (a library may read a variable at import time, so these must match)."""
    env = dict(os.environ)
    python_path = [str(OBSERVE_DIR)]
    if env.get("PYTHONPATH"):
        python_path.append(env["PYTHONPATH"])
    env.update(
        PYTHONPATH=os.pathsep.join(python_path),
        TRAINFAIL_BACKEND=backend,
        OMP_NUM_THREADS="1",
        HF_HUB_OFFLINE="1",
        PYTHONUNBUFFERED="1",
    )
    return env


def training_env(scenario: Scenario, paths: RunPaths) -> dict[str, str]:
    """The sandbox environment plus the observer's switches."""
    env = launcher_env(scenario.backend)
    env.update(
        TRAINFAIL_OBSERVE_DIR=str(paths.observations),
        TRAINFAIL_OBSERVE_STEPS=str(scenario.steps),
        TRAINFAIL_DEVICES=str(scenario.world_size),
    )
    return env


def run_training(scenario: Scenario, paths: RunPaths, workspace: Path, launcher: WarmLauncher | None = None) -> Ended:
    """Run the job to completion or to the scenario's time limit (then kill its group)."""
    env = training_env(scenario, paths)
    if launcher is None:
        return launch_cold(training_command(scenario, paths), workspace, env, paths.log, scenario.train_timeout_s)
    return launcher.launch(
        MODULE,
        training_args(scenario, paths),
        scenario.world_size,
        workspace,
        env,
        paths.log,
        scenario.train_timeout_s,
        setup=OBSERVER_SETUP,
    )
