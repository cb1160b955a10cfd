"""Private grading: replay a revision on every frozen scenario, in two phases that never meet.

A revision's code is hostile: it was written by the agent under evaluation. So each launch
unit (one scenario, or a group of scenarios that need the same number of devices) is graded
in two fresh sandboxes (protocol in ``docs/grader-protocol.md``):

1. **run** (untrusted): a copy of the revision at ``/workspace``, the case's run kit at
   ``/kit``, the scenario list read-only at ``/io``; the kit launches the pipeline and leaves
   artifacts under ``/out``. Nothing it writes, prints or returns is a verdict.
2. **judge** (trusted): an empty workspace, the whole ``grader/`` at ``/grader``, the run's
   artifacts read-only at ``/artifacts`` (special files removed, size bounded), cached
   oracles at ``/oracle/<scenario>``; it writes ``/io/outcomes/<scenario>.json``. No revision
   code runs here, and its outcomes are the only verdicts the host reads.

A scenario the judge left without a verdict (no outcome, ``retry``, malformed) is graded
again on its own, a bounded number of times, and then recorded as ``error`` (unknown, never
pass). Every revision is graded in the ``control`` runtime, whatever arm produced it.
Receipts are keyed by (revision tree hash, grader hash); the grader hash covers the case's
grader files, the runtime and the harness support code. A receipt holding an error is never
cached.

Performance options that never change a verdict: ``parallel_scenarios`` runs that many units
at once (each in its own sandboxes, sharing the device pool); oracles (``grader.oracle_command``)
are computed once per (case version, scenario, topology) in a sandbox that holds no revision.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import math
import os
import shutil
import stat
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from gym_trainfail.cases import DEFAULT_PROFILE, CaseSpec, Scenario
from gym_trainfail.devices import DevicePool, Lease
from gym_trainfail.errors import GradingError
from gym_trainfail.files import copy_tree, read_json_object, write_json
from gym_trainfail.hashing import TreeRefusedError, bytes_digest, tree_digest
from gym_trainfail.paths import home, receipts_dir
from gym_trainfail.revisions import ALWAYS_EXCLUDED, RevisionLog
from gym_trainfail.runtimes import Runtime, find_runtime
from gym_trainfail.sandbox import ExecResult, Limits, Mount, SandboxConfig, create_sandbox, resolve_backend
from gym_trainfail.sandbox.base import GiB
from gym_trainfail.sandbox.disk import DiskArea, MiB
from gym_trainfail.sandbox.environment import DETERMINISTIC_GPU_ENV

Status = Literal["pass", "fail", "error"]
#: The runtime graders run in, for revisions from every arm.
GRADING_ARM = "control"
#: How often a scenario whose harness answered ``retry`` is run again before it is an error.
DEFAULT_RETRIES = 2
#: A grading sandbox's limits; its ``/tmp`` (memory) is generous because run kits keep per-scenario
#: scratch there, while the run phase's workspace and artifacts sit on a disk budget of their own.
GRADER_LIMITS = Limits(memory_bytes=16 * GiB, pids=4096, output_bytes=20_000, tmp_bytes=4 * GiB)
#: Where cached oracles are mounted in judge sandboxes (one folder per scenario).
ORACLE_MOUNT = "/oracle"
#: Where the run kit is mounted in run sandboxes.
KIT_MOUNT = "/kit"
#: Where the run phase writes its artifacts, and where the judge reads them.
ARTIFACTS_OUT = "/out"
ARTIFACTS_MOUNT = "/artifacts"
#: How much of what the run phase printed the judge gets (``/io/run.json``).
RUN_OUTPUT_TAIL = 4000
#: Bounds on what a receipt keeps of a judge's outcome.
MAX_REASON = 1000
MAX_METRICS_BYTES = 20_000
#: Support code for harnesses (``gym_trainfail/harnesslib``), mounted read-only in grading sandboxes.
HARNESSLIB_DIR = Path(__file__).resolve().parent / "harnesslib"
HARNESSLIB_MOUNT = "/harnesslib"
#: What every grading phase gets: the harness library on its path (``import runkit``, ``judgekit``).
HARNESS_ENV = {"PYTHONPATH": HARNESSLIB_MOUNT, "TRAINFAIL_HARNESSLIB": HARNESSLIB_MOUNT}


@functools.cache
def harnesslib_digest() -> str:
    """Digest of the harness support code; part of every grader hash."""
    return tree_digest(HARNESSLIB_DIR, exclude=("__pycache__", "*.pyc"))


@dataclass(frozen=True)
class ScenarioOutcome:
    """One scenario's result for one revision."""

    scenario: str
    kind: str
    status: Status
    reason: str
    metrics: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    attempts: int = 1
    duration_s: float = 0.0
    device_seconds: float = 0.0
    queue_wait_s: float = 0.0
    #: Judged in a scenario group's run rather than one of its own.
    grouped: bool = False


@dataclass(frozen=True)
class Receipt:
    """The verdict on one revision tree under one grader version."""

    case_id: str
    tree: str
    grader_hash: str
    outcomes: tuple[ScenarioOutcome, ...]
    created: float
    duration_s: float
    #: Grading stopped at the first failing launch unit (a reward needs no more): the scenarios
    #: not graded are absent. A full grade later completes the receipt instead of redoing it.
    partial: bool = False

    @property
    def status(self) -> Status:
        """``fail`` if any scenario failed (the revision is then known not to be valid, whatever
        else is unknown), else ``error`` if any could not be judged, else ``pass``."""
        if any(o.status == "fail" for o in self.outcomes):
            return "fail"
        if any(o.status == "error" for o in self.outcomes) or self.partial:
            return "error"
        return "pass"

    @property
    def cacheable(self) -> bool:
        """Whether the receipt may be stored: every verdict in it is known."""
        return not any(o.status == "error" for o in self.outcomes)

    @property
    def passed(self) -> bool:
        return self.status == "pass"

    @property
    def device_seconds(self) -> float:
        return sum(o.device_seconds for o in self.outcomes)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["status"] = self.status
        data["device_seconds"] = self.device_seconds
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Receipt:
        outcomes = tuple(ScenarioOutcome(**o) for o in data["outcomes"])
        return cls(
            case_id=data["case_id"],
            tree=data["tree"],
            grader_hash=data["grader_hash"],
            outcomes=outcomes,
            created=data["created"],
            duration_s=data["duration_s"],
            partial=bool(data.get("partial", False)),
        )


@dataclass(frozen=True)
class FirstValid:
    """The first valid repair of an episode: its revision number, or ``None`` with why."""

    revision: int | None
    #: The earliest revision whose verdict is unknown before any pass (adjudication is blocked).
    blocked_by: int | None = None

    @property
    def reason(self) -> str:
        if self.revision is not None:
            return f"revision {self.revision}"
        if self.blocked_by is not None:
            return f"blocked by revision {self.blocked_by}: unknown"
        return "none"


def first_valid(statuses: Iterable[tuple[int, str]]) -> FirstValid:
    """The one first-valid rule (runs, demos and batch adjudication alike): the earliest passing
    revision such that no earlier revision's verdict is unknown (``error``, timeout, ungraded:
    anything but ``pass``/``fail``). Unknown verdicts after it do not matter."""
    for revision, status in statuses:
        if status == "pass":
            return FirstValid(revision)
        if status != "fail":
            return FirstValid(None, blocked_by=revision)
    return FirstValid(None)


ProgressHook = Callable[[str, ScenarioOutcome | None], None]


@dataclass(frozen=True)
class PhaseRun:
    """What the host itself saw of one sandboxed phase (never what the phase claims)."""

    result: ExecResult
    duration_s: float


@dataclass(frozen=True)
class UnitResult:
    """One two-phase grading of a launch unit: the judge's outcome per scenario (``None``
    where it wrote none), each scenario's share of the device- and queue-seconds, and what
    the host saw of both phases."""

    outcomes: dict[str, dict[str, Any] | None]
    shares: dict[str, tuple[float, float]]
    run: PhaseRun | None
    judge: PhaseRun | None
    host_reason: str = ""


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


class Grader:
    """Grades revisions of one case with one runtime."""

    def __init__(
        self,
        case: CaseSpec,
        *,
        sandbox: str = "auto",
        pool: DevicePool | None = None,
        runtime: Runtime | None = None,
        retries: int = DEFAULT_RETRIES,
        cache: bool = True,
        parallel_scenarios: int = 1,
        oracle_cache: bool = True,
        group_scenarios: bool = True,
    ) -> None:
        if parallel_scenarios < 1:
            raise GradingError(f"parallel_scenarios must be at least 1, got {parallel_scenarios}")
        self.case = case
        self.sandbox = sandbox
        self.runtime = runtime or find_runtime(GRADING_ARM)
        self.pool = pool or DevicePool(backend=resolve_backend(sandbox))
        self.retries = retries
        self.cache = cache
        self.parallel_scenarios = parallel_scenarios
        self.group_scenarios = group_scenarios
        # The profile is part of the grader's version: a tree graded at one scale has no receipt at another.
        scale = "" if case.profile == DEFAULT_PROFILE else f":profile={case.profile}"
        version = f"{case.grader_hash()}{scale}:{self.runtime.digest}:{harnesslib_digest()}"
        self.grader_hash = bytes_digest(version.encode())
        command = case.oracle_command
        self.oracles = OracleCache(self, command, persistent=oracle_cache) if command else None

    def receipt_path(self, tree: str) -> Path:
        slug = self.case.id.replace("/", "__")
        return receipts_dir() / slug / f"{tree}-{self.grader_hash[:16]}.json"

    def cached(self, tree: str, *, partial_ok: bool = False) -> Receipt | None:
        """A stored receipt for this tree under this grader version, if any (a partial one
        only when ``partial_ok``)."""
        path = self.receipt_path(tree)
        if not self.cache or not path.exists():
            return None
        data = read_json_object(path)
        if data is None:
            return None
        try:
            receipt = Receipt.from_json(data)
        except (KeyError, TypeError):
            return None
        if receipt.grader_hash != self.grader_hash or not receipt.cacheable:
            return None
        return receipt if partial_ok or not receipt.partial else None

    def grade_dir(
        self,
        source: Path,
        *,
        tree: str | None = None,
        scenarios: Iterable[Scenario] | None = None,
        progress: ProgressHook | None = None,
        stop_at_first_fail: bool = False,
    ) -> Receipt:
        """Grade the workspace tree in ``source`` (its tree hash computed if not given).

        ``stop_at_first_fail`` (when only a reward is needed): launch units run in the order
        most likely to fail first, and grading stops after the first unit with a failing
        scenario; the receipt says it is ``partial``. A later full grade completes a stored
        partial receipt, grading only the scenarios it lacks.

        A tree no walk will take (nested deeper than the bound, see
        :data:`~gym_trainfail.hashing.MAX_TREE_DEPTH`) gets a receipt whose every scenario is
        ``error`` with the reason, never an exception: one hostile tree must not end a grading
        stage.
        """
        selected = tuple(scenarios) if scenarios is not None else self.case.scenarios
        try:
            tree = tree or tree_digest(source, exclude=(*ALWAYS_EXCLUDED, *self.case.workspace_exclude))
            return self._grade_tree(source, tree, selected, progress, stop_at_first_fail)
        except TreeRefusedError as exc:
            return self.refused(tree or "", selected, f"the revision's tree cannot be graded: {exc}")

    def grade_revision(
        self, log: RevisionLog, number: int, tree: str, *, progress: ProgressHook | None = None
    ) -> Receipt:
        """Grade revision ``number`` of an episode's ``log`` (whose tree hash is ``tree``) from a
        scratch checkout. A revision that cannot be restored (a damaged record, a tree no walk
        takes) gets an error receipt, never an exception: one episode must not end the grading of
        a run or a batch."""
        try:
            with tempfile.TemporaryDirectory(prefix="trainfail-revision-") as scratch:
                workspace = Path(scratch) / "workspace"
                log.checkout(number, workspace)
                return self.grade_dir(workspace, tree=tree, progress=progress)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            reason = f"revision {number} could not be restored for grading: {exc}"
            return self.refused(tree, self.case.scenarios, reason)

    def refused(self, tree: str, scenarios: Sequence[Scenario], reason: str) -> Receipt:
        """A receipt for a tree that could not be graded at all: every scenario ``error`` (unknown,
        never pass, never cached) with ``reason``."""
        now = time.time()
        outcomes = tuple(_outcome(s, "error", reason[:MAX_REASON]) for s in scenarios)
        return Receipt(self.case.id, tree, self.grader_hash, outcomes, created=now, duration_s=0.0)

    def _grade_tree(
        self,
        source: Path,
        tree: str,
        selected: tuple[Scenario, ...],
        progress: ProgressHook | None,
        stop_at_first_fail: bool,
    ) -> Receipt:
        full = selected == self.case.scenarios
        known: tuple[ScenarioOutcome, ...] = ()
        if full and (hit := self.cached(tree, partial_ok=True)) is not None:
            if not hit.partial or stop_at_first_fail:
                if progress:
                    progress("cached", None)
                return hit
            known = hit.outcomes
        started = time.time()
        done = {o.scenario for o in known}
        todo = [s for s in selected if s.name not in done]
        graded = self._run_all(source, todo, progress, stop_at_first_fail=stop_at_first_fail)
        by_name = {o.scenario: o for o in (*known, *graded)}
        receipt = Receipt(
            case_id=self.case.id,
            tree=tree,
            grader_hash=self.grader_hash,
            outcomes=tuple(by_name[s.name] for s in selected if s.name in by_name),
            created=started,
            duration_s=time.time() - started + sum(o.duration_s for o in known),
            partial=len(by_name) < len(selected),
        )
        if full and receipt.cacheable:
            write_json(self.receipt_path(tree), receipt.to_json())
        return receipt

    def _run_all(
        self,
        source: Path,
        scenarios: Sequence[Scenario],
        progress: ProgressHook | None,
        *,
        stop_at_first_fail: bool = False,
    ) -> list[ScenarioOutcome]:
        """Every launch unit, ``parallel_scenarios`` at a time, outcomes in scenario order (with
        ``stop_at_first_fail``: one unit at a time, likeliest failures first, until one fails)."""

        def one(unit: tuple[Scenario, ...]) -> list[ScenarioOutcome]:
            if progress:
                for scenario in unit:
                    progress(scenario.name, None)
            outcomes = self.grade_unit(source, unit)
            if progress:
                for outcome in outcomes:
                    progress(outcome.scenario, outcome)
            return outcomes

        if not self.group_scenarios and not stop_at_first_fail and self.parallel_scenarios == 1 and len(scenarios) > 1:
            return self.grade_singles(source, scenarios, progress)
        units = self.partition(scenarios)
        if stop_at_first_fail:
            results = []
            for unit in sorted(units, key=lambda u: -sum(s.kind == "failure" for s in u)):
                results.append(one(unit))
                if any(o.status == "fail" for o in results[-1]):
                    break
            graded = {o.scenario: o for outcomes in results for o in outcomes}
            return [graded[s.name] for s in scenarios if s.name in graded]
        if self.parallel_scenarios == 1 or len(units) < 2:
            results = [one(u) for u in units]
        else:
            with ThreadPoolExecutor(self.parallel_scenarios, thread_name_prefix="scenario") as pool:
                results = list(pool.map(one, units))
        by_name = {o.scenario: o for outcomes in results for o in outcomes}
        return [by_name[s.name] for s in scenarios]

    def partition(self, scenarios: Sequence[Scenario]) -> list[tuple[Scenario, ...]]:
        """Launch units: one per device count (scenario groups), or one per scenario; a scenario
        marked ``alone`` is always a unit of its own."""
        if not self.group_scenarios:
            return [(s,) for s in scenarios]
        groups: dict[int, list[Scenario]] = {}
        alone: list[tuple[Scenario, ...]] = []
        for scenario in scenarios:
            if scenario.alone:
                alone.append((scenario,))
            else:
                groups.setdefault(scenario.devices, []).append(scenario)
        return [*(tuple(g) for g in groups.values()), *alone]

    def grade_unit(self, source: Path, unit: Sequence[Scenario]) -> list[ScenarioOutcome]:
        """Grade ``unit`` (scenarios needing the same number of devices) in one run sandbox and
        one judge sandbox; a scenario left without a verdict is graded again on its own."""
        started = time.monotonic()
        if unit and unit[0].devices > self.pool.size:
            # Not a verdict on the revision: this node cannot run the scenario at all.
            return [_not_runnable(s, self.pool.size, self.pool.describe()) for s in unit]
        oracle_mounts: dict[str, Mount] = {}
        oracle_cost: dict[str, tuple[float, float]] = {}
        runnable: list[Scenario] = []
        outcomes: dict[str, ScenarioOutcome] = {}
        for scenario in unit:
            if self.oracles is None:
                runnable.append(scenario)
                continue
            oracle, device_s, queue_s = self.oracles.ensure(scenario)
            oracle_cost[scenario.name] = (device_s, queue_s)
            if oracle is None:
                outcomes[scenario.name] = _unjudged(
                    scenario, "the oracle run gave no reference", device_s, queue_s, started
                )
            else:
                oracle_mounts[scenario.name] = Mount(oracle, f"{ORACLE_MOUNT}/{scenario.name}")
                runnable.append(scenario)
        attempts = 0
        spent: dict[str, tuple[float, float]] = {s.name: oracle_cost.get(s.name, (0.0, 0.0)) for s in runnable}
        pending = runnable
        last: UnitResult | None = None
        while pending:
            attempts += 1
            mounts = tuple(oracle_mounts[s.name] for s in pending if s.name in oracle_mounts)
            last = self.two_phase(source, pending, mounts)
            for scenario in pending:
                device_s, queue_s = last.shares[scenario.name]
                spent[scenario.name] = (spent[scenario.name][0] + device_s, spent[scenario.name][1] + queue_s)
            judged, unjudged = self._sort(pending, last)
            for outcome in judged:
                device_s, queue_s = spent[outcome.scenario]
                outcomes[outcome.scenario] = replace(
                    outcome,
                    attempts=attempts,
                    device_seconds=device_s,
                    queue_wait_s=queue_s,
                    grouped=len(pending) > 1,
                    duration_s=_duration(outcome, len(pending), time.monotonic() - started),
                )
            if len(pending) > 1:
                for scenario in unjudged:  # never let one scenario decide another's verdict
                    alone = self.grade_unit(source, (scenario,))[0]
                    device_s, queue_s = spent[scenario.name]
                    outcomes[scenario.name] = replace(
                        alone,
                        attempts=alone.attempts + attempts,
                        device_seconds=alone.device_seconds + device_s,
                        queue_wait_s=alone.queue_wait_s + queue_s,
                    )
                pending = []
            elif unjudged and attempts > self.retries:
                scenario = unjudged[0]
                device_s, queue_s = spent[scenario.name]
                outcomes[scenario.name] = replace(
                    _unjudged(scenario, _why_unjudged(scenario, last), device_s, queue_s, started),
                    attempts=attempts,
                )
                pending = []
            else:
                pending = unjudged
        return [outcomes[s.name] for s in unit]

    def _sort(self, pending: Sequence[Scenario], result: UnitResult) -> tuple[list[ScenarioOutcome], list[Scenario]]:
        """Split the unit's scenarios into judged ones (their outcomes) and ones to grade again."""
        judged: list[ScenarioOutcome] = []
        unjudged: list[Scenario] = []
        run = result.run.result if result.run is not None else None
        run_timed_out = run is not None and run.timed_out
        # A group whose run did not end cleanly (killed, crashed, out of time): whichever of its
        # scenarios broke it decided the others' fates too, so only their passes stand and the
        # rest are graded again alone.
        run_broke = run is None or run.timed_out or run.exit_code != 0
        for scenario in pending:
            if result.host_reason:
                judged.append(_outcome(scenario, "fail", result.host_reason))
                continue
            data = result.outcomes.get(scenario.name)
            outcome = _from_outcome(scenario, data) if data is not None else None
            if outcome is not None and run_broke and len(pending) > 1 and outcome.status != "pass":
                outcome = None
            if outcome is None and run_timed_out and len(pending) == 1:
                outcome = _outcome(scenario, "fail", f"the run exceeded its time limit ({scenario.timeout_s:.0f} s)")
            if outcome is None or outcome.status == "error":
                unjudged.append(scenario)
            else:
                judged.append(outcome)
        return judged, unjudged

    def scenario_request(self, scenario: Scenario) -> dict[str, Any]:
        """How a phase sees one scenario (``/io/scenarios.json`` holds a list of these)."""
        return {
            "name": scenario.name,
            "kind": scenario.kind,
            "devices": scenario.devices,
            "timeout_s": scenario.timeout_s,
            "backend": "nccl" if self.pool.kind == "gpu" else "gloo",
            "params": dict(scenario.params),
        }

    def two_phase(self, source: Path, unit: Sequence[Scenario], oracle_mounts: tuple[Mount, ...]) -> UnitResult:
        """Run phase over a copy of ``source`` (hostile), then judge phase (trusted), both
        while the unit's devices are held."""
        with contextlib.ExitStack() as stack:
            root = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="trainfail-grade-")))
            with self.pool.lease(unit[0].devices) as lease:
                stage = self._run_stage(stack, root, source, unit, lease)
                judge, outcomes = None, dict.fromkeys((s.name for s in unit), None)
                if not stage.host_reason:
                    facts = _run_facts(stage.run, stage.check, len(unit))
                    judge, outcomes = self._judge_stage(root, unit, stage.out, facts, oracle_mounts)
        return UnitResult(outcomes, _shares(unit, outcomes, lease), stage.run, judge, stage.host_reason)

    def _requests(self, unit: Sequence[Scenario]) -> str:
        return json.dumps([self.scenario_request(s) for s in unit], indent=2)

    def _run_stage(
        self, stack: contextlib.ExitStack, root: Path, source: Path, unit: Sequence[Scenario], lease: Lease
    ) -> RunStage:
        """The run phase of ``unit`` over a copy of ``source`` (hostile), in ``root`` (its
        artifacts sanitized and sized: a run past the artifact limit gets a ``host_reason``)."""
        # What the revision's code can write (its workspace copy and /out) sits on a disk
        # budget: a hostile run cannot fill the host's disk.
        (root / "run").mkdir()
        area = stack.enter_context(DiskArea(root / "run", self.case.budgets.disk_mb * MiB))
        workspace, out, run_io = area.path / "workspace", area.path / "out", root / "run-io"
        copy_tree(source, workspace, exclude=ALWAYS_EXCLUDED)
        for folder in (run_io, out):
            folder.mkdir(parents=True)
        (run_io / "scenarios.json").write_text(self._requests(unit))
        run = self._phase(
            f"grade-run-{len(unit)}x{unit[0].devices}",
            workspace,
            (
                Mount(self.case.kit_dir, KIT_MOUNT),
                Mount(HARNESSLIB_DIR, HARNESSLIB_MOUNT),
                Mount(run_io, "/io"),
                Mount(out, ARTIFACTS_OUT, writable=True),
            ),
            [*self.case.run_command, "--scenarios", "/io/scenarios.json", "--out-dir", ARTIFACTS_OUT],
            sum(s.timeout_s for s in unit),
            lease,
        )
        check = sanitize_artifacts(out, self.case.artifact_limit_bytes)
        host_reason = ""
        if check.total_bytes > self.case.artifact_limit_bytes:
            host_reason = (
                f"the run left {check.total_bytes / 2**20:.0f} MiB of artifacts, over the grader's "
                f"limit of {self.case.artifact_limit_bytes / 2**20:.0f} MiB"
            )
        return RunStage(run, check, out, host_reason, lease.device_seconds, lease.queue_wait_s)

    def _judge_stage(
        self,
        root: Path,
        unit: Sequence[Scenario],
        artifacts: Path,
        facts: dict[str, Any],
        oracle_mounts: tuple[Mount, ...],
    ) -> tuple[PhaseRun, dict[str, dict[str, Any] | None]]:
        """The judge phase (trusted) of ``unit`` over ``artifacts``, with the host's ``facts``
        about the run as ``/io/run.json``; the outcome it wrote per scenario (``None`` if none)."""
        judge_ws, judge_io = root / "judge-workspace", root / "judge-io"
        for folder in (judge_ws, judge_io / "outcomes"):
            folder.mkdir(parents=True)
        (judge_io / "scenarios.json").write_text(self._requests(unit))
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
        judge = self._phase(
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
        outcomes = {s.name: read_json_object(judge_io / "outcomes" / f"{s.name}.json") for s in unit}
        return judge, outcomes

    def grade_singles(
        self, source: Path, scenarios: Sequence[Scenario], progress: ProgressHook | None = None
    ) -> list[ScenarioOutcome]:
        """Each scenario in a run sandbox of its own (its own launch, devices and output folder),
        then one judge phase for every scenario whose run ended cleanly (exit 0, in time, within
        the artifact limit): the judge's start-up (Python, torch, the case's libraries) is paid
        once, while no run shares a process, a workspace or an output folder with another. The
        host's facts for that judge are those of clean runs, as a group's would be. A run that did
        not end cleanly is judged on its own, with its own facts. A scenario marked ``alone`` (its
        judge may read the host-timed duration of its run), one without an oracle, and one the
        judges left unjudged are graded by :meth:`grade_unit` (with its retries)."""
        outcomes: dict[str, ScenarioOutcome] = {}
        with tempfile.TemporaryDirectory(prefix="trainfail-singles-") as scratch:
            root = Path(scratch)
            clean: list[tuple[Scenario, RunStage]] = []
            oracles: dict[str, Mount] = {}
            for index, scenario in enumerate(s for s in scenarios if not s.alone and s.devices <= self.pool.size):
                if self.oracles is not None:
                    oracle, _, _ = self.oracles.ensure(scenario)
                    if oracle is None:
                        continue
                    oracles[scenario.name] = Mount(oracle, f"{ORACLE_MOUNT}/{scenario.name}")
                if progress:
                    progress(scenario.name, None)
                unit_root = root / f"unit{index}"
                unit_root.mkdir()
                stage = self._kept_run(unit_root, source, scenario)
                if stage.clean:
                    clean.append((scenario, stage))
                    continue
                judge: PhaseRun | None = None
                written: dict[str, dict[str, Any] | None] = {scenario.name: None}
                if not stage.host_reason:
                    facts = _run_facts(stage.run, stage.check, 1)
                    mount = (oracles[scenario.name],) if scenario.name in oracles else ()
                    judge, written = self._judge_stage(unit_root, (scenario,), stage.out, facts, mount)
                shares = {scenario.name: (stage.device_s, stage.queue_s)}
                judged, _ = self._sort((scenario,), UnitResult(written, shares, stage.run, judge, stage.host_reason))
                if judged:
                    outcomes[scenario.name] = _with_costs(judged[0], stage, judge.duration_s if judge else 0.0)
            if clean:
                unit = [scenario for scenario, _ in clean]
                artifacts = root / "artifacts"
                artifacts.mkdir()
                for scenario, stage in clean:
                    if (stage.out / scenario.name).is_dir():
                        (stage.out / scenario.name).rename(artifacts / scenario.name)
                facts = _shared_facts([stage for _, stage in clean])
                mounts = tuple(oracles[s.name] for s in unit if s.name in oracles)
                shared, written = self._judge_stage(root, unit, artifacts, facts, mounts)
                for scenario, stage in clean:
                    data = written.get(scenario.name)
                    outcome = _from_outcome(scenario, data) if data is not None else None
                    if outcome is not None and outcome.status != "error":
                        outcomes[scenario.name] = _with_costs(outcome, stage, shared.duration_s / len(unit))
        for scenario in scenarios:
            if scenario.name in outcomes:
                if progress:
                    progress(scenario.name, outcomes[scenario.name])
            else:
                outcomes[scenario.name] = self._run_all(source, [scenario], progress)[0]
        return [outcomes[s.name] for s in scenarios]

    def _kept_run(self, root: Path, source: Path, scenario: Scenario) -> RunStage:
        """The run phase of ``scenario`` alone, its sanitized artifacts moved out of the run's
        disk area into ``root/out`` (unless the host refuses them) before the area is closed."""
        with contextlib.ExitStack() as stack, self.pool.lease(scenario.devices) as lease:
            stage = self._run_stage(stack, root, source, (scenario,), lease)
            kept = root / "out"
            if not stage.host_reason:
                shutil.copytree(stage.out, kept, symlinks=True)
            else:
                kept.mkdir()
        return replace(stage, out=kept)

    def _phase(
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


class OracleCache:
    """Each scenario's reference, computed once per (case version, scenario, topology).

    The oracle runs in a fresh sandbox whose workspace is empty, so no revision's code can
    touch it; its ``--out-dir`` is kept under ``$TRAINFAIL_HOME/oracles`` (or, not
    ``persistent``, in a folder that lives as long as the grader) and mounted read-only for
    every revision's judge. Concurrent graders on a node compute it once (a lock file).
    """

    def __init__(self, grader: Grader, command: Sequence[str], *, persistent: bool = True) -> None:
        self.grader = grader
        self.command = tuple(command)
        self.root = home() / "oracles" if persistent else Path(tempfile.mkdtemp(prefix="trainfail-oracles-"))

    def key(self, scenario: Scenario) -> str:
        """Digest of what decides the oracle: grader files and runtime, scenario, topology, backend."""
        request = self.grader.scenario_request(scenario)
        return bytes_digest(json.dumps([self.grader.grader_hash, request], sort_keys=True).encode())

    def folder(self, scenario: Scenario) -> Path:
        return self.root / self.grader.case.id.replace("/", "__") / self.key(scenario)[:24]

    def ensure(self, scenario: Scenario) -> tuple[Path | None, float, float]:
        """The scenario's oracle folder (``None`` when it cannot be made) and the device- and
        queue-seconds spent making it now (0 when it was cached)."""
        folder = self.folder(scenario)
        folder.parent.mkdir(parents=True, exist_ok=True)
        with (folder.parent / f"{folder.name}.lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if (folder / ORACLE_DONE).exists():
                return folder, 0.0, 0.0
            device_s = queue_s = 0.0
            for _ in range(self.grader.retries + 1):
                done, lease = self._compute(scenario, folder)
                device_s += lease.device_seconds
                queue_s += lease.queue_wait_s
                if done:
                    return folder, device_s, queue_s
            return None, device_s, queue_s

    def _compute(self, scenario: Scenario, folder: Path) -> tuple[bool, Lease]:
        with tempfile.TemporaryDirectory(prefix="trainfail-oracle-") as scratch:
            root = Path(scratch)
            (root / "empty").mkdir()
            io = root / "io"
            io.mkdir()
            (io / "scenario.json").write_text(json.dumps(self.grader.scenario_request(scenario), indent=2))
            argv = [*self.command, "--scenario", "/io/scenario.json", "--out-dir", "/io/oracle"]
            mounts = (
                Mount(self.grader.case.grader_dir, "/grader"),
                Mount(HARNESSLIB_DIR, HARNESSLIB_MOUNT),
                Mount(io, "/io", writable=True),
            )
            with self.grader.pool.lease(scenario.devices) as lease:
                phase = self.grader._phase(
                    f"oracle-{scenario.name}", root / "empty", mounts, argv, scenario.timeout_s, lease
                )
            made = io / "oracle"
            if not phase.result.ok or not made.is_dir():
                return False, lease
            (made / ORACLE_DONE).write_text(json.dumps({"scenario": scenario.name, "created": time.time()}))
            shutil.rmtree(folder, ignore_errors=True)
            shutil.copytree(made, folder)
        return True, lease


#: Marks a complete oracle folder.
ORACLE_DONE = ".complete"


@dataclass(frozen=True)
class ArtifactCheck:
    """What the host found under a run phase's ``/out``: the bytes kept (regular files, by
    their apparent size) and the paths it removed (links, FIFOs, sockets, devices)."""

    total_bytes: int
    removed: tuple[str, ...]


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


def _run_facts(run: PhaseRun, check: ArtifactCheck, scenarios: int) -> dict[str, Any]:
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


def _shared_facts(runs: Sequence[RunStage]) -> dict[str, Any]:
    """The host's facts for one judge over several clean single runs, as a group's run would
    give them: exit 0, in time, their durations added, their output tails joined (bounded)."""
    tails = [_run_facts(stage.run, stage.check, 1)["output_tail"] for stage in runs]
    return {
        "exit_code": 0,
        "timed_out": False,
        "oom_killed": False,
        "duration_s": round(sum(stage.run.duration_s for stage in runs), 3),
        "scenarios": len(runs),
        "output_tail": "\n".join(tails)[-RUN_OUTPUT_TAIL:],
        "removed": [path for stage in runs for path in stage.check.removed][:50],
    }


def _with_costs(outcome: ScenarioOutcome, stage: RunStage, judge_s: float) -> ScenarioOutcome:
    """A single run's outcome with the devices its run held and its share of the judge's time."""
    return replace(
        outcome,
        device_seconds=stage.device_s,
        queue_wait_s=stage.queue_s,
        duration_s=stage.run.duration_s + judge_s,
    )


def _shares(
    unit: Sequence[Scenario], outcomes: dict[str, dict[str, Any] | None], lease: Lease
) -> dict[str, tuple[float, float]]:
    """Each scenario's share of the unit's device- and queue-seconds, by the ``total_s`` its
    outcome reports (an even split when any is missing or implausible)."""
    weights = {s.name: _total_s(outcomes.get(s.name)) for s in unit}
    if not all(weights.values()):
        weights = dict.fromkeys(weights, 1.0)
    total = sum(weights.values())
    return {name: (lease.device_seconds * w / total, lease.queue_wait_s * w / total) for name, w in weights.items()}


def _duration(outcome: ScenarioOutcome, unit_size: int, elapsed: float) -> float:
    """A scenario's duration: its own ``total_s`` in a group, the unit's wall time alone."""
    if unit_size > 1:
        return min(float(outcome.timings.get("total_s", 0.0)), elapsed)
    return elapsed


def _why_unjudged(scenario: Scenario, result: UnitResult | None) -> str:
    """The reason recorded for a scenario that never got a verdict."""
    if result is None:
        return "not graded"
    data = result.outcomes.get(scenario.name)
    if data is not None:
        return _from_outcome(scenario, data).reason
    judge = result.judge
    if judge is None:
        return "the judge did not run"
    tail = (judge.result.stderr or judge.result.stdout).strip().splitlines()[-4:]
    how = "timed out" if judge.result.timed_out else f"exit {judge.result.exit_code}"
    return f"the judge wrote no outcome ({how}): " + " | ".join(tail)[-400:]


def _unjudged(scenario: Scenario, reason: str, device_s: float, queue_s: float, started: float) -> ScenarioOutcome:
    return ScenarioOutcome(
        scenario=scenario.name,
        kind=scenario.kind,
        status="error",
        reason=reason,
        duration_s=time.monotonic() - started,
        device_seconds=device_s,
        queue_wait_s=queue_s,
    )


#: The metric that marks an outcome as "this node cannot run the scenario" (needed, available).
NOT_RUNNABLE = "not_runnable_here"


def _not_runnable(scenario: Scenario, available: int, described: str) -> ScenarioOutcome:
    return ScenarioOutcome(
        scenario=scenario.name,
        kind=scenario.kind,
        status="error",
        reason=f"not runnable here: needs {scenario.devices} devices, this node has {described}",
        metrics={NOT_RUNNABLE: {"needed": scenario.devices, "available": available}},
    )


def not_runnable(receipt: Receipt) -> list[ScenarioOutcome]:
    """The receipt's scenarios this node could not run (too few devices)."""
    return [o for o in receipt.outcomes if o.status == "error" and NOT_RUNNABLE in o.metrics]


def _outcome(scenario: Scenario, status: Status, reason: str) -> ScenarioOutcome:
    return ScenarioOutcome(scenario=scenario.name, kind=scenario.kind, status=status, reason=reason)


def _from_outcome(scenario: Scenario, outcome: dict[str, Any]) -> ScenarioOutcome:
    """The outcome a judge wrote, as a :class:`ScenarioOutcome` (``retry`` and anything
    malformed are ``error``: not judged). Sizes are bounded: a judge may quote artifacts."""
    answered = outcome.get("status")
    metrics = _bounded_metrics(outcome.get("metrics"))
    raw_timings = outcome.get("timings")
    timings = (
        {str(k)[:60]: float(v) for k, v in list(raw_timings.items())[:40] if _is_number(v) and math.isfinite(v)}
        if isinstance(raw_timings, dict)
        else {}
    )
    reason = str(outcome.get("reason", ""))[:MAX_REASON]
    status: Status = "error"
    if answered in ("pass", "fail"):
        status = "pass" if answered == "pass" else "fail"
    elif answered == "retry":
        reason = f"not judged (retry): {reason}"
    else:
        reason = f"the judge answered status {str(answered)[:40]!r}"
    return ScenarioOutcome(
        scenario=scenario.name, kind=scenario.kind, status=status, reason=reason, metrics=metrics, timings=timings
    )


def _bounded_metrics(value: Any) -> dict[str, Any]:
    """The judge's metrics, dropped whole when they are not a small JSON object."""
    if not isinstance(value, dict):
        return {}
    try:
        text = json.dumps(value, default=str)
    except (TypeError, ValueError):
        return {}
    return value if len(text) <= MAX_METRICS_BYTES else {"_dropped": f"metrics of {len(text)} bytes"}


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _total_s(outcome: dict[str, Any] | None) -> float:
    """The ``timings.total_s`` an outcome reports (0 when it reports none or nonsense)."""
    timings = (outcome or {}).get("timings") or {}
    value: Any = timings.get("total_s") if isinstance(timings, dict) else None
    if not _is_number(value) or not math.isfinite(value):
        return 0.0
    return min(max(float(value), 0.0), 1e7)
