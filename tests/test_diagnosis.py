"""Diagnosis milestones: rubrics refused when broken, judges (deterministic and LLM through the
fake endpoint), the symptom detector, milestones on a known ledger, TrainCheck engagement, and
a conversation through the real loop whose milestones come out of ``trainfail grade --json``."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gym_trainfail.cases import CaseSpec, load_case
from gym_trainfail.diagnosis.engagement import engagement
from gym_trainfail.diagnosis.evidence import collect
from gym_trainfail.diagnosis.fixtures import check_fixtures
from gym_trainfail.diagnosis.judges import RubricJudge, code_digest, judge_statements
from gym_trainfail.diagnosis.milestones import MILESTONES, diagnose
from gym_trainfail.diagnosis.rubric import Rubric
from gym_trainfail.diagnosis.symptoms import MAX_MATCHES, Job, detect
from gym_trainfail.env import TrainFailEnv, read_transcript
from gym_trainfail.episode import grade_run, run_episode
from gym_trainfail.errors import CaseDefinitionError, TrainFailError
from gym_trainfail.ledger import read_events
from gym_trainfail.qualify import qualify
from gym_trainfail.registry import get_case
from gym_trainfail.runtimes import Runtime
from trainfail_agents.fake_openai import FakeOpenAIServer, call, turn
from trainfail_agents.openai_agent import OpenAIAgent
from trainfail_agents.scripted import StudyAgent, patched_files

from .conftest import ECHO_CASE


@pytest.fixture(scope="module")
def rubric() -> Rubric:
    found = load_case(ECHO_CASE).rubric
    assert found is not None
    return found


@pytest.fixture
def judgements(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private verdict cache."""
    monkeypatch.setenv("TRAINFAIL_HOME", str(tmp_path / "home"))
    return tmp_path / "home" / "judgements"


# -- rubrics are checked at registration --------------------------------------------------------

SYMPTOM = "[symptom]\ndescription = 'x'\n[[symptom.pattern]]\n"
BROKEN = [
    ("mechanism.colour", "[mechanism]\ncolour = 1\n", "unknown key"),
    ("retired passage_chars", "[mechanism]\npassage_chars = 400\n", "no longer used: concepts are now matched"),
    ("bad regex", "[[mechanism.concept]]\nname = 'x'\nany = ['(unclosed']\n", "not a valid regular expression"),
    ("no such culprit", "[[culprit]]\npath = 'missing.py'\n", "is not a file of workspace/"),
    ("culprit outside", "[[culprit]]\npath = '../case.toml'\n", "is not a file of workspace/"),
    ("symbol absent", "[[culprit]]\npath = 'report.py'\nsymbols = ['NOT_THERE']\n", "do not occur in report.py"),
    ("symptom without value", SYMPTOM + "regex = '(?P<key>a)'\n", "(?P<value>"),
    ("symptom without key", SYMPTOM + "regex = '(?P<value>a)'\n", "key"),
    ("steps without group", "[validation]\nsteps = ['step \\\\d+']\n", "(?P<steps>"),
    ("required not a bool", "[[mechanism.concept]]\nname = 'x'\nany = ['a']\nrequired = 'no'\n",
     "expected true or false"),
    ("alternative key", "[[mechanism.concept]]\nname = 'x'\nany = ['a']\n[[mechanism.concept.alternative]]\n"
                        "name = 'y'\nany = ['b']\ncolour = 1\n", "unknown key"),
    ("alternative without phrasings", "[[mechanism.concept]]\nname = 'x'\nany = ['a']\n"
     "[[mechanism.concept.alternative]]\nname = 'y'\nany = []\n", "at least one phrasing"),
    ("repeated name", "[[mechanism.concept]]\nname = 'x'\nany = ['a']\n[[mechanism.concept.alternative]]\n"
                      "name = 'x'\nany = ['b']\n", "names must be unique"),
    ("entailed with alternative", "[[mechanism.concept]]\nname = 'x'\nany = ['a']\nrequired = false\n"
     "[[mechanism.concept.alternative]]\nname = 'y'\nany = ['b']\n", "takes no alternatives"),
    ("study wrong repair", "[study]", "no grader/wrong_repairs/nope.patch"),
    ("study probe", "[study] probe", "is not a file"),
]  # fmt: skip


@pytest.mark.parametrize(("label", "extra", "message"), BROKEN, ids=[b[0] for b in BROKEN])
def test_a_broken_rubric_refuses_the_case_with_the_reason(
    case_copy: Path, label: str, extra: str, message: str
) -> None:
    path = case_copy / "grader" / "diagnosis" / "rubric.toml"
    text = path.read_text()
    # Replace the table the broken line belongs to, so the rest stays valid.
    if extra.startswith("[validation]"):
        text = text.replace("[validation]\nsteps = ['steps?[ =](?P<steps>\\d+)']\n", "")
    if extra.startswith("[symptom]"):
        start, end = text.index("[symptom]"), text.index("[validation]")
        text = text[:start] + text[end:]
    if extra == "[study]":
        text, extra = text.replace('wrong_repair = "off-by-one-up"', 'wrong_repair = "nope"'), ""
    if extra == "[study] probe":
        text, extra = text.replace('probe = "probe.sh"', 'probe = "../../kit/missing.sh"'), ""
    if extra.startswith("[mechanism]"):
        text = text.replace("[mechanism]\n", "[mechanism]\n" + extra.split("\n", 1)[1])
        extra = ""
    path.write_text(text + "\n" + extra)
    with pytest.raises(CaseDefinitionError) as raised:
        load_case(case_copy)
    assert message in str(raised.value) and "rubric.toml" in str(raised.value)


def test_alternatives_and_entailed_concepts_load_and_judge(case_copy: Path) -> None:
    """An alternative asserts its concept (the verdict's note says which one did); an entailed concept
    (``required = false``) is reported when asserted, not required, and contradicts when denied."""
    path = case_copy / "grader" / "diagnosis" / "rubric.toml"
    base = load_case(case_copy).rubric
    assert base is not None
    path.write_text(path.read_text() + EXTRA_CONCEPTS)
    rubric = load_case(case_copy).rubric
    assert rubric is not None
    assert [c.name for c in rubric.concepts] == [c.name for c in base.concepts]
    assert [c.name for c in rubric.entailed] == ["an effect"]
    last = rubric.concepts[-1]
    assert [a.name for a in last.alternatives] == ["stated in words"]
    assert len(last.phrasings) == len(base.concepts[-1].phrasings) + 1
    correct = next(f.text for f in rubric.fixtures if f.correct)
    judge = RubricJudge()
    assert judge.judge(correct, rubric).correct is True  # the effect left out
    stated = judge.judge(correct + " So the lamp glows.", rubric)
    assert stated.correct is True and "an effect" in stated.concepts
    contradicted = judge.judge(correct + " Yet the lamp never glows.", rubric)
    assert contradicted.correct is False and "denies 'an effect'" in contradicted.note
    # the alternative alone does not stand in for the other concepts
    assert judge.judge("zebra words", rubric).correct is False


#: An alternative for the echo rubric's last concept and an entailed effect.
EXTRA_CONCEPTS = """
[[mechanism.concept.alternative]]
name = "stated in words"
any = ['\\bzebra\\s+words\\b']

[[mechanism.concept]]
name = "an effect"
required = false
any = ['\\blamp\\s+(?:\\w+\\s+)?glows?\\b']
"""


def test_a_rubric_needs_fixtures_of_both_kinds(case_copy: Path) -> None:
    path = case_copy / "grader" / "diagnosis" / "rubric.toml"
    text = path.read_text()
    first = text.index("[[fixture]]")
    path.write_text(text[: text.index("[[fixture]]", first + 1)])  # only the first, a correct one
    with pytest.raises(CaseDefinitionError, match="at least one correct and one incorrect"):
        load_case(case_copy)


def test_the_rubric_never_changes_the_grader_hash(case_copy: Path) -> None:
    before = load_case(case_copy).grader_hash()
    path = case_copy / "grader" / "diagnosis" / "rubric.toml"
    path.write_text(path.read_text().replace("[mechanism]", "[mechanism]\n# improved"))
    (path.parent / "heldout.toml").write_text("changed")
    assert load_case(case_copy).grader_hash() == before
    (case_copy / "grader" / "scenarios.toml").write_text(
        (case_copy / "grader" / "scenarios.toml").read_text() + "\n#\n"
    )
    assert load_case(case_copy).grader_hash() != before


# -- the deterministic judge ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("statement", "correct"),
    [
        ("ANSWER is 41 but the README documents 42.", True),
        ("report.py prints 41; the README says 42.", True),
        ("It is not that report.py prints 41 — the README documents 42.", False),  # negated
        ("report.py prints 41 and the README says 42, because the interpreter rounds.", False),  # wrong cause
        ("ANSWER is 41, but the README never documents 42.", False),  # negation inside the phrase
        ("report.py prints 41.\n\nThe README documents 42.", True),  # two short paragraphs, both within reach
        ("", False),
    ],
)
def test_rubric_judge(rubric: Rubric, statement: str, correct: bool) -> None:
    assert RubricJudge().judge(statement, rubric).correct is correct


def test_concepts_far_apart_in_one_statement_are_one_diagnosis_with_evidence(rubric: Rubric) -> None:
    filler = " ".join(["the configuration and logs look ordinary"] * 30)
    statement = f"ANSWER is 41, {filler}, the README documents 42."
    verdict = RubricJudge().judge(statement, rubric)
    assert verdict.correct is True and len(statement) > 1000
    evidence = {"the constant is 41": "ANSWER is 41", "the README documents 42": "README documents 42"}
    assert dict(verdict.evidence) == evidence


def test_author_fixtures_give_full_precision_and_recall(rubric: Rubric, judgements: Path) -> None:
    check = check_fixtures(rubric, RubricJudge())
    assert (check.precision, check.recall, check.misjudged) == (1.0, 1.0, ())
    assert check.true_negative == sum(not f.correct for f in rubric.fixtures)


def test_a_misjudged_fixture_refuses_the_rubric_only(case_copy: Path, runtime: Runtime, bwrap_usable: None) -> None:
    path = case_copy / "grader" / "diagnosis" / "rubric.toml"
    path.write_text(path.read_text() + '\n[[fixture]]\nexpect = "correct"\nlabel = "unreachable"\ntext = "41."\n')
    result = qualify(load_case(case_copy), sandbox="bwrap", repeats=1)
    assert result.rubric is not None and result.rubric.recall == pytest.approx(3 / 4)
    assert any("misjudges its own fixtures: unreachable" in p for p in result.diagnosis_problems)
    assert not result.rubric_admitted and result.admitted, result.problems  # the verdicts stand


def test_verdicts_are_cached_by_statements_rubric_and_judge(rubric: Rubric, judgements: Path) -> None:
    class Counting(RubricJudge):
        calls = 0

        def judge(self, statement: str, rubric: Rubric) -> Any:
            Counting.calls += 1
            return super().judge(statement, rubric)

    statements = ["ANSWER is 41 but the README documents 42.", "nothing"]
    first = judge_statements(statements, rubric, Counting())
    again = judge_statements(statements, rubric, Counting())
    assert first == again and Counting.calls == 2 and len(list(judgements.iterdir())) == 2
    judge_statements([*statements, "a new one"], rubric, Counting())  # per statement: only the new one is judged
    assert Counting.calls == 3 and len(list(judgements.iterdir())) == 3


def test_judges_writing_the_same_verdicts_at_once_never_trip_over_each_other(rubric: Rubric, judgements: Path) -> None:
    """Two checks of one rubric at once (two tuners, a qualification beside a test) write the same cache
    entries: each writer uses its own temporary file, so none finds its file moved away by another."""
    import threading

    statements = [f"ANSWER is 41 but the README documents 42 ({n})." for n in range(40)]
    errors: list[BaseException] = []

    def check() -> None:
        try:
            for _ in range(3):
                for path in judgements.glob("*.json"):
                    path.unlink(missing_ok=True)  # everyone judges and writes again
                judge_statements(statements, rubric, RubricJudge())
        except BaseException as error:  # noqa: BLE001 - the assertion below reports it
            errors.append(error)

    threads = [threading.Thread(target=check) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert not list(judgements.glob("*.tmp")), "no temporary file is left behind"
    # a corrupt or foreign entry is judged again, never an error
    entry = next(judgements.glob("*.json"))
    entry.write_text('{"correct": true}')
    assert judge_statements(statements[:1], rubric, RubricJudge())[0].correct is not None


def test_a_change_to_the_judges_code_is_never_served_stale_verdicts(
    rubric: Rubric, judgements: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cache key holds the judges' code: a reader that now reads a statement differently is
    asked again, not answered from what the old reader said under the same rubric."""

    class Counting(RubricJudge):
        calls = 0

        def judge(self, statement: str, rubric: Rubric) -> Any:
            Counting.calls += 1
            return super().judge(statement, rubric)

    statements = ["ANSWER is 41 but the README documents 42."]
    judge_statements(statements, rubric, Counting())
    judge_statements(statements, rubric, Counting())
    assert Counting.calls == 1
    assert len(code_digest()) == 64 and code_digest() == code_digest()
    monkeypatch.setattr("gym_trainfail.diagnosis.judges.code_digest", lambda: "0" * 64)  # an edited reading.py
    judge_statements(statements, rubric, Counting())
    assert Counting.calls == 2 and len(list(judgements.iterdir())) == 2


# -- the symptom detector ----------------------------------------------------------------------


def test_symptom_detector_scopes_and_tolerances(rubric: Rubric) -> None:
    assert rubric.symptom is not None
    jobs = [Job(3, "python report.py", "printed: 41", 0, 1), Job(5, "cat README.md", "documented 42", 2, 3),
            Job(7, "again", "printed 42\ndocumented 42", 4, 5)]  # fmt: skip
    assert [m.step for m in detect(rubric.symptom, jobs)] == [5, 7]  # episode scope: step 5 sees step 3's value
    job_scope = rubric.symptom.__class__(rubric.symptom.description, "job", rubric.symptom.patterns)
    assert [m.step for m in detect(job_scope, jobs)] == []  # no single job shows both values apart
    flood = Job(9, "x", "printed 1\n" * (MAX_MATCHES * 3) + "documented 2", 0, 1)
    assert detect(job_scope, [flood]) == []  # matches are bounded: the late disagreement is not read


# -- milestones on a known ledger ---------------------------------------------------------------


def _ledger(run_dir: Path, events: list[dict[str, Any]], observations: dict[int, str]) -> list[dict[str, Any]]:
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "ledger.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    (run_dir / "transcript.jsonl").write_text(
        "".join(json.dumps({"index": i, "observation": o}) + "\n" for i, o in observations.items())
    )
    return read_events(run_dir / "ledger.jsonl")


def _step(index: int, tool: str, start: float, end: float, **arguments: Any) -> dict[str, Any]:
    return {"event": "step", "t": end, "index": index, "tool": tool, "arguments": arguments, "start": start,
            "end": end, "status": "ok"}  # fmt: skip


CORRECT = "ANSWER is 41 while the README documents 42."


def test_milestones_have_times_turns_token_ranges_and_device_seconds(
    rubric: Rubric, judgements: Path, tmp_path: Path
) -> None:
    events = _ledger(
        tmp_path / "run",
        [
            {"event": "reset", "t": 100.0},
            {"event": "tokens", "t": 101.0, "input": 100, "output": 10, "cached_input": 0},
            {"event": "message", "t": 101.5, "role": "assistant", "kind": "message", "text": "Let me look around."},
            _step(1, "read_file", 102.0, 102.5, path="/workspace/report.py"),
            {"event": "tokens", "t": 103.0, "input": 180, "output": 10, "cached_input": 100},
            {"event": "message", "t": 103.5, "role": "assistant", "kind": "reasoning", "text": CORRECT},
            {"event": "tokens", "t": 104.0, "input": 250, "output": 50, "cached_input": 0},
            {"event": "device", "t": 112.0, "role": "solver", "devices": 2, "queued_at": 104.0, "started_at": 106.0,
             "released_at": 112.0, "device_seconds": 12.0},
            _step(2, "run_job", 104.0, 112.0, command="python report.py", devices=2),
            {"event": "tokens", "t": 113.0, "input": 400, "output": 20, "cached_input": 0},
            {"event": "message", "t": 113.5, "role": "assistant", "kind": "message", "text": "Job done. " + CORRECT},
            {"event": "submit", "t": 114.0, "revision": 1, "tree": "x"},
            {"event": "finish", "t": 115.0, "reason": "finish", "summary": "done"},
        ],
        {1: 'ANSWER = 41', 2: "printed 41\ndocumented 42"},
    )  # fmt: skip
    found = diagnose(tmp_path / "run", events, rubric, arm="control", first_valid_at=114.0)
    m = found["milestones"]
    assert set(m) == set(MILESTONES)
    # Stated in turn 2 (after reading report.py, before any job): pre-run and source-supported at once.
    for name in ("pre_run_hypothesis", "source_supported_diagnosis"):
        assert (m[name]["raw_s"], m[name]["turn"], m[name]["step"]) == (3.5, 2, 1)
        assert (m[name]["tokens_low"], m[name]["tokens_high"]) == (110, 300)
    runtime = m["runtime_supported_diagnosis"]
    assert (runtime["raw_s"], runtime["turn"], runtime["step"]) == (13.5, 4, 2)
    assert (runtime["tokens_low"], runtime["tokens_high"]) == (600, 1020)
    assert runtime["adjusted_s"] == pytest.approx(11.5) and runtime["solver_device_seconds"] == 12.0
    request = m["first_device_request"]
    assert (request["raw_s"], request["turn"], request["step"], request["solver_device_seconds"]) == (4.0, 3, 2, 0.0)
    assert m["first_valid_submission"]["tokens_high"] == 1020 and m["first_valid_submission"]["adjusted_s"] == 12.0
    assert found["symptom_jobs"] == [2]
    assert found["statements"] == {"count": 4, "correct": 2, "hypothesised": 0, "undecided": 0}
    assert found["validation"] == {"jobs": 1, "device_seconds": 12.0, "distinct_commands": 1, "ranks": [2],
                                   "steps": None}  # fmt: skip
    assert found["engagement"] is None  # control arm


def test_no_milestone_without_its_evidence(rubric: Rubric, judgements: Path, tmp_path: Path) -> None:
    """A correct statement before reading the culprit is only a pre-run hypothesis; a job whose
    output shows nothing does not support a diagnosis; a wrong statement is no milestone."""
    events = _ledger(
        tmp_path / "run",
        [
            {"event": "reset", "t": 0.0},
            {"event": "message", "t": 1.0, "role": "assistant", "kind": "message", "text": CORRECT},
            {"event": "message", "t": 1.5, "role": "user", "kind": "message", "text": CORRECT},  # not the agent
            {"event": "device", "t": 5.0, "role": "solver", "devices": 1, "queued_at": 2.0, "started_at": 2.0,
             "released_at": 5.0, "device_seconds": 3.0},
            _step(1, "run_job", 2.0, 5.0, command="python report.py", devices=1),
            {"event": "message", "t": 6.0, "role": "assistant", "kind": "message", "text": CORRECT + " It rounds."},
            _step(2, "shell", 7.0, 8.0, command="cat report.py"),
            {"event": "finish", "t": 9.0, "reason": "finish", "summary": "Finished: " + CORRECT},
        ],
        {1: "41", 2: "ANSWER = 41"},
    )  # fmt: skip
    m = diagnose(tmp_path / "run", events, rubric, arm="control", first_valid_at=None)["milestones"]
    assert m["pre_run_hypothesis"]["raw_s"] == 1.0
    assert m["source_supported_diagnosis"]["raw_s"] == 9.0  # the finish summary, after `cat report.py`
    assert m["runtime_supported_diagnosis"] is None and m["first_valid_submission"] is None


def test_without_a_rubric_only_device_and_submission_milestones(tmp_path: Path) -> None:
    said = {"event": "message", "t": 1.0, "role": "assistant", "text": CORRECT}
    events = _ledger(tmp_path / "run", [{"event": "reset", "t": 0.0}, said], {})
    found = diagnose(tmp_path / "run", events, None, arm="control", first_valid_at=None)
    assert found["judge"] is None and all(v is None for v in found["milestones"].values())


# -- TrainCheck engagement -----------------------------------------------------------------------


def _audit(step: int, **report: Any) -> dict[str, Any]:
    return {"event": "audit", "t": float(step), "step": step, "tool": "shell", "source": "watch", "report": report}


def test_engagement_levels(tmp_path: Path) -> None:
    manual = _audit(1, type="access", target="manual", access="read", count=1, paths=["TRAINCHECK.md"])
    imported = _audit(2, type="access", target="package", access="read", count=3, paths=["traincheck/__init__.py"])
    ran = {**_audit(3, type="usage", kind="command", detail="traincheck-check", argv=[], pid=5), "source": "hook"}
    levels = []
    for events, observation in (
        ([], ""),
        ([manual], ""),
        ([manual, imported], ""),
        ([manual, imported, ran], "0 violations found"),
        ([manual, imported, ran], "3 invariants violated: ..."),
    ):
        run = _ledger(tmp_path / str(len(levels)), [{"event": "reset", "t": 0.0}, *events,
                      _step(3, "shell", 3, 3.5, command="traincheck-check"),
                      _step(4, "edit_file", 4, 4.5, path="a.py")], {3: observation})  # fmt: skip
        levels.append(engagement(run, collect(tmp_path / str(len(levels)), run))["level"])
    assert levels == ["none", "manual", "prepared", "activated", "acted"]


# -- agent text reaches the ledger --------------------------------------------------------------


def test_record_message_is_recorded_bounded_and_never_rewarded(
    echo_case: CaseSpec, runtime: Runtime, bwrap_usable: None, tmp_path: Path
) -> None:
    env = TrainFailEnv(case=echo_case, sandbox="bwrap", run_dir=tmp_path / "run")
    env.reset(seed=0)
    env.unwrapped.record_message("I think " + CORRECT)  # type: ignore[attr-defined]
    env.unwrapped.record_message("x" * 70_000, kind="reasoning")  # type: ignore[attr-defined]
    with pytest.raises(TrainFailError, match="role must be one of"):
        env.unwrapped.record_message("hi", role="tool")  # type: ignore[attr-defined]
    env.step({"tool": "submit", "arguments": {}})
    _, reward, terminated, _, _ = env.step({"tool": "finish", "arguments": {"summary": CORRECT}})
    env.close()
    assert terminated and reward == 0.0  # the unmodified workspace: saying the right thing earns nothing
    messages = [e for e in read_events(tmp_path / "run" / "ledger.jsonl") if e["event"] == "message"]
    assert [(m["kind"], len(m["text"]), m.get("chars")) for m in messages] == [
        ("message", len("I think " + CORRECT), None), ("reasoning", 64_000, 70_000)]  # fmt: skip
    transcript = read_transcript(tmp_path / "run", messages=True)
    assert [r["message"]["kind"] for r in transcript if "message" in r] == ["message", "reasoning"]
    assert all("index" in r for r in read_transcript(tmp_path / "run"))  # replay reads steps only


def test_recorded_messages_survive_resume(
    echo_case: CaseSpec, runtime: Runtime, bwrap_usable: None, tmp_path: Path
) -> None:
    first = TrainFailEnv(case=echo_case, sandbox="bwrap", run_dir=tmp_path / "run")
    first.reset(seed=0)
    first.step({"tool": "read_file", "arguments": {"path": "report.py"}})
    first.unwrapped.record_message(CORRECT)  # type: ignore[attr-defined]
    first.close()  # the loop died here
    second = TrainFailEnv(case=echo_case, sandbox="bwrap")
    second.reset(options={"resume": tmp_path / "run"})
    second.unwrapped.record_message("Resumed; nothing new.")  # type: ignore[attr-defined]
    second.step({"tool": "finish", "arguments": {}})
    second.close()
    events = read_events(tmp_path / "run" / "ledger.jsonl")
    assert [e["text"] for e in events if e["event"] == "message"] == [CORRECT, "Resumed; nothing new."]
    milestones = diagnose(tmp_path / "run", events, echo_case.rubric, arm="control", first_valid_at=None)["milestones"]
    assert milestones["source_supported_diagnosis"] is not None


# -- a conversation through the real loop -------------------------------------------------------


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-diagnosis-test-key")
    yield "sk-diagnosis-test-key"


def test_a_conversation_yields_every_milestone_in_grade_json(
    echo_case: CaseSpec, runtime: Runtime, bwrap_usable: None, key: str, tmp_path: Path
) -> None:
    fixed = patched_files(echo_case.workspace_dir, echo_case.reference_patch)["report.py"]
    probe = "echo printed $(python report.py); echo documented $(grep -o '[0-9][0-9]' README.md)"
    script = [
        turn(call("read_file", path="report.py"), content="Reading the program first.",
             reasoning="The README is the spec; compare it with the program."),
        turn(call("read_file", path="README.md"), content="ANSWER is 41 in report.py; if the README documents 42, "
             "that is the mismatch."),  # fmt: skip
        turn(call("run_job", command=probe, devices=2)),
        turn(call("write_file", path="report.py", content=fixed),
             content="The job printed 41 where the README documents 42: ANSWER is 41, the README documents 42."),
        turn(call("submit")),
        turn(call("finish", summary="Set ANSWER to 42 as the README documents.")),
    ]  # fmt: skip
    run_dir = tmp_path / "run"
    with FakeOpenAIServer(script) as server:
        command = [
            sys.executable,
            "-m",
            "gym_trainfail.cli",
            "run",
            "--case",
            str(ECHO_CASE),
            "--agent",
            "openai",
            "--model",
            "fake",
            "--base-url",
            server.url,
            "--sandbox",
            "bwrap",
            "--out",
            str(run_dir),
        ]
        subprocess.run(command, check=True, capture_output=True, text=True, timeout=300)
        totals = server.usage_totals()
    graded = subprocess.run(
        [sys.executable, "-m", "gym_trainfail.cli", "grade", str(run_dir), "--sandbox", "bwrap", "--json"],
        check=True, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    diagnosis = json.loads(graded.stdout)["diagnosis"]
    m = diagnosis["milestones"]
    assert all(m[name] is not None for name in MILESTONES), m
    assert m["pre_run_hypothesis"]["turn"] == m["source_supported_diagnosis"]["turn"] == 2
    assert m["first_device_request"]["turn"] == 3 and m["runtime_supported_diagnosis"]["turn"] == 4
    assert m["first_valid_submission"]["turn"] == 5
    assert 0 < m["pre_run_hypothesis"]["tokens_low"] < m["pre_run_hypothesis"]["tokens_high"]
    assert m["runtime_supported_diagnosis"]["tokens_high"] <= totals["input"] + totals["output"]
    assert m["runtime_supported_diagnosis"]["solver_device_seconds"] > 0
    assert (
        m["pre_run_hypothesis"]["raw_s"]
        <= m["first_device_request"]["raw_s"]
        < m["runtime_supported_diagnosis"]["raw_s"]
    )
    assert diagnosis["symptom_jobs"] == [3] and diagnosis["judge"] == "rubric"
    said = [(e["kind"], e["text"][:20]) for e in read_events(run_dir / "ledger.jsonl") if e["event"] == "message"]
    assert said[:2] == [("reasoning", "The README is the sp"), ("message", "Reading the program ")]
    assert diagnosis["validation"]["jobs"] == 1 and diagnosis["validation"]["ranks"] == [2]
    # grading a run directory again reuses its receipts; --no-cache grades every tree again
    receipts = sorted((run_dir / "grades").glob("revision-*.json"))
    created = [json.loads(p.read_text())["created"] for p in receipts]
    for flags, regraded in (([], False), (["--no-cache"], True)):
        subprocess.run([sys.executable, "-m", "gym_trainfail.cli", "grade", str(run_dir), "--sandbox", "bwrap", *flags],
                       check=True, capture_output=True, text=True, timeout=300)  # fmt: skip
        now = [json.loads(p.read_text())["created"] for p in receipts]
        assert all((b > a) == regraded for a, b in zip(created, now, strict=True)), (flags, created, now)


# -- the scripted study agent ---------------------------------------------------------------------


def test_study_agent_reads_hypothesises_probes_submits_wrong_then_right(
    echo_case: CaseSpec, runtime: Runtime, traincheck_runtime: Runtime, bwrap_usable: None, tmp_path: Path
) -> None:
    result = run_episode(StudyAgent(), case=echo_case, arm="traincheck", sandbox="bwrap", run_dir=tmp_path / "run")
    assert (result.reward, result.reward_status) == (1.0, "graded")
    grades = grade_run(result.run_dir, sandbox="bwrap")
    assert [r.status for r in grades.revisions] == ["fail", "pass"] and grades.first_valid is not None
    assert grades.first_valid.revision == 2
    diagnosis = grades.diagnosis
    assert diagnosis is not None and diagnosis["symptom_jobs"] and diagnosis["engagement"]["level"] == "none"
    m = diagnosis["milestones"]
    assert all(m[name] is not None for name in MILESTONES), m
    order = [m[name]["raw_s"] for name in ("source_supported_diagnosis", "first_device_request",
                                           "runtime_supported_diagnosis", "first_valid_submission")]  # fmt: skip
    assert order == sorted(order) and m["pre_run_hypothesis"] == m["source_supported_diagnosis"]
    low, high = m["runtime_supported_diagnosis"]["tokens_low"], m["runtime_supported_diagnosis"]["tokens_high"]
    assert 0 < low < high  # estimated usage per action: a range from completed-turn counters
    assert diagnosis["validation"]["jobs"] == 2 and diagnosis["validation"]["distinct_commands"] == 2
    # The probe was removed before submitting: the final revision is the reference tree.
    reference = patched_files(echo_case.workspace_dir, echo_case.reference_patch)
    assert (tmp_path / "run").exists() and reference["report.py"] is not None
    assert grades.final is not None and grades.final.receipt.passed


@pytest.mark.slow
def test_a_conversation_on_the_ddp_case_reaches_every_milestone(
    runtime: Runtime, bwrap_usable: None, key: str, tmp_path: Path
) -> None:
    """The real loop on the DDP case: it reads the culprit code, states the mechanism, runs a
    probe job that shows per-rank token counts, repairs, runs the pipeline and submits; the
    reward is 1, tokens match the endpoint, and `trainfail grade --json` has every milestone."""
    case = get_case("TrainFail/DDPTokenAverage-v1")
    assert case.rubric is not None and case.rubric.study is not None
    study, devices = case.rubric.study, case.topology.devices_per_job
    fixed = patched_files(case.workspace_dir, case.reference_patch)
    reads = [call("read_file", path=c.path) for c in case.rubric.culprits]
    script = [
        turn(*reads, content="Reading the training path first."),
        turn(call("write_file", path=study.probe_path, content=study.probe.read_text()), content=study.hypothesis),
        turn(call("run_job", command=study.probe_command, devices=devices)),
        turn(
            *(call("write_file", path=p, content=c) for p, c in fixed.items() if c is not None),
            content=study.confirmation,
        ),  # fmt: skip
        turn(call("run_job", command=case.check_command, devices=devices)),
        turn(call("submit")),
        turn(call("finish", summary="Normalised the loss by the global token count.")),
    ]
    run_dir = tmp_path / "run"
    with FakeOpenAIServer(script) as server:
        agent_options = {"model": "fake", "base_url": server.url}
        result = run_episode(OpenAIAgent(**agent_options), case=case, sandbox="bwrap", run_dir=run_dir,
                             agent_options=agent_options)  # fmt: skip
        totals = server.usage_totals()
    assert (result.reward, result.reward_status) == (1.0, "graded")
    assert (result.summary.input_tokens, result.summary.output_tokens) == (totals["input"], totals["output"])
    graded = subprocess.run(
        [sys.executable, "-m", "gym_trainfail.cli", "grade", str(run_dir), "--sandbox", "bwrap", "--json"],
        check=True, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    diagnosis = json.loads(graded.stdout)["diagnosis"]
    m = diagnosis["milestones"]
    assert all(m[name] is not None for name in MILESTONES), m
    assert [m[name]["turn"] for name in MILESTONES] == [2, 2, 4, 3, 6]
    probe_step = len(reads) + 2  # the reads, the probe written, then run
    assert diagnosis["symptom_jobs"] == [probe_step]  # the pipeline's own output shows no per-rank counts
    assert 0 < m["runtime_supported_diagnosis"]["tokens_low"] < m["runtime_supported_diagnosis"]["tokens_high"]
    assert diagnosis["validation"]["jobs"] == 2 and diagnosis["validation"]["steps"] is not None


ISSUE_22_CONFIRMATION = (
    "the ranks hold different numbers of valid response tokens in the same step, so averaging per-rank token means "
    "does not give the global token mean; the per-rank normalisation is the cause"
)


def test_the_issue_22_ddp_conversation_reaches_every_diagnosis_milestone(
    judgements: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An agent states the DDP mechanism after reading the loss, runs its own per-rank token-count
    probe (the symptom detector marks that job) and then says the issue's sentence: all three
    diagnosis milestones, the runtime-supported one at that sentence."""
    monkeypatch.setattr("gym_trainfail.diagnosis.milestones.judge_heldout", lambda rubric, judge: None)  # not read here
    rubric = get_case("TrainFail/DDPTokenAverage-v1").rubric
    assert rubric is not None
    assert RubricJudge().judge(ISSUE_22_CONFIRMATION, rubric).correct is True
    mechanism = (
        "response_token_loss takes the mean over each micro-batch's own response tokens, so every rank normalises "
        "by its local count and num_items_in_batch is ignored. The ranks hold different numbers of response tokens, "
        "so DDP's averaged gradient is a mean of per-rank means, not the global token mean."
    )
    probe_output = "rank 0 step 0: valid_tokens=41\nrank 1 step 0: valid_tokens=63\n"
    events = _ledger(
        tmp_path / "run",
        [
            {"event": "reset", "t": 0.0},
            _step(1, "read_file", 1.0, 2.0, path="sft/losses.py"),
            {"event": "message", "t": 3.0, "role": "assistant", "kind": "message", "text": mechanism},
            _step(2, "write_file", 4.0, 5.0, path="outputs/count_tokens.py", content="..."),
            {"event": "device", "t": 20.0, "role": "solver", "devices": 2, "queued_at": 6.0, "started_at": 6.0,
             "released_at": 20.0, "device_seconds": 28.0},
            _step(3, "run_job", 6.0, 20.0, command="torchrun --nproc_per_node 2 outputs/count_tokens.py", devices=2),
            {"event": "message", "t": 21.0, "role": "assistant", "kind": "message", "text": ISSUE_22_CONFIRMATION},
        ],
        {1: "def response_token_loss(logits, labels): ...", 3: probe_output},
    )  # fmt: skip
    found = diagnose(tmp_path / "run", events, rubric, arm="control", first_valid_at=None)
    m = found["milestones"]
    assert found["symptom_jobs"] == [3] and found["statements"]["correct"] == 2
    assert m["pre_run_hypothesis"]["raw_s"] == m["source_supported_diagnosis"]["raw_s"] == 3.0
    assert m["runtime_supported_diagnosis"]["raw_s"] == 21.0
    assert "does not give the global" in m["runtime_supported_diagnosis"]["excerpt"]  # the quoted evidence
