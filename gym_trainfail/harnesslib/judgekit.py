"""The judge phase's scaffolding shared by case judges (trusted: no revision code runs here).

A case's ``judge.py`` supplies what is its own as :class:`JudgeKit` (how a scenario request
is parsed, how the run's outputs are observed, how an observation is compared with the
judge's own reference); this module does the rest of the protocol's judge phase
(``docs/grader-protocol.md``): it reads the host's ``run.json`` and the run kit's
``timings.json`` as untrusted records, turns missing or malformed outputs into a ``fail``
(or a ``retry`` for a bare gloo exit abort), and writes one strict-JSON outcome per scenario,
whole or not at all, whatever happens. A scenario whose launch the run kit stopped at its
deadline is a ``fail`` with :func:`no_progress`'s reason, whatever outputs it left (a run that
wrote its results and then hung did not finish either). Standard library only.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__:  # imported as part of the package
    from .artifacts import ArtifactError, integer, number, read_json_object, read_tail
    from .protocol import NAME_RE, read_requests
else:  # imported from /harnesslib by a case's judge
    from artifacts import (  # type: ignore[no-redef,import-not-found,unused-ignore]
        ArtifactError,
        integer,
        number,
        read_json_object,
        read_tail,
    )
    from protocol import NAME_RE, read_requests  # type: ignore[no-redef,import-not-found,unused-ignore]

#: torch 2.13's gloo can abort in static destructors after all Python code has run.
EXIT_ABORT_MARKER = "terminate called without an active exception"
RUN_JSON_LIMIT = 1 << 20
MAX_SECONDS = 1e6


@dataclass
class Verdict:
    """Status (``pass``, ``fail`` or ``retry``), a one-line reason and the measured metrics."""

    status: str
    reason: str
    metrics: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RunEnd:
    """How the run phase and this scenario's launch ended (the launch part is reported by the
    untrusted run kit; it can only turn a missing result into a fail or a retry)."""

    phase_exit_code: int | None
    phase_timed_out: bool
    phase_oom_killed: bool
    phase_output_tail: str
    launch_returncode: int | None
    launch_timed_out: bool
    kit_error: str
    kit_notes: str
    log_text: str


def one_line(text: str, limit: int = 300) -> str:
    """Adversarial text made fit for a reason: printable, one line, bounded."""
    flat = "".join(c if c.isprintable() else " " for c in text.replace("\n", " "))
    return " ".join(flat.split())[:limit]


def last_error_line(log_text: str) -> str:
    """The most informative line of the job log for a one-line failure reason."""
    lines = [ln.strip() for ln in log_text.splitlines() if ln.strip()]
    for line in reversed(lines):
        if "Error" in line or "error:" in line or "Exception" in line:
            return one_line(line)
    return one_line(lines[-1]) if lines else "(no output)"


def seconds_text(value: float) -> str:
    """A duration as a reason shows it: whole seconds without a fraction (``300``), else one
    decimal (``2.5``)."""
    return str(int(value)) if float(value).is_integer() else f"{value:.1f}"


def no_progress(deadline_s: float) -> str:
    """The one reason a scenario that did not finish by its deadline fails with, whoever stopped
    it (the host's clock for a scenario alone, the run kit's inside a group): the same words
    grouped or alone. The grader imports it from here, so both sides say it alike."""
    return f"no progress after {seconds_text(deadline_s)} s: the run had not finished by its deadline and was stopped"


def launch_deadline(raw: dict[str, Any], sc: Any) -> float:
    """The time a scenario's launch was given: the scenario's deadline (the request's
    ``timeout_s``, set by the host) or the case's own per-launch limit (``run_timeout_s``) where
    that is shorter. Both come from the request, never from the run."""
    limits = [number(raw.get("timeout_s")), number(getattr(sc, "run_timeout_s", None))]
    found = [value for value in limits if value is not None and 0 < value <= MAX_SECONDS]
    return min(found) if found else MAX_SECONDS


def unfinished(end: RunEnd, why: str, run_timeout_s: float) -> Verdict:
    """No complete outputs: only a bare gloo exit abort retries; everything else fails."""
    if end.phase_timed_out:
        return Verdict("fail", f"the run phase hit its time limit before the outputs were complete ({why})")
    if end.phase_oom_killed:
        return Verdict("fail", f"the run phase was killed for memory before the outputs were complete ({why})")
    if end.launch_timed_out:
        return Verdict("fail", no_progress(run_timeout_s), {"deadline_s": run_timeout_s, "stopped_by": "run kit"})
    if EXIT_ABORT_MARKER in end.log_text and "Traceback" not in end.log_text:
        return Verdict("retry", f"gloo exit abort before outputs were complete ({why})")
    if end.kit_error:
        return Verdict("fail", f"the run kit could not run the scenario ({why}): {one_line(end.kit_error)}")
    if not end.log_text:
        tail = one_line(end.phase_output_tail[-300:]) or "(no output)"
        return Verdict(
            "fail", f"no job log ({why}); the run phase exited with code {end.phase_exit_code}, its output ends: {tail}"
        )
    notes = f"; the run kit left behind: {one_line(end.kit_notes, 200)}" if end.kit_notes else ""
    return Verdict(
        "fail",
        f"pipeline exited with code {end.launch_returncode}, outputs missing or malformed "
        f"({why}){notes}; last log line: {last_error_line(end.log_text)}",
    )


def read_run(path: Path) -> dict[str, Any]:
    """``run.json`` from the host; a missing or odd field reads as unknown."""
    try:
        raw = read_json_object(path, RUN_JSON_LIMIT)
    except ArtifactError as err:
        print(f"run.json unusable: {err}", file=sys.stderr)
        raw = {}
    tail = raw.get("output_tail")
    return {
        "exit_code": integer(raw.get("exit_code")),
        "timed_out": raw.get("timed_out") is True,
        "oom_killed": raw.get("oom_killed") is True,
        "output_tail": tail if isinstance(tail, str) else "",
    }


def launch_record(folder: Path) -> dict[str, Any]:
    """The run kit's ``timings.json`` (untrusted); empty if missing or malformed."""
    try:
        return read_json_object(folder / "timings.json")
    except ArtifactError:
        return {}


def run_end(run: dict[str, Any], record: dict[str, Any], log_text: str) -> RunEnd:
    """What is known about how the run phase and this scenario's launch ended."""
    kit_error = record.get("kit_error")
    notes = record.get("notes")
    kit_notes = "; ".join(n for n in notes if isinstance(n, str)) if isinstance(notes, list) else ""
    return RunEnd(
        phase_exit_code=run["exit_code"],
        phase_timed_out=run["timed_out"],
        phase_oom_killed=run["oom_killed"],
        phase_output_tail=run["output_tail"],
        launch_returncode=integer(record.get("returncode")),
        launch_timed_out=record.get("timed_out") is True,
        kit_error=kit_error if isinstance(kit_error, str) else "",
        kit_notes=kit_notes,
        log_text=log_text,
    )


def seconds(value: float | None) -> float | None:
    """A duration fit for the outcome, or None if it is not a plausible one."""
    if value is None or not math.isfinite(value) or not 0 <= value <= MAX_SECONDS:
        return None
    return round(value, 3)


def run_timings(record: dict[str, Any], steps: list[Any] | None) -> dict[str, float | None]:
    """Start-up, training and teardown from the kit's record and the step records (objects with
    ``wall_time`` and ``step_time_s``; untrusted: used only to split a group's device-seconds)."""
    started, ended = number(record.get("started")), number(record.get("ended"))
    out = {key: seconds(number(record.get(key))) for key in ("preload_s", "prepare_s", "collect_s")}
    out["run_s"] = seconds(ended - started) if started is not None and ended is not None else None
    if steps and started is not None and ended is not None:
        first, last = steps[0], steps[-1]
        if first.wall_time is not None and first.step_time_s is not None and last.wall_time is not None:
            train_start = first.wall_time - first.step_time_s
            out["startup_s"] = seconds(train_start - started)
            out["train_s"] = seconds(last.wall_time - train_start)
            out["teardown_s"] = seconds(ended - last.wall_time)
    out["kit_total_s"] = seconds(number(record.get("total_s")))
    return out


def json_safe(value: Any) -> Any:
    """Non-finite floats as strings, so the outcome stays strict JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    return value


def write_outcome(out_dir: Path, name: str, verdict: Verdict, timings: dict[str, Any]) -> None:
    """The protocol's outcome JSON, written whole or not at all."""
    outcome = json_safe(
        {"status": verdict.status, "reason": verdict.reason, "metrics": verdict.metrics, "timings": timings}
    )
    tmp = out_dir / f".{name}.json.tmp"
    tmp.write_text(json.dumps(outcome, indent=2, allow_nan=False) + "\n", encoding="utf-8")
    os.replace(tmp, out_dir / f"{name}.json")
    print(json.dumps({"scenario": name, "status": verdict.status, "reason": verdict.reason}), flush=True)


@dataclass(frozen=True)
class JudgeKit:
    """What a case's judge supplies.

    ``scenario(request)`` parses one request (the object must have ``name`` and
    ``run_timeout_s``); ``observe(sc, folder)`` reads the scenario's artifacts as adversarial
    data (raising :class:`ArtifactError`) into an observation with a ``metrics`` list of step
    records (``wall_time``, ``step_time_s``); ``compare(sc, observation)`` is the verdict against
    the judge's own reference."""

    name: str
    scenario: Callable[[dict[str, Any]], Any]
    observe: Callable[[Any, Path], Any]
    compare: Callable[[Any, Any], Verdict]


def judge_scenario(
    kit: JudgeKit, sc: Any, artifacts: Path, run: dict[str, Any], deadline_s: float | None = None
) -> tuple[Verdict, dict[str, Any]]:
    """Artifacts -> observation -> verdict (or why there is nothing to compare). ``deadline_s``
    is the time the launch was given (:func:`launch_deadline`; default ``sc.run_timeout_s``)."""
    folder = artifacts / sc.name
    record = launch_record(folder)
    limit = deadline_s if deadline_s is not None else float(sc.run_timeout_s)
    if record.get("timed_out") is True:
        # The kit stopped the launch: whatever it left is not a finished run. (The kit's record is
        # the run side's word; it can only turn this scenario into a fail, never into a pass.)
        verdict = Verdict("fail", no_progress(limit), {"deadline_s": limit, "stopped_by": "run kit"})
        return verdict, run_timings(record, None)
    try:
        obs = kit.observe(sc, folder)
    except ArtifactError as err:
        end = run_end(run, record, read_tail(folder / "job.log"))
        return unfinished(end, str(err), limit), run_timings(record, None)
    verdict = kit.compare(sc, obs)
    verdict.metrics["launch_returncode_reported"] = integer(record.get("returncode"))
    return verdict, run_timings(record, obs.metrics)


def judge_one(kit: JudgeKit, raw: dict[str, Any], artifacts: Path, run: dict[str, Any], out_dir: Path) -> None:
    """One scenario's outcome, whatever the artifacts hold."""
    started = time.time()
    name = str(raw.get("name", ""))
    if not NAME_RE.match(name):
        print(f"scenario name {name[:80]!r} is not a plain file name; no outcome", file=sys.stderr)
        return
    timings: dict[str, Any] = {}
    try:
        sc = kit.scenario(raw)
        verdict, timings = judge_scenario(kit, sc, artifacts, run, launch_deadline(raw, sc))
    except Exception as err:  # noqa: BLE001 - a judge fault must still produce an outcome
        traceback.print_exc()
        verdict = Verdict("fail", f"judge error: {type(err).__name__}: {str(err)[:200]}")
    timings["judge_s"] = round(time.time() - started, 3)
    timings["total_s"] = round((timings.get("kit_total_s") or 0.0) + timings["judge_s"], 3)
    write_outcome(out_dir, name, verdict, timings)


def main(
    kit: JudgeKit,
    requests: Callable[[Path], list[dict[str, Any]]] = read_requests,
    argv: list[str] | None = None,
) -> None:
    """``--scenarios --artifacts --run --out-dir [--oracle]`` (the protocol's judge arguments;
    ``--oracle`` is accepted and unused by judges that cache no oracle): judge every request."""
    parser = argparse.ArgumentParser(description=f"judge {kit.name} scenarios")
    parser.add_argument("--scenarios", type=Path, required=True)
    parser.add_argument("--artifacts", type=Path, required=True)
    parser.add_argument("--run", type=Path, required=True)
    parser.add_argument("--out-dir", type=Path, required=True)
    parser.add_argument("--oracle", type=Path)
    args = parser.parse_args(argv)
    run = read_run(args.run)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    for raw in requests(args.scenarios):
        judge_one(kit, raw, args.artifacts, run, args.out_dir)


@dataclass(frozen=True)
class PhaseInputs:
    """What a judge phase is given besides each scenario's artifacts, for judges that read it:
    the root of the cached oracles (``--oracle``; ``ROOT/<scenario>``, trusted, read-only) and the
    host's own facts about the run phase (``/io/run.json``: the launch unit's duration by the
    host's clock, how many scenarios the unit held, whether the host stopped it). A scenario whose
    verdict reads ``duration_s`` must be ``alone`` (``unit_scenarios == 1``): the host's clock is
    the only time a verdict may rest on."""

    oracle: Path | None
    duration_s: float | None
    unit_scenarios: int | None
    timed_out: bool

    def oracle_dir(self, name: str) -> Path | None:
        """The cached oracle folder of scenario ``name`` (``None`` when the judge got no oracle)."""
        return self.oracle / name if self.oracle is not None and NAME_RE.match(name) else None


def read_phase_inputs(run_path: Path, oracle: Path | None) -> PhaseInputs:
    """:class:`PhaseInputs` from the host's ``run.json`` (a missing or odd field reads as unknown)."""
    try:
        raw = read_json_object(run_path, RUN_JSON_LIMIT)
    except ArtifactError:
        raw = {}
    duration = number(raw.get("duration_s"))
    return PhaseInputs(
        oracle=oracle,
        duration_s=duration if duration is not None and 0 <= duration <= MAX_SECONDS else None,
        unit_scenarios=integer(raw.get("scenarios")),
        timed_out=raw.get("timed_out") is True,
    )


def main_with(
    make_kit: Callable[[PhaseInputs], JudgeKit],
    requests: Callable[[Path], list[dict[str, Any]]] = read_requests,
    argv: list[str] | None = None,
) -> None:
    """:func:`main` for a judge whose observations or comparisons also read the cached oracle or
    the host's timing: ``make_kit(inputs)`` builds the kit from this phase's :class:`PhaseInputs`
    (its ``observe`` and ``compare`` close over them); everything else is :func:`main`'s."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--run", type=Path, required=True)
    parser.add_argument("--oracle", type=Path)
    known, _ = parser.parse_known_args(argv)
    main(make_kit(read_phase_inputs(known.run, known.oracle)), requests, argv)
