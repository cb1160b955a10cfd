"""Private grading: replay a revision on every frozen scenario, each in a fresh sandbox.

The grader copies the revision into a new sandbox per scenario, mounts the case's ``grader/``
read-only at ``/grader`` and a scratch ``/io``, runs the case's harness (protocol in
``docs/case-authoring.md``) and reads back one outcome. Verdicts never reach the agent.

Every revision is graded in the ``control`` runtime, whatever arm produced it: a repair must
not depend on TrainCheck, and receipts are shared across arms. Receipts are keyed by
(revision tree hash, grader hash); the grader hash covers the case's grader files and the
runtime, so a change to either voids old receipts. A receipt holding an
infrastructure error is never cached: the revision is graded again next time.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from gym_trainfail.cases import CaseSpec, Scenario
from gym_trainfail.devices import DevicePool
from gym_trainfail.errors import GradingError
from gym_trainfail.hashing import bytes_digest, tree_digest
from gym_trainfail.paths import receipts_dir
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
    ) -> None:
        self.case = case
        self.sandbox = sandbox
        self.runtime = runtime or find_runtime(GRADING_ARM)
        self.pool = pool or DevicePool()
        self.retries = retries
        self.cache = cache
        self.grader_hash = bytes_digest(f"{case.grader_hash()}:{self.runtime.digest}".encode())

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
        outcomes = []
        for scenario in selected:
            if progress:
                progress(scenario.name, None)
            outcome = self.run_scenario(source, scenario)
            outcomes.append(outcome)
            if progress:
                progress(scenario.name, outcome)
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

    def run_scenario(self, source: Path, scenario: Scenario) -> ScenarioOutcome:
        """Run one scenario in fresh sandboxes until it gives a verdict (bounded retries)."""
        attempts = 0
        total_device_s = total_queue_s = 0.0
        started = time.monotonic()
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

    def _attempt(self, source: Path, scenario: Scenario) -> ScenarioOutcome:
        with tempfile.TemporaryDirectory(prefix="trainfail-grade-") as scratch:
            root = Path(scratch)
            workspace, io = root / "workspace", root / "io"
            shutil.copytree(source, workspace, symlinks=True, ignore=shutil.ignore_patterns(*ALWAYS_EXCLUDED))
            io.mkdir()
            request = {
                "name": scenario.name,
                "kind": scenario.kind,
                "devices": scenario.devices,
                "backend": "nccl" if self.pool.kind == "gpu" else "gloo",
                "params": dict(scenario.params),
            }
            (io / "scenario.json").write_text(json.dumps(request, indent=2))
            config = SandboxConfig(
                runtime=self.runtime,
                workspace=workspace,
                mounts=(Mount(self.case.grader_dir, "/grader"), Mount(io, "/io", writable=True)),
                limits=GRADER_LIMITS,
                label=f"grade-{scenario.name}",
            )
            argv = [
                *self.case.grader_command,
                "--scenario",
                "/io/scenario.json",
                "--out",
                "/io/outcome.json",
            ]
            with self.pool.lease(scenario.devices) as lease:
                sandbox = create_sandbox(self.sandbox, config)
                try:
                    result = sandbox.exec(argv, timeout_s=scenario.timeout_s, devices=lease.devices)
                finally:
                    sandbox.close()
            outcome = _read_outcome(io / "outcome.json")
        return _interpret(scenario, result, outcome, lease.device_seconds, lease.queue_wait_s)


def _interpret(
    scenario: Scenario, result: ExecResult, outcome: dict[str, Any] | None, device_s: float, queue_s: float
) -> ScenarioOutcome:
    """Turn what one harness run left behind into an outcome (``error`` = not judged)."""

    def make(
        status: Status, reason: str, metrics: dict[str, Any] | None = None, timings: dict[str, float] | None = None
    ) -> ScenarioOutcome:
        return ScenarioOutcome(
            scenario=scenario.name,
            kind=scenario.kind,
            status=status,
            reason=reason,
            metrics=metrics or {},
            timings=timings or {},
            device_seconds=device_s,
            queue_wait_s=queue_s,
        )

    if result.timed_out:
        return make("fail", f"scenario exceeded {scenario.timeout_s:.0f} s")
    if outcome is None:
        tail = (result.stderr or result.stdout).strip().splitlines()[-6:]
        reason = f"the harness wrote no outcome (exit {result.exit_code}): " + " | ".join(tail)[-600:]
        return make("error", reason, {"_retry": True})
    status = outcome.get("status")
    metrics = dict(outcome.get("metrics") or {})
    timings = {k: float(v) for k, v in (outcome.get("timings") or {}).items()}
    reason = str(outcome.get("reason", ""))[:1000]
    if status == "retry":
        return make("error", f"not judged (retry): {reason}", {**metrics, "_retry": True}, timings)
    if status == "pass":
        return make("pass", reason, metrics, timings)
    if status == "fail":
        return make("fail", reason, metrics, timings)
    return make("error", f"the harness answered status {status!r}")


def _read_outcome(path: Path) -> dict[str, Any] | None:
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
