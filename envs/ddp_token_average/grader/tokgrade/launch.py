"""Launch the workspace pipeline the way its README does, with the observer injected.

One scenario: a fresh ``torchrun``. A scenario group: ranks forked from a warm launcher that
imported torch and Transformers once (``/harnesslib/warm_launch.py``), with the same module,
arguments and environment, the observer installed in each rank before the pipeline starts.
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from tokgrade.scenario import Scenario

# The gym mounts its harness support code here (outside the gym: put it on PYTHONPATH).
sys.path.append("/harnesslib")
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

OBSERVE_DIR = Path(__file__).resolve().parent.parent / "observe"
CONFIG = "configs/sft_tiny.yaml"


@dataclass(frozen=True)
class RunPaths:
    """Files of one scenario run, all under a private scratch directory."""

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
        # No clipping: the recorded gradient is then the raw accumulated gradient.
        "training.max_grad_norm=0.0",
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


def run_training(
    scenario: Scenario, paths: RunPaths, workspace: Path, launcher: WarmLauncher | None = None
) -> Ended:
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


def log_tail(path: Path, lines: int = 6, limit: int = 400) -> str:
    """The last meaningful lines of the job log, shortened for a one-line reason."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "(no log)"
    kept = [line.strip() for line in text.splitlines() if line.strip()][-lines:]
    return " | ".join(kept)[-limit:]
