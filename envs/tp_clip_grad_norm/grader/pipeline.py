"""Launching the workspace pipeline the way its README documents."""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

from fixtures import Fixtures
from scenario import Scenario

# The gym mounts its harness support code here (outside the gym: put it on PYTHONPATH).
sys.path.append("/harnesslib")
from warm_launch import WarmLauncher, launch_cold  # noqa: E402

BASE_CONFIG = "configs/tp2.yaml"
# torch 2.13's gloo can abort in static destructors after all Python code has run.
EXIT_ABORT_MARKER = "terminate called without an active exception"


@dataclass(frozen=True)
class RunResult:
    """How the launched job ended, and where its combined output went."""

    returncode: int | None
    timed_out: bool
    started: float
    ended: float
    log_path: Path

    def log_text(self) -> str:
        """The job's combined stdout/stderr."""
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def last_error_line(self) -> str:
        """The most informative line of the log for a one-line failure reason."""
        lines = [ln.strip() for ln in self.log_text().splitlines() if ln.strip()]
        for line in reversed(lines):
            if "Error" in line or "error:" in line or "Exception" in line:
                return line[:300]
        return lines[-1][:300] if lines else "(no output)"

    def exit_abort_only(self) -> bool:
        """True if the log shows the gloo exit abort and no Python traceback."""
        text = self.log_text()
        return EXIT_ABORT_MARKER in text and "Traceback" not in text


def overrides(sc: Scenario, fx: Fixtures, output_dir: Path) -> list[str]:
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
        f"model.init_checkpoint={fx.init_path}",
        f"data.path={fx.data_path}",
        f"data.batch_size={sc.batch_size}",
        f"train.steps={sc.steps}",
        f"train.lr={sc.lr}",
        f"deepspeed.gradient_clipping={sc.max_norm}",
    ]


#: What ``torchrun`` runs on every rank: ``python -m surrogate.train --config BASE ...``.
MODULE = "surrogate.train"
#: Libraries a warm launcher imports once for a scenario group (what the pipeline imports).
PRELOAD = ["torch", "torch.distributed", "deepspeed", "megatron.core",
           "megatron.core.parallel_state", "megatron.core.tensor_parallel", "yaml"]


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
                 launcher: WarmLauncher | None = None) -> RunResult:
    """Run the job to completion or until the scenario's timeout, killing its whole group.

    With a ``launcher`` (scenario groups) the ranks are forked from its warm server instead
    of a fresh ``torchrun``; same module, arguments and rank environment.
    """
    env = launch_env(sc.backend)
    if launcher is None:
        ended = launch_cold(command(sc, args), workspace, env, log_path, sc.run_timeout_s)
    else:
        ended = launcher.launch(MODULE, ["--config", BASE_CONFIG, *args], sc.tp, workspace, env,
                                log_path, sc.run_timeout_s)
    return RunResult(ended.returncode, ended.timed_out, ended.started, ended.ended, log_path)
