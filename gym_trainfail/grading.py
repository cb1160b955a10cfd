"""Private grading: replay a revision on every frozen scenario, each in a fresh sandbox.

The grader copies the revision into a new sandbox per scenario, mounts the case's ``grader/``
read-only at ``/grader`` and a scratch ``/io``, runs the case's harness (protocol in
``docs/case-authoring.md``) and reads back one outcome. Verdicts never reach the agent.

Every revision is graded in the ``control`` runtime, whatever arm produced it: a repair must
not depend on TrainCheck, and receipts are shared across arms. Receipts are keyed by
(revision tree hash, grader hash); the grader hash covers the case's grader files and the
runtime, so a change to either voids old receipts. A receipt holding an
infrastructure error is never cached: the revision is graded again next time.

Performance options that never change a verdict: ``parallel_scenarios`` runs up to that many
scenarios of a revision at once (each still in its own fresh sandbox, sharing the device
pool), and the oracle cache (for cases whose ``case.toml`` names a ``grader.oracle_command``)
computes each scenario's reference once per (case version, scenario, topology) in a sandbox
that holds no revision, then mounts it read-only at ``/oracle`` for every revision.

Scenario groups (for cases whose ``case.toml`` names a ``grader.group_command``): scenarios
that need the same number of devices run in one sandbox over one copy of the revision, and the
harness may train them in one process launch (its start-up paid once). A scenario the group
run left without a verdict (no outcome, ``retry``, the group's time ran out) is run again on
its own, so one scenario can never decide another's verdict.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from gym_trainfail.cases import CaseSpec, Scenario
from gym_trainfail.devices import DevicePool, Lease
from gym_trainfail.errors import GradingError
from gym_trainfail.hashing import bytes_digest, tree_digest
from gym_trainfail.paths import home, receipts_dir
from gym_trainfail.revisions import ALWAYS_EXCLUDED
from gym_trainfail.runtimes import Runtime, find_runtime
from gym_trainfail.sandbox import ExecResult, Limits, Mount, SandboxConfig, create_sandbox
from gym_trainfail.sandbox.base import GiB

Status = Literal["pass", "fail", "error"]
#: The runtime graders run in, for revisions from every arm.
GRADING_ARM = "control"
#: How often a scenario whose harness answered ``retry`` is run again before it is an error.
DEFAULT_RETRIES = 2
GRADER_LIMITS = Limits(memory_bytes=16 * GiB, pids=4096, output_bytes=20_000)
#: Where a cached oracle is mounted in grading sandboxes.
ORACLE_MOUNT = "/oracle"
#: Support code for harnesses (``gym_trainfail/harnesslib``), mounted read-only in grading sandboxes.
HARNESSLIB_DIR = Path(__file__).resolve().parent / "harnesslib"
HARNESSLIB_MOUNT = "/harnesslib"


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
    #: Judged in a scenario group's launch (``group_command``) rather than one of its own.
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

    @property
    def status(self) -> Status:
        """``error`` if any scenario could not be judged, else ``pass`` iff every one passed."""
        if any(o.status == "error" for o in self.outcomes):
            return "error"
        return "pass" if all(o.status == "pass" for o in self.outcomes) else "fail"

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
        )


ProgressHook = Callable[[str, ScenarioOutcome | None], None]


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
        self.pool = pool or DevicePool()
        self.retries = retries
        self.cache = cache
        self.parallel_scenarios = parallel_scenarios
        self.group_command = case.group_command if group_scenarios else ()
        self.grader_hash = bytes_digest(f"{case.grader_hash()}:{self.runtime.digest}:{harnesslib_digest()}".encode())
        command = case.oracle_command if oracle_cache else ()
        self.oracles = OracleCache(self, command) if command else None

    def receipt_path(self, tree: str) -> Path:
        slug = self.case.id.replace("/", "__")
        return receipts_dir() / slug / f"{tree}-{self.grader_hash[:16]}.json"

    def cached(self, tree: str) -> Receipt | None:
        """A stored receipt for this tree under this grader version, if any."""
        path = self.receipt_path(tree)
        if not self.cache or not path.exists():
            return None
        receipt = Receipt.from_json(json.loads(path.read_text()))
        return receipt if receipt.grader_hash == self.grader_hash and receipt.status != "error" else None

    def grade_dir(
        self,
        source: Path,
        *,
        tree: str | None = None,
        scenarios: Iterable[Scenario] | None = None,
        progress: ProgressHook | None = None,
    ) -> Receipt:
        """Grade the workspace tree in ``source`` (its tree hash computed if not given)."""
        tree = tree or tree_digest(source, exclude=(*ALWAYS_EXCLUDED, *self.case.workspace_exclude))
        selected = tuple(scenarios) if scenarios is not None else self.case.scenarios
        full = selected == self.case.scenarios
        if full and (hit := self.cached(tree)) is not None:
            if progress:
                progress("cached", None)
            return hit
        started = time.time()
        outcomes = self._run_all(source, selected, progress)
        receipt = Receipt(
            case_id=self.case.id,
            tree=tree,
            grader_hash=self.grader_hash,
            outcomes=tuple(outcomes),
            created=started,
            duration_s=time.time() - started,
        )
        if full and receipt.status != "error":
            write_json(self.receipt_path(tree), receipt.to_json())
        return receipt

    def _run_all(
        self, source: Path, scenarios: Sequence[Scenario], progress: ProgressHook | None
    ) -> list[ScenarioOutcome]:
        """Every scenario (or scenario group), ``parallel_scenarios`` at a time, outcomes in
        scenario order."""

        def one(unit: tuple[Scenario, ...]) -> list[ScenarioOutcome]:
            if progress:
                for scenario in unit:
                    progress(scenario.name, None)
            outcomes = self.run_group(source, unit) if len(unit) > 1 else [self.run_scenario(source, unit[0])]
            if progress:
                for outcome in outcomes:
                    progress(outcome.scenario, outcome)
            return outcomes

        units = self.partition(scenarios)
        if self.parallel_scenarios == 1 or len(units) < 2:
            results = [one(u) for u in units]
        else:
            with ThreadPoolExecutor(self.parallel_scenarios, thread_name_prefix="scenario") as pool:
                results = list(pool.map(one, units))
        by_name = {o.scenario: o for outcomes in results for o in outcomes}
        return [by_name[s.name] for s in scenarios]

    def partition(self, scenarios: Sequence[Scenario]) -> list[tuple[Scenario, ...]]:
        """Launch units: one per scenario, or, with a ``group_command``, one per device count."""
        if not self.group_command:
            return [(s,) for s in scenarios]
        groups: dict[int, list[Scenario]] = {}
        for scenario in scenarios:
            groups.setdefault(scenario.devices, []).append(scenario)
        return [tuple(g) for g in groups.values()]

    def run_group(self, source: Path, group: Sequence[Scenario]) -> list[ScenarioOutcome]:
        """Grade ``group`` (same device count) in one sandbox with the case's ``group_command``;
        scenarios it leaves unjudged are graded again on their own."""
        started = time.monotonic()
        oracle_cost: dict[str, tuple[float, float]] = {}
        mounts: list[Mount] = []
        runnable: list[Scenario] = []
        failed_oracle: dict[str, ScenarioOutcome] = {}
        for scenario in group:
            if self.oracles is None:
                runnable.append(scenario)
                continue
            oracle, device_s, queue_s = self.oracles.ensure(scenario)
            oracle_cost[scenario.name] = (device_s, queue_s)
            if oracle is None:
                failed_oracle[scenario.name] = _unjudged(
                    scenario, "the oracle run gave no reference", device_s, queue_s, started
                )
            else:
                mounts.append(Mount(oracle, f"{ORACLE_MOUNT}/{scenario.name}"))
                runnable.append(scenario)
        raw: dict[str, dict[str, Any] | None] = {}
        shares: dict[str, tuple[float, float]] = {}
        if runnable:
            raw, shares = self._group_attempt(source, runnable, tuple(mounts))
        outcomes = []
        for scenario in group:
            if scenario.name in failed_oracle:
                outcomes.append(failed_oracle[scenario.name])
                continue
            spent_device, spent_queue = shares[scenario.name]
            oracle_device, oracle_queue = oracle_cost.get(scenario.name, (0.0, 0.0))
            data = raw.get(scenario.name)
            if data is None or data.get("status") not in ("pass", "fail"):
                alone = self.run_scenario(source, scenario)
                outcomes.append(
                    replace(
                        alone,
                        attempts=alone.attempts + 1,
                        device_seconds=alone.device_seconds + spent_device,
                        queue_wait_s=alone.queue_wait_s + spent_queue,
                    )
                )
                continue
            judged = _from_outcome(scenario, data, spent_device + oracle_device, spent_queue + oracle_queue)
            outcomes.append(replace(judged, grouped=True, duration_s=float(judged.timings.get("total_s", 0.0))))
        return outcomes

    def _group_attempt(
        self, source: Path, group: Sequence[Scenario], mounts: tuple[Mount, ...]
    ) -> tuple[dict[str, dict[str, Any] | None], dict[str, tuple[float, float]]]:
        """One run of ``group_command``: each scenario's outcome (``None`` if it wrote none) and
        its share of the group's device- and queue-seconds (by its reported ``total_s``)."""
        with tempfile.TemporaryDirectory(prefix="trainfail-group-") as scratch:
            root = Path(scratch)
            workspace, io = root / "workspace", root / "io"
            shutil.copytree(source, workspace, symlinks=True, ignore=shutil.ignore_patterns(*ALWAYS_EXCLUDED))
            io.mkdir()
            (io / "outcomes").mkdir()
            requests = [self.scenario_request(s) for s in group]
            (io / "scenarios.json").write_text(json.dumps(requests, indent=2))
            argv = [*self.group_command, "--scenarios", "/io/scenarios.json", "--out-dir", "/io/outcomes"]
            if mounts:
                argv += ["--oracle", ORACLE_MOUNT]
            label = f"grade-group-{len(group)}x{group[0].devices}"
            timeout = sum(s.timeout_s for s in group)
            _, lease = self._sandboxed(label, group[0].devices, timeout, workspace, io, argv, mounts)
            raw = {s.name: read_json_object(io / "outcomes" / f"{s.name}.json") for s in group}
        weights = {name: _total_s(data) for name, data in raw.items()}
        if not all(weights.values()):
            weights = dict.fromkeys(raw, 1.0)
        total = sum(weights.values())
        shares = {
            name: (lease.device_seconds * w / total, lease.queue_wait_s * w / total) for name, w in weights.items()
        }
        return raw, shares

    def run_scenario(self, source: Path, scenario: Scenario) -> ScenarioOutcome:
        """Run one scenario in fresh sandboxes until it gives a verdict (bounded retries)."""
        attempts = 0
        total_device_s = total_queue_s = 0.0
        started = time.monotonic()
        if self.oracles is not None:
            oracle, total_device_s, total_queue_s = self.oracles.ensure(scenario)
            if oracle is None:
                return _unjudged(scenario, "the oracle run gave no reference", total_device_s, total_queue_s, started)
        while True:
            attempts += 1
            outcome = self._attempt(source, scenario)
            total_device_s += outcome.device_seconds
            total_queue_s += outcome.queue_wait_s
            if outcome.status != "error" or attempts > self.retries or not outcome.metrics.get("_retry"):
                break
        metrics = {k: v for k, v in outcome.metrics.items() if k != "_retry"}
        return ScenarioOutcome(
            scenario=scenario.name,
            kind=scenario.kind,
            status=outcome.status,
            reason=outcome.reason,
            metrics=metrics,
            timings=outcome.timings,
            attempts=attempts,
            duration_s=time.monotonic() - started,
            device_seconds=total_device_s,
            queue_wait_s=total_queue_s,
        )

    def scenario_request(self, scenario: Scenario) -> dict[str, Any]:
        """What the harness reads from ``/io/scenario.json``."""
        return {
            "name": scenario.name,
            "kind": scenario.kind,
            "devices": scenario.devices,
            "backend": "nccl" if self.pool.kind == "gpu" else "gloo",
            "params": dict(scenario.params),
        }

    def _attempt(self, source: Path, scenario: Scenario) -> ScenarioOutcome:
        with tempfile.TemporaryDirectory(prefix="trainfail-grade-") as scratch:
            root = Path(scratch)
            workspace, io = root / "workspace", root / "io"
            shutil.copytree(source, workspace, symlinks=True, ignore=shutil.ignore_patterns(*ALWAYS_EXCLUDED))
            argv = [*self.case.grader_command, "--scenario", "/io/scenario.json", "--out", "/io/outcome.json"]
            mounts: tuple[Mount, ...] = ()
            if self.oracles is not None:
                mounts = (Mount(self.oracles.folder(scenario), ORACLE_MOUNT),)
                argv += ["--oracle", ORACLE_MOUNT]
            result, lease = self.run_harness(scenario, workspace, io, argv, mounts)
            outcome = read_json_object(io / "outcome.json")
        return _interpret(scenario, result, outcome, lease.device_seconds, lease.queue_wait_s)

    def run_harness(
        self, scenario: Scenario, workspace: Path, io: Path, argv: Sequence[str], mounts: tuple[Mount, ...] = ()
    ) -> tuple[ExecResult, Lease]:
        """Run ``argv`` for ``scenario`` in a fresh sandbox over ``workspace``, ``io`` at ``/io``."""
        io.mkdir(parents=True, exist_ok=True)
        (io / "scenario.json").write_text(json.dumps(self.scenario_request(scenario), indent=2))
        label = f"grade-{scenario.name}"
        return self._sandboxed(label, scenario.devices, scenario.timeout_s, workspace, io, argv, mounts)

    def _sandboxed(
        self,
        label: str,
        devices: int,
        timeout_s: float,
        workspace: Path,
        io: Path,
        argv: Sequence[str],
        mounts: tuple[Mount, ...],
    ) -> tuple[ExecResult, Lease]:
        """``argv`` in a fresh grading sandbox holding ``devices`` from the pool for its lifetime."""
        config = SandboxConfig(
            runtime=self.runtime,
            workspace=workspace,
            mounts=(
                Mount(self.case.grader_dir, "/grader"),
                Mount(HARNESSLIB_DIR, HARNESSLIB_MOUNT),
                Mount(io, "/io", writable=True),
                *mounts,
            ),
            limits=GRADER_LIMITS,
            label=label,
        )
        with self.pool.lease(devices) as lease:
            sandbox = create_sandbox(self.sandbox, config)
            try:
                result = sandbox.exec(list(argv), timeout_s=timeout_s, devices=lease.devices)
            finally:
                sandbox.close()
        return result, lease


class OracleCache:
    """Each scenario's reference, computed once per (case version, scenario, topology).

    The oracle runs in a fresh sandbox whose workspace is empty, so no revision's code can
    touch it; its ``--out-dir`` is kept under ``$TRAINFAIL_HOME/oracles`` and mounted
    read-only for every revision. Concurrent graders on a node compute it once (a lock file).
    """

    def __init__(self, grader: Grader, command: Sequence[str]) -> None:
        self.grader = grader
        self.command = tuple(command)

    def key(self, scenario: Scenario) -> str:
        """Digest of what decides the oracle: grader files and runtime, scenario, topology, backend."""
        request = self.grader.scenario_request(scenario)
        return bytes_digest(json.dumps([self.grader.grader_hash, request], sort_keys=True).encode())

    def folder(self, scenario: Scenario) -> Path:
        return home() / "oracles" / self.grader.case.id.replace("/", "__") / self.key(scenario)[:24]

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
            argv = [*self.command, "--scenario", "/io/scenario.json", "--out-dir", "/io/oracle"]
            result, lease = self.grader.run_harness(scenario, root / "empty", root / "io", argv)
            made = root / "io" / "oracle"
            if not result.ok or not made.is_dir():
                return False, lease
            (made / ORACLE_DONE).write_text(json.dumps({"scenario": scenario.name, "created": time.time()}))
            shutil.rmtree(folder, ignore_errors=True)
            shutil.copytree(made, folder)
        return True, lease


#: Marks a complete oracle folder.
ORACLE_DONE = ".complete"


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


def _interpret(
    scenario: Scenario, result: ExecResult, outcome: dict[str, Any] | None, device_s: float, queue_s: float
) -> ScenarioOutcome:
    """Turn what one harness run left behind into an outcome (``error`` = not judged)."""

    def make(status: Status, reason: str, metrics: dict[str, Any] | None = None) -> ScenarioOutcome:
        return ScenarioOutcome(
            scenario=scenario.name,
            kind=scenario.kind,
            status=status,
            reason=reason,
            metrics=metrics or {},
            device_seconds=device_s,
            queue_wait_s=queue_s,
        )

    if result.timed_out:
        return make("fail", f"scenario exceeded {scenario.timeout_s:.0f} s")
    if outcome is None:
        tail = (result.stderr or result.stdout).strip().splitlines()[-6:]
        reason = f"the harness wrote no outcome (exit {result.exit_code}): " + " | ".join(tail)[-600:]
        return make("error", reason, {"_retry": True})
    return _from_outcome(scenario, outcome, device_s, queue_s)


def _from_outcome(scenario: Scenario, outcome: dict[str, Any], device_s: float, queue_s: float) -> ScenarioOutcome:
    """The outcome a harness wrote, as a :class:`ScenarioOutcome` (``retry`` = not judged)."""
    answered = outcome.get("status")
    metrics = dict(outcome.get("metrics") or {})
    timings = {k: float(v) for k, v in (outcome.get("timings") or {}).items() if _is_number(v)}
    reason = str(outcome.get("reason", ""))[:1000]
    status: Status = "error"
    if answered in ("pass", "fail"):
        status = "pass" if answered == "pass" else "fail"
    elif answered == "retry":
        reason, metrics = f"not judged (retry): {reason}", {**metrics, "_retry": True}
    else:
        reason = f"the harness answered status {answered!r}"
    return ScenarioOutcome(
        scenario=scenario.name,
        kind=scenario.kind,
        status=status,
        reason=reason,
        metrics=metrics,
        timings=timings,
        device_seconds=device_s,
        queue_wait_s=queue_s,
    )


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _total_s(outcome: dict[str, Any] | None) -> float:
    """The ``timings.total_s`` an outcome reports (0 when it reports none)."""
    timings = (outcome or {}).get("timings") or {}
    value: Any = timings.get("total_s") if isinstance(timings, dict) else None
    return max(float(value), 0.0) if _is_number(value) else 0.0


def read_json_object(path: Path) -> dict[str, Any] | None:
    """The JSON object in ``path``, or ``None`` when it is absent, unreadable or not an object."""
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None
    return data if isinstance(data, dict) else None


def write_json(path: Path, data: Any) -> None:
    """Write JSON atomically (temp file, then rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    partial.write_text(json.dumps(data, indent=2, sort_keys=True, default=str))
    os.replace(partial, path)


def apply_patch(workspace: Path, patch: Path) -> None:
    """Apply a unified diff (``a/…``/``b/…`` paths) to ``workspace`` in place."""
    result = subprocess.run(
        [
            "patch",
            "-p1",
            "--forward",
            "--batch",
            "--no-backup-if-mismatch",
            "-d",
            str(workspace),
            "-i",
            str(patch),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise GradingError(f"{patch} does not apply to {workspace}: {result.stdout.strip()} {result.stderr.strip()}")
    with contextlib.suppress(FileNotFoundError):
        for orig in workspace.rglob("*.orig"):
            orig.unlink()
