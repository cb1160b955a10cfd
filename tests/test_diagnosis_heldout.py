"""Held-out diagnosis statements: the closed schema, the hash taken when the set was written,
qualification's floors (a case without a set is reported, not refused), and the command that
prints the figures without running any training. Only the echo fixture's own set is read here."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from gym_trainfail.cases import load_case
from gym_trainfail.diagnosis.heldout import (
    HASH_FILE,
    HELDOUT_FILE,
    HeldoutError,
    check_heldout,
    load_heldout,
    main,
    summary_line,
)
from gym_trainfail.diagnosis.judges import RubricJudge
from gym_trainfail.qualify import Qualification, qualify_diagnosis

from .conftest import ECHO_CASE


@pytest.fixture(autouse=True)
def _private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRAINFAIL_HOME", str(tmp_path / "home"))


def _folder(case_copy: Path) -> Path:
    return case_copy / "grader" / "diagnosis"


def _rewrite(case_copy: Path, text: str, *, rehash: bool = True) -> None:
    path = _folder(case_copy) / HELDOUT_FILE
    path.write_text(text)
    if rehash:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        (_folder(case_copy) / HASH_FILE).write_text(f"{digest}  {HELDOUT_FILE}\n")


def test_the_echo_set_loads_and_the_rubric_judge_passes_it() -> None:
    case = load_case(ECHO_CASE)
    assert case.rubric is not None
    heldout = load_heldout(case.grader_dir, case.id)
    assert heldout is not None and heldout.case == case.id and len(heldout.statements) == 8
    assert sum(s.withdrawn for s in heldout.statements) == 2
    check = check_heldout(heldout, case.rubric, RubricJudge())
    assert (check.classified.precision, check.classified.recall, check.withdrawn_rejection) == (1.0, 1.0, 1.0)
    assert check.problems() == [] and "withdrawn rejected 100% (2/2)" in summary_line(check)


BROKEN = [
    ("extra top-level key", lambda t: t + "\n[extra]\nx = 1\n", "unknown key"),
    ("extra statement key", lambda t: t.replace('id = "c01"', 'id = "c01"\nlabel = "x"'), "unknown key"),
    ("duplicate id", lambda t: t.replace('id = "c02"', 'id = "c01"'), "'c01' is used twice"),
    ("bad expect", lambda t: t.replace('expect = "correct"', 'expect = "yes"', 1), "expected 'correct' or"),
    ("withdrawn correct", lambda t: t.replace("withdrawn = false", "withdrawn = true", 1), "expect = 'incorrect'"),
    ("withdrawn not a bool", lambda t: t.replace('withdrawn = false', 'withdrawn = "no"', 1), "expected true or false"),
    ("missing key", lambda t: t.replace('style = "terse"\n', "", 1), "missing style"),
    ("another case", lambda t: t.replace('"TrainFailTest/Echo-v0"', '"TrainFail/Other-v0"'), "not 'TrainFailTest"),
    ("bad time", lambda t: t.replace('written = "2026-12-01T16:10:00Z"', 'written = "yesterday"'), "ISO 8601"),
    ("not toml", lambda t: t + "\n[[statement\n", "not valid TOML"),
]  # fmt: skip


@pytest.mark.parametrize(("label", "edit", "message"), BROKEN, ids=[b[0] for b in BROKEN])
def test_a_malformed_set_is_refused_with_the_key_named(case_copy: Path, label: str, edit: object, message: str) -> None:
    text = (_folder(case_copy) / HELDOUT_FILE).read_text()
    _rewrite(case_copy, edit(text))  # type: ignore[operator]
    case = load_case(case_copy)  # a broken held-out set never stops the case from registering
    with pytest.raises(HeldoutError, match=message.replace("(", r"\(")):
        load_heldout(case.grader_dir, case.id)


def test_a_set_changed_after_it_was_hashed_is_refused(case_copy: Path) -> None:
    text = (_folder(case_copy) / HELDOUT_FILE).read_text()
    _rewrite(case_copy, text.replace("The printed value is off.", "Something else."), rehash=False)
    case = load_case(case_copy)
    with pytest.raises(HeldoutError, match="changed after it was written") as raised:
        load_heldout(case.grader_dir, case.id)
    assert "sha256sum heldout.toml > heldout.sha256" in str(raised.value)
    (_folder(case_copy) / HASH_FILE).unlink()
    with pytest.raises(HeldoutError, match="no heldout.sha256 beside it"):
        load_heldout(case.grader_dir, case.id)
    (_folder(case_copy) / HASH_FILE).write_text("not a hash\n")
    with pytest.raises(HeldoutError, match="expected `sha256sum` output"):
        load_heldout(case.grader_dir, case.id)


def test_qualification_refuses_below_the_floors_and_reports_a_missing_set(case_copy: Path) -> None:
    text = (_folder(case_copy) / HELDOUT_FILE).read_text()
    # Correct statements the rubric's phrasings cannot read: recall 2/6 < 0.75.
    unreadable = "".join(
        f'\n[[statement]]\nid = "u{i}"\nexpect = "correct"\nstyle = "paraphrase"\nwithdrawn = false\n'
        f'text = "The constant is one below what the docs promise ({i})."\n'
        for i in range(2)
    )
    _rewrite(case_copy, text + unreadable)
    case = load_case(case_copy)
    result = Qualification(case=case.id)
    qualify_diagnosis(case, result)
    assert result.heldout is not None and result.heldout.classified.recall == pytest.approx(4 / 6)
    assert any("held-out recall 67% is below 75%" in p for p in result.diagnosis_problems)
    assert result.problems == [] and not result.rubric_admitted  # the rubric is refused, not the case
    assert result.to_json()["heldout"]["withdrawn_rejection"] == 1.0  # type: ignore[index]
    # Without a set: reported as such, not refused.
    (_folder(case_copy) / HELDOUT_FILE).unlink()
    result = Qualification(case=case.id)
    qualify_diagnosis(load_case(case_copy), result)
    assert result.heldout is None and result.diagnosis_problems == []
    assert summary_line(None).startswith("held-out statements: no held-out set")
    # A set changed after hashing refuses qualification (it does not crash it).
    _rewrite(case_copy, text, rehash=False)
    (_folder(case_copy) / HASH_FILE).write_text("0" * 64 + f"  {HELDOUT_FILE}\n")
    result = Qualification(case=case.id)
    qualify_diagnosis(load_case(case_copy), result)
    assert any("changed after it was written" in p for p in result.diagnosis_problems)


def test_the_command_prints_figures_without_training(capsys: pytest.CaptureFixture[str], case_copy: Path) -> None:
    assert main([str(ECHO_CASE)]) == 0
    printed = capsys.readouterr().out
    assert "precision 100%, recall 100%, withdrawn rejected 100% (2/2)" in printed
    assert "ANSWER" not in printed  # statement texts stay in the file
    assert main([str(ECHO_CASE), "--json"]) == 0
    figures = json.loads(capsys.readouterr().out)["TrainFailTest/Echo-v0"]
    assert figures["recall"] == 1.0 and figures["statements"] == 8
    (_folder(case_copy) / HELDOUT_FILE).unlink()
    assert main([str(case_copy)]) == 0 and "no held-out set" in capsys.readouterr().out
    _rewrite(case_copy, "[heldout]\n")
    assert main([str(case_copy)]) == 2 and "heldout.case" in capsys.readouterr().err


def test_which_statements_were_misjudged_reaches_an_auditor_only(
    capsys: pytest.CaptureFixture[str], case_copy: Path
) -> None:
    text = (_folder(case_copy) / HELDOUT_FILE).read_text()
    miss = '\n[[statement]]\nid = "u1"\nexpect = "correct"\nstyle = "plain"\nwithdrawn = false\ntext = "Off by one."\n'
    _rewrite(case_copy, text + miss)
    case = load_case(case_copy)
    result = Qualification(case=case.id)
    qualify_diagnosis(case, result)
    assert result.heldout is not None and result.heldout.classified.misjudged == ("u1 [plain] (expected correct)",)
    # what a rubric's author sees (qualification output, its JSON, the admission record) has counts only
    figures = result.to_json()["heldout"]
    assert isinstance(figures, dict) and "misjudged" not in figures and figures["false_negative"] == 1
    assert "u1" not in json.dumps(result.to_json())
    main([str(case_copy)])
    assert "u1" not in capsys.readouterr().out
    main([str(case_copy), "--json"])
    assert "u1" not in capsys.readouterr().out
    main([str(case_copy), "--show-misjudged"])
    assert "misjudged: u1 [plain] (expected correct)" in capsys.readouterr().out


def test_python_dash_m_runs() -> None:
    found = subprocess.run([sys.executable, "-m", "gym_trainfail.diagnosis.heldout", str(ECHO_CASE)],
                           capture_output=True, text=True, timeout=120, check=True)  # fmt: skip
    assert "TrainFailTest/Echo-v0: held-out statements (rubric judge) on 8" in found.stdout


def test_a_set_serves_later_versions_of_its_case_only() -> None:
    from gym_trainfail.diagnosis.heldout import _same_case

    assert _same_case("TrainFail/Echo-v0", "TrainFail/Echo-v0")
    assert _same_case("TrainFail/Echo-v0", "TrainFail/Echo-v1")  # a new grader, the same mechanism
    assert not _same_case("TrainFail/Echo-v1", "TrainFail/Echo-v0")
    assert not _same_case("TrainFail/Other-v0", "TrainFail/Echo-v1")
    assert not _same_case("TrainFail/Echo-vX", "TrainFail/Echo-v1")


def test_qualify_diagnosis_only_runs_no_training() -> None:
    found = subprocess.run([sys.executable, "-m", "gym_trainfail.cli", "qualify", str(ECHO_CASE), "--diagnosis-only"],
                           capture_output=True, text=True, timeout=120, check=True)  # fmt: skip
    assert "diagnosis rubric (rubric judge) on 7 fixtures: precision 100%, recall 100%" in found.stdout
    assert "held-out statements (rubric judge) on 8: precision 100%, recall 100%" in found.stdout
    assert "qualifying" not in found.stderr  # no scenario was run


# -- held-out schema v5: stance and mechanism labels, and the figures they give -------------------

V5_HEAD = '[heldout]\ncase = "TrainFailTest/Echo-v0"\nauthor = "test"\nwritten = "2026-12-01T16:10:00Z"\n'
MECHANISM = "ANSWER is 41 in report.py while the README documents 42."
V5 = [
    ("c1", "correct", "asserted", "right", MECHANISM),
    ("c2", "correct", "asserted", "right", "Most likely " + MECHANISM[0].lower() + MECHANISM[1:]),
    ("h1", "incorrect", "hypothesised", "right", "Hypothesis: " + MECHANISM),
    ("h2", "incorrect", "hypothesised", "right", "I suspect " + MECHANISM[0].lower() + MECHANISM[1:]),
    ("a1", "incorrect", "attributed", "right", f'Priya wrote: "{MECHANISM}" That is false.'),
    ("w1", "incorrect", "withdrawn", "right", MECHANISM + " Edit: scratch that."),
    ("d1", "incorrect", "denied", "right", "It is not true that " + MECHANISM[0].lower() + MECHANISM[1:]),
    ("x1", "incorrect", "asserted", "wrong", "The interpreter rounds 41.5 down."),
]  # fmt: skip


def _v5(rows: list[tuple[str, str, str, str, str]], extra: str = "") -> str:
    body = "".join(
        f'\n[[statement]]\nid = "{i}"\nexpect = "{e}"\nstance = "{s}"\nmechanism = "{m}"\nstyle = "s"\n'
        f'text = """{t}"""\n'
        for i, e, s, m, t in rows
    )
    return V5_HEAD + body + extra


def test_a_v5_set_gives_hypothesis_recall_and_rejection_per_stance(
    case_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _rewrite(case_copy, _v5(V5))
    case = load_case(case_copy)
    heldout = load_heldout(case.grader_dir, case.id)
    assert heldout is not None and case.rubric is not None
    assert [s.withdrawn for s in heldout.statements] == [s == "withdrawn" for _, _, s, _, _ in V5]  # derived
    check = check_heldout(heldout, case.rubric, RubricJudge())
    assert (check.classified.precision, check.classified.recall) == (1.0, 1.0)
    assert (check.hypotheses.statements, check.hypotheses.hits) == (2, 2) and check.hypothesis_false == 0
    assert {stance: (share.statements, share.hits) for stance, share in check.rejected} == {
        "withdrawn": (1, 1), "attributed": (1, 1), "denied": (1, 1)}  # fmt: skip
    assert check.problems() == []
    line = summary_line(check)
    assert "hypotheses credited 100% (2/2)" in line and "attributed 100% (1/1)" in line and "denied 100%" in line
    figures = check.to_json()
    assert figures["hypothesis_recall"] == 1.0 and figures["rejection"]["attributed"]["rate"] == 1.0  # type: ignore[index]
    assert main([str(case_copy), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)["TrainFailTest/Echo-v0"]
    assert printed["rejection"]["denied"]["rejected"] == 1 and "misjudged" not in printed


def test_v5_floors_refuse_a_rubric_that_misses_hypotheses_or_credits_refuted_claims(case_copy: Path) -> None:
    # the attack: statements the rubric judge credits though their labels say they count for nothing,
    # and a hypothesis it cannot read
    credited = [
        ("attrib-two", "incorrect", "attributed", "right", MECHANISM + " Priya agrees."),  # mislabelled: own claim
        ("hypo-three", "incorrect", "hypothesised", "right", "Hypothesis: the constant is off by one."),
    ]  # fmt: skip
    _rewrite(case_copy, _v5(V5 + credited))
    case = load_case(case_copy)
    result = Qualification(case=case.id)
    qualify_diagnosis(case, result)
    assert result.heldout is not None
    problems = " | ".join(result.diagnosis_problems)
    assert "held-out precision 67% is below 95%" in problems
    assert "held-out hypothesis recall 67% (2/3) is below 75%" in problems
    assert ("held-out withdrawn, attributed and denied statements rejected 75% (3/4) (withdrawn 1/1, attributed 1/2, "
            "denied 1/1), below 95%") in problems  # fmt: skip
    assert result.heldout.hypothesis_false == 1  # the attributed one, credited as a hypothesis too
    assert "attrib-two" not in json.dumps(result.to_json())  # which ones: never in what the author reads


def _refuted(n: int, stance: str) -> list[tuple[str, str, str, str, str]]:
    speech = {"attributed": 'Priya wrote: "{m}" That is false.', "withdrawn": "{m} Edit: scratch that.",
              "denied": "It is not true that {l}"}  # fmt: skip
    text = speech[stance].format(m=MECHANISM, l=MECHANISM[0].lower() + MECHANISM[1:])
    return [(f"{stance[0]}{i}", "incorrect", stance, "right", text) for i in range(n)]


# A mislabelled statement: the rubric judge credits it (it is the agent's own claim), so it counts as a refuted
# claim the reading credited.
OWN_CLAIM = ("own", "incorrect", "denied", "right", MECHANISM + " Priya agrees.")


def test_the_rejection_floor_counts_the_three_stances_together(case_copy: Path) -> None:
    # one credited denial among 22 refuted claims (95.5 %) passes, though the denied stance alone is at 50 %;
    # the summary still shows each stance
    # (40 correct statements keep precision over its floor with two wrong credits)
    correct = [(f"c{i}", "correct", "asserted", "right", MECHANISM) for i in range(40)]
    rows = [*correct, *V5[2:4], *_refuted(8, "withdrawn"), *_refuted(12, "attributed"), _refuted(1, "denied")[0],
            OWN_CLAIM]  # fmt: skip
    _rewrite(case_copy, _v5(rows + [V5[-1]]))
    case = load_case(case_copy)
    heldout = load_heldout(case.grader_dir, case.id)
    assert heldout is not None and case.rubric is not None
    check = check_heldout(heldout, case.rubric, RubricJudge())
    assert (check.rejection_all.statements, check.rejection_all.hits) == (22, 21)
    assert check.rejection("denied").rate == 0.5 and check.problems() == []
    assert "denied 50% (1/2) (together 95% (21/22))" in summary_line(check)
    assert check.to_json()["rejection_all"] == {"statements": 22, "rejected": 21, "rate": 21 / 22}
    # a second credited claim (21 of 23, 91 %) is refused, in whichever stance it is
    _rewrite(case_copy, _v5([*rows, ("own2", "incorrect", "attributed", "right", OWN_CLAIM[-1]), V5[-1]]))
    heldout = load_heldout(case.grader_dir, case.id)
    assert heldout is not None
    check = check_heldout(heldout, case.rubric, RubricJudge())
    assert (check.rejection_all.statements, check.rejection_all.hits) == (23, 21)
    assert check.problems() == [
        "held-out withdrawn, attributed and denied statements rejected 91% (21/23) (withdrawn 8/8, attributed 12/13, "
        "denied 1/2), below 95%"
    ]


def test_the_command_pools_every_set_it_reads(capsys: pytest.CaptureFixture[str], case_copy: Path) -> None:
    _rewrite(case_copy, _v5(V5))
    assert main([str(ECHO_CASE), str(case_copy)]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    # the echo set (4 correct, 2 withdrawn of 8) and the v5 one (2 correct, 2 hypotheses, one refuted claim per stance)
    assert last == ("2 sets together: precision 100% (6/6), recall 100% (6/6), hypotheses credited 100% (2/2), "
                    "rejected: withdrawn 100% (3/3), attributed 100% (1/1), denied 100% (1/1); 2 of 2 rubrics pass "
                    "their floors")  # fmt: skip
    _rewrite(case_copy, _v5([*V5, OWN_CLAIM]))
    assert main([str(ECHO_CASE), str(case_copy)]) == 1
    assert capsys.readouterr().out.strip().endswith("1 of 2 rubrics pass their floors")


def test_v5_misjudged_hypotheses_reach_an_auditor_only(case_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _rewrite(case_copy, _v5([*V5, ("h3", "incorrect", "hypothesised", "right", "Hypothesis: off by one.")]))
    main([str(case_copy)])
    assert "h3" not in capsys.readouterr().out
    main([str(case_copy), "--show-misjudged"])
    assert "misjudged: h3 [s] (expected credited as a hypothesis)" in capsys.readouterr().out


BROKEN_V5 = [
    ("stance without mechanism", 'stance = "hypothesised"\n', "", "give both or neither"),
    ("mechanism without stance", "", 'mechanism = "right"\n', "give both or neither"),
    ("unknown stance", 'stance = "certain"\n', 'mechanism = "right"\n', "stance: expected one of asserted"),
    ("unknown mechanism", 'stance = "denied"\n', 'mechanism = "half"\n', "mechanism: expected 'right' or 'wrong'"),
    ("correct but hypothesised", 'stance = "hypothesised"\n', 'mechanism = "right"\n', "correct exactly when"),
]  # fmt: skip


@pytest.mark.parametrize(("label", "stance", "mechanism", "message"), BROKEN_V5, ids=[b[0] for b in BROKEN_V5])
def test_a_malformed_v5_statement_is_refused_with_the_reason(
    case_copy: Path, label: str, stance: str, mechanism: str, message: str
) -> None:
    row = f'\n[[statement]]\nid = "z1"\nexpect = "correct"\n{stance}{mechanism}style = "s"\nwithdrawn = false\n'
    row += 'text = "x"\n'
    _rewrite(case_copy, _v5(V5, row))
    case = load_case(case_copy)
    with pytest.raises(HeldoutError, match=message) as raised:
        load_heldout(case.grader_dir, case.id)
    assert "statement[8]" in str(raised.value)


def test_v5_labels_must_agree_with_expect_and_withdrawn(case_copy: Path) -> None:
    for row, message in [
        (("z1", "incorrect", "asserted", "right", "x"), "correct exactly when"),
        (("z1", "correct", "asserted", "wrong", "x"), "correct exactly when"),
    ]:
        _rewrite(case_copy, _v5([*V5, row]))
        with pytest.raises(HeldoutError, match=message):
            load_heldout(load_case(case_copy).grader_dir, "TrainFailTest/Echo-v0")
    for stance, withdrawn in (("denied", "true"), ("withdrawn", "false")):
        extra = f'\n[[statement]]\nid = "z1"\nexpect = "incorrect"\nstance = "{stance}"\nmechanism = "right"\n' \
                f'withdrawn = {withdrawn}\nstyle = "s"\ntext = "x"\n'  # fmt: skip
        _rewrite(case_copy, _v5(V5, extra))
        with pytest.raises(HeldoutError, match="withdrawn is true exactly for stance 'withdrawn'"):
            load_heldout(load_case(case_copy).grader_dir, "TrainFailTest/Echo-v0")
    # without a stance, withdrawn stays required (sets written before v5)
    _rewrite(case_copy, V5_HEAD + '\n[[statement]]\nid = "z1"\nexpect = "correct"\nstyle = "s"\ntext = "x"\n')
    with pytest.raises(HeldoutError, match="missing withdrawn"):
        load_heldout(load_case(case_copy).grader_dir, "TrainFailTest/Echo-v0")
