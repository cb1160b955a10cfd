"""Grader harness for TrainFail/FSDPSourceCoherence-v0.

    cd <workspace copy> && python <case>/grader/harness.py --scenario s.json --out o.json
    python harness.py --scenario s.json --out-dir DIR           # oracle only (grader.oracle_command)
    python harness.py --scenario s.json --out o.json --oracle DIR   # grade with a cached oracle
    python harness.py --scenarios list.json --out-dir OUTCOMES [--oracle ROOT]   # a scenario group

A scenario group (grader.group_command) grades each scenario as below on its own copy of the
workspace, with the pipeline's ranks forked from a warm launcher that imported torch and
Transformers once (/harnesslib/warm_launch.py); cached oracles are at ROOT/<scenario>. A
scenario the group could not judge gets no outcome and is graded on its own by the gym.

1. Oracle launch (one torchrun): publish both authentic sources A and B, then run the frozen
   recipe from each, every rank loading the same source -> two same-topology oracles. It
   never runs workspace code, so the grader may compute it once per scenario and topology
   (`--out-dir`) and hand it to every revision read-only (`--oracle`); without `--oracle`
   the harness computes it itself.
2. Lay out the scenario's caches (shared mirror, node-local copies) from those sources.
3. Launch the workspace pipeline as its README documents, with the state probe injected
   through PYTHONPATH; it records the initial model and the full state after the updates.
4. Pass iff the run's state (initial model, parameters, buffers, gradients, optimizer state,
   per-rank RNG) is bitwise equal to exactly one oracle, its initial model is that source
   tensor by tensor, and, where the scenario publishes one revision only, it is that one.
"""
# TRAINFAIL-CANARY-7ef2958c6a8fcc776795aab5adbc7ee3
from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import sys
import tempfile
import time
import tomllib
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import compare  # noqa: E402
import sources  # noqa: E402
from recipe import STEPS  # noqa: E402

# The gym mounts its harness support code here (outside the gym: put it on PYTHONPATH).
sys.path.append("/harnesslib")
from warm_launch import Ended, WarmLauncher, launch_cold  # noqa: E402

#: What the pipeline imports that costs start-up time; a group's warm launcher imports it once.
PRELOAD = ["torch", "torch.distributed", "torch.distributed.fsdp", "torch.distributed.checkpoint.state_dict",
           "transformers", "transformers.models.gpt_neox.modeling_gpt_neox", "safetensors.torch", "yaml"]

# torch 2.13 + gloo can abort in interpreter teardown after all work is done (FIELD-NOTES).
_EXIT_ABORT_MARKERS = ("terminate called without an active exception", "SIGABRT", "Signal 6")
# Both launches share the scenario's timeout_s; this much is kept for comparing and writing.
_VERDICT_MARGIN_S = 20.0


@dataclass
class Scenario:
    """One frozen scenario, as the grader hands it over in scenario.json."""

    name: str
    kind: str
    devices: int
    backend: str
    timeout_s: int
    mirror_main: str
    node_local: bool
    node_caches: dict[str, str]
    expect: str

    @classmethod
    def load(cls, path: Path) -> Scenario:
        return cls.from_request(json.loads(path.read_text()))

    @classmethod
    def from_request(cls, raw: dict[str, Any]) -> Scenario:
        params = raw.get("params", {})
        return cls(
            name=raw["name"], kind=raw["kind"], devices=int(raw["devices"]),
            backend=raw.get("backend", "gloo"), timeout_s=int(raw.get("timeout_s") or _frozen_timeout(raw["name"])),
            mirror_main=params["mirror_main"], node_local=bool(params["node_local"]),
            node_caches=dict(params.get("node_caches", {})), expect=params["expect"],
        )


@dataclass
class Outcome:
    """The harness verdict, serialised to outcome.json."""

    status: str = "fail"
    reason: str = ""
    metrics: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)

    def write(self, path: Path) -> None:
        path.write_text(json.dumps(
            {"status": self.status, "reason": self.reason, "metrics": self.metrics,
             "timings": {k: round(v, 3) for k, v in self.timings.items()}},
            indent=2, default=str,
        ) + "\n")


@dataclass
class Launch:
    """How one torchrun launch ended."""

    rc: int | None  # None: killed at the timeout
    spawned: float
    ended: float
    log_tail: str

    @property
    def exit_abort(self) -> bool:
        return self.rc not in (0, None) and any(m in self.log_tail for m in _EXIT_ABORT_MARKERS)


def _left(deadline: float) -> float:
    """Seconds a launch may still take."""
    return max(deadline - time.time(), 1.0)


def _frozen_timeout(name: str) -> int:
    """timeout_s from scenarios.toml when scenario.json does not carry it."""
    table = tomllib.loads((HERE / "scenarios.toml").read_text())
    return next(int(s["timeout_s"]) for s in table["scenario"] if s["name"] == name)


def torchrun(args: list[str], cwd: Path, env: dict[str, str], log: Path, timeout_s: float) -> Launch:
    """Run `torchrun --standalone` with our interpreter; kill its process group at the timeout."""
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", *args]
    return finished(launch_cold(cmd, cwd, env, log, timeout_s), log)


def finished(ended: Ended, log: Path) -> Launch:
    """A launch's end with the tail of its log."""
    return Launch(rc=ended.returncode, spawned=ended.started, ended=ended.ended,
                  log_tail=log.read_text(errors="replace")[-20000:] if log.exists() else "")


def base_env(scenario: Scenario) -> dict[str, str]:
    """Sandbox environment plus the documented knobs; no grader paths on PYTHONPATH."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRAINFAIL_PROBE")}
    env.pop("PYTHONPATH", None)
    env.update(OMP_NUM_THREADS=env.get("OMP_NUM_THREADS", "1"), HF_HUB_OFFLINE="1",
               TRAINFAIL_BACKEND=scenario.backend, TRAINFAIL_DEVICES=str(scenario.devices),
               HF_HUB_DISABLE_PROGRESS_BARS="1", TQDM_DISABLE="1")
    return env


def run_oracles(scenario: Scenario, work: Path, deadline: float) -> Launch:
    """Publish the sources and compute both oracles in one launch."""
    args = [f"--nproc_per_node={scenario.devices}", str(HERE / "oracle.py"), "--out", str(work)]
    return torchrun(args, work, base_env(scenario), work / "oracle.log", _left(deadline))


def lay_out_caches(scenario: Scenario, work: Path, published: Path) -> dict[str, str]:
    """The scenario's mirror (both revisions, refs/main per scenario) and stale node copies."""
    sources.lay_cache(work / "mirror", published, list(sources.SOURCES), scenario.mirror_main)
    for node, source in scenario.node_caches.items():
        # A node that fetched the model before the mirror moved on: one revision, its own main.
        sources.lay_cache(work / "nodes" / node, published, [source], source)
    (work / "nodes").mkdir(exist_ok=True)
    return {
        "cache.mirror": str(work / "mirror"),
        "cache.node_local": "true" if scenario.node_local else "false",
        "cache.node_root": str(work / "nodes"),
        "train.steps": str(STEPS),
        "output.dir": str(work / "run-output"),
    }


def run_pipeline(scenario: Scenario, work: Path, overrides: dict[str, str], deadline: float,
                 workspace: Path, launcher: WarmLauncher | None = None) -> Launch:
    """The README's launch command, with the probe injected through sitecustomize (or, from a
    warm launcher, installed in each rank before the pipeline starts)."""
    env = base_env(scenario)
    env.update(PYTHONPATH=str(HERE / "observer"), TRAINFAIL_PROBE_DIR=str(work / "probe"),
               TRAINFAIL_PROBE_STEPS=str(STEPS))
    args = ["--config", "configs/finetune.yaml", *(f"{k}={v}" for k, v in overrides.items())]
    log = work / "pipeline.log"
    if launcher is None:
        return torchrun([f"--nproc_per_node={scenario.devices}", "-m", "ftpipe.train", *args],
                        workspace, env, log, _left(deadline))
    ended = launcher.launch("ftpipe.train", args, scenario.devices, workspace, env, log, _left(deadline),
                            setup="trainfail_probe:install")
    return finished(ended, log)


def launcher_env(scenario: Scenario) -> dict[str, str]:
    """A warm launcher's environment: the ranks' one without the probe's switches."""
    env = base_env(scenario)
    env.update(PYTHONPATH=str(HERE / "observer"))
    return env


def launch_problem(launch: Launch, record: compare.RunRecord | None, what: str) -> tuple[str, str] | None:
    """(status, reason) when a launch gave no usable record, else None."""
    if record is not None and (launch.rc == 0 or launch.exit_abort):
        return None
    detail = _error_line(launch.log_tail)[:300]
    if launch.rc is None:
        return "fail", f"{what} did not finish within the scenario timeout"
    if record is None and launch.exit_abort:
        return "retry", f"{what} hit the gloo exit abort before writing its state"
    if record is None:
        return "fail", f"{what} exited rc={launch.rc} without reaching update {STEPS}: {detail}"
    return "fail", f"{what} recorded its state but exited rc={launch.rc}: {detail}"


def _error_line(log_tail: str) -> str:
    """The first exception line of a torchrun log (a worker's, not the launcher's), else the last line."""
    lines = [ln.strip() for ln in log_tail.splitlines() if ln.strip()]
    errors = [ln for ln in lines if re.search(r"\b\w+(Error|Exception)\b:", ln) and "ChildFailedError" not in ln]
    return (errors or lines or [""])[0]


def _finite(x: float) -> float | str:
    """JSON-safe distance: names or shapes that do not line up are reported as such."""
    return x if math.isfinite(x) else "shape-mismatch"


def judge(scenario: Scenario, run: compare.RunRecord, oracles: dict[str, compare.RunRecord]) -> Outcome:
    """Verdict and metrics for a recorded run."""
    source_params = {s: o.state["init"] for s, o in oracles.items()}
    origins = compare.provenance(run.state["init"], source_params)
    diffs = {s: compare.differing_fields(run, o) for s, o in oracles.items()}
    matched = [s for s, d in diffs.items() if not d]
    gaps = {s: compare.max_abs_param_diff(run.state["params"], o.state["params"]) for s, o in oracles.items()}
    metrics: dict[str, Any] = {
        # Key figure first (qualify shows the first float): 0 exactly when a source is reproduced.
        "max_abs_param_vs_nearest_oracle": _finite(min(gaps.values())),
        "matched_oracle": ",".join(matched) or "none",
        "provenance": compare.provenance_counts(origins),
        "replicas_equal": run.replicas_equal,
        "expected_source": scenario.expect,
    }
    for s in oracles:
        metrics[f"max_abs_param_vs_oracle_{s}"] = _finite(gaps[s])
        metrics[f"fields_differing_{s}"] = diffs[s]
    if len(matched) != 1:
        where = "; ".join(f"vs {s} ({sources.LABELS[s]}): {', '.join(d)}" for s, d in diffs.items())
        return Outcome("fail", f"state matches no single-source oracle ({where}); "
                       f"initial-model provenance {metrics['provenance']}", metrics)
    source = matched[0]
    if any(origin != source for origin in origins.values()):
        reason = f"initial model is not source {source} tensor by tensor: {metrics['provenance']}"
        return Outcome("fail", reason, metrics)
    if scenario.expect not in ("any", source):
        return Outcome("fail", f"run starts from {source} ({sources.LABELS[source]}) but the only published "
                       f"revision in play is {scenario.expect} ({sources.LABELS[scenario.expect]})", metrics)
    return Outcome("pass", f"bitwise equal to the single-source oracle of {source} ({sources.LABELS[source]})", metrics)


def load_oracles(root: Path, devices: int) -> dict[str, compare.RunRecord] | None:
    """Both sources' oracle records under `root`, or None when any is missing."""
    records: dict[str, compare.RunRecord] = {}
    for source in sources.SOURCES:
        record = compare.load_record(root / "oracle" / source, devices)
        if record is None:
            return None
        records[source] = record
    return records


def make_oracles(scenario: Scenario, root: Path, deadline: float) -> str | None:
    """Compute the oracles into `root`; a reason when that failed."""
    launch = run_oracles(scenario, root, deadline)
    if load_oracles(root, scenario.devices) is None or not (launch.rc == 0 or launch.exit_abort):
        return f"oracle launch failed (rc={launch.rc}): {_error_line(launch.log_tail)[:300]}"
    return None


def grade(scenario: Scenario, work: Path, started: float, cached: Path | None,
          workspace: Path | None = None, launcher: WarmLauncher | None = None) -> Outcome:
    """Run the whole protocol for one scenario inside `work`, within its timeout."""
    t0 = time.time()
    deadline = started + scenario.timeout_s - _VERDICT_MARGIN_S
    oracle_root = cached or work
    if cached is None and (problem := make_oracles(scenario, work, deadline)) is not None:
        # The oracle never runs workspace code, so its failure says nothing about the revision.
        return Outcome("retry", problem)
    oracles = load_oracles(oracle_root, scenario.devices)
    if oracles is None:
        return Outcome("retry", f"no complete oracle under {oracle_root}")
    timings = {"oracle_s": 0.0 if cached else time.time() - t0}

    overrides = lay_out_caches(scenario, work, oracle_root / "published")
    pipeline = run_pipeline(scenario, work, overrides, deadline, workspace or Path.cwd(), launcher)
    record = compare.load_record(work / "probe", scenario.devices)
    timings.update(launch_s=pipeline.spawned - t0, run_total_s=pipeline.ended - pipeline.spawned)
    if record is not None:
        timings.update(startup_s=record.timing["first_forward"] - pipeline.spawned,
                       train_s=record.timing["last_step_done"] - record.timing["first_forward"],
                       capture_s=record.timing["captured"] - record.timing["last_step_done"])
    problem = launch_problem(pipeline, record, "pipeline")
    if problem is not None:
        return Outcome(*problem, timings=timings)
    t_cmp = time.time()
    outcome = judge(scenario, record, oracles)
    timings["compare_s"] = time.time() - t_cmp
    outcome.timings = timings
    return outcome


def oracle_only(scenario: Scenario, out_dir: Path) -> int:
    """`--out-dir` mode: compute the scenario's oracle into `out_dir`; exit status 0 when complete."""
    out_dir.mkdir(parents=True, exist_ok=True)
    deadline = time.time() + scenario.timeout_s - _VERDICT_MARGIN_S
    problem = make_oracles(scenario, out_dir, deadline)
    print(f"{scenario.name}: oracle {'ready' if problem is None else problem}")
    return 0 if problem is None else 1


def grade_group(scenarios_file: Path, out_dir: Path, oracle_root: Path | None) -> None:
    """Every scenario of the group through one warm launcher, each on a fresh workspace copy."""
    scenarios = [Scenario.from_request(r) for r in json.loads(scenarios_file.read_text())]
    out_dir.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="fsdp-source-group-"))
    try:
        with WarmLauncher(PRELOAD, launcher_env(scenarios[0]), root / "launcher.log") as launcher:
            preload_s = launcher.startup_s
            for index, scenario in enumerate(scenarios):
                started = time.time()
                work = root / scenario.name
                shutil.copytree(Path.cwd(), work / "workspace", symlinks=True)
                cached = oracle_root / scenario.name if oracle_root else None
                try:
                    outcome = grade(scenario, work, started, cached, work / "workspace", launcher)
                except Exception:  # no outcome: the gym grades this scenario on its own
                    traceback.print_exc()
                    continue
                finally:
                    if not os.environ.get("TRAINFAIL_KEEP_WORK"):
                        shutil.rmtree(work, ignore_errors=True)
                if outcome.status == "retry":
                    continue
                outcome.timings["group_preload_s"] = preload_s
                outcome.timings["total_s"] = time.time() - started + (preload_s if index == 0 else 0.0)
                outcome.metrics["scenario"] = scenario.name
                outcome.write(out_dir / f"{scenario.name}.json")
                print(f"{scenario.name}: {outcome.status} - {outcome.reason}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    scenario = parser.add_mutually_exclusive_group(required=True)
    scenario.add_argument("--scenario", type=Path)
    scenario.add_argument("--scenarios", type=Path, help="a scenario group (list of scenario requests)")
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--out", type=Path, help="grade the workspace in the working directory")
    mode.add_argument("--out-dir", type=Path, help="only compute the oracle, into this folder (with --scenarios: "
                                                   "the folder for the group's outcomes)")
    parser.add_argument("--oracle", type=Path, help="a folder made by --out-dir, instead of computing it")
    args = parser.parse_args()
    started = time.time()
    if args.scenarios is not None:
        if args.out_dir is None:
            parser.error("--scenarios needs --out-dir")
        grade_group(args.scenarios, args.out_dir, args.oracle)
        return
    scenario = Scenario.load(args.scenario)
    if args.out_dir is not None:
        sys.exit(oracle_only(scenario, args.out_dir))
    work = Path(tempfile.mkdtemp(prefix=f"fsdp-source-{scenario.name}-"))
    try:
        outcome = grade(scenario, work, started, args.oracle)
    except Exception as exc:  # a harness crash must still leave a readable outcome
        outcome = Outcome("fail", f"harness error: {type(exc).__name__}: {exc}")
    finally:
        if not os.environ.get("TRAINFAIL_KEEP_WORK"):
            shutil.rmtree(work, ignore_errors=True)
    outcome.timings["total_s"] = time.time() - started
    outcome.metrics["scenario"] = scenario.name
    outcome.write(args.out)
    print(f"{scenario.name}: {outcome.status} - {outcome.reason}")


if __name__ == "__main__":
    main()
