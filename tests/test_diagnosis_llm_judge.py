"""The LLM judge over real HTTP (the real ``openai`` client against the fake endpoint): per-concept
stances with quotes the code checks, every malformed or unfounded answer undecided, the same
stance rules as the rubric judge (hypothesised counts for the pre-run hypothesis only; withdrawn,
attributed and denied for nothing), verdicts cached by (statement, rubric, judge model), and the
key kept out of every file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gym_trainfail.cases import load_case
from gym_trainfail.cli import _parser
from gym_trainfail.cli.common import chosen_judge
from gym_trainfail.diagnosis.judges import judge_statements
from gym_trainfail.diagnosis.llm_judge import JUDGE_KEY_ENV, JUDGE_MODEL_ENV, LLMJudge, parse_answer
from gym_trainfail.diagnosis.rubric import Rubric
from trainfail_agents.fake_openai import FakeOpenAIServer, turn

from .conftest import ECHO_CASE

STATEMENT = "ANSWER is 41 in report.py, while the README documents 42."
KEY = "sk-judge-secret-1234"


@pytest.fixture(scope="module")
def rubric() -> Rubric:
    found = load_case(ECHO_CASE).rubric
    assert found is not None
    return found


@pytest.fixture
def judgements(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TRAINFAIL_HOME", str(tmp_path / "home"))
    return tmp_path / "home" / "judgements"


def _answer(concepts: list[tuple[str, str, str]], wrong: list[Any] | None = None, **extra: Any) -> str:
    body: dict[str, Any] = {
        "concepts": [{"name": n, "stance": st, "quote": q} for n, st, q in concepts],
        "wrong": wrong or [],
        "rationale": "r",
    }
    return json.dumps({**body, **extra})


def _both(
    rubric: Rubric, first: str = "ANSWER is 41", second: str = "the README documents 42", stance: str = "asserted"
) -> list[Any]:
    a, b = (c.name for c in rubric.concepts)
    return [(a, stance, first), (b, stance, second)]


def _ask(rubric: Rubric, answers: list[str], statement: str = STATEMENT) -> tuple[list[Any], list[Any]]:
    with FakeOpenAIServer([turn(content=a) for a in answers]) as server:
        judge = LLMJudge("judge-model", server.url)
        verdicts = [judge.judge(statement, rubric) for _ in answers]
        requests = [r.body for r in server.requests]
    return verdicts, requests


def test_a_founded_answer_is_a_verdict_with_evidence(rubric: Rubric) -> None:
    (verdict,), (request,) = _ask(rubric, [_answer(_both(rubric))])
    assert verdict.correct is True and set(verdict.concepts) == {c.name for c in rubric.concepts}
    assert all(quote in STATEMENT for _, quote in verdict.evidence)
    assert request["response_format"] == {"type": "json_object"} and request["temperature"] == 0
    assert f"<statement>\n{STATEMENT}\n</statement>" in request["messages"][1]["content"]
    system = request["messages"][0]["content"]
    assert all(c.name in system for c in rubric.concepts)
    assert all(f'"{stance}"' in system for stance in ("asserted", "hypothesised", "withdrawn", "attributed", "denied"))
    assert verdict.stance == "asserted" and verdict.hypothesis is True


def test_quotes_that_are_not_in_the_statement_and_malformed_answers_are_undecided(rubric: Rubric) -> None:
    a, b = (c.name for c in rubric.concepts)
    answers = [
        _answer(_both(rubric, second="the README documents 43")),  # a quote that is not there
        _answer(_both(rubric, first="41")),  # too short to be evidence
        "The statement is correct.",  # not JSON
        '{"concepts": [',  # truncated JSON
        _answer([(a, "asserted", "ANSWER is 41")]),  # a concept left out
        _answer([*_both(rubric), (a, "asserted", "ANSWER is 41")]),  # a concept twice
        _answer([(a, "asserted", "ANSWER is 41"), ("the bug", "asserted", "README")]),  # a name the rubric lacks
        _answer(_both(rubric), correct=True),  # a key outside the schema
        _answer(_both(rubric), withdrawn=False),  # the retired top-level key: the schema is closed
        json.dumps({"concepts": [{"name": a, "asserted": True, "quote": "ANSWER is 41"}]}),  # the retired item shape
        _answer(_both(rubric, stance="certain")),  # a stance that does not exist
        _answer(_both(rubric, stance="hypothesised", second="the README documents 43")),  # unfounded hypothesis
        _answer(_both(rubric), wrong=[{"name": "the interpreter rounds", "stance": "asserted", "quote": "it rounds"}]),
    ]
    verdicts, _ = _ask(rubric, answers)
    assert [v.correct for v in verdicts] == [None] * len(answers), [v.note for v in verdicts]
    assert "not in the statement" in verdicts[0].note and "not JSON" in verdicts[2].note
    assert "leaves out" in verdicts[4].note and "twice" in verdicts[5].note


def test_stances_decide_the_diagnosis_and_the_hypothesis_readings(rubric: Rubric) -> None:
    """The same rules as the rubric judge: asserted counts for both readings, hypothesised for the
    pre-run hypothesis only, withdrawn, attributed and denied for nothing; a wrong explanation asserted
    spoils both readings, one only hypothesised does not."""
    a, b = (c.name for c in rubric.concepts)
    statement = STATEMENT + " The interpreter rounds it. Edit: scratch that."
    rounds = "the interpreter rounds"
    answers = [
        _answer(_both(rubric, stance="withdrawn")),
        _answer(_both(rubric), wrong=[{"name": rounds, "stance": "asserted", "quote": "rounds it"}]),
        _answer([(a, "asserted", "ANSWER is 41"), (b, "absent", "")]),
        # whitespace runs compare as one space; items that count for nothing need no founded quote
        _answer(_both(rubric, first="ANSWER  is\n41"), wrong=[{"name": rounds, "stance": "denied", "quote": ""}]),
        _answer(_both(rubric, stance="hypothesised")),
        _answer([(a, "asserted", "ANSWER is 41"), (b, "hypothesised", "the README documents 42")]),
        _answer(_both(rubric, stance="attributed")),
        _answer(_both(rubric, stance="denied")),
        _answer(
            _both(rubric, stance="hypothesised"),
            wrong=[{"name": rounds, "stance": "hypothesised", "quote": "rounds it"}],
        ),
        _answer(
            _both(rubric, stance="hypothesised"), wrong=[{"name": rounds, "stance": "asserted", "quote": "rounds it"}]
        ),
    ]
    verdicts, _ = _ask(rubric, answers, statement)
    readings = [(v.correct, v.hypothesis, v.stance) for v in verdicts]
    assert readings == [
        (False, False, "withdrawn"),
        (False, False, "asserted"),
        (False, False, None),
        (True, True, "asserted"),
        (False, True, "hypothesised"),
        (False, True, "hypothesised"),
        (False, False, "attributed"),
        (False, False, "denied"),
        (False, True, "hypothesised"),
        (False, False, "hypothesised"),
    ]
    assert verdicts[0].withdrawn and verdicts[1].wrong == (rounds,)
    assert verdicts[4].passage and verdicts[6].passage == ""  # a credited hypothesis shows its evidence


def test_a_network_failure_is_undecided(rubric: Rubric) -> None:
    with FakeOpenAIServer([]) as server:
        url = server.url
    verdict = LLMJudge("judge-model", url, timeout_s=2).judge("anything", rubric)
    assert verdict.correct is None and "failed" in verdict.note
    assert parse_answer("[1, 2]", rubric, "x").correct is None
    assert parse_answer("{" * 100_000, rubric, "x").correct is None


def test_verdicts_are_cached_by_statement_rubric_and_model_and_the_key_stays_out(
    rubric: Rubric, judgements: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(JUDGE_KEY_ENV, KEY)
    statements = [STATEMENT, "Nothing found yet."]
    a, b = (c.name for c in rubric.concepts)
    script = [turn(content=_answer(_both(rubric))), turn(content=_answer([(a, "absent", ""), (b, "absent", "")]))]
    with FakeOpenAIServer(script) as server:
        first = judge_statements(statements, rubric, LLMJudge("judge-model", server.url))
        again = judge_statements(statements, rubric, LLMJudge("judge-model", server.url))  # from the cache
        assert len(server.requests) == 2 and server.requests[0].authorization == f"Bearer {KEY}"
    assert [v.correct for v in first] == [True, False] and first == again
    with FakeOpenAIServer([turn(content=_answer(_both(rubric)))]) as server:
        judge_statements(statements[:1], rubric, LLMJudge("other-model", server.url))  # another model: asked again
        assert len(server.requests) == 1
    with FakeOpenAIServer([turn(content="not json")]) as server:  # undecided: not cached, asked again next time
        judge_statements(["a third statement"], rubric, LLMJudge("judge-model", server.url))
    assert len(list(judgements.glob("*.json"))) == 3
    assert all(KEY not in p.read_text() for p in judgements.iterdir())
    assert KEY not in LLMJudge("judge-model", "http://127.0.0.1:9/v1").identity


def test_the_judge_is_configured_apart_from_the_agent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(JUDGE_MODEL_ENV, raising=False)
    args = _parser().parse_args(["grade", "run", "--judge-model", "m", "--judge-base-url", "http://127.0.0.1:9/v1"])
    judge = chosen_judge(args)
    assert judge is not None and judge.identity == "llm:m@http://127.0.0.1:9/v1"
    assert chosen_judge(_parser().parse_args(["grade", "run"])) is None  # the rubric judge
    monkeypatch.setenv(JUDGE_MODEL_ENV, "env-model")
    configured = chosen_judge(_parser().parse_args(["leaderboard", "run", "--judge-base-url", "http://127.0.0.1:9/v1"]))
    assert configured is not None and configured.identity.startswith("llm:env-model@")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv(JUDGE_KEY_ENV, raising=False)
    with pytest.raises(Exception, match="TRAINFAIL_JUDGE_API_KEY"):
        chosen_judge(_parser().parse_args(["batch", "--out", "x", "--judge-model", "m"]))


def test_denying_an_entailed_effect_is_a_wrong_explanation_for_the_llm_judge(rubric: Rubric) -> None:
    """An entailed concept (``required = false``) is not asked for, but its denial is offered as a
    wrong explanation, and an answer that marks it asserted makes the statement not a diagnosis,
    as the rubric judge decides it."""
    from dataclasses import replace

    from gym_trainfail.diagnosis.llm_judge import DENIES, rubric_text, wrong_items

    effect = replace(rubric.concepts[0], name="the report shows 41")
    entailed = replace(rubric, entailed=(effect,))
    denial = DENIES + effect.name
    assert denial in wrong_items(entailed) and denial in rubric_text(entailed)
    assert denial not in wrong_items(rubric)  # only where the rubric has one
    statement = STATEMENT + " Yet the report never shows 41."
    denied = _answer(_both(entailed), wrong=[{"name": denial, "stance": "asserted", "quote": "never shows 41"}])
    kept = _answer(_both(entailed), wrong=[{"name": denial, "stance": "absent"}])
    assert parse_answer(denied, entailed, statement).correct is False
    assert parse_answer(denied, entailed, statement).wrong == (denial,)
    assert parse_answer(kept, entailed, statement).correct is True
    assert parse_answer(denied, rubric, statement).correct is None  # not offered: an unknown name
