"""A case's TrainCheck reach record: ``envs/<case>/traincheck-reach.json``, written only by
``trainfail reach``.

The record is keyed by a content digest of what the measurement depends on: the workspace (the
pipeline TrainCheck ran), the reach spec (with the files it copies in) and the ``traincheck``
runtime's lock. A record whose key no longer matches is *stale*: shown as such, never as current.
Reading is defensive (the file sits in a folder people edit): a record that is not the closed
shape written here is reported as broken.
"""

from __future__ import annotations

import datetime
import os
import platform
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gym_trainfail.arms import get_arm
from gym_trainfail.cases import CaseSpec
from gym_trainfail.files import read_json_object, write_json
from gym_trainfail.hashing import bytes_digest, file_digest, tree_digest
from gym_trainfail.reach.spec import ReachSpec, load_spec, spec_path
from gym_trainfail.reach.workflow import VariantResult
from gym_trainfail.revisions import ALWAYS_EXCLUDED
from gym_trainfail.runtimes import lock_path

RECORD_FILE = "traincheck-reach.json"
SCHEMA = 1
RECORD_KEYS = frozenset({"schema", "case", "key", "inputs", "measured", "summary", "variants"})
SUMMARY_KEYS = frozenset(
    {"detects", "default_detects", "false_alarms", "culprit_named", "first_violating_step", "invariants",
     "seconds", "device_seconds", "variants", "detecting_variants", "errors"}
)  # fmt: skip


def record_path(case: CaseSpec) -> Path:
    """Where the case's reach record lives."""
    return case.root / RECORD_FILE


def reach_inputs(case: CaseSpec, spec: ReachSpec | None = None) -> dict[str, str]:
    """The digests a reach measurement depends on."""
    spec = spec or load_spec(spec_path(case.grader_dir))
    lock = lock_path(get_arm("traincheck"))
    return {
        "workspace": tree_digest(case.workspace_dir, exclude=(*ALWAYS_EXCLUDED, "__pycache__", "*.pyc")),
        "spec": spec.digest(),
        "traincheck_lock": file_digest(lock) if lock.is_file() else "missing",
    }


def reach_key(inputs: dict[str, str]) -> str:
    """The record's key: one digest over its inputs."""
    return bytes_digest("\n".join(f"{k}={inputs[k]}" for k in sorted(inputs)).encode())


def summarise(results: list[VariantResult]) -> dict[str, Any]:
    """The case's headline: the default variant's numbers, and whether any variant detects."""
    default = results[0]
    measured = [r for r in results if not r.error]
    detecting = [r.variant.name for r in measured if r.detects]
    best = next((r for r in measured if r.detects), default)
    only = best.failing_only()
    return {
        "detects": bool(detecting),
        "default_detects": default.detects,
        "false_alarms": len(best.healthy.violations) if best.healthy is not None else None,
        "culprit_named": any(r.culprit_hits for r in measured if r.detects),
        "first_violating_step": min((v.first_step for v in only if v.first_step is not None), default=None),
        "invariants": default.invariants,
        "seconds": round(sum(r.seconds for r in results), 1),
        "device_seconds": round(sum(r.device_seconds for r in results), 1),
        "variants": len(results),
        "detecting_variants": detecting,
        "errors": {r.variant.name: r.error for r in results if r.error},
    }


def build_record(
    case: CaseSpec, spec: ReachSpec, results: list[VariantResult], *, backend: str, pool_kind: str
) -> dict[str, Any]:
    """The record of one reach measurement."""
    inputs = reach_inputs(case, spec)
    return {
        "schema": SCHEMA,
        "case": case.id,
        "key": reach_key(inputs),
        "inputs": inputs,
        "measured": {
            "at": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "sandbox": backend,
            "devices": pool_kind,
            "host": f"{platform.machine()}, {os.cpu_count()} cores",
            "collection": {
                "tracker": spec.tracker,
                "models_to_track": list(spec.models_to_track),
                "modules": list(spec.modules),
            },
        },
        "summary": summarise(results),
        "variants": [r.to_json(spec.runs_of(r.variant)) for r in results],
    }


def write_record(case: CaseSpec, record: dict[str, Any]) -> Path:
    """Store ``record`` beside the case (atomically)."""
    path = record_path(case)
    write_json(path, record)
    return path


@dataclass(frozen=True)
class RecordStatus:
    """A case's reach record as found: ``current``, ``stale``, ``missing`` (no record), ``no-spec``
    (the case has no reach spec) or ``broken`` (not a record this tool wrote)."""

    state: str
    record: dict[str, Any] | None = None
    reason: str = ""

    def headline(self) -> str:
        """One line for tables: detects / false alarms / culprit / cost, or why there is none."""
        if self.record is None or self.state == "broken":
            return {"missing": "not measured", "no-spec": "no reach spec"}.get(self.state, f"broken: {self.reason}")
        s = self.record["summary"]
        if s["detects"]:
            verdict = "detects" + ("" if s["default_detects"] else f" ({', '.join(s['detecting_variants'])})")
        elif s["errors"] and len(s["errors"]) == s["variants"]:
            verdict = "not measured (every variant failed)"
        else:
            verdict = "sees nothing"
        alarms = "?" if s["false_alarms"] is None else str(s["false_alarms"])
        culprit = "culprit named" if s["culprit_named"] else "culprit not named"
        line = f"{verdict}; {alarms} false alarms; {culprit}; {s['seconds']:.0f} s, {s['device_seconds']:.0f} device-s"
        return line if self.state == "current" else f"{line} [stale: {self.reason}]"


def record_status(case: CaseSpec) -> RecordStatus:
    """The case's reach record and whether it still matches the case."""
    path = spec_path(case.grader_dir)
    if not path.is_file():
        return RecordStatus("no-spec")
    found = record_path(case)
    if not os.path.lexists(found):
        return RecordStatus("missing")
    record = read_json_object(found)
    problem = check_record(record)
    if record is None or problem:
        return RecordStatus("broken", None, problem or "not a JSON object")
    try:
        inputs = reach_inputs(case)
    except Exception as exc:  # noqa: BLE001 - a broken spec makes the record stale, not the listing fail
        return RecordStatus("stale", record, f"the reach spec does not load: {exc}")
    if reach_key(inputs) != record["key"]:
        changed = [k for k, v in inputs.items() if record["inputs"].get(k) != v]
        return RecordStatus("stale", record, f"changed since measured: {', '.join(changed) or 'key'}")
    return RecordStatus("current", record)


def check_record(record: dict[str, Any] | None) -> str:
    """Why ``record`` is not a reach record of this schema ('' when it is)."""
    if record is None:
        return "not a readable JSON object"
    if set(record) != RECORD_KEYS:
        return f"expected keys {sorted(RECORD_KEYS)}"
    if record["schema"] != SCHEMA:
        return f"schema {record['schema']!r}, expected {SCHEMA}"
    summary, inputs = record["summary"], record["inputs"]
    if not isinstance(summary, dict) or set(summary) != SUMMARY_KEYS:
        return f"summary: expected keys {sorted(SUMMARY_KEYS)}"
    if not isinstance(inputs, dict) or not all(isinstance(v, str) for v in inputs.values()):
        return "inputs: expected a table of digests"
    if not isinstance(record["key"], str) or not isinstance(record["variants"], list):
        return "key or variants of the wrong type"
    if not isinstance(summary["detects"], bool) or not isinstance(summary["culprit_named"], bool):
        return "summary: detects and culprit_named must be true or false"
    for name in ("seconds", "device_seconds"):
        if isinstance(summary[name], bool) or not isinstance(summary[name], (int, float)):
            return f"summary: {name} must be a number"
    if not isinstance(summary["errors"], dict) or not isinstance(summary["detecting_variants"], list):
        return "summary: errors and detecting_variants of the wrong type"
    if not isinstance(summary["variants"], int) or isinstance(summary["variants"], bool):
        return "summary: variants must be a count"
    return ""


def markdown_row(case: CaseSpec) -> str:
    """The case's line of the reach table in ``docs/traincheck-reach.md``."""
    status = record_status(case)
    record = status.record
    if record is None or status.state == "broken":
        return f"| `{case.id}` | {status.headline()} | | | | | | |"
    s = record["summary"]
    detects = "yes" if s["detects"] else "no"
    if s["detects"] and not s["default_detects"]:
        detects += f" ({', '.join(s['detecting_variants'])} only)"
    if s["errors"] and len(s["errors"]) == s["variants"]:
        detects = "not measured"
    variants = ", ".join(v["name"] + ("" if v["error"] is None else " (failed)") for v in record["variants"])
    stale = "" if status.state == "current" else " (stale)"
    cells = [
        f"`{case.id}`{stale}",
        detects,
        "—" if s["false_alarms"] is None else str(s["false_alarms"]),
        "yes" if s["culprit_named"] else "no",
        "—" if s["first_violating_step"] is None else str(s["first_violating_step"]),
        f"{s['seconds']:.0f}",
        f"{s['device_seconds']:.0f}",
        variants,
    ]
    return "| " + " | ".join(cells) + " |"


#: The header of the reach table (see :func:`markdown_row`).
MARKDOWN_HEADER = (
    "| case | detects | false alarms | culprit named | first violating step | wall s | device-s | variants |\n"
    "|---|---|---|---|---|---|---|---|"
)
