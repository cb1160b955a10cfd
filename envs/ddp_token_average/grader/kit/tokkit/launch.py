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

import json
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
#: The most of the pipeline's architecture JSON that is read when a scenario sizes the model.
ARCHITECTURE_LIMIT_BYTES = 64 * 1024


@dataclass(frozen=True)
class RunPaths:
    """Files of one scenario run, all under the scenario's scratch directory."""

    data: Path
    output: Path
    observations: Path
    log: Path
    #: The architecture the job builds when the scenario sizes the model (``params.model``).
    model_config: Path


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


def pipeline_architecture(workspace: Path) -> dict[str, Any]:
    """The architecture JSON the README config names (``model.config``), as the pipeline would
    read it; ``{}`` when it cannot be read (the pipeline then fails to build the model, as it
    would at the shipped size)."""
    try:
        import yaml

        config = yaml.safe_load((workspace / CONFIG).read_text(encoding="utf-8"))
        with open(workspace / str(config["model"]["config"]), encoding="utf-8") as handle:
            raw = json.loads(handle.read(ARCHITECTURE_LIMIT_BYTES + 1))
    except Exception:  # noqa: BLE001 - the revision's files; its run fails on its own
        return {}
    return raw if isinstance(raw, dict) else {}


def write_model_config(scenario: Scenario, workspace: Path, target: Path) -> None:
    """The pipeline's architecture with the scenario's model size laid over it (``params.model``)."""
    if scenario.model is None:
        return
    architecture = pipeline_architecture(workspace)
    architecture.update(scenario.model.config_keys())
    target.write_text(json.dumps(architecture, indent=2) + "\n", encoding="utf-8")


def training_args(scenario: Scenario, paths: RunPaths) -> list[str]:
    """The pipeline's arguments: the README config and the scenario's overrides."""
    # The README's override of the architecture file, only when the scenario sizes the model.
    model = [f"model.config={paths.model_config}"] if scenario.model is not None else []
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
        *model,
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
