"""The sandboxed phases of grading, and what the host checks between them.

* **run** (hostile): a copy of the revision at ``/workspace``, the case's run kit at ``/kit``,
  the scenario requests read-only at ``/io``, the case's cached fixtures (if it declares any)
  read-only at ``/fixtures``; the kit leaves artifacts under ``/out``, which sit on
  a disk budget of their own. Nothing it writes, prints or returns is a verdict.
* between the phases (host): only regular files and folders of ``/out`` are kept (links, FIFOs,
  sockets, devices removed and counted) and their size is checked against the case's limit; the
  host's own facts about the run (exit code, time-out, OOM, its duration by the host's clock)
  become ``/io/run.json``. A scenario run alone that is still running at its deadline
  (``timeout_s``, the host's clock) is stopped with every process in its sandbox and fails with
  "no progress after N s" there and then: no judge is needed, and nothing it printed or wrote
  can change that.
* **judge** (trusted): an empty workspace, the whole ``grader/`` at ``/grader``, the artifacts
  read-only at ``/artifacts``, cached oracles at ``/oracle/<scenario>``; it writes
  ``/io/outcomes/<scenario>.json``: the only verdicts the host reads.

Every phase gets the harness library at ``/harnesslib`` and on its ``PYTHONPATH``.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import stat
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from gym_trainfail.cases import CaseSpec, Scenario
from gym_trainfail.devices import DevicePool, Lease
from gym_trainfail.files import copy_tree, read_json_object, write_json
from gym_trainfail.harnesslib.judgekit import no_progress
from gym_trainfail.hashing import tree_digest
from gym_trainfail.revisions import ALWAYS_EXCLUDED
from gym_trainfail.runtimes import Runtime
from gym_trainfail.sandbox import ExecResult, Limits, Mount, SandboxConfig, create_sandbox
from gym_trainfail.sandbox.base import GiB
from gym_trainfail.sandbox.disk import DiskArea, MiB
from gym_trainfail.sandbox.environment import DETERMINISTIC_GPU_ENV

#: A grading sandbox's limits; its ``/tmp`` (memory) is generous because run kits keep per-scenario
#: scratch there, while the run phase's workspace and artifacts sit on a disk budget of their own.
GRADER_LIMITS = Limits(memory_bytes=16 * GiB, pids=4096, output_bytes=20_000, tmp_bytes=4 * GiB)
#: Where cached oracles are mounted in judge sandboxes (one folder per scenario).
ORACLE_MOUNT = "/oracle"
#: Where the run kit is mounted in run sandboxes.
KIT_MOUNT = "/kit"
#: Where a case's cached fixtures (``grader.fixtures_command``) are mounted in run sandboxes.
FIXTURES_MOUNT = "/fixtures"
#: Where the run phase writes its artifacts, and where the judge reads them.
ARTIFACTS_OUT = "/out"
ARTIFACTS_MOUNT = "/artifacts"
#: How much of what the run phase printed the judge gets (``/io/run.json``).
RUN_OUTPUT_TAIL = 4000
#: Support code for harnesses (``gym_trainfail/harnesslib``), mounted read-only in grading sandboxes.
HARNESSLIB_DIR = Path(__file__).resolve().parent.parent / "harnesslib"
HARNESSLIB_MOUNT = "/harnesslib"
#: What every grading phase gets: the harness library on its path (``import runkit``, ``judgekit``).
HARNESS_ENV = {"PYTHONPATH": HARNESSLIB_MOUNT, "TRAINFAIL_HARNESSLIB": HARNESSLIB_MOUNT}
#: A scenario group's run phase gets this much beyond its scenarios' deadlines for each scenario:
#: the run kit's own work between launches (copying the workspace and the outputs). The kit stops
#: each scenario at its own deadline, so a hang in one leaves the group's run intact.
GROUP_ALLOWANCE_S = 10.0


def run_limit_s(unit: Sequence[Scenario]) -> float:
    """The host's time limit for a launch unit's run phase: a scenario alone gets exactly its
    deadline (``timeout_s``), a group the sum of its scenarios' deadlines plus
    :data:`GROUP_ALLOWANCE_S` per scenario."""
    total = sum(s.timeout_s for s in unit)
    return total if len(unit) == 1 else total + GROUP_ALLOWANCE_S * len(unit)


@functools.cache
def harnesslib_digest() -> str:
    """Digest of the harness support code; part of every grader hash."""
    return tree_digest(HARNESSLIB_DIR, exclude=("__pycache__", "*.pyc"))


@dataclass(frozen=True)
class PhaseRun:
    """What the host itself saw of one sandboxed phase (never what the phase claims)."""

    result: ExecResult
    duration_s: float


@dataclass(frozen=True)
class ArtifactCheck:
    """What the host found under a run phase's ``/out``: the bytes kept (regular files, by
    their apparent size) and the paths it removed (links, FIFOs, sockets, devices)."""

    total_bytes: int
    removed: tuple[str, ...]


@dataclass(frozen=True)
class RunStage:
    """One run phase as the host saw it: the phase, its sanitized ``/out`` folder, why the host
    refuses its artifacts (empty if it does not), and the devices it held."""

    run: PhaseRun
    check: ArtifactCheck
    out: Path
    host_reason: str
    device_s: float
    queue_s: float

    @property
    def clean(self) -> bool:
        """The run ended by itself, with exit 0, in time and within the artifact limit."""
        result = self.run.result
        return not self.host_reason and result.exit_code == 0 and not result.timed_out and not result.oom_killed


def sanitize_artifacts(out: Path, limit_bytes: int) -> ArtifactCheck:
    """Keep only regular files and folders under ``out`` (never following a link), and add up
    their sizes, stopping once past ``limit_bytes``. The run sandbox is closed by now, so
    nothing changes the tree behind this walk."""
    total = 0
    removed: list[str] = []
    stack = [out]
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(info.st_mode):
                os.chmod(entry.path, 0o755)  # the judge must be able to read what the run left
                stack.append(Path(entry.path))
            elif stat.S_ISREG(info.st_mode):
                os.chmod(entry.path, 0o644)
                total += max(info.st_size, info.st_blocks * 512)
            else:
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)
                if len(removed) < 50:
                    removed.append(os.path.relpath(entry.path, out))
            if total > limit_bytes:
                return ArtifactCheck(total, tuple(removed))
    return ArtifactCheck(total, tuple(removed))


def run_facts(run: PhaseRun, check: ArtifactCheck, scenarios: int) -> dict[str, Any]:
    """What the judge learns about the run phase from the host (``output_tail`` is the run's
    own text: adversarial)."""
    result = run.result
    tail = (result.stdout + ("\n" + result.stderr if result.stderr else ""))[-RUN_OUTPUT_TAIL:]
    return {
        "exit_code": result.exit_code,
        "timed_out": result.timed_out,
        "oom_killed": result.oom_killed,
        "duration_s": round(run.duration_s, 3),
        "scenarios": scenarios,
        "output_tail": tail,
        "removed": list(check.removed),
    }


def shared_facts(runs: Sequence[RunStage]) -> dict[str, Any]:
    """The host's facts for one judge over several clean single runs, as a group's run would
    give them: exit 0, in time, their durations added, their output tails joined (bounded)."""
    tails = [run_facts(stage.run, stage.check, 1)["output_tail"] for stage in runs]
    return {
        "exit_code": 0,
        "timed_out": False,
        "oom_killed": False,
        "duration_s": round(sum(stage.run.duration_s for stage in runs), 3),
        "scenarios": len(runs),
        "output_tail": "\n".join(tails)[-RUN_OUTPUT_TAIL:],
        "removed": [path for stage in runs for path in stage.check.removed][:50],
    }


class Phases:
    """Runs one case's grading phases in fresh sandboxes of one backend and runtime."""

    def __init__(self, case: CaseSpec, runtime: Runtime, sandbox: str, pool: DevicePool) -> None:
        self.case, self.runtime, self.sandbox, self.pool = case, runtime, sandbox, pool
        #: The case's cached fixtures folder, made on first use (``None``: it declares none, or
        #: they could not be made); set by the grader.
        self.fixtures: Callable[[], Path | None] = lambda: None

    def request(self, scenario: Scenario, name: str | None = None) -> dict[str, Any]:
        """How a phase sees one scenario (``/io/scenarios.json`` holds a list of these); ``name``
        replaces the scenario's own where several revisions' runs share one judge."""
        return {
            "name": name or scenario.name,
            "kind": scenario.kind,
            "devices": scenario.devices,
            "timeout_s": scenario.timeout_s,
            "backend": "nccl" if self.pool.kind == "gpu" else "gloo",
            "params": dict(scenario.params),
        }

    def requests(self, unit: Sequence[Scenario], names: Sequence[str] | None = None) -> str:
        chosen = names if names is not None else [s.name for s in unit]
        return json.dumps([self.request(s, n) for s, n in zip(unit, chosen, strict=True)], indent=2)

    def run_stage(
        self, stack: contextlib.ExitStack, root: Path, source: Path, unit: Sequence[Scenario], lease: Lease
    ) -> RunStage:
        """The run phase of ``unit`` over a copy of ``source`` (hostile), in ``root`` (its
        artifacts sanitized and sized). The host fails the unit itself (``host_reason``) when a
        scenario alone ran past its deadline, or the run left more than the artifact limit."""
        # What the revision's code can write (its workspace copy and /out) sits on a disk
        # budget: a hostile run cannot fill the host's disk.
        (root / "run").mkdir()
        area = stack.enter_context(DiskArea(root / "run", self.case.budgets.disk_mb * MiB))
        workspace, out, run_io = area.path / "workspace", area.path / "out", root / "run-io"
        copy_tree(source, workspace, exclude=ALWAYS_EXCLUDED)
        for folder in (run_io, out):
            folder.mkdir(parents=True)
        (run_io / "scenarios.json").write_text(self.requests(unit))
        fixtures = self.fixtures()
        run = self.phase(
            f"grade-run-{len(unit)}x{unit[0].devices}",
            workspace,
            (
                Mount(self.case.kit_dir, KIT_MOUNT),
                Mount(HARNESSLIB_DIR, HARNESSLIB_MOUNT),
                Mount(run_io, "/io"),
                Mount(out, ARTIFACTS_OUT, writable=True),
                *([Mount(fixtures, FIXTURES_MOUNT)] if fixtures is not None else []),
            ),
            [*self.case.run_command, "--scenarios", "/io/scenarios.json", "--out-dir", ARTIFACTS_OUT],
            run_limit_s(unit),
            lease,
        )
        check = sanitize_artifacts(out, self.case.artifact_limit_bytes)
        host_reason = ""
        if run.result.timed_out and len(unit) == 1:
            # The host's clock is the deadline: a hang is a fail, decided here (never by a judge
            # reading what the run left). In a group the host cannot tell which scenario ran past
            # its deadline: the kit stops each at its own, and the grader regrades the rest alone.
            host_reason = no_progress(unit[0].timeout_s)
        elif check.total_bytes > self.case.artifact_limit_bytes:
            host_reason = (
                f"the run left {check.total_bytes / 2**20:.0f} MiB of artifacts, over the grader's "
                f"limit of {self.case.artifact_limit_bytes / 2**20:.0f} MiB"
            )
        return RunStage(run, check, out, host_reason, lease.device_seconds, lease.queue_wait_s)

    def kept_run(self, root: Path, source: Path, scenario: Scenario) -> RunStage:
        """The run phase of ``scenario`` alone, its sanitized artifacts moved out of the run's
        disk area into ``root/out`` (unless the host refuses them) before the area is closed."""
        with contextlib.ExitStack() as stack, self.pool.lease(scenario.devices) as lease:
            stage = self.run_stage(stack, root, source, (scenario,), lease)
            kept = root / "out"
            if not stage.host_reason:
                shutil.copytree(stage.out, kept, symlinks=True)
            else:
                kept.mkdir()
        return replace(stage, out=kept)

    def judge_stage(
        self,
        root: Path,
        unit: Sequence[Scenario],
        artifacts: Path,
        facts: dict[str, Any],
        oracle_mounts: tuple[Mount, ...],
        names: Sequence[str] | None = None,
    ) -> tuple[PhaseRun, dict[str, dict[str, Any] | None]]:
        """The judge phase (trusted) of ``unit`` over ``artifacts`` (folders named after the
        scenarios, or ``names``), with the host's ``facts`` about the run as ``/io/run.json``;
        the outcome it wrote per name (``None`` if none)."""
        chosen = list(names) if names is not None else [s.name for s in unit]
        judge_ws, judge_io = root / "judge-workspace", root / "judge-io"
        for folder in (judge_ws, judge_io / "outcomes"):
            folder.mkdir(parents=True)
        (judge_io / "scenarios.json").write_text(self.requests(unit, chosen))
        write_json(judge_io / "run.json", facts)
        argv = [
            *self.case.judge_command,
            "--scenarios", "/io/scenarios.json",
            "--artifacts", ARTIFACTS_MOUNT,
            "--run", "/io/run.json",
            "--out-dir", "/io/outcomes",
        ]  # fmt: skip
        if oracle_mounts:
            argv += ["--oracle", ORACLE_MOUNT]
        judge = self.phase(
            f"grade-judge-{len(unit)}",
            judge_ws,
            (
                Mount(self.case.grader_dir, "/grader"),
                Mount(HARNESSLIB_DIR, HARNESSLIB_MOUNT),
                Mount(artifacts, ARTIFACTS_MOUNT),
                Mount(judge_io, "/io", writable=True),
                *oracle_mounts,
            ),
            argv,
            self.case.judge_timeout_s * len(unit),
            None,
        )
        outcomes = {name: read_json_object(judge_io / "outcomes" / f"{name}.json") for name in chosen}
        return judge, outcomes

    def phase(
        self,
        label: str,
        workspace: Path,
        mounts: tuple[Mount, ...],
        argv: Sequence[str],
        timeout_s: float,
        lease: Lease | None,
    ) -> PhaseRun:
        """``argv`` in a fresh grading sandbox (with the lease's devices, if given)."""
        config = SandboxConfig(
            runtime=self.runtime, workspace=workspace, mounts=mounts, limits=GRADER_LIMITS, label=label
        )
        started = time.monotonic()
        sandbox = create_sandbox(self.sandbox, config)
        try:
            devices = lease.devices if lease else ()
            # The harness library is importable by every phase's entry point (a run kit keeps it off
            # the training ranks' path); GPU runs are made reproducible (bitwise/zero-tolerance
            # comparisons rely on it).
            env = dict(HARNESS_ENV)
            if any(d.kind == "gpu" for d in devices):
                env.update(DETERMINISTIC_GPU_ENV)
            result = sandbox.exec(list(argv), timeout_s=timeout_s, devices=devices, env=env)
        finally:
            sandbox.close()
        return PhaseRun(result, time.monotonic() - started)
