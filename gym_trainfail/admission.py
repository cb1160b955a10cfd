"""Admission records: what ``trainfail qualify CASE --wrong-repairs`` admitted, kept beside the case.

A record (``envs/<case>/admission.json``; ``admission.<profile>.json`` for another profile) is
keyed by three digests, and is *current* only while all three still match:

* **case**: the case's content as the harness sees it: ``case.toml``, ``workspace/``, ``grader/``
  less its ``diagnosis/`` folder (rubrics change without re-qualification), and the resolved
  scenario table (names, kinds, devices, time limits and params at the record's profile, so a
  loader change that alters what a kit is asked to run counts too). Files at the top of the
  case folder other than ``case.toml`` (this record, ``traincheck-reach.json``) are not part of it.
* **runtime_lock**: the control arm's committed lock for the runtime variant (every verdict is
  graded in the control runtime).
* **harness**: the grading code every verdict passes through, :data:`HARNESS_PATHS`: how a unit
  is run, judged, retried and read back (``grading/``), the support code mounted into grading
  sandboxes (``harnesslib/``) and the patch and bounded-JSON helpers (``files.py``). Sandboxes,
  the CLI, batch code, diagnosis judging and the gate's own rules (``qualify.py``) are left out:
  they change often and never turn a scenario's pass into a fail; the gate's rules are checked
  again on every record instead (:func:`verdict_problems`).

A record holds every verdict of the gate (the unmodified workspace on each repeat, the
reference, each wrong repair and forgery), timings, the tool version and the profile, and a
``verdict_digest`` over all of that: a record edited by hand no longer matches it and is refused.
Held-out diagnosis figures (rubric precision and recall) ride along outside that digest.
"""

from __future__ import annotations

import json
import os
import platform
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import gym_trainfail
from gym_trainfail.arms import get_arm
from gym_trainfail.cases import DEFAULT_PROFILE, CaseSpec, Scenario
from gym_trainfail.diagnosis.rubric import DIAGNOSIS_DIR
from gym_trainfail.files import read_json_object, write_json
from gym_trainfail.grading import GRADING_ARM
from gym_trainfail.hashing import TOOL_LITTER, bytes_digest, file_digest, tree_digest
from gym_trainfail.promises import check_promises
from gym_trainfail.promises import to_json as promises_json
from gym_trainfail.qualify import retried_out
from gym_trainfail.runtimes import lock_path, runtime_variant

#: Bump when a record's layout or the meaning of a digest changes (every record is then stale).
#: 2: records hold the case's promise table (``grader/promises.toml``).
SCHEMA = 2
RECORD_FILE = "admission.json"
#: The TrainCheck-reach record another tool keeps beside the case (not part of the case digest).
TRAINCHECK_REACH_FILE = "traincheck-reach.json"
#: ``gym_trainfail`` paths (files or folders) whose code decides verdicts; see the module docstring.
HARNESS_PATHS = ("grading", "files.py", "harnesslib")
#: The command that refreshes every record (documented in the README).
REFRESH_ALL = "make qualify"
#: Bound on a record file read back (records are a few tens of kilobytes).
MAX_RECORD_BYTES = 4 << 20
#: Keys of a qualification's JSON that are not diagnosis figures.
_VERDICT_KEYS = frozenset(
    {"case", "profile", "admitted", "problems", "seconds", "forced_settings", "promises", "margins", "variants"}
)

State = Literal["current", "stale", "missing", "invalid"]
PACKAGE_DIR = Path(gym_trainfail.__file__).resolve().parent


def record_path(case: CaseSpec) -> Path:
    """Where the record of ``case`` at its profile lives."""
    name = RECORD_FILE if case.profile == DEFAULT_PROFILE else f"admission.{case.profile}.json"
    return case.root / name


def qualify_command(case: CaseSpec) -> str:
    """The one line that re-qualifies ``case`` and rewrites its record."""
    profile = "" if case.profile == DEFAULT_PROFILE else f" --profile {case.profile}"
    return f"trainfail qualify {case.id} --wrong-repairs{profile}"


# -- digests -------------------------------------------------------------------------------------


def scenario_table(case: CaseSpec) -> list[dict[str, Any]]:
    """The resolved scenarios at the case's profile, as the harness is asked to run them."""
    return [
        {"name": s.name, "kind": s.kind, "devices": s.devices, "timeout_s": s.timeout_s, "params": dict(s.params)}
        for s in case.scenarios
    ]


def case_digest(case: CaseSpec) -> str:
    """Digest of the case's content (see the module docstring): its files less the diagnosis
    rubric and the records beside it, and its resolved scenario table."""
    files = tree_digest(
        case.root,
        include=("case.toml", "workspace", "grader"),
        exclude=(*TOOL_LITTER, f"grader/{DIAGNOSIS_DIR}"),
    )
    table = json.dumps(scenario_table(case), sort_keys=True, default=str)
    return bytes_digest(f"files={files}\nprofile={case.profile}\nscenarios={table}".encode())


def runtime_lock_digest(variant: str | None = None) -> str:
    """Digest of the grading (control) runtime's committed lock for ``variant``."""
    path = lock_path(get_arm(GRADING_ARM), variant or runtime_variant())
    return file_digest(path) if path.is_file() else "missing"


def harness_files() -> dict[str, str]:
    """Each file of :data:`HARNESS_PATHS` (relative to the package) with its digest."""
    found: dict[str, str] = {}
    for name in HARNESS_PATHS:
        path = PACKAGE_DIR / name
        if path.is_file():
            found[name] = file_digest(path)
            continue
        for file in sorted(path.rglob("*.py")):
            if "__pycache__" not in file.parts:
                found[file.relative_to(PACKAGE_DIR).as_posix()] = file_digest(file)
    return found


def harness_digest(files: Mapping[str, str] | None = None) -> str:
    """Digest of the grading harness code (:func:`harness_files`)."""
    files = harness_files() if files is None else files
    return bytes_digest(json.dumps(dict(files), sort_keys=True).encode())


def current_digests(case: CaseSpec) -> dict[str, str]:
    """The three digests a record of ``case`` must carry to be current."""
    return {"case": case_digest(case), "runtime_lock": runtime_lock_digest(), "harness": harness_digest()}


# -- records -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class VariantVerdicts:
    """One graded variant as a record keeps it: its overall status and each scenario's verdict
    (a wrong repair graded fail-fast has verdicts only for the scenarios it reached)."""

    label: str
    kind: str
    status: str
    scenarios: dict[str, str]
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "kind": self.kind,
            "status": self.status,
            "scenarios": self.scenarios,
            "seconds": self.seconds,
        }


@dataclass(frozen=True)
class Record:
    """An admission record (see the module docstring)."""

    case: str
    profile: str
    digests: dict[str, str]
    variants: tuple[VariantVerdicts, ...]
    seconds: float
    repeats: int
    tool_version: str
    created: str
    harness_files: dict[str, str] = field(default_factory=dict)
    runtime: dict[str, str] = field(default_factory=dict)
    host: dict[str, Any] = field(default_factory=dict)
    diagnosis: dict[str, Any] = field(default_factory=dict)
    #: The promise table the case was admitted with (:func:`gym_trainfail.promises.to_json`).
    promises: tuple[dict[str, Any], ...] = ()

    def verdict_part(self) -> dict[str, Any]:
        """What ``verdict_digest`` covers: everything but the diagnosis figures."""
        return {
            "schema": SCHEMA,
            "case": self.case,
            "profile": self.profile,
            "digests": self.digests,
            "variants": [v.to_json() for v in self.variants],
            "seconds": self.seconds,
            "repeats": self.repeats,
            "tool_version": self.tool_version,
            "created": self.created,
            "harness_files": self.harness_files,
            "runtime": self.runtime,
            "host": self.host,
            "promises": list(self.promises),
        }

    def verdict_digest(self) -> str:
        return bytes_digest(json.dumps(self.verdict_part(), sort_keys=True, default=str).encode())

    def to_json(self) -> dict[str, Any]:
        data = self.verdict_part()
        data["written_by"] = "trainfail qualify --wrong-repairs (never edit by hand)"
        data["verdict_digest"] = self.verdict_digest()
        data["diagnosis"] = self.diagnosis
        return data

    def verdicts(self, kind: str | None = None) -> list[VariantVerdicts]:
        return [v for v in self.variants if kind is None or v.kind == kind]


class RecordError(ValueError):
    """A record file that is not a record this tool wrote (malformed, or edited by hand)."""


def parse_record(data: Mapping[str, Any]) -> Record:
    """A record from its JSON, checked against a closed schema and its own ``verdict_digest``."""
    try:
        if data.get("schema") != SCHEMA:
            raise RecordError(f"schema {data.get('schema')!r}, this tool writes {SCHEMA}")
        variants = tuple(
            VariantVerdicts(
                label=_text(v["label"]),
                kind=_text(v["kind"]),
                status=_status(v["status"]),
                scenarios={_text(k): _status(s) for k, s in _mapping(v["scenarios"]).items()},
                seconds=float(v["seconds"]),
            )
            for v in data["variants"]
        )
        record = Record(
            case=_text(data["case"]),
            profile=_text(data["profile"]),
            digests={k: _text(data["digests"][k]) for k in ("case", "runtime_lock", "harness")},
            variants=variants,
            seconds=float(data["seconds"]),
            repeats=int(data["repeats"]),
            tool_version=_text(data["tool_version"]),
            created=_text(data["created"]),
            harness_files={_text(k): _text(v) for k, v in _mapping(data.get("harness_files", {})).items()},
            runtime={_text(k): _text(v) for k, v in _mapping(data.get("runtime", {})).items()},
            host=dict(_mapping(data.get("host", {}))),
            diagnosis=dict(_mapping(data.get("diagnosis", {}))),
            promises=tuple(_promise(p) for p in data["promises"]),
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        if isinstance(exc, RecordError):
            raise
        raise RecordError(f"not a record this tool wrote ({type(exc).__name__}: {exc})") from None
    if data.get("verdict_digest") != record.verdict_digest():
        raise RecordError("its verdict_digest does not match its content (edited by hand?)")
    return record


def _text(value: Any) -> str:
    if not isinstance(value, str) or len(value) > 2000:
        raise RecordError(f"expected a short string, found {type(value).__name__}")
    return value


def _status(value: Any) -> str:
    if value not in ("pass", "fail", "error", "unknown"):
        raise RecordError(f"expected a verdict (pass, fail, error, unknown), found {str(value)[:40]!r}")
    return str(value)


def _promise(value: Any) -> dict[str, Any]:
    """One promise of a record's table, checked against the shape ``promises.to_json`` writes."""
    entry = _mapping(value)
    classes = [_mapping(c) for c in entry["classes"]]
    if not isinstance(entry["gpu"], bool) or not all(isinstance(c["shipped"], bool) for c in classes):
        raise RecordError("a promise's gpu and shipped flags must be booleans")
    return {
        "name": _text(entry["name"]),
        "dimension": _text(entry["dimension"]),
        "readme": _text(entry["readme"]),
        "shipped": _text(entry["shipped"]),
        "gpu": entry["gpu"],
        "classes": [
            {"name": _text(c["name"]), "shipped": c["shipped"], "scenarios": [_text(s) for s in c["scenarios"]]}
            for c in classes
        ],
    }


def _mapping(value: Any) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise RecordError(f"expected an object, found {type(value).__name__}")
    return value


def load_record(case: CaseSpec) -> Record | None:
    """The record beside ``case`` (``None`` when there is none); :class:`RecordError` when the
    file is there but is not a valid record."""
    path = record_path(case)
    if not path.exists():
        return None
    data = read_json_object(path, MAX_RECORD_BYTES)
    if data is None:
        raise RecordError(f"{path} is not a JSON object of at most {MAX_RECORD_BYTES} bytes")
    return parse_record(data)


def _verdict(outcome: Mapping[str, Any]) -> str:
    """A scenario's verdict in a record: its status, or ``unknown`` for a scenario whose judge
    answered ``retry`` on every attempt (``error`` to the gym: never a pass)."""
    status = str(outcome["status"])
    return "unknown" if retried_out(status, str(outcome.get("reason", ""))) else status


def _variant_verdicts(variant: Mapping[str, Any]) -> VariantVerdicts:
    scenarios = {name: _verdict(o) for name, o in variant["scenarios"].items()}
    status = str(variant["status"])
    unpassed = {v for v in scenarios.values() if v != "pass"}
    if status == "error" and unpassed == {"unknown"}:
        status = "unknown"
    return VariantVerdicts(
        label=str(variant["label"]),
        kind=str(variant["kind"]),
        status=status,
        scenarios=scenarios,
        seconds=float(variant["seconds"]),
    )


def record_from_qualification(case: CaseSpec, result: Any, *, sandbox: str, repeats: int) -> Record:
    """The record of an admitted full qualification (``result``: a ``Qualification``)."""
    data = result.to_json()
    variants = tuple(_variant_verdicts(v) for v in data["variants"])
    files = harness_files()
    variant = runtime_variant()
    return Record(
        case=case.id,
        profile=case.profile,
        digests={
            "case": case_digest(case),
            "runtime_lock": runtime_lock_digest(variant),
            "harness": harness_digest(files),
        },
        variants=variants,
        seconds=round(float(data["seconds"]), 1),
        repeats=repeats,
        tool_version=gym_trainfail.__version__,
        created=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        harness_files=files,
        runtime={"lock": lock_path(get_arm(GRADING_ARM), variant).name, "variant": variant},
        host={"sandbox": sandbox, "cpus": os.cpu_count() or 0, "python": platform.python_version()},
        diagnosis=_diagnosis_figures(data),
        promises=tuple(data["promises"]),
    )


def write_record(case: CaseSpec, record: Record) -> Path:
    """Write ``record`` beside ``case`` (atomically)."""
    path = record_path(case)
    write_json(path, record.to_json())
    return path


def refresh_diagnosis(case: CaseSpec, result: Any) -> Path | None:
    """Rewrite the diagnosis figures of the case's current admission record from ``result`` (a
    ``Qualification`` whose diagnosis alone was checked): rubrics change without re-qualification,
    and their figures sit outside the verdict digest, so the verdicts are left as they are. None
    (nothing written) when the case has no current record."""
    if not record_status(case).current:  # missing, stale, or unreadable (e.g. an older schema)
        return None
    record = load_record(case)
    if record is None:
        return None
    return write_record(case, replace(record, diagnosis=_diagnosis_figures(result.to_json())))


def _diagnosis_figures(qualification: Mapping[str, Any]) -> dict[str, Any]:
    """A qualification's JSON less its verdict part: what a record keeps outside its digest."""
    return {k: v for k, v in qualification.items() if k not in _VERDICT_KEYS}


# -- checks --------------------------------------------------------------------------------------


def verdict_problems(case: CaseSpec, record: Record) -> list[str]:
    """Where the record's verdict table does not admit the case by the gate's rules: every
    scenario graded on each repeat of the unmodified workspace with the verdict its kind
    expects, at least two repeats, the reference passing every scenario, every shipped wrong
    repair and forgery present and failing (a forgery may instead be ``unknown``: every scenario
    it did not pass was left unjudged by its judge's retries; see ``qualify``), and the case's
    promise table, every class covered, as the record holds it."""
    problems: list[str] = []
    promises, uncovered = check_promises(case)
    problems.extend(f"promise table: {problem}" for problem in uncovered)
    if list(record.promises) != promises_json(promises):
        problems.append("its promise table is not the case's (grader/promises.toml)")
    expected = {s.name: ("pass" if s.kind == "healthy" else "fail") for s in case.scenarios}
    unmodified = record.verdicts("unmodified")
    if len(unmodified) < 2:
        problems.append(f"{len(unmodified)} repeat(s) of the unmodified workspace; determinism needs 2")
    for v in unmodified:
        if v.scenarios != expected:
            wrong = sorted(n for n in expected.keys() | v.scenarios.keys() if v.scenarios.get(n) != expected.get(n))
            problems.append(f"{v.label}: verdicts differ from the scenario kinds on {wrong}")
    references = record.verdicts("reference")
    if not references or any(v.scenarios != dict.fromkeys(expected, "pass") for v in references):
        problems.append("the reference does not pass every scenario")
    for kind, shipped in (("wrong", case.wrong_repairs), ("forgery", case.forgeries)):
        graded = {v.label.split(":", 1)[-1].split(" ")[0]: v for v in record.verdicts(kind)}
        missing = sorted(set(shipped) - set(graded))
        if missing:
            problems.append(f"{kind} {missing} not graded")
        for name, v in graded.items():
            failed = v.status == "fail" and "fail" in v.scenarios.values()
            unpassed = {s for s in v.scenarios.values() if s != "pass"}
            unknown = kind == "forgery" and v.status == "unknown" and unpassed == {"unknown"}
            if not (failed or unknown):
                problems.append(f"{kind} {name} was not rejected ({v.status})")
    return problems


@dataclass(frozen=True)
class RecordStatus:
    """Whether a case's record is current, and if not what changed and what to run."""

    case: str
    state: State
    changed: tuple[str, ...] = ()
    detail: str = ""
    command: str = ""
    path: str = ""

    @property
    def current(self) -> bool:
        return self.state == "current"

    def describe(self) -> str:
        """One line for a listing or a failing test."""
        if self.current:
            return f"{self.case}: admission record current"
        what = {
            "missing": "has no admission record",
            "invalid": f"has an invalid admission record ({self.detail})",
            "stale": f"admission record is stale: {', '.join(self.changed)} changed since it was written"
            + (f" ({self.detail})" if self.detail else ""),
        }[self.state]
        return f"{self.case} {what}; run `{self.command}` (or `{REFRESH_ALL}` for every case)"

    def to_json(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "changed": list(self.changed),
            "detail": self.detail,
            "command": self.command,
            "record": self.path,
        }


def record_status(case: CaseSpec) -> RecordStatus:
    """Compare the record beside ``case`` with the case, lock and harness as they are now."""
    command, path = qualify_command(case), str(record_path(case))
    try:
        record = load_record(case)
    except RecordError as exc:
        return RecordStatus(case.id, "invalid", detail=str(exc), command=command, path=path)
    if record is None:
        return RecordStatus(case.id, "missing", command=command, path=path)
    if record.case != case.id or record.profile != case.profile:
        detail = f"it is for {record.case} at profile {record.profile}"
        return RecordStatus(case.id, "invalid", detail=detail, command=command, path=path)
    now = current_digests(case)
    changed = tuple(name for name in ("case", "runtime_lock", "harness") if record.digests.get(name) != now[name])
    if changed:
        detail = ""
        if "harness" in changed:
            files = harness_files()
            moved = sorted(
                n for n in files.keys() | record.harness_files.keys() if files.get(n) != record.harness_files.get(n)
            )
            detail = "harness files: " + ", ".join(f"gym_trainfail/{n}" for n in moved[:6])
        return RecordStatus(case.id, "stale", changed=changed, detail=detail, command=command, path=path)
    problems = verdict_problems(case, record)
    if problems:
        return RecordStatus(case.id, "invalid", detail="; ".join(problems)[:600], command=command, path=path)
    return RecordStatus(case.id, "current", command=command, path=path)


def failing_hints(record: Record | None, scenarios: Sequence[Scenario] = ()) -> dict[str, str]:
    """For each wrong repair and forgery of a record (by label), the first scenario it failed
    (a forgery rejected as unknown: the first scenario left unknown), first in ``scenarios`` (the
    case's scenario table, whose author puts the quick scenarios first) where given, else in the
    record's: where a fail-fast re-qualification starts. Only an order, never a verdict."""
    return _hints(record.variants, [s.name for s in scenarios]) if record is not None else {}


def _hints(variants: Iterable[VariantVerdicts], order: Sequence[str] = ()) -> dict[str, str]:
    rank = {name: i for i, name in enumerate(order)}
    hints = {}
    for v in variants:
        if v.kind in ("wrong", "forgery"):
            wanted = "unknown" if v.status == "unknown" else "fail"
            failed = [name for name, status in v.scenarios.items() if status == wanted]
            if failed:
                hints[v.label.split(" ")[0]] = min(failed, key=lambda name: rank.get(name, len(rank)))
    return hints


def previous_hints(case: CaseSpec) -> dict[str, str]:
    """:func:`failing_hints` of the record beside ``case``, read from a record of an older schema
    too (its variants' verdicts are all a hint needs): a re-qualification after a schema change
    still starts each wrong repair where it failed last time. Anything unreadable: no hints."""
    try:
        return failing_hints(load_record(case), case.scenarios)
    except RecordError:
        pass
    data = read_json_object(record_path(case), MAX_RECORD_BYTES)
    try:
        variants = [
            VariantVerdicts(
                label=_text(v["label"]),
                kind=_text(v["kind"]),
                status=_status(v["status"]),
                scenarios={_text(k): _status(s) for k, s in _mapping(v["scenarios"]).items()},
            )
            for v in (data or {}).get("variants", ())
        ]
    except (RecordError, KeyError, TypeError):
        return {}
    hints = _hints(variants, [s.name for s in case.scenarios])
    return {label: scenario for label, scenario in hints.items() if scenario in {s.name for s in case.scenarios}}


def compare_verdicts(record: Record, fresh: Record) -> list[str]:
    """Where a fresh full qualification disagrees with a record: unmodified and reference
    verdicts scenario by scenario; wrong repairs and forgeries by rejection and on every
    scenario both graded."""
    problems = []

    def by_key(r: Record) -> dict[tuple[str, str], VariantVerdicts]:
        return {(v.kind, v.label.split(" ")[0]): v for v in r.variants}

    old, new = by_key(record), by_key(fresh)
    for key in sorted(old.keys() | new.keys()):
        was, now = old.get(key), new.get(key)
        if was is None or now is None:
            problems.append(f"{key[1]}: in {'the fresh run' if was is None else 'the record'} only")
            continue
        if key[0] in ("unmodified", "reference"):
            if was.scenarios != now.scenarios:
                problems.append(f"{key[1]}: recorded {was.scenarios}, now {now.scenarios}")
            continue
        if now.status != was.status:
            problems.append(f"{key[1]}: recorded {was.status}, now {now.status}")
        for name in sorted(was.scenarios.keys() & now.scenarios.keys()):
            if was.scenarios[name] != now.scenarios[name]:
                problems.append(f"{key[1]}/{name}: recorded {was.scenarios[name]}, now {now.scenarios[name]}")
    return problems
