"""What grading produces: one outcome per scenario, a receipt per revision tree, first valid.

A judge's outcome file is adversarial-sized data from a trusted process: it is bounded here
(reason, metrics, timings) and anything but ``pass``/``fail`` is ``error`` (not judged, never a
pass). A receipt is keyed by (revision tree hash, grader hash) and stored only when every verdict
in it is known.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from gym_trainfail.cases import Scenario

Status = Literal["pass", "fail", "error"]
#: Bounds on what a receipt keeps of a judge's outcome.
MAX_REASON = 1000
MAX_METRICS_BYTES = 20_000


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


def no_verdict(scenario: Scenario, reason: str, device_s: float, queue_s: float, started: float) -> ScenarioOutcome:
    """An ``error`` outcome: the scenario got no verdict (unknown, never a pass)."""
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


def not_runnable_here(scenario: Scenario, available: int, described: str) -> ScenarioOutcome:
    """Not a verdict on the revision: this node has too few devices for the scenario."""
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


def host_verdict(scenario: Scenario, status: Status, reason: str) -> ScenarioOutcome:
    """An outcome the host decides itself (a run past its limits, a scenario it cannot run)."""
    return ScenarioOutcome(scenario=scenario.name, kind=scenario.kind, status=status, reason=reason)


def from_outcome(scenario: Scenario, data: dict[str, Any]) -> ScenarioOutcome:
    """The outcome a judge wrote, as a :class:`ScenarioOutcome` (``retry`` and anything
    malformed are ``error``: not judged). Sizes are bounded: a judge may quote artifacts."""
    answered = data.get("status")
    metrics = _bounded_metrics(data.get("metrics"))
    raw_timings = data.get("timings")
    timings = (
        {str(k)[:60]: float(v) for k, v in list(raw_timings.items())[:40] if _is_number(v) and math.isfinite(v)}
        if isinstance(raw_timings, dict)
        else {}
    )
    reason = str(data.get("reason", ""))[:MAX_REASON]
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


def reported_total_s(data: dict[str, Any] | None) -> float:
    """The ``timings.total_s`` an outcome reports (0 when it reports none or nonsense)."""
    timings = (data or {}).get("timings") or {}
    value: Any = timings.get("total_s") if isinstance(timings, dict) else None
    if not _is_number(value) or not math.isfinite(value):
        return 0.0
    return min(max(float(value), 0.0), 1e7)
