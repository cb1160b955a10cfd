"""The learned stance model: trained on the rubrics' labelled statements, current with them, deterministic,
bounded, and used by the rubric judge only to take credit away."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gym_trainfail.cases import load_case
from gym_trainfail.diagnosis import stance_model
from gym_trainfail.diagnosis.judges import RubricJudge, _rejected_later, _vetoable
from gym_trainfail.diagnosis.reading import Assertion, cued
from gym_trainfail.diagnosis.rubric import Rubric

from .conftest import ECHO_CASE

ENVS = Path(__file__).resolve().parents[1] / "envs"
CLAIM = "the planner misses the head: three buffers while the checkpoint inputs stay live"


def _rubric(folder: Path) -> Rubric:
    rubric = load_case(folder).rubric
    assert rubric is not None
    return rubric


def _judges() -> tuple[RubricJudge, RubricJudge]:
    return RubricJudge(vetoes=False), RubricJudge()


def test_the_committed_model_is_trained_on_the_current_fixtures() -> None:
    texts, labels = stance_model.training_set(ENVS)
    assert len(texts) > 10_000 and set(labels) == set(stance_model.STANCES)
    assert stance_model.load().trained_on == stance_model.digest(texts, labels), (
        "retrain: python -m gym_trainfail.diagnosis.stance_model"
    )


def test_check_says_when_the_model_is_stale(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # a fixture set other than the one the model was trained on (one case's rubric) makes it stale
    (tmp_path / "envs").mkdir()
    (tmp_path / "envs" / "scaler_inf_sync").symlink_to(ENVS / "scaler_inf_sync")
    assert stance_model.main(["--check", "--envs", str(tmp_path / "envs")]) == 1
    assert "stale" in capsys.readouterr().err


MECHANISM = (
    "the planner prices only the static peak and never the head's target backward, which holds three dense "
    "padded-vocab buffers while the checkpointed inputs stay live"
)


def test_a_claim_the_rules_credit_but_the_model_reads_as_someone_elses_is_not_credited() -> None:
    rubric = _rubric(ENVS / "admission_backward_oom")
    rules, judge = _judges()
    statement = "Our old design doc argued that " + MECHANISM + ". I haven't verified that myself."
    assert rules.judge(statement, rubric).correct is True
    verdict = judge.judge(statement, rubric)
    assert (verdict.correct, verdict.hypothesis, verdict.stance) == (False, False, "attributed")
    assert "stance model reads it as attributed" in verdict.note
    # the same claim as the agent's own, plainly, keeps its credit: a plain statement is left to the rules
    assert judge.judge(MECHANISM[0].upper() + MECHANISM[1:] + ".", rubric).correct is True


def test_an_endorsed_report_keeps_its_credit() -> None:
    rubric = _rubric(ENVS / "admission_backward_oom")
    rules, judge = _judges()
    statement = "Our old design doc argued that " + MECHANISM + ". I confirmed it with the meter, and I agree."
    assert rules.judge(statement, rubric).correct is judge.judge(statement, rubric).correct is True


def test_the_model_only_takes_credit_away() -> None:
    """Over a rubric's statements, the judge with the model never credits what the rules alone do not, as a
    diagnosis or as a hypothesis; and the asserted statements the rules credit keep their credit."""
    rubric = _rubric(ENVS / "shard_local_clip_norm")
    rules, judge = _judges()
    for fixture in rubric.fixtures[:400]:
        alone, both = rules.judge(fixture.text, rubric), judge.judge(fixture.text, rubric)
        assert both.correct <= alone.correct and both.hypothesis <= alone.hypothesis  # type: ignore[operator]
        if fixture.correct:
            assert both.correct is alone.correct is True


def test_negation_shaped_assertions_are_left_to_the_rules() -> None:
    rubric = load_case(ENVS / "admission_backward_oom").rubric
    assert rubric is not None
    statement = (
        "It is not a leak and not fragmentation: the planner only prices the static peak and never the head's "
        "target backward, which holds three dense padded-vocab buffers while the checkpointed inputs stay live."
    )
    assert stance_model.load().veto(statement) is None


RESUME_DENIED = (
    "It is not the case that the resume skip is counted in optimizer steps rather than micro-batches. The resumed "
    "run does not train on micro-batches it already saw because skip_first_batches is missing a factor of "
    "gradient_accumulation_steps."
)


def test_a_denial_the_rules_credit_but_the_model_reads_as_denied_is_not_credited() -> None:
    """The rules read the second sentence's cause ("because skip_first_batches is missing …") as asserted; the
    model reads the whole statement as the denial it is."""
    rubric = _rubric(ENVS / "resume_skip_batches")
    rules, judge = _judges()
    assert rules.judge(RESUME_DENIED, rubric).correct is True
    verdict = judge.judge(RESUME_DENIED, rubric)
    assert (verdict.correct, verdict.hypothesis, verdict.stance) == (False, False, "denied")
    assert "stance model reads it as denied" in verdict.note


def test_a_denial_needs_a_negating_word() -> None:
    """The model may only read a statement as denied where the statement negates something: it learned denial
    from negations, and a statement with none is left to the rules whatever the model says."""
    rubric = _rubric(ENVS / "resume_skip_batches")
    assert _vetoable("denied", 0.9, RESUME_DENIED, rubric)
    plain = "The resume skip counts optimizer steps; the loader yields micro-batches."
    assert not _vetoable("denied", 0.9, plain, rubric)
    assert _vetoable("attributed", 0.8, "Priya says the resume skip counts optimizer steps.", rubric)
    assert not _vetoable("attributed", 0.8, "The resume skip counts optimizer steps.", rubric)


RESUME_CANDIDATE = (
    "Candidate: the resume skips steps_trained_in_current_epoch micro-batches where it should skip that times "
    "gradient_accumulation_steps, so the resumed run repeats micro-batches it already used."
)


def test_a_hypothesis_the_model_reads_as_withdrawn_loses_its_hypothesis_credit() -> None:
    """The rules read a candidate as put forward whatever follows it here; the model reads the null result and the
    refutation after it as its withdrawal. A candidate followed by a plan to check keeps its credit."""
    withdrawn = (
        RESUME_CANDIDATE + "\n\nChecked it: a straight run and a resumed one at GA=4 came out identical. So it isn't "
        "the skip count; back to the optimizer reload."
    )
    planned = RESUME_CANDIDATE + " I'll log the sample indices to check."
    _hypothesis_taken_back("resume_skip_batches", withdrawn, "withdrawn", planned)


def _hypothesis_taken_back(folder: str, statement: str, stance: str, planned: str) -> None:
    """The rules credit ``statement`` as a pre-run hypothesis and the whole judge takes that credit away, reading it
    in ``stance``; the same hypothesis followed by a plan to check (``planned``) keeps its credit."""
    rubric = _rubric(ENVS / folder)
    rules, judge = _judges()
    alone = rules.judge(statement, rubric)
    assert (alone.correct, alone.hypothesis) == (False, True)
    verdict = judge.judge(statement, rubric)
    assert (verdict.correct, verdict.hypothesis, verdict.stance) == (False, False, stance)
    assert f"stance model reads it as {stance}" in verdict.note
    kept = judge.judge(planned, rubric)
    assert (kept.correct, kept.hypothesis) == (False, True)


BYPASS_PUT = (
    "the consistency term is computed on model.module, bypassing the DDP wrapper, so its gradients are never "
    "all-reduced across ranks and the replicas drift apart."
)


def test_a_hypothesis_denied_in_a_later_sentence_loses_its_hypothesis_credit() -> None:
    """Round 26: the rules read "I looked into the idea that X" as X put forward, whatever the writer says of it
    next; where they also read a concept of X denied in a later sentence and the model reads the statement as a
    denial, it is one. Neither alone: a plan to check keeps the credit, and so does a hypothesis whose later
    sentence the rules read as denied but the model does not (a phrasing's own negation)."""
    denied = (
        "I looked into the idea that " + BYPASS_PUT + " They are all-reduced: both backward passes are synchronised, "
        "I checked the hooks. Whatever makes the replicas drift, it is not a missing all-reduce on the consistency "
        "term."
    )
    planned = "My hypothesis: " + BYPASS_PUT + " I will dump per-rank gradients to check."
    _hypothesis_taken_back("ddp_bypass_drift", denied, "denied", planned)
    # the rules' half: a denial in a later sentence, not in the same one, and not of a concept also asserted
    put, later = Assertion(0, 10), Assertion(30, 40)
    assert _rejected_later("x" * 10 + ". Checked: " + "y" * 40, {"c": {"hypothesised": put, "denied": later}}, ["c"])
    assert not _rejected_later("x" * 10 + ", so that " + "y" * 40, {"c": {"hypothesised": put, "denied": later}}, ["c"])
    both = {"asserted": put, "hypothesised": put, "denied": later}
    assert not _rejected_later("x" * 10 + ". Checked: " + "y" * 40, {"c": both}, ["c"])


TOKEN_TAKEN_BACK = (
    "Conclusion: compute_loss normalises each micro-batch by its own response-token count, so accumulation and DDP "
    "average per-micro-batch means and micro-batches with few response tokens weigh too much.\n\nPS: the packer "
    "equalises response tokens per micro-batch. Taking the conclusion above back for now."
)


def test_a_statement_without_a_cue_loses_its_credit_only_where_the_model_is_surer_and_knows_the_case() -> None:
    """No cue the rules know ("Taking the conclusion above back for now"): the model may veto it from
    VETO_UNCUED_FROM, on a case whose words it learned (its rubric's statements); on the echo test case, which it never
    saw, a plain statement it reads as a report keeps the rules' credit (test below)."""
    rubric = _rubric(ENVS / "ddp_token_average")
    assert stance_model.knows(rubric)
    rules, judge = _judges()
    assert not cued(TOKEN_TAKEN_BACK) and rules.judge(TOKEN_TAKEN_BACK, rubric).correct is True
    veto = stance_model.load().veto(TOKEN_TAKEN_BACK)
    assert veto is not None and veto[0] == "withdrawn" and veto[1] >= stance_model.VETO_UNCUED_FROM
    verdict = judge.judge(TOKEN_TAKEN_BACK, rubric)
    assert (verdict.correct, verdict.stance) == (False, "withdrawn")
    # below that, a statement without a cue is left to the rules
    assert not _vetoable("withdrawn", stance_model.VETO_UNCUED_FROM - 0.01, TOKEN_TAKEN_BACK, rubric)
    echo = _rubric(ECHO_CASE)
    assert not stance_model.knows(echo)
    assert not _vetoable("withdrawn", 0.99, TOKEN_TAKEN_BACK, echo)


def test_training_is_deterministic_and_learns_the_stances(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stance_model, "DIM", 1 << 10)
    texts = [f"the {w} is wrong" for w in ("scaler", "sampler", "planner")] + [
        f"{who} says the {w} is wrong" for who in ("Priya", "the ticket", "a reviewer") for w in ("scaler", "sampler")
    ]
    labels = ["asserted"] * 3 + ["attributed"] * 6
    first, second = stance_model.train(texts, labels), stance_model.train(texts, labels)
    assert np.array_equal(first.weights, second.weights) and first.trained_on == second.trained_on
    assert max(first.probabilities("a reviewer says the planner is wrong").items(), key=lambda kv: kv[1])[0] == (
        "attributed"
    )


def test_reading_is_bounded_on_long_input() -> None:
    long = "the planner misses the head " * 100_000
    assert len(stance_model.features(long)) == len(stance_model.features(long[: stance_model.MAX_CHARS]))


def test_a_saved_model_loads_as_it_was(tmp_path: Path) -> None:
    model = stance_model.load()
    path = tmp_path / "model.npz"
    model.save(path)
    again = stance_model.load.__wrapped__(path)
    assert again.trained_on == model.trained_on
    text = "I suspect " + CLAIM
    assert again.probabilities(text) == pytest.approx(model.probabilities(text), abs=1e-3)


def test_a_plain_statement_of_a_case_the_model_never_saw_is_left_to_the_rules() -> None:
    """The model reads "the README documents 42" as a report (its words for someone else's claim); a statement with
    no sign of one that the rules know (reading.CUES) keeps the rules' verdict."""
    rubric = _rubric(ECHO_CASE)
    statement = "ANSWER = 41 in report.py; the README documents 42."
    assert stance_model.load().veto(statement) is not None and not cued(statement)
    assert RubricJudge().judge(statement, rubric).correct is True


def test_the_rules_alone_are_another_judge_for_the_verdict_cache() -> None:
    assert RubricJudge().identity == RubricJudge.identity == "rubric"
    assert RubricJudge(vetoes=False).identity != RubricJudge().identity
