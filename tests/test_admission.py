"""Admission records: every registered case carries a current one, and each way a record can stop
matching its case (case files, runtime lock, harness code, hand edits, a table that does not
admit) is caught with the command to run. Fast: digests and JSON only, except the CLI test."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import time
from dataclasses import replace
from pathlib import Path

import pytest

from gym_trainfail import admission
from gym_trainfail.admission import (
    Record,
    VariantVerdicts,
    case_digest,
    compare_verdicts,
    current_digests,
    failing_hints,
    load_record,
    record_path,
    record_status,
    verdict_problems,
    write_record,
)
from gym_trainfail.cases import CaseSpec, Scenario, load_case
from gym_trainfail.cli import _parser, main
from gym_trainfail.cli.qualifying import write_admission_record
from gym_trainfail.promises import check_promises
from gym_trainfail.promises import to_json as promises_json
from gym_trainfail.qualify import qualify
from gym_trainfail.registry import default_registry
from gym_trainfail.runtimes import Runtime


@pytest.mark.parametrize("case_id", default_registry().ids())
def test_every_registered_case_has_a_current_admission_record(case_id: str) -> None:
    """CI checks records instead of re-deriving them: a case, its runtime lock or the grading
    harness changed without re-qualification fails here, naming the command to run."""
    status = record_status(default_registry().get(case_id))
    assert status.current, status.describe()


def _verdicts(label: str, kind: str, scenarios: dict[str, str]) -> VariantVerdicts:
    unpassed = set(scenarios.values()) - {"pass"}
    status = "fail" if "fail" in unpassed else "unknown" if unpassed == {"unknown"} else "pass"
    return VariantVerdicts(label=label, kind=kind, status=status, scenarios=scenarios, seconds=1.0)


def _admitting_record(case: CaseSpec) -> Record:
    """A record of the echo case whose table admits it, with the case's current digests."""
    unmodified = {"runs": "pass", "answer": "fail"}
    return Record(
        case=case.id,
        profile=case.profile,
        digests=current_digests(case),
        variants=(
            _verdicts("unmodified#1", "unmodified", unmodified),
            _verdicts("unmodified#2 (grouped)", "unmodified", unmodified),
            _verdicts("reference (grouped)", "reference", {"runs": "pass", "answer": "pass"}),
            _verdicts("wrong:off-by-one-up (grouped)", "wrong", {"answer": "fail"}),
        ),
        seconds=9.0,
        repeats=2,
        tool_version="test",
        created="2026-12-01T00:00:00Z",
        harness_files=admission.harness_files(),
        diagnosis={"rubric": {"precision": 1.0, "recall": 1.0}},
        promises=tuple(promises_json(check_promises(case)[0])),
    )


@pytest.fixture
def recorded(case_copy: Path) -> CaseSpec:
    case = load_case(case_copy)
    write_record(case, _admitting_record(case))
    assert record_status(case).current, record_status(case).describe()
    return case


def test_no_record_names_the_command(case_copy: Path) -> None:
    status = record_status(load_case(case_copy))
    assert status.state == "missing"
    assert "`trainfail qualify TrainFailTest/Echo-v0 --wrong-repairs`" in status.describe()
    assert "`make qualify`" in status.describe()


@pytest.mark.parametrize(
    ("edit", "changed"),
    [
        ("grader/judge.py", True),
        ("grader/scenarios.toml", True),
        ("workspace/report.py", True),
        ("case.toml", True),
        ("grader/diagnosis/rubric.toml", False),  # rubrics change without re-qualification
        ("traincheck-reach.json", False),  # records beside the case are not its content
        ("admission.native.json", False),
        ("grader/__pycache__/judge.cpython-311.pyc", False),
    ],
)
def test_what_voids_a_record(recorded: CaseSpec, edit: str, changed: bool) -> None:
    target = recorded.root / edit
    if target.suffix in (".py", ".toml") and target.exists():
        target.write_text(target.read_text() + "\n# edited\n")
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("{}")
    status = record_status(load_case(recorded.root))
    if changed:
        assert status.state == "stale" and status.changed == ("case",), status
        assert "trainfail qualify TrainFailTest/Echo-v0 --wrong-repairs" in status.describe()
    else:
        assert status.current, status.describe()


def test_a_scenario_table_change_voids_a_record_even_without_file_changes(
    recorded: CaseSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A loader change that alters what the kit is asked to run counts as a case change."""
    scenarios = tuple(replace(s, params={**s.params, "extra": 1}) for s in recorded.scenarios)
    assert case_digest(replace(recorded, scenarios=scenarios)) != case_digest(recorded)


def test_case_digest_does_not_depend_on_where_the_case_lives(recorded: CaseSpec, tmp_path: Path) -> None:
    moved = tmp_path / "elsewhere" / "echo"
    moved.parent.mkdir()
    os.rename(recorded.root, moved)
    assert record_status(load_case(moved)).current


def test_tool_caches_in_a_case_folder_leave_its_record_current(recorded: CaseSpec) -> None:
    """ruff, mypy and pytest leave caches where they run; a clean clone has none of them."""
    for litter in (
        ".ruff_cache/0.9/123",
        ".mypy_cache/3.11/x.json",
        ".pytest_cache/v/cache/nodeids",
        "__pycache__/a.pyc",
    ):
        path = recorded.grader_dir / "kit" / litter
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("cache")
    assert record_status(recorded).current
    # while a real file beside them is a change
    (recorded.grader_dir / "kit" / "extra.py").write_text("x = 1\n")
    assert record_status(load_case(recorded.root)).state == "stale"


def test_harness_and_lock_changes_void_a_record(recorded: CaseSpec, monkeypatch: pytest.MonkeyPatch) -> None:
    files = admission.harness_files()
    assert "grading/grader.py" in files and any(name.startswith("harnesslib/") for name in files)
    monkeypatch.setattr(admission, "harness_files", lambda: {**files, "grading/grader.py": "0" * 64})
    status = record_status(recorded)
    assert status.state == "stale" and status.changed == ("harness",)
    assert "gym_trainfail/grading/grader.py" in status.detail
    monkeypatch.undo()
    monkeypatch.setattr(admission, "runtime_lock_digest", lambda variant=None: "1" * 64)
    assert record_status(recorded).changed == ("runtime_lock",)


def test_a_hand_edited_record_is_refused(recorded: CaseSpec) -> None:
    path = record_path(recorded)
    data = json.loads(path.read_text())
    data["variants"][3]["status"] = "pass"
    data["variants"][3]["scenarios"] = {"answer": "pass", "runs": "pass"}
    path.write_text(json.dumps(data))
    status = record_status(recorded)
    assert status.state == "invalid" and "verdict_digest" in status.detail
    # the diagnosis figures sit outside the verdict digest: rubrics change without re-qualification
    write_record(recorded, _admitting_record(recorded))
    data = json.loads(path.read_text())
    data["diagnosis"] = {"rubric": {"precision": 0.5}}
    path.write_text(json.dumps(data))
    assert record_status(recorded).current


def test_diagnosis_only_refreshes_a_current_records_figures_and_nothing_else(
    recorded: CaseSpec, capsys: pytest.CaptureFixture[str]
) -> None:
    before = load_record(recorded)
    assert before is not None and before.diagnosis == {"rubric": {"precision": 1.0, "recall": 1.0}}
    assert main(["qualify", str(recorded.root), "--diagnosis-only"]) == 0
    assert "diagnosis figures refreshed" in capsys.readouterr().out
    after = load_record(recorded)
    assert after is not None and record_status(recorded).current
    assert after.verdict_digest() == before.verdict_digest() and after.variants == before.variants
    assert after.diagnosis["rubric"]["recall"] == 1.0 and after.diagnosis["heldout"]["statements"] == 8
    assert "misjudged" not in after.diagnosis["heldout"], "which held-out statements miss never reaches a record"
    # no current record: nothing is written
    record_path(recorded).unlink()
    assert main(["qualify", str(recorded.root), "--diagnosis-only"]) == 0
    assert "refreshed" not in capsys.readouterr().out and not record_path(recorded).exists()
    # a record this tool no longer writes (an older schema): left alone, never a crash
    old = {**before.to_json(), "schema": admission.SCHEMA - 1}
    record_path(recorded).write_text(json.dumps(old))
    assert main(["qualify", str(recorded.root), "--diagnosis-only"]) == 0
    assert "refreshed" not in capsys.readouterr().out
    assert json.loads(record_path(recorded).read_text()) == old


@pytest.mark.parametrize(
    "content",
    ["not json", "[]", json.dumps({"schema": 99}), json.dumps({"schema": 1, "case": 3}), "{" * 5000],
    ids=["garbage", "list", "schema", "types", "deep"],
)
def test_malformed_records_are_invalid_not_crashes(case_copy: Path, content: str) -> None:
    case = load_case(case_copy)
    record_path(case).write_text(content)
    status = record_status(case)
    assert status.state == "invalid", status
    assert "--wrong-repairs" in status.describe()


def test_an_oversized_or_special_record_file_is_invalid(case_copy: Path) -> None:
    case = load_case(case_copy)
    path = record_path(case)
    with path.open("wb") as handle:
        handle.truncate(admission.MAX_RECORD_BYTES + 1)
    assert record_status(case).state == "invalid"
    path.unlink()
    os.mkfifo(path)  # never blocks on a FIFO
    assert record_status(case).state == "invalid"


def test_a_record_whose_table_does_not_admit_the_case_is_invalid(recorded: CaseSpec) -> None:
    good = _admitting_record(recorded)
    broken = {
        "wrong repair passes": replace(
            good, variants=(*good.variants[:3], _verdicts("wrong:off-by-one-up", "wrong", {"answer": "pass"}))
        ),
        "wrong repair missing": replace(good, variants=good.variants[:3]),
        # only a forgery may be rejected as unknown (its judge retried out): a wrong repair must fail
        "wrong repair unknown": replace(
            good, variants=(*good.variants[:3], _verdicts("wrong:off-by-one-up", "wrong", {"answer": "unknown"}))
        ),
        "one repeat": replace(good, variants=good.variants[1:]),
        "reference fails": replace(
            good,
            variants=(
                *good.variants[:2],
                _verdicts("reference", "reference", {"runs": "pass", "answer": "fail"}),
                good.variants[3],
            ),
        ),  # fmt: skip
        "unmodified passes a failure scenario": replace(
            good,
            variants=(_verdicts("unmodified#1", "unmodified", {"runs": "pass", "answer": "pass"}), *good.variants[1:]),
        ),
        "other case": replace(good, case="TrainFailTest/Other-v0"),
    }
    for what, record in broken.items():
        write_record(recorded, record)
        assert record_status(recorded).state == "invalid", what


def test_compare_verdicts_and_hints() -> None:
    case_like = Record(
        case="c",
        profile="default",
        digests={},
        variants=(
            _verdicts("unmodified#1", "unmodified", {"a": "pass", "b": "fail"}),
            _verdicts("reference (grouped)", "reference", {"a": "pass", "b": "pass"}),
            _verdicts("wrong:x (grouped)", "wrong", {"b": "fail"}),
            _verdicts("forgery:y (grouped)", "forgery", {"a": "pass", "b": "fail"}),
        ),
        seconds=1,
        repeats=2,
        tool_version="t",
        created="t",
    )
    assert compare_verdicts(case_like, case_like) == []
    assert failing_hints(case_like) == {"wrong:x": "b", "forgery:y": "b"}
    # a variant that failed several scenarios is hinted at the first of them in the case's table
    both = replace(case_like, variants=(_verdicts("wrong:w", "wrong", {"a": "fail", "b": "fail"}),))
    assert failing_hints(both) == {"wrong:w": "a"}
    table = [Scenario(name, "failure", 2, 60.0) for name in ("b", "a")]
    assert failing_hints(both, table) == {"wrong:w": "b"}
    assert failing_hints(both, [Scenario("c", "failure", 2, 60.0)]) == {"wrong:w": "a"}
    unknown = replace(case_like, variants=(*case_like.variants, _verdicts("forgery:z", "forgery", {"a": "unknown"})))
    assert failing_hints(unknown)["forgery:z"] == "a"
    assert any(p.startswith("forgery:z:") for p in compare_verdicts(unknown, case_like))
    assert failing_hints(None) == {}
    flipped = replace(
        case_like,
        variants=(
            _verdicts("unmodified#1", "unmodified", {"a": "pass", "b": "pass"}),
            *case_like.variants[1:3],
            _verdicts("forgery:y (grouped)", "forgery", {"a": "pass", "b": "pass"}),
        ),
    )
    problems = compare_verdicts(case_like, flipped)
    assert any(p.startswith("unmodified#1:") for p in problems)
    assert any(p.startswith("forgery:y:") for p in problems) and any(p.startswith("forgery:y/b") for p in problems)
    # a wrong repair graded fail-fast on another scenario still agrees, as long as it is rejected
    elsewhere = replace(case_like, variants=(*case_like.variants[:2], _verdicts("wrong:x", "wrong", {"a": "fail"}),
                                             case_like.variants[3]))  # fmt: skip
    assert compare_verdicts(case_like, elsewhere) == []


@pytest.mark.slow
def test_qualify_writes_a_record_only_from_the_full_gate(
    case_copy: Path, runtime: Runtime, bwrap_usable: None, capsys: pytest.CaptureFixture[str]
) -> None:
    case = load_case(case_copy)
    assert main(["qualify", str(case_copy), "--sandbox", "bwrap", "--wrong-repairs"]) == 0
    assert "admission record written" in capsys.readouterr().err
    record = load_record(case)
    assert record is not None and record_status(case).current
    assert [v.kind for v in record.variants] == ["unmodified", "unmodified", "reference", "wrong"]
    assert record.verdicts("wrong")[0].scenarios == {"answer": "fail"}
    assert "rubric" in record.diagnosis
    # A hint that does not fail is only an order: the variant is then graded fail-fast in groups.
    seen: list[tuple[str, str]] = []
    result = qualify(
        case,
        sandbox="bwrap",
        repeats=1,
        wrong_repairs=True,
        hints={"wrong:off-by-one-up": "runs"},
        progress=lambda label, scenario, outcome: seen.append((label, scenario)) if outcome else None,
    )
    assert result.admitted, result.problems
    wrong = [scenario for label, scenario in seen if label.startswith("wrong:")]
    assert wrong == ["runs", "answer"]
    assert [v.receipt.status for v in result.variants if v.kind == "wrong"] == ["fail"]
    # Only the full gate writes a record: one repeat, or no wrong repairs, leaves the old one alone.
    before = record_path(case).read_bytes()
    digests = current_digests(case)
    for argv in (["--wrong-repairs", "--repeats", "1"], ["--repeats", "2"]):
        write_admission_record(_qualify_args(argv), case, result, digests)
        assert "no admission record written" in capsys.readouterr().err
    # Nor does a gate whose case changed while it ran: its verdicts may be about two versions.
    full = _qualify_args(["--wrong-repairs", "--repeats", "2"])
    write_admission_record(full, case, result, {**digests, "case": "0" * 64})
    assert "the case changed while the case was being qualified" in capsys.readouterr().err
    assert record_path(case).read_bytes() == before


RETRYING_JUDGE = """
    if record is not None and "ABORT" in record["stdout"]:
        return {"status": "retry", "reason": "a bare exit abort before the outputs were complete"}
    if record is not None and "CRASH" in record["stdout"]:
        raise RuntimeError("a judge that breaks on what the run printed")
"""


def _printing(answer: str) -> str:
    """A patch of the echo workspace that makes report.py print ``answer``."""
    return (
        '--- a/report.py\n+++ b/report.py\n@@ -1,6 +1,6 @@\n """Prints the answer."""\n \n'
        f'-ANSWER = 41\n+ANSWER = {answer!r}\n \n if __name__ == "__main__":\n     print(ANSWER)\n'
    )


@pytest.mark.slow
def test_a_forgery_is_rejected_as_unknown_only_when_its_judge_retries_out(
    case_copy: Path, runtime: Runtime, bwrap_usable: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """A forgery that fakes an infrastructure flake (its judge answers ``retry`` on every
    attempt) is rejected as unknown, recorded so, and re-qualified from that hint; a forgery
    that crashes the judge, and a wrong repair that the judge retries out, are problems."""
    judge = case_copy / "grader" / "judge.py"
    text = judge.read_text()
    anchor = '    value = record["stdout"].strip()\n'
    judge.write_text(text.replace(anchor, RETRYING_JUDGE.lstrip("\n") + anchor))
    forgeries = case_copy / "grader" / "forgeries"
    forgeries.mkdir()
    (forgeries / "fake-abort.patch").write_text(_printing("ABORT"))
    case = load_case(case_copy)
    assert main(["qualify", str(case_copy), "--sandbox", "bwrap", "--wrong-repairs"]) == 0, capsys.readouterr().err
    record = load_record(case)
    assert record is not None and record_status(case).current
    (forged,) = record.verdicts("forgery")
    assert forged.status == "unknown" and forged.scenarios == {"runs": "unknown", "answer": "unknown"}
    hints = failing_hints(record)
    assert hints["forgery:fake-abort"] == "answer"
    again = qualify(case, sandbox="bwrap", repeats=2, wrong_repairs=True, hints=hints)
    assert again.admitted, again.problems
    receipt = next(v.receipt for v in again.variants if v.kind == "forgery")
    assert receipt.status == "error" and [o.scenario for o in receipt.outcomes] == ["answer"]
    assert receipt.outcomes[0].attempts == 3  # the grader's retries were spent first
    # a judge that crashes is a problem even for a forgery; a wrong repair must fail on its merits
    (forgeries / "breaks-judge.patch").write_text(_printing("CRASH"))
    shutil.copy(forgeries / "fake-abort.patch", case_copy / "grader" / "wrong_repairs" / "aborts.patch")
    broken = qualify(load_case(case_copy), sandbox="bwrap", repeats=2, wrong_repairs=True, hints=hints)
    assert not broken.admitted
    assert any(p.startswith("forgery:breaks-judge") and "not judged" in p for p in broken.problems), broken.problems
    assert any(p.startswith("wrong:aborts") and "not judged (retry)" in p for p in broken.problems), broken.problems
    assert not any(p.startswith("forgery:fake-abort") for p in broken.problems)


@pytest.mark.slow
def test_hinted_wrong_repairs_are_graded_side_by_side_in_order(
    case_copy: Path, runtime: Runtime, bwrap_usable: None
) -> None:
    """The unmodified and reference gradings, then two hinted wrong repairs, are graded two at
    a time (on the device pool's room); one whose hint does not fail it is graded on every
    scenario afterwards, by itself; the results keep the variants' order."""
    import threading

    patches = case_copy / "grader" / "wrong_repairs"
    shutil.copy(patches / "off-by-one-up.patch", patches / "same-again.patch")
    case = load_case(case_copy)
    seen: list[tuple[str, str, str]] = []
    result = qualify(
        case,
        sandbox="bwrap",
        repeats=1,
        wrong_repairs=True,
        hints={"wrong:off-by-one-up": "answer", "wrong:same-again": "runs"},
        progress=lambda label, scenario, outcome: (
            seen.append((threading.current_thread().name, label, scenario)) if outcome else None
        ),
    )
    assert result.admitted, result.problems
    assert [v.label.split(" ")[0] for v in result.variants] == [
        "unmodified#1", "reference", "wrong:off-by-one-up", "wrong:same-again"
    ]  # fmt: skip
    assert [v.receipt.status for v in result.variants if v.kind == "wrong"] == ["fail", "fail"]
    side = {label.split(" ")[0] for thread, label, _ in seen if thread.startswith("qualify")}
    # every grading but the fallback ran in the pool
    assert side == {"unmodified#1", "reference", "wrong:off-by-one-up", "wrong:same-again"}
    # the hint that did not fail ('runs' passes) was tried in the pool, then graded on every
    # scenario (fail-fast) afterwards, by itself
    again = [(thread.startswith("qualify"), scenario) for thread, label, scenario in seen if "same-again" in label]
    assert again[0] == (True, "runs") and (False, "answer") in again[1:]
    assert all(not pooled for pooled, _ in again[1:])
    # one at a time when asked
    serial: list[str] = []

    def note(label: str, scenario: str, outcome: object) -> None:
        if outcome:
            serial.append(threading.current_thread().name)

    hints = {"wrong:off-by-one-up": "answer", "wrong:same-again": "answer"}
    qualify(case, sandbox="bwrap", repeats=1, wrong_repairs=True, parallel=1, hints=hints, progress=note)
    assert serial and not any(name.startswith("qualify") for name in serial)


@pytest.mark.slow
def test_alone_scenarios_are_graded_by_themselves(case_copy: Path, runtime: Runtime, bwrap_usable: None) -> None:
    """A scenario marked ``alone`` (its judge may read the host-timed duration of its run) is
    graded while no other grading runs, for every variant; the other scenarios of the unmodified
    and reference gradings are graded side by side; each variant's receipt has every scenario,
    in the case's order."""
    import threading

    scenarios = case_copy / "grader" / "scenarios.toml"
    scenarios.write_text(scenarios.read_text().replace('name = "answer"', 'name = "answer"\nalone = true'))
    case = load_case(case_copy)
    assert [s.name for s in case.scenarios if s.alone] == ["answer"]
    lock = threading.Lock()
    running: dict[tuple[str, str], float] = {}
    spans: list[tuple[str, str, str, float, float]] = []  # (thread, label, scenario, start, end)

    def note(label: str, scenario: str, outcome: object) -> None:
        with lock:
            key = (label, scenario)
            if outcome is None:
                running[key] = time.monotonic()
            else:
                spans.append((threading.current_thread().name, label, scenario, running.pop(key), time.monotonic()))

    result = qualify(case, sandbox="bwrap", repeats=2, wrong_repairs=True, progress=note)
    assert result.admitted, result.problems
    for variant in result.variants[:3]:
        assert [o.scenario for o in variant.receipt.outcomes] == ["runs", "answer"]
    alone = [span for span in spans if span[2] == "answer"]
    assert {label.split(" ")[0] for _, label, _, _, _ in alone} >= {"unmodified#1", "unmodified#2", "reference"}
    for _, label, _, start, end in alone:
        others = [o for o in spans if o[1:3] != (label, "answer") and o[3] < end and start < o[4]]
        assert not others, f"{label}/answer was graded beside {others}"
    pooled = {span[1].split(" ")[0] for span in spans if span[2] == "runs" and span[0].startswith("qualify")}
    assert pooled == {"unmodified#1", "unmodified#2", "reference"}


def _qualify_args(extra: list[str]) -> argparse.Namespace:
    return _parser().parse_args(["qualify", "ignored", "--sandbox", "bwrap", *extra])


def test_a_record_whose_promise_table_is_not_the_cases_is_invalid(recorded: CaseSpec) -> None:
    """The record keeps the promise table the case was admitted with; an uncovered class added
    since (or a table edited into the record) makes it invalid, naming the class."""
    table = recorded.grader_dir / "promises.toml"
    record = load_record(recorded)
    assert record is not None and [p["name"] for p in record.promises] == ["answer"]
    write_record(recorded, replace(record, promises=()))
    assert "its promise table is not the case's" in record_status(recorded).detail
    write_record(recorded, record)
    table.write_text(table.read_text() + '\n[[promise.class]]\nname = "three devices"\nscenarios = []\n')
    # the grader changed, so the record is stale first; its table check names the uncovered class
    assert record_status(load_case(recorded.root)).state == "stale"
    problems = verdict_problems(load_case(recorded.root), record)
    assert any("class 'three devices': uncovered" in p for p in problems), problems


def test_hints_survive_a_schema_change_but_never_name_a_scenario_the_case_lost(recorded: CaseSpec) -> None:
    """A re-qualification after the record schema moved still starts each wrong repair where it
    failed last time; a hint naming a scenario the case no longer has, or a garbled record, gives
    no hint (hints order work, never decide it)."""
    from gym_trainfail.admission import previous_hints

    data = json.loads(record_path(recorded).read_text())
    data["schema"] = admission.SCHEMA - 1
    data["variants"].append({"label": "wrong:gone (grouped)", "kind": "wrong", "status": "fail",
                             "scenarios": {"no-such-scenario": "fail"}})  # fmt: skip
    record_path(recorded).write_text(json.dumps(data))
    assert record_status(recorded).state == "invalid"
    assert previous_hints(recorded) == {"wrong:off-by-one-up": "answer"}
    data["variants"][0]["scenarios"] = ["not", "a", "mapping"]
    record_path(recorded).write_text(json.dumps(data))
    assert previous_hints(recorded) == {}
    record_path(recorded).write_text("{not json")
    assert previous_hints(recorded) == {}
