"""Run phase of TrainFail/DDPTokenAverage-v0: train each scenario, leave artifacts, judge nothing.

    python /kit/run.py --scenarios /io/scenarios.json --out-dir /out

run from the revision's workspace (the working directory). For each scenario it draws the
scenario's data, launches the pipeline the README way (``torchrun -m sft.train``) on a fresh
copy of the workspace with the update observer injected, and leaves under ``OUT/<scenario>/``
what the judge reads (``tokkit/layout.py``): the observer's rank records, the model the pipeline
saved, the end of the job log, ``job.json`` and ``timings.json``.

Every scenario, one alone too, is launched through one warm launcher (torch and Transformers
imported once: the imports dominate a one-scenario launch); if it cannot start, or dies, the
remaining scenarios get a cold ``torchrun`` each. Qualification still compares one-scenario
runs with groups.

This phase is untrusted: the revision's code runs beside it with the same powers. It decides
nothing; its exit code and everything it writes are data for the judge.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import stat
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tokkit import datagen, layout  # noqa: E402
from tokkit.launch import PRELOAD, RunPaths, launcher_env, run_training, write_model_config  # noqa: E402
from tokkit.scenario import Scenario, load_scenarios  # noqa: E402
from warm_launch import Ended, WarmLauncher  # noqa: E402 - found by tokkit.launch

#: The most one rank record or the saved model may weigh when copied out (the case's model
#: is tiny: a few MB at most). A scenario that sizes the model raises it (``copy_limit``).
COPY_LIMIT_BYTES = 256 * 1024 * 1024


@dataclass
class Job:
    """What ``job.json`` says about one scenario's launch."""

    launcher: str
    returncode: int | None = None
    timed_out: bool = False
    error: str = ""
    timings: dict[str, float] = field(default_factory=dict)


def copy_regular(source: Path, target: Path, limit: int = COPY_LIMIT_BYTES) -> bool:
    """Copy ``source`` if it is a regular file of at most ``limit`` bytes (no links, FIFOs)."""
    try:
        info = os.lstat(source)
    except OSError:
        return False
    if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target, follow_symlinks=False)
    return True


def copy_log_tail(source: Path, target: Path, limit: int = layout.LOG_LIMIT_BYTES) -> None:
    """Keep the last ``limit`` bytes of the job log."""
    try:
        info = os.lstat(source)
    except OSError:
        return
    if not stat.S_ISREG(info.st_mode):
        return
    with open(source, "rb") as handle:
        handle.seek(max(0, info.st_size - limit))
        target.write_bytes(handle.read(limit))


def copy_limit(scenario: Scenario) -> int:
    """COPY_LIMIT_BYTES, or twice what a rank record of the scenario's model size holds when that
    is more: float32 parameters and gradients per update, and the final parameters."""
    if scenario.model is None:
        return COPY_LIMIT_BYTES
    floats = scenario.model.parameter_count(datagen.VOCAB_SIZE) * (2 * scenario.steps + 1)
    return max(COPY_LIMIT_BYTES, 2 * 4 * floats)


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Small JSON document, indented."""
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def scenario_paths(scratch: Path) -> RunPaths:
    """Where one scenario's job reads its data and writes its outputs."""
    return RunPaths(
        data=scratch / "train.jsonl",
        output=scratch / "outputs",
        observations=scratch / "observations",
        log=scratch / "train.log",
        model_config=scratch / "model_config.json",
    )


def prepare(scenario: Scenario, workspace: Path, scratch: Path) -> RunPaths:
    """A fresh copy of the workspace and the scenario's data, under ``scratch``."""
    paths = scenario_paths(scratch)
    shutil.copytree(workspace, scratch / "workspace", symlinks=True)
    datagen.write_jsonl(datagen.generate(scenario.data), paths.data)
    write_model_config(scenario, scratch / "workspace", paths.model_config)
    return paths


def collect(scenario: Scenario, paths: RunPaths, out: Path, job: Job) -> None:
    """Copy what the judge reads into ``out`` (the scenario's artifact folder)."""
    limit = copy_limit(scenario)
    for rank in range(scenario.world_size):
        name = layout.rank_record_name(rank)
        copy_regular(paths.observations / name, out / layout.RECORDS_DIR / name, limit)
    copy_regular(paths.output / layout.MODEL_FILE, out / layout.MODEL_FILE, limit)
    copy_log_tail(paths.log, out / layout.LOG_FILE)
    write_json(out / layout.JOB_FILE, {
        "launcher": job.launcher,
        "returncode": job.returncode,
        "timed_out": job.timed_out,
        "error": job.error,
    })  # fmt: skip
    write_json(out / layout.TIMINGS_FILE, {k: round(v, 3) for k, v in job.timings.items()})


def run_scenario(
    scenario: Scenario, workspace: Path, scratch: Path, out: Path, launcher: WarmLauncher | None, preload_s: float
) -> Job:
    """Prepare, train and collect one scenario; a failure of the kit itself lands in ``error``.

    ``preload_s`` is the warm launcher's start-up, counted with the group's first scenario.
    """
    began = time.time()
    job = Job(launcher="warm" if launcher else "cold", timings={"preload_s": preload_s})
    paths = scenario_paths(scratch)
    try:
        paths = prepare(scenario, workspace, scratch)
        ended: Ended = run_training(scenario, paths, scratch / "workspace", launcher)
        job.returncode, job.timed_out = ended.returncode, ended.timed_out
        job.timings.update(
            prepare_s=ended.started - began,
            started=ended.started,
            ended=ended.ended,
            run_s=ended.ended - ended.started,
        )
    except Exception as exc:  # noqa: BLE001 - reported to the judge, which decides
        job.error = f"{type(exc).__name__}: {exc}"[:400]
        traceback.print_exc()
    collect(scenario, paths, out, job)
    return job


def start_launcher(scenarios: list[Scenario], root: Path) -> WarmLauncher | None:
    """A warm launcher for the scenarios, or None (cold launches) when there are none or it cannot start."""
    if not scenarios:
        return None
    try:
        return WarmLauncher(PRELOAD, launcher_env(scenarios[0].backend), root / "launcher.log")
    except Exception:  # noqa: BLE001 - every scenario still runs, cold
        traceback.print_exc()
        return None


def run_all(scenarios: list[Scenario], workspace: Path, out_dir: Path, root: Path) -> None:
    """Every scenario in order, each on its own copy of the workspace."""
    launcher = start_launcher(scenarios, root)
    preload_s = launcher.startup_s if launcher else 0.0
    try:
        for scenario in scenarios:
            out = out_dir / scenario.name
            out.mkdir(parents=True, exist_ok=True)
            job = run_scenario(scenario, workspace, root / scenario.name, out, launcher, preload_s)
            preload_s = 0.0
            if launcher is not None and launcher.proc.poll() is not None:
                launcher.close()  # it died: the rest go cold
                launcher = None
            print(f"{scenario.name}: {job.launcher} launch ended with code {job.returncode} {job.error}".rstrip())
            if not os.environ.get("TRAINFAIL_KEEP_SCRATCH"):
                shutil.rmtree(root / scenario.name, ignore_errors=True)
    finally:
        if launcher is not None:
            launcher.close()


def main(argv: list[str] | None = None) -> int:
    """Entry point of the run phase."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", type=Path, required=True)
    parser.add_argument("--out-dir", type=Path, required=True)
    args = parser.parse_args(argv)
    scenarios = load_scenarios(args.scenarios)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="tokavg-run-"))
    try:
        run_all(scenarios, Path.cwd(), args.out_dir, root)
    finally:
        if not os.environ.get("TRAINFAIL_KEEP_SCRATCH"):
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
