"""The deterministic judge's reading of agent prose: a phrasing's own negation kept, incidental
negations and denials honoured, commas and dashes as clause breaks, later withdrawals, and
matching through markup and code identifiers, with evidence quoted from the statement itself."""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import re
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path

import pytest

from gym_trainfail.cases import load_case
from gym_trainfail.diagnosis import reading
from gym_trainfail.diagnosis.fixtures import FixtureCheck, check_fixtures
from gym_trainfail.diagnosis.judges import RubricJudge, _rejected_later
from gym_trainfail.diagnosis.reading import ENDORSEMENT, Assertion, endorses, negations, views
from gym_trainfail.diagnosis.rubric import Concept, Fixture, Rubric


def _concept(name: str, *patterns: str) -> Concept:
    return Concept(name, tuple(re.compile(p, re.IGNORECASE) for p in patterns))


#: A small rubric in the shape of the memory case: phrasings written with their own negation.
RUBRIC = Rubric(
    path=Path("/nonexistent/grader/diagnosis/rubric.toml"),
    digest="test",
    summary="the planner misses the head backward, which holds three chunk buffers over the padded vocab",
    concepts=(
        _concept("head unpriced", r"\bplanner\b[^.;]{0,40}?\b(?:doesn't|does\s+not)\s+account\s+for\b.{0,30}?\bhead",
                 r"\bhead(?:'s)?\s+backward\s+is\s+not\s+priced", r"\bplanner\b[^.;]{0,40}?\bmisses\b[^.;]{0,30}?head"),
        _concept("three buffers", r"\b3\s+dense\s+chunk_rows\s+x\s+padded_vocab\b", r"\bthree\s+buffers\b",
                 r"\bpadded\s+vocab\s+buffers\b"),
        _concept("retention", r"\bnever\s+(?:freed|released)\b[^.;]{0,30}?\bcheckpoint",
                 r"\bcheckpoint\w*\s+inputs\s+stay\s+live"),
    ),
    culprits=(),
    wrong=(_concept("leak", r"\bmemory\s+leak\b"), _concept("margin", r"\bsafety\s+factor\b[^.;]{0,20}?too\s+small")),
    symptom=None,
    steps_patterns=(),
    fixtures=(Fixture("x", True, ""), Fixture("y", False, "")),
    study=None,
)  # fmt: skip
CORRECT = "The planner doesn't account for the head: three buffers, while the checkpointed inputs stay live."


#: The rules alone: these tests pin the reader's rules on toy rubrics. The learned stance model, which takes credit away
#: on top of them, is tested in tests/test_stance_model.py, and with them over every real rubric's statements below.
RULES = RubricJudge(vetoes=False)


def _judge(statement: str) -> bool | None:
    return RULES.judge(statement, RUBRIC).correct


def _credited(statement: str) -> tuple[bool | None, bool]:
    """Whether :data:`RUBRIC` credits ``statement`` as a diagnosis, and as a pre-run hypothesis."""
    verdict = RULES.judge(statement, RUBRIC)
    return verdict.correct, verdict.hypothesis


@pytest.mark.parametrize(
    "statement",
    [
        CORRECT,
        "The head's backward is not priced; it holds three buffers and the checkpoint inputs stay live.",
        # brackets and a code identifier: the markup-free view matches the phrasing
        "The planner misses the head, which materialises 3 dense [chunk_rows x padded_vocab] buffers; "
        "checkpoint inputs stay live.",
        # `padded_vocab` in backticks: the identifier-split view matches "padded vocab buffers"
        "The planner misses the head: `padded_vocab` buffers, and the checkpoint inputs stay live.",
        # a phrasing that needs its negation ("never freed") is not cancelled by it
        "The planner misses the head (three buffers); the activations are never freed before the checkpoint "
        "inputs stay live.",
        # one "not" must not cancel the next clause (comma and dash are clause breaks)
        "It is not a memory leak, the planner misses the head — three buffers — and checkpoint inputs stay live.",
        # an earlier wrong belief reported, then the mechanism
        "My first guess was a memory leak, but the planner misses the head: three buffers; checkpoint inputs stay "
        "live.",
        # a retracted wrong guess, then the mechanism
        "I first blamed a memory leak. I was wrong. The planner misses the head: three buffers, and the "
        "checkpoint inputs stay live.",
        # a refutation of a claim in its own sentence leaves the earlier mechanism standing
        CORRECT + " I also checked the allocator settings, they look right, so that's not it.",
        # rejected alternatives listed before the mechanism
        "Candidates:\n1. a memory leak - rejected\n2. the planner misses the head, three buffers, checkpoint inputs "
        "stay live - confirmed",
        # a line break inside a sentence is not a conditional's sentence start
        "The planner misses the head: three buffers\nwere live and the checkpoint inputs stay live.",
        # a withdrawal aimed at a wrong explanation leaves the mechanism standing
        "The planner misses the head: three buffers, and the checkpoint inputs stay live. I was wrong earlier "
        "to suspect a memory leak.",
        # a disagreement aimed at a wrong explanation leaves the mechanism standing
        "A teammate blames a memory leak; I disagree with the memory leak theory. " + CORRECT,
        # "If so, …" draws a consequence of the agent's own (hedged but committed) claim just before: not a
        # supposition ("I suspect …" only puts it forward: tests/test_diagnosis_stances.py)
        "Most likely the planner misses the head. If so, three buffers are held while checkpoint inputs stay live, "
        "which would explain the OOM.",
        # a refutation that is not the whole sentence only takes back its own sentence
        "I looked at a memory leak; it was ruled out. " + CORRECT,
        # a negated accounting verb omits its object from the account; the object itself is asserted
        "The planner misses the head: three buffers. Its price doesn't account for the fact that checkpoint inputs "
        "stay live.",
        # a question answered "yes" at once asserts; a "why" question introduces the answer
        "Is it that the planner misses the head? Yes: three buffers, while checkpoint inputs stay live.",
        "Why the OOM? The planner misses the head: three buffers, and checkpoint inputs stay live.",
        # "ignore that" after a side remark dismisses the remark, not the diagnosis before it
        CORRECT + " The CSV logger also warns about fp16, ignore that.",
        # a subordinate clause ("since", "because", "while") or "and still" is out of a negation's reach
        "The planner misses the head: three buffers. The price was never raised since checkpoint inputs stay live "
        "in the layer term.",
        "The planner misses the head, three buffers; the old cache is not refreshed and still checkpoint inputs stay "
        "live.",
        # a relative "which isn't the case" denies its own clause, it withdraws nothing before it
        CORRECT + " The budget would hold only if the head were free, which isn't the case.",
        # an open question in a later clause does not reach back
        CORRECT + " Next I will check whether the allocator rounds up.",
        # a "Ruled out:" list rejects the wrong explanations it names; the cause follows
        "Ruled out: a memory leak (memory returns to baseline), the allocator. What remains: " + CORRECT,
        # a candidate marked confirmed is asserted; a conclusion after a candidate list stands
        "Candidates: (a) a memory leak, (b) the planner misses the head with three buffers while checkpoint "
        "inputs stay live (confirmed by the trace).",
        "Candidates: a memory leak, fragmentation. " + CORRECT,
        # "Not that it matters" is an aside; a contrast after "Not that X" starts the agent's own claim
        "Not that it matters, but " + CORRECT,
        "Not that a memory leak is involved; " + CORRECT,
        # a refuted hypothesis about a wrong explanation leaves the mechanism after it standing
        "The hypothesis that a memory leak causes it is refuted by the trace. " + CORRECT,
        # "no" inside a sentence and a lowercase "retracted" in a claim are not withdrawals
        CORRECT + " There is no leak in the meter.",
        CORRECT + " The old patch was retracted upstream, which is unrelated.",
        # a root-cause line is not a list of candidates
        "Root causes: " + CORRECT,
        # "and" before a new subject ("each", "all", "we") ends the negated clause
        "The allocator never frees early and all checkpoint inputs stay live; the planner misses the head: three "
        "buffers.",
    ],
)
def test_correct_statements_in_natural_wordings(statement: str) -> None:
    assert _judge(statement) is True


@pytest.mark.parametrize(
    "statement",
    [
        # negation before the match in its clause
        "It is not true that the planner misses the head; three buffers; checkpoint inputs stay live.",
        # an incidental negation inside the match ("does not" in a gap the phrasing does not need)
        "The planner never misses the head. Three buffers. The checkpoint inputs stay live.",
        # the claim needs the words of a negated clause (a negation ending at a comma still governs them)
        "The planner misses the head, three buffers, but the checkpoint inputs don't stay live, so it fits.",
        # a denial after the claim
        "The planner misses the head, three buffers and checkpoint inputs stay live, which is not the cause.",
        # withdrawals in the forms agents write
        CORRECT + " Edit: scratch that, the probe contradicts it.",
        CORRECT + " Actually, I was wrong.",
        CORRECT + " On reflection, that's not it.",
        CORRECT + " Update: the probe contradicts this.",
        CORRECT + " That is not it.",
        CORRECT + " No wait, I misread the trace.",
        # an earlier belief reported, then dropped
        "Correction: earlier I said the planner misses the head, three buffers, checkpoint inputs stay live - it is "
        "priced after all.",
        f'A teammate\'s note claims: "{CORRECT}" It is false.',
        CORRECT + " Never mind, the peak is in the forward.",
        # a known wrong explanation asserted beside the mechanism
        CORRECT + " The root cause is a memory leak.",
        # only two of three concepts
        "The planner misses the head; three buffers.",
        # marked false in its own list item or sentence
        "The planner misses the head, three buffers, checkpoint inputs stay live (ruled out: the peak is elsewhere).",
        "Candidates:\n1. the planner misses the head, three buffers, checkpoint inputs stay live - rejected\n"
        "2. a memory leak - confirmed",
        "The planner misses the head with three buffers while checkpoint inputs stay live would explain it, but only "
        "if it were unpriced, and it is priced.",
        # someone else's claim, rejected in the forms agents write
        f"Ana suggested \"{CORRECT}\" I don't think that's it: the head reuses the forward buffer.",
        f"A teammate claims {CORRECT} I disagree: the peak is in the forward.",
        f'The issue comment claimed: "{CORRECT}". I checked and disagree; the caches agree.',
        f'The reviewer wrote: "{CORRECT}" I checked the code and that\'s no longer true.',
        # a withdrawal sentence that is only a verdict, after a preamble
        CORRECT + "\n\nUpdate: ruled out. The profiler shows otherwise.",
        CORRECT + " The measured peak equals the price, so none of this explains the OOM.",
        CORRECT + " The probe shows the planner is exact, so these bullets don't explain it.",
        CORRECT + " **Update:** ignore the list above, it's wrong: the peak matches.",
        CORRECT + " nvm, that's wrong, ignore.",
        CORRECT + " That can't apply here, though: the head is fused.",
        # a negation before a verb that is not an accounting verb still negates what follows
        "The planner misses the head: three buffers. The profiler doesn't show that checkpoint inputs stay live.",
        "The planner misses the head: three buffers. None of the checkpoint inputs stay live.",
        # "neither … nor" negates: the planner misses nothing
        "The planner misses neither the forward nor the head; three buffers; checkpoint inputs stay live.",
        # yes/no questions ask, they do not assert (also with "Could it be that", a leading "So")
        "Could it be that the planner misses the head, with three buffers while checkpoint inputs stay live?",
        "So is it that the planner misses the head, holding three buffers while checkpoint inputs stay live?",
        "Is it that the planner misses the head, with three buffers while checkpoint inputs stay live? No, it prices "
        "it.",
        # "ignore that" at the start of its sentence takes back what came before
        CORRECT + " Ignore that, the trace was from another job.",
        # "not because" keeps the reason under the negation
        "The planner misses the head: three buffers. The OOM is not because checkpoint inputs stay live.",
        # someone else's claim, then a report of a check that refutes it
        f"The design doc says {CORRECT} We measured it and that is not what happens.",
        f"The issue says {CORRECT} I looked and that isn't true in our fork.",
        f"The upstream thread says {CORRECT} I tested with our versions and that's no longer true.",
        # a report that contradicts "it" takes back the claim before it
        f"My teammate's theory: {CORRECT} The allocator trace contradicts it: the peak is in the forward.",
        f"Per the design review, {CORRECT} The measured norms contradict this.",
        # a verdict after an explicit preamble (also numbered, or a bare "no"), a sentence-initial "Retracted"
        CORRECT + " Edit: wrong, the head frees each buffer first.",
        CORRECT + "\n\nEDIT 2: wrong. The peaks agree exactly.",
        CORRECT + " Actually no. That's not what's happening here.",
        CORRECT + " Retracted after rerunning the probe.",
        "- the planner misses the head\n- three buffers\n- checkpoint inputs stay live Retracted after the rerun.",
        # one option in a list of candidates (inline, as list items, or a hedged list of alternatives)
        "Candidates, none confirmed yet: (a) a leak, (b) the planner misses the head with three buffers while "
        "checkpoint inputs stay live, (c) fragmentation. Maybe (b)?",
        "Possible causes:\n- fragmentation\n- the planner misses the head with three buffers while checkpoint inputs "
        "stay live\n- a bad meter",
        "Could be fragmentation, or the planner misses the head with three buffers while checkpoint inputs stay live. "
        "Not sure which yet.",
        # a conclusion taken back ("or so I thought"), a hypothesis refuted, someone else's possible view
        f"I had concluded that {CORRECT[:-1]} - or so I thought, until the control run failed the same way.",
        f"The hypothesis that {CORRECT[:-1]} is refuted by the probe.",
        f"Someone might say {CORRECT[:-1]}. That would be a fair guess, but it isn't what this code does.",
        f"A teammate said {CORRECT} That would be a fair guess, but it isn't what this code does.",
        # a floated list where another item is picked; a doubted question; a belief that only looked so
        f"Three explanations were floated: (1) {CORRECT[:-1]}; (2) a race; (3) bad data. The evidence points to (3).",
        f"Is it that {CORRECT[:-1]}? I doubt it.",
        f"Initially it looked as if {CORRECT[:-1]}. The probe shows otherwise.",
        # a sentence that opens by denying all of it
        f"Not that {CORRECT[:-1]}. We tested it directly.",
        # clauses that open with "whether" are open questions
        "Open questions: whether the planner misses the head, whether three buffers are held, and whether "
        "checkpoint inputs stay live.",
        # only supposed, or still to be checked
        "If the planner missed the head, three buffers and live checkpoint inputs would explain it.",
        # inverted and "in principle" conditionals
        "Were it so that the planner misses the head, three buffers while checkpoint inputs stay live would show in "
        "the trace. They do not.",
        "In principle the planner misses the head, and three buffers while checkpoint inputs stay live could then "
        "overflow the budget.",
        # "If so" after a question or a supposition is still a supposition
        "Is the OOM from the head? If so, the planner misses the head with three buffers while checkpoint inputs "
        "stay live, which would explain it.",
        "If the head were large, it would matter. If so, the planner misses the head with three buffers while "
        "checkpoint inputs stay live, which would explain it.",
        "Next I'll check whether the planner misses the head; three buffers; checkpoint inputs stay live.",
    ],
)
def test_statements_that_are_not_a_diagnosis(statement: str) -> None:
    assert _judge(statement) is False


def test_evidence_is_quoted_from_the_statement_per_concept() -> None:
    statement = (
        "The planner misses the head, holding 3 dense [chunk_rows x padded_vocab] bf16 buffers; checkpoint inputs "
        "stay live."
    )
    verdict = RULES.judge(statement, RUBRIC)
    assert verdict.correct is True and set(verdict.concepts) == {"head unpriced", "three buffers", "retention"}
    quotes = dict(verdict.evidence)
    assert all(quote in statement for quote in quotes.values())
    assert quotes["three buffers"] == "3 dense [chunk_rows x padded_vocab"  # spans the bracket, as written


def test_withdrawn_flag_and_a_later_restatement() -> None:
    withdrawn = RULES.judge(CORRECT + " Scratch that.", RUBRIC)
    assert (withdrawn.correct, withdrawn.withdrawn, withdrawn.concepts) == (False, True, ())
    restated = RULES.judge(CORRECT + " Scratch that. " + CORRECT, RUBRIC)
    assert restated.correct is True


def test_an_open_question_reaches_into_a_sentence_level_phrasing() -> None:
    """A phrasing that starts at the sentence start ("Plan: confirm whether …") is read with its
    clause's opening words; an open question in a later clause does not cancel it."""
    sentence = dataclasses.replace(
        RUBRIC, concepts=(_concept("sentence", r"(?:^|(?<=[.!?]\s))(?=[^.!?\n]{0,200}?\bplanner\b)[^.!?\n]{1,200}"),)
    )
    judged = {text: RULES.judge(text, sentence).correct for text in (
        "Plan: confirm whether the planner misses the head.",
        "Next step: verify if the planner misses the head.",
        "Plan: the planner misses the head.",
        "The planner misses the head; next I check whether the allocator rounds.",
    )}  # fmt: skip
    assert list(judged.values()) == [False, False, True, True]


def test_neither_nor_is_one_negation() -> None:
    assert [m.group(0) for m in negations("prices neither retention nor the head")] == ["neither"]
    # attack: a "nor" without "neither" still negates
    assert [m.group(0) for m in negations("it is not the forward, nor the head")] == ["not", "nor"]


def test_views_keep_offsets_into_the_statement() -> None:
    statement = "x = `fc1.weight`  has [no]\n\n tag"
    for view in views(statement):
        assert len(view.origin) == len(view.text)
        for i, c in enumerate(view.text):
            if c.strip() and c not in "._":
                assert statement[view.origin[i]] == c
    assert any("fc1 weight" in v.text for v in views(statement))


ENVS = Path(__file__).resolve().parents[1] / "envs"
RUBRIC_FOLDERS = sorted(p.parent.parent.parent.name for p in ENVS.glob("*/grader/diagnosis/rubric.toml"))


def _check_rubric(folder: str, home: str) -> tuple[int, FixtureCheck, set[str | None]]:
    """One rubric's fixtures judged afresh (a worker process: its own, empty verdict cache)."""
    os.environ["TRAINFAIL_HOME"] = home
    rubric = load_case(ENVS / folder).rubric
    assert rubric is not None
    return len(rubric.fixtures), check_fixtures(rubric, RubricJudge()), {f.stance for f in rubric.fixtures}


@pytest.fixture(scope="module")
def rubric_checks(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Future[tuple[int, FixtureCheck, set[str | None]]]]]:
    """Every selected rubric's fixture check, run on all the machine's cores at once (each rubric takes tens
    of seconds of pure-Python reading; the suite otherwise leaves all cores but one idle): each test waits for
    its own rubric only."""
    name = "test_each_rubric_classifies_its_development_statements"
    selected = [
        item.callspec.params["folder"]
        for item in request.session.items
        if getattr(item, "originalname", None) == name and hasattr(item, "callspec")
    ]
    spawn = multiprocessing.get_context("spawn")  # no fork of a process that may hold other tests' threads
    with ProcessPoolExecutor(max_workers=max(1, min(len(selected), os.cpu_count() or 1)), mp_context=spawn) as pool:
        yield {
            folder: pool.submit(_check_rubric, folder, str(tmp_path_factory.mktemp(f"home-{folder}")))
            for folder in selected
        }


@pytest.mark.parametrize("folder", RUBRIC_FOLDERS)
def test_each_rubric_classifies_its_development_statements(
    folder: str, rubric_checks: dict[str, Future[tuple[int, FixtureCheck, set[str | None]]]]
) -> None:
    """The rubrics' fixtures (author statements, the development batches and the released held-out
    sets, incl. negation-shaped true statements, withdrawals and, labelled with their stance, hypotheses,
    attributions and denials) all judged as written, by both readings; held-out sets are not read here."""
    count, check, stances = rubric_checks[folder].result()
    assert count >= 80
    assert check.misjudged == () and check.precision == check.recall == 1.0
    assert check.hypothesis_recall == 1.0 and check.hypothesis_false == 0
    assert {"hypothesised", "withdrawn", "attributed", "denied"} <= stances, "every rubric has stance-labelled batches"


@pytest.mark.parametrize(
    ("statement", "expected"),
    [
        # someone else's claim quoted and then rejected ("I don't agree", "that's not right") is not asserted
        ('Someone on the team said "the planner misses the head: three buffers, and checkpoint inputs stay '
         'live." I don\'t agree; the trace peaks in the layers.', False),
        ('A colleague claimed: "the planner misses the head, three buffers, checkpoint inputs stay live." I looked '
         "and that's not right.", False),
        # a teammate's claim reported at the opening of a sentence is theirs, even with no rejection after it
        ("A teammate thinks the planner misses the head: three buffers while checkpoint inputs stay live.", False),
        ("The on-call engineer wrote that the planner misses the head: three buffers, checkpoint inputs stay live.",
         False),
        # attack: the agent's own claim after a reported wrong one stands; a contrast starts the agent's claim
        ('A teammate blamed "a memory leak". I checked: ' + CORRECT, True),
        ("A colleague suggested a memory leak, but " + CORRECT, True),
        # attack: "I don't agree" aimed at a wrong explanation leaves the mechanism standing
        (CORRECT + " I don't agree with the memory leak theory.", True),
        # "What if X were …, would Y?" supposes
        ("What if the planner misses the head and three buffers were held while checkpoint inputs stay live — "
         "would that OOM?", False),
        # attack: a "what" question that introduces the answer still asserts
        ("What is the cause? " + CORRECT, True),
        # a retraction of list items ("Retracting both bullets"), and "the run contradicts them"
        ("- the planner misses the head, three buffers\n- checkpoint inputs stay live\n\nRetracting both bullets; "
         "the run contradicts them.", False),
        ("- " + CORRECT + "\n\nThe experiment I just ran contradicts them.", False),
        # attack: "both bullets" in a claim that retracts nothing
        ("- " + CORRECT + "\n- a memory leak - rejected\n\nBoth bullets were checked against the trace.", True),
    ],
)  # fmt: skip
def test_reported_claims_what_if_questions_and_retracted_items(statement: str, expected: bool) -> None:
    assert _judge(statement) is expected


#: RUBRIC with a fourth concept whose phrasings start at a word a clause break looks ahead to ("each")
#: or carry their own negation ("nothing is all-reduced").
OWN_STEP = dataclasses.replace(
    RUBRIC,
    concepts=(*RUBRIC.concepts, _concept("own step", r"\beach\s+rank\s+applies\s+its\s+own\b",
                                         r"\bnothing\s+is\s+all-reduced\b")),
)  # fmt: skip


@pytest.mark.parametrize(
    ("statement", "expected"),
    [
        # "and" before "each" ends the negated clause even when the match starts at "each"
        (CORRECT + " The reducer is not armed and each rank applies its own.", True),
        # "and" before a clause with its own negation ("and nothing …") ends the clause before it
        (CORRECT + " The reducer is not armed and nothing is all-reduced.", True),
        # attacks: a negation in the match's own clause still governs it
        (CORRECT + " It is not true that each rank applies its own.", False),
        (CORRECT + " It is not the case that nothing is all-reduced.", False),
        (CORRECT + " The reducer is armed, so not each rank applies its own.", False),
    ],
)
def test_clause_breaks_before_a_match_see_its_first_word(statement: str, expected: bool) -> None:
    assert RULES.judge(statement, OWN_STEP).correct is expected


@pytest.mark.parametrize(
    ("statement", "expected"),
    [
        # a negated "consider that" / "take into account" omits its object from the account: the object is asserted
        ("The planner misses the head: three buffers. Its price doesn't consider that checkpoint inputs stay live.",
         True),
        ("The planner misses the head: three buffers. The price never takes into account checkpoint inputs stay "
         "live.", True),
        # attacks: the agent doubting it is no omission; a plain negation still governs its clause
        ("The planner misses the head: three buffers. I don't consider that checkpoint inputs stay live.", False),
        ("The planner misses the head: three buffers. We don't take into account checkpoint inputs stay live.",
         False),
        ("The planner misses the head: three buffers. I do not consider that checkpoint inputs stay live.", False),
    ],
)  # fmt: skip
def test_a_negated_consider_omits_its_object(statement: str, expected: bool) -> None:
    assert _judge(statement) is expected


@pytest.mark.parametrize(
    ("statement", "expected"),
    [
        # "the rerun" / "the trace" is a preamble: the verdict after it takes back everything before
        (CORRECT + " Update: the rerun shows otherwise.", False),
        (CORRECT + " The trace shows otherwise.", False),
        # attack: after a claim of its own sentence the verdict takes back only that claim
        (CORRECT + " The allocator looked fragmented, but the rerun shows otherwise.", True),
    ],
)
def test_a_verdict_after_a_report_of_a_rerun_withdraws_everything(statement: str, expected: bool) -> None:
    assert _judge(statement) is expected


@pytest.mark.parametrize(
    ("statement", "expected"),
    [
        # a negated "counts" / "includes" / "covers" omits its object from the account: the object is asserted
        ("The planner misses the head: three buffers. It never counts the checkpoint inputs stay live.", True),
        ("The planner misses the head: three buffers. Its price doesn't include that checkpoint inputs stay live.",
         True),
        # attacks: the agent as the subject doubts it; a plain negation still governs its clause
        ("The planner misses the head: three buffers. I don't include that checkpoint inputs stay live.", False),
        ("The planner misses the head: three buffers. It is not that checkpoint inputs stay live.", False),
    ],
)  # fmt: skip
def test_a_negated_count_or_include_omits_its_object(statement: str, expected: bool) -> None:
    assert _judge(statement) is expected


@pytest.mark.parametrize(
    ("statement", "expected"),
    [
        # an arrow ends a step of a chain: "A never runs => B" does not negate B
        ("init never runs => three buffers => the planner misses the head => checkpoint inputs stay live", True),
        ("init never runs -> three buffers -> the planner misses the head -> checkpoint inputs stay live", True),
        # attack: a negation in B's own step still governs it
        ("init runs => not three buffers => the planner misses the head => checkpoint inputs stay live", False),
    ],
)
def test_an_arrow_ends_a_step_of_a_chain(statement: str, expected: bool) -> None:
    assert _judge(statement) is expected


@pytest.mark.parametrize(
    ("statement", "expected"),
    [
        # a colleague's note quoted, then "that doesn't hold up in my view": the note is not the agent's claim
        (f'A colleague\'s note says: "{CORRECT}" That doesn\'t hold up in my view; a memory leak is the cause.', False),
        (f"{CORRECT} That doesn't hold up under testing.", False),
        (f'The reviewer\'s comment says "{CORRECT}"', False),
        # attack: a claim of the agent's own after the rejected note is asserted
        (f'A colleague\'s note says the safety factor is off. That doesn\'t hold up in my view. {CORRECT}', True),
    ],
)  # fmt: skip
def test_a_quoted_note_rejected_as_not_holding_up(statement: str, expected: bool) -> None:
    assert _judge(statement) is expected


#: RUBRIC whose retention concept has an alternative, plus an entailed effect ("so calls OOM") that is
#: reported but not required.
BELOW_PEAK = _concept("price below peak", r"\bprice\s+is\s+below\s+the\s+peak\b")
ENTAILING = dataclasses.replace(
    RUBRIC,
    concepts=(RUBRIC.concepts[0], RUBRIC.concepts[1],
              Concept("retention", RUBRIC.concepts[2].phrasings + BELOW_PEAK.phrasings, (BELOW_PEAK,))),
    entailed=(_concept("calls OOM", r"\bcalls?\s+(?:\w+\s+){0,2}?(?:oom|run\s+out\s+of\s+memory)\b"),),
)  # fmt: skip


@pytest.mark.parametrize(
    ("statement", "expected"),
    [
        (CORRECT, True),  # the entailed effect left out: still a diagnosis
        (CORRECT + " So admitted calls OOM.", True),
        ("The planner doesn't account for the head: three buffers, so the price is below the peak.", True),
        # attacks: an entailed effect denied contradicts the mechanism; an alternative does not cover the others
        (CORRECT + " But admitted calls never OOM in my runs.", False),
        (CORRECT + " Calls do not run out of memory.", False),
        ("The price is below the peak.", False),
        # a supposed or asked effect is no denial; a withdrawn denial no longer counts
        (CORRECT + " If calls did not OOM, the meter would be wrong.", True),
        (CORRECT + " Calls don't OOM. Edit: scratch that. " + CORRECT, True),
    ],
)
def test_alternatives_and_entailed_concepts(statement: str, expected: bool) -> None:
    verdict = RULES.judge(statement, ENTAILING)
    assert verdict.correct is expected
    if "OOM in my runs" in statement:
        assert "denies 'calls OOM'" in verdict.note
    if "price is below" in statement and expected:
        assert "via 'price below peak'" in verdict.note and "retention" in verdict.concepts


@pytest.mark.parametrize(
    ("statement", "expected"),
    [
        # an adverb between the verb and "whether" still makes it a question to check
        ("The planner misses the head: three buffers. I'll check next whether checkpoint inputs stay live.", False),
        ("The planner misses the head: three buffers. We should verify first if checkpoint inputs stay live.", False),
        # attack: a check already done and reported asserts
        ("The planner misses the head: three buffers. I checked: checkpoint inputs stay live.", True),
    ],
)
def test_a_question_still_to_check_with_an_adverb(statement: str, expected: bool) -> None:
    assert _judge(statement) is expected


@pytest.mark.parametrize(
    ("statement", "expected"),
    [
        # a negation limited to some cases says where the effect does not hold, not that it is false
        (CORRECT + " Calls don't OOM in a single-process run, only with 2 ranks.", True),
        (CORRECT + " Calls never OOM except when the vocabulary is large.", True),
        # attacks: an unlimited denial still contradicts; "only" elsewhere in the sentence does not limit it
        (CORRECT + " Calls do not OOM in my runs.", False),
        (CORRECT + " Only large calls were tested and calls do not OOM.", False),
    ],
)
def test_a_scoped_denial_of_an_entailed_concept_is_no_denial(statement: str, expected: bool) -> None:
    assert RULES.judge(statement, ENTAILING).correct is expected


@pytest.mark.parametrize(
    ("statement", "expected"),
    [
        # a denial whose subject is long: a comma closes what was put inside it, a clause inside it has its own verb
        ("The planner, which misses the head while three buffers are held and the checkpoint inputs stay live, is "
         "not the reason for the OOMs.", False),
        ("The planner misses the head with three buffers, while the checkpoint inputs stay live, is not why these "
         "calls fail.", False),
        # attack: "and X is not why" denies only X, the clause before it stands
        (CORRECT[:-1] + ", and float order is not why these calls fail.", True),
        (CORRECT[:-1] + " — a safety factor is not the cause of the OOMs.", True),
        # a concession dismissed ("Yes, X …; but that isn't what's breaking it"), a pronoun standing for the sentence
        ("The planner misses the head. Yes, it holds three buffers and the checkpoint inputs stay live; but that "
         "isn't what's breaking these calls.", False),
        ("The planner misses the head, so three buffers and the checkpoint inputs stay live — that isn't the cause "
         "of these failures.", False),
        # attack: the agent's own mechanism after the dismissal of another stands
        ("It looked like a memory leak, but that isn't the cause: " + CORRECT, True),
        # "i.e." does not end the sentence a denial opens
        ("It is not the case that the planner misses the head, i.e. that three buffers are held while the "
         "checkpoint inputs stay live.", False),
    ],
)  # fmt: skip
def test_denials_with_long_subjects_concessions_and_resumptive_pronouns(statement: str, expected: bool) -> None:
    assert _judge(statement) is expected


@pytest.mark.parametrize(
    ("statement", "expected"),
    [
        ("There's an upstream issue (#844) where someone argues that the planner misses the head: three buffers, "
         "while the checkpoint inputs stay live. That's their code; I haven't found evidence it carries over.", False),
        ("The ticket attached to this task claims the planner misses the head: three buffers, while the checkpoint "
         "inputs stay live. I have not been able to reproduce it.", False),
        ("There's a TODO in a teammate's branch claiming that the planner misses the head: three buffers, while the "
         "checkpoint inputs stay live. I'm not treating it as established.", False),
        # the claim goes on past a "but" that joins its own verbs …
        ("The reviewer flagged that the planner prices the forward but misses the head, three buffers while the "
         "checkpoint inputs stay live. I haven't decided who's right.", False),
        # … attack: a "but" before a subject of the agent's own ends it
        ("The reviewer says the padding is wrong, but the planner misses the head: three buffers, and the checkpoint "
         "inputs stay live.", True),
        # a negation a few words before the endorsing phrase: no endorsement
        ("The ticket claims the planner misses the head: three buffers, while the checkpoint inputs stay live. I "
         "don't think the ticket is right.", False),
        # attack: an endorsement stands
        ("The ticket claims the planner misses the head: three buffers, while the checkpoint inputs stay live. The "
         "ticket is right.", True),
    ],
)  # fmt: skip
def test_reported_claims_with_attachments_and_continuations(statement: str, expected: bool) -> None:
    assert _judge(statement) is expected


@pytest.mark.parametrize(
    ("statement", "expected", "hypothesis"),
    [
        # struck-through text is crossed out; "This isn't the cause." takes back what came before
        ("~~" + CORRECT + "~~ Still failing with that priced.", False, False),
        ("Diagnosis: " + CORRECT + "\n\nUpdate: a rerun with that priced still fails. This isn't the cause.", False,
         False),
        # attack: struck text elsewhere leaves the claim standing
        ("~~a memory leak~~ " + CORRECT, True, True),
        # an elliptical "they aren't" after what should happen is a finding, not a retraction
        ("The planner misses the head: the three buffers should be priced; they aren't, and the checkpoint inputs "
         "stay live.", True, True),
        # a disclaimer with a few words of when makes its paragraph a hypothesis
        ("Possibly " + CORRECT[0].lower() + CORRECT[1:] + " This is a guess at this stage.", False, True),
        (CORRECT + " Haven't run anything to check this yet.", False, True),
        (CORRECT + " Plausible but unconfirmed.", False, True),
    ],
)  # fmt: skip
def test_struck_text_elliptical_findings_and_disclaimers(statement: str, expected: bool, hypothesis: bool) -> None:
    assert _credited(statement) == (expected, hypothesis)


@pytest.mark.parametrize(
    ("statement", "expected", "hypothesis"),
    [
        # reported claims: "Per <document>,", "<Name>'s take (from standup):", "His reading:", a message, a document
        # found "while searching", a numbered thread named in words
        ("Per the bug report filed by the platform team, the planner misses the head: three buffers, while the "
         "checkpoint inputs stay live. I haven't checked it.", False, False),
        ("Jonas's take (from standup): the planner misses the head: three buffers, while the checkpoint inputs stay "
         "live. I'm not signing off on it yet.", False, False),
        ("Marco thinks the planner is off. His reading: the planner misses the head: three buffers, while the "
         "checkpoint inputs stay live. I haven't checked his claim.", False, False),
        ("Marco pinged me saying the planner misses the head: three buffers, while the checkpoint inputs stay live. "
         "That's his reading; I haven't looked.", False, False),
        ("A forum issue I found while searching blames this: the planner misses the head: three buffers, while the "
         "checkpoint inputs stay live. Whether it applies here I can't say.", False, False),
        ("The DeepSpeed PR #7985 thread says the planner misses the head: three buffers, while the checkpoint inputs "
         "stay live. That's an upstream bug; I'm not treating it as ours.", False, False),
        # attack: "per rank" is no document
        ("Per rank, the planner misses the head: three buffers, while the checkpoint inputs stay live.", True, True),
        # refutations and retractions
        (CORRECT + " The cause is somewhere else.", False, False),
        ("I had written: \"" + CORRECT + "\" I no longer stand by that.", False, False),
        ("Withdrawing what I posted earlier (\"" + CORRECT + "\"). After rerunning, that explanation doesn't hold.",
         False, False),
        ("Suspected: " + CORRECT + "\n\nPricing the head and rerunning: still OOMs at the same point. So it isn't "
         "the planner; reverted.", False, False),
        # attack: ruling out other candidates with no experiment takes nothing back
        (CORRECT + " So it isn't the allocator, the data or the seed: the planner misses the head.", True, True),
        # a hedge with an aside, a disclaimer naming what was not done
        ("It might be — I haven't run anything to show it — that the planner misses the head: three buffers, while "
         "the checkpoint inputs stay live.", False, True),
        ("I suspect the planner misses the head. Three buffers, while the checkpoint inputs stay live. Haven't "
         "instrumented it yet.", False, True),
        # a named proposition that "does not describe" the bug; a concession that is then dismissed
        ("The claim that the planner misses the head, with three buffers while the checkpoint inputs stay live, does "
         "not describe this bug.", False, False),
        ("The planner missing the head isn't what breaks these calls. Even granting that the planner misses the head "
         "with three buffers while the checkpoint inputs stay live, the difference would be far below what we see.",
         False, False),
    ],
)  # fmt: skip
def test_round_twelve_reports_refutations_and_concessions(statement: str, expected: bool, hypothesis: bool) -> None:
    assert _credited(statement) == (expected, hypothesis)


@pytest.mark.parametrize(
    ("statement", "expected", "hypothesis"),
    [
        # an adverb "yet" closing its clause is no contrast: the "I suspect" scope goes on
        ("I suspect, though I haven't verified it with a run yet, that the planner misses the head: three buffers, "
         "while the checkpoint inputs stay live.", False, True),
        # a denied subject with a call in its bracket, "the mechanism behind", "what makes", a reason after a colon
        ("The planner missing the head (three buffers(), while the checkpoint inputs stay live, so it fails) is not "
         "why these calls OOM.", False, False),
        (CORRECT[:-1] + " — that is not the mechanism behind these failures.", False, False),
        ("The planner misses the head with three buffers while the checkpoint inputs stay live, which is not what "
         "makes these calls fail.", False, False),
        ("The planning is not why these calls OOM: that the planner misses the head, with three buffers while the "
         "checkpoint inputs stay live, is not the mechanism here.", False, False),
        # reported claims
        ("The comment in head.py names three buffers, and a note someone left on the planner claims the planner "
         "misses the head while the checkpoint inputs stay live. I can't say whether it's right.", False, False),
        ("A reviewer annotated it: \"" + CORRECT + "\" I'm just noting the annotation.", False, False),
        ("A forum thread on FSDP + GradScaler claims the planner misses the head: three buffers, while the "
         "checkpoint inputs stay live. It might not apply to us.", False, False),
        ("Someone in the team channel linked issue #1256 and says the planner misses the head: three buffers, while "
         "the checkpoint inputs stay live. That's their read.", False, False),
        ("There's a note in an old upstream issue that says the planner misses the head: three buffers, while the "
         "checkpoint inputs stay live. I haven't looked into it.", False, False),
        ("Found a forum thread where someone with a custom planner says the planner misses the head: three buffers, "
         "while the checkpoint inputs stay live. Their setup isn't ours.", False, False),
        # refutations: "that's not why", "So it's not X" after a rerun that left the gap
        (CORRECT + " I looked at it and that's not why these calls fail.", False, False),
        ("Thought I had it: " + CORRECT + "\n\nI priced the head and reran: the peaks were still ~15% apart. So it's "
         "not the planner.", False, False),
        # disclaimers
        (CORRECT + " Looks likely from reading, but I want a run that shows the peak before I call it.", False, True),
        ("I suspect the planner. " + CORRECT + " Need to dump the allocator trace to confirm.", False, True),
        # attack: a finished measurement is no disclaimer
        ("I dumped the allocator trace to confirm: " + CORRECT, True, True),
    ],
)  # fmt: skip
def test_round_thirteen_contrasts_denials_reports_and_disclaimers(
    statement: str, expected: bool, hypothesis: bool
) -> None:
    assert _credited(statement) == (expected, hypothesis)


@pytest.mark.parametrize(
    ("statement", "expected", "hypothesis"),
    [
        # a value in a condition is no verdict; a verdict concluded from a conditional is one
        ("The planner has a flag for the head. When it's false, the planner misses the head: three buffers, while "
         "the checkpoint inputs stay live.", True, True),
        ("Candidate: " + CORRECT + "\n\nTested with the head priced: still OOMs. If the planner were the cause the "
         "priced run would fit, so it's not that.", False, False),
        # "Nothing in X charges for Y" omits Y; "the fact that Y" presupposes Y
        ("The planner misses the head. Nothing in the estimate charges for three buffers, and neither does the fact "
         "that the checkpoint inputs stay live change the price.", True, True),
        # documents in files
        ("The comment in head.py says the planner misses the head: three buffers, while the checkpoint inputs stay "
         "live. I can't say whether it's right.", False, False),
        ("The module docstring says the planner misses the head: three buffers, while the checkpoint inputs stay "
         "live. I didn't evaluate it.", False, False),
        # a disclaimer saying how it was not checked
        (CORRECT + " I haven't confirmed it by comparing the peaks yet.", False, True),
    ],
)  # fmt: skip
def test_round_thirteen_conditions_omissions_and_documents(statement: str, expected: bool, hypothesis: bool) -> None:
    assert _credited(statement) == (expected, hypothesis)


@pytest.mark.parametrize(
    ("statement", "expected", "hypothesis"),
    [
        # denials: "It's not that X" (not "It's not that simple"), a rejecting label, a symptom "not caused by" X even
        # with a "rather than" inside the claim, "Not the cause then", "That <noun> is not the reason."
        ("It's not that the planner misses the head: three buffers while the checkpoint inputs stay live.", False,
         False),
        ("It's not that simple. " + CORRECT, True, True),
        ("Not the cause: the planner misses the head, three buffers, while the checkpoint inputs stay live.", False,
         False),
        ("To rule this out explicitly: the OOM is NOT caused by the planner missing the head and three buffers "
         "while the checkpoint inputs stay live, which would make the peak three chunks rather than one.", False,
         False),
        ("Suspected the planner: " + CORRECT + " Priced the head and reran, still OOMs. Not the cause then; "
         "reverted.", False, False),
        (CORRECT + " That accounting is not the reason.", False, False),
        # reported claims: a document's bracket before its participle, two words before a numbered issue, several
        # numbers, "whose comment says", "Their argument is that", "summarising what X wrote:", "the issue saying",
        # "one could argue", and a sentence naming the paragraph as someone else's ("That's his read")
        ("The ticket (MEM-412) opened by the infra team claims the planner misses the head: three buffers, while "
         "the checkpoint inputs stay live.", False, False),
        ("Upstream planner issue #23986 reports that the planner misses the head: three buffers, while the "
         "checkpoint inputs stay live.", False, False),
        ("Planner #5794 and #6809 say that the planner misses the head: three buffers, while the checkpoint inputs "
         "stay live.", False, False),
        ("A colleague pointed at head.py, whose comment says that the planner misses the head: three buffers, while "
         "the checkpoint inputs stay live.", False, False),
        ("A colleague disagrees with me. Their argument is that the planner misses the head: three buffers, while "
         "the checkpoint inputs stay live.", False, False),
        ("From the #memory channel, summarising what Marco wrote: " + CORRECT, False, False),
        ("Combine the note with the upstream issue saying the planner misses the head, and one could argue three "
         "buffers sit there while the checkpoint inputs stay live.", False, False),
        ("Overheard at standup. The planner misses the head, with three buffers while the checkpoint inputs stay "
         "live. That's Marco's read; I have my doubts.", False, False),
        # … and the agent's own: "That's my read", endorsed ("That's his read and he's right")
        (CORRECT + " That's my read.", True, True),
        ("Marco: the planner misses the head. " + CORRECT + " That's his read, and he's right.", True, True),
        # disclaimers: a sentence "Untested so far.", the agent's unchecked object, "not a conclusion", "before saying"
        (CORRECT + " Untested so far.", False, True),
        (CORRECT + " I haven't checked the allocator trace yet.", False, True),
        (CORRECT + " Putting this forward as a lead to test, not a conclusion.", False, True),
        (CORRECT + " I'd want to compare the peaks per call before saying it's the cause.", False, True),
        ("It seems possible the planner misses the head: three buffers, while the checkpoint inputs stay live.",
         False, True),
        # attacks: code that "hasn't run its backward yet" is no disclaimer; "possible to" is an ability
        (CORRECT + " The layers haven't run their backward yet at that point.", True, True),
        ("It is possible to see it in the trace: " + CORRECT, True, True),
        # negation scope: an elliptical "but not X" after an account's verb and "nor that X" leave X holding; "not …
        # until" says when; a quoted "not" closed before the match and a quoted "or not" belong to the quote
        ("The planner knows about one chunk but not the three buffers, nor that the checkpoint inputs stay live. "
         "The planner misses the head.", True, True),
        ("The planner misses the head, not three buffers, while the checkpoint inputs stay live.", False, False),
        ("The planner misses the head. The peak isn't reached until three buffers are held while the checkpoint "
         "inputs stay live.", True, True),
        ('The planner misses the head. The comment "not our problem" sits by three buffers while the checkpoint '
         "inputs stay live.", True, True),
        ('The planner misses the head, and its "keep it or not" flag leaves three buffers while the checkpoint '
         "inputs stay live.", True, True),
        # a negated causative denies its subject and its effect, unless a contrast follows it
        ("The head is not why these calls fail. A planner that misses the head does not cause the allocator, at the "
         "point where the loss is reduced on every rank, to hold three buffers while the checkpoint inputs stay live.",
         False, False),
        ("Float order does not cause the OOM, but the planner misses the head: three buffers, while the checkpoint "
         "inputs stay live.", True, True),
        # a rebuttal opened "On reflection" takes back the candidate before it
        ("Candidate: " + CORRECT + "\n\nOn reflection the meter excludes everything allocated before the call, so "
         "this can't add up to an OOM, ruling it out.", False, False),
    ],
)  # fmt: skip
def test_round_fourteen_denials_reports_and_disclaimers(statement: str, expected: bool, hypothesis: bool) -> None:
    assert _credited(statement) == (expected, hypothesis)


@pytest.mark.parametrize(
    ("statement", "expected", "hypothesis"),
    [
        # someone else's claim, whatever its verb, that the agent declines within a few sentences
        ("Ticket MEM-12, filed by the infra team, gives the root cause as: the planner misses the head; three "
         "buffers while the checkpoint inputs stay live. The ticket has no evidence attached; I'm not endorsing it.",
         False, False),
        ("From #memory, Dana: the planner misses the head, three buffers while the checkpoint inputs stay live. "
         "Noting it as Dana's guess.", False, False),
        ("On the forum someone answering a similar report wrote that " + CORRECT[0].lower() + CORRECT[1:] + " I don't "
         "think that carries over to us.", False, False),
        ("There's an upstream issue (#844) whose author argues the planner misses the head: three buffers while the "
         "checkpoint inputs stay live. I'm noting it as a lead from that thread.", False, False),
        # … but a sentence of the agent's own before the declining words is its own
        ("A colleague blames float order. I traced it: " + CORRECT + " I'm not endorsing the colleague's theory.",
         True, True),
        # a paragraph opened by a hypothesis; a yes/no question answered at once is none
        ("Possibly (needs a check): the planner misses the head. It holds three buffers while the checkpoint inputs "
         "stay live.", False, True),
        ("Could it be the head? The planner misses the head: three buffers while the checkpoint inputs stay live.",
         False, True),
        ("Do the ranks start from different weights? No. " + CORRECT, True, True),
        # a chain put forward and doubted by "If that's right" ("If so" draws a consequence)
        ("I suspect the head. The planner misses the head: three buffers while the checkpoint inputs stay live. If "
         "that's right, calls with many rows fail.", False, True),
        (CORRECT + " If so, calls with many rows fail.", True, True),
        # denials: a "hang" not caused by X, "The idea going around, that X, does not hold", "I mean X" after a
        # denial of the cause
        ("To be clear, the hang is not caused by the planner that misses the head: three buffers while the "
         "checkpoint inputs stay live.", False, False),
        ("The idea going around, that the planner misses the head with three buffers while the checkpoint inputs "
         "stay live, does not hold for this code.", False, False),
        ("The planner is not why these calls fail. I mean the planner that misses the head, three buffers while "
         "the checkpoint inputs stay live.", False, False),
        # a case made for a claim, an earlier belief with "I'd", a modal with "n't", disclaimers
        ("The argument would go: " + CORRECT, False, False),
        ("I'd said the planner misses the head: three buffers, while the checkpoint inputs stay live.", False, False),
        ("If the planner misses the head, three buffers while the checkpoint inputs stay live wouldn't be priced.",
         False, True),
        (CORRECT + " I'd want a dump to confirm.", False, True),
        # a planned check claims nothing: "I suspect X. I'll print the <concept's words> next to check." stays put
        # forward; the plan does not make an assertion before it a hypothesis either
        ("I suspect the planner misses the head, with three buffers. I'll print whether the checkpoint inputs stay "
         "live next to check.", False, False),
        (CORRECT + " I'll print the per-call peaks next to check.", True, True),
        ("I suspect, without having proved it, that the planner misses the head: three buffers while the checkpoint "
         "inputs stay live.", False, True),
    ],
)  # fmt: skip
def test_round_fifteen_declined_reports_hypothesis_paragraphs_and_denials(
    statement: str, expected: bool, hypothesis: bool
) -> None:
    assert _credited(statement) == (expected, hypothesis)


#: The mechanism of :data:`RUBRIC` as a claim someone else makes (round sixteen's reported claims).
CLAIM = "the planner misses the head: three buffers while the checkpoint inputs stay live"


@pytest.mark.parametrize(
    ("statement", "expected", "hypothesis"),
    [
        # reported claims: agreeing with closing a ticket rejects it; "whether that explanation is accurate" endorses
        # nothing; a possessive "read"; a label passing someone's words along; a claim linked "with the claim that"
        ("TRAIN-412 (opened by the on-call) claims " + CLAIM + ". Infra closed it as cannot-reproduce, and I agree "
         "with closing it.", False, False),
        ('Draft PR #41 from another team member says: "' + CLAIM + '." I have no view on whether that explanation '
         "is accurate.", False, False),
        ("From standup: Amara's read is that " + CLAIM + ". I've no view on it yet.", False, False),
        ("Passing along Marek's diagnosis, which I have not checked: he says " + CLAIM + ".", False, False),
        ("Someone linked issue #5605 in our channel, with the claim that " + CLAIM + ". I've only skimmed it.",
         False, False),
        # … and declined: "I don't think the analogy holds", "I haven't reproduced that myself", a factive report
        # doubted ("warns that", "was exactly this", "I don't see how it can bite us")
        ("Issue #115710 describes a similar bug. A colleague maps that onto us: " + CLAIM + ". I don't think the "
         "analogy holds.", False, False),
        ("Priya's message in #memory puts it on the planner: " + CLAIM + ". I haven't reproduced that myself.",
         False, False),
        ("PyTorch issue #72548 warns that " + CLAIM + ". That discussion predates our planner, so I don't think it "
         "applies to us.", False, False),
        ("DeepSpeed PR #1801 (the LayerNorm mismatch) was exactly this: " + CLAIM + ". We run a release with that "
         "fix, so I don't see how it can bite us.", False, False),
        ("A forum answer I found on FSDP2 says that " + CLAIM + ".", False, False),
        ("Upstream (OpenPipe/ART #898) someone describes exactly this: " + CLAIM + ". Whether our planner behaves "
         "like theirs I can't say.", False, False),
        ('A parallel investigation filed this conclusion: "' + CLAIM + '." It is their finding, not mine.',
         False, False),
        # … but the agent's own finding that a factive report agrees with stays its own
        ("PyTorch issue #72548 warns that " + CLAIM + ". That is what happens here.", True, True),
    ],
)  # fmt: skip
def test_round_sixteen_reported_claims(statement: str, expected: bool, hypothesis: bool) -> None:
    assert _credited(statement) == (expected, hypothesis)


@pytest.mark.parametrize(
    ("statement", "expected", "hypothesis"),
    [
        # hypotheses: a candidate "I'm considering", "This might be the …", a guess with an aside before its "is",
        # a three-word label, "Is it possible …?", a confirmation promised on a condition, disclaimers
        ("One explanation I'm considering: " + CLAIM + ". Nothing I've run so far isolates it.", False, True),
        ("This might be the planner: " + CLAIM + ". I want to instrument the peak before I commit to this.",
         False, True),
        ("My best guess right now, which I still need to verify, is that " + CLAIM + ".", False, True),
        ("Untested chain of reasoning, nothing run yet: " + CLAIM + ".", False, True),
        ("Is it possible that the planner misses the head? It would hold three buffers while the checkpoint inputs "
         "stay live.", False, True),
        ("Could it be that " + CLAIM + "? I'll treat it as a lead until a run confirms it.", False, True),
        ("Could it be that " + CLAIM + "? Yes: the run confirms it.", True, True),
        ("I suspect " + CLAIM + ". Haven't checked this against a run yet.", False, True),
        ("I suspect " + CLAIM + ". I'll instrument it before claiming it.", False, True),
        # withdrawals: a numbered update dismissed, an experiment that changed nothing
        ("Update 1: " + CLAIM + ".\n\nUpdate 2: ignore update 1. Looking elsewhere.", False, False),
        ("My lead was that " + CLAIM + ".\n\nI patched the planner and reran. The patch changed nothing, so the "
         "planner is not the cause.", False, False),
        # denials: "X: that is not this bug", "A isn't the problem: X is not what breaks it", "is not a defect"
        ("The weights are fine. " + CLAIM[0].upper() + CLAIM[1:] + ": that is not this bug.", False, False),
        ("Head accounting isn't the problem: a planner that misses the head, three buffers while the checkpoint "
         "inputs stay live, is not what breaks these calls.", False, False),
        ("A planner that misses the head, which leaves three buffers while the checkpoint inputs stay live, is not "
         "a defect and not what fails these calls.", False, False),
        # not denials: a flag's value ("It's false in the shipped config"), a second predicate after "instead of",
        # a condition stated negatively
        ("The planner is tied to the strict flag. It's false in the shipped config, so " + CORRECT[0].lower() +
         CORRECT[1:], True, True),
        ("The planner doesn't account for the head: it prices the forward instead of the backward and ends up "
         "without three buffers, while the checkpointed inputs stay live.", True, True),
        ("When chunks are not split across calls the planner misses the head: three buffers, while the checkpoint "
         "inputs stay live.", True, True),
    ],
)  # fmt: skip
def test_round_sixteen_hypotheses_withdrawals_and_denials(statement: str, expected: bool, hypothesis: bool) -> None:
    assert _credited(statement) == (expected, hypothesis)


@pytest.mark.parametrize(
    ("statement", "expected", "hypothesis"),
    [
        # someone else's claim refused before it is reported, and other openers: a name with an accent, several
        # projects' numbered reports, a note "left in the last run's log" that "reads:", "What the ticket claims:",
        # a possessive claim noun with any reporting verb or "that", "That conclusion was:", "makes the point that"
        ("I don't think this holds up, but for the record: in #memory, Tomás said " + CLAIM + ".", False, False),
        ("Megatron-Bridge #992 and Megatron-LM #4084 describe how " + CLAIM + ". That's their setup.", False, False),
        ("I don't agree with it, but the note left in the last run's log reads: " + CLAIM + ".", False, False),
        ("I logged the peaks, so I'm rejecting MEM-88. What the ticket claims: " + CLAIM + ".", False, False),
        ("I don't think this is right, but the previous agent's notes conclude that " + CLAIM + ".", False, False),
        ("Ruled out by my fp32 run: the ticket's claim that " + CLAIM + ".", False, False),
        # … and the verbs a possessive opener took before round 17 stay ("Priya's note reads that X")
        ("Priya's note reads that " + CLAIM + ".", False, False),
        ("Refuted by my measurement. So I'm not adopting what Marco said in #memory \u2014 that " + CLAIM + ".",
         False, False),
        ("I'm discarding the previous session's conclusion. That conclusion was: " + CLAIM + ".", False, False),
        ("PyTorch issue #72548 makes the point that " + CLAIM + ". I'm not convinced it applies here.", False, False),
        # … and the agent's own words after such an opener stay its own
        ("What the ticket claims is beside the point. " + CORRECT, True, True),
        ("That's what the ticket says: " + CLAIM + ".", False, False),
        ("This is exactly what the ticket describes: " + CLAIM + ".", True, True),
        # withdrawals: "Struck that out:", a timestamped "withdrawn", "withdrawing the X theory"
        ("First pass: " + CLAIM + ". Struck that out: the meter shows the peak is elsewhere.", False, False),
        ("14:02: " + CLAIM + ".\n14:20: withdrawn. The meter shows the peak is elsewhere.", False, False),
        ("- suspected: " + CLAIM + "\n- so withdrawing the head-buffer theory; moving on.", False, False),
    ],
)  # fmt: skip
def test_round_seventeen_refused_reports_and_withdrawals(statement: str, expected: bool, hypothesis: bool) -> None:
    assert _credited(statement) == (expected, hypothesis)


@pytest.mark.parametrize(
    ("statement", "expected", "hypothesis"),
    [
        # odds put on a claim make its paragraph a weighted belief; 80% or more commits; a percentage of an effect
        # is not odds
        ("~70% on this: " + CLAIM + ". Remaining 30% is the allocator.", False, True),
        ("Rough odds: 70% that " + CLAIM + "; 30% something in the meter.", False, True),
        ("I'd put ~65% on the head. " + CORRECT, False, True),
        ("P(head unpriced) ~ 0.7: " + CLAIM + ".", False, True),
        ("I'd put ~90% on this: " + CLAIM + ".", True, True),
        (CORRECT + " The peak is ~30% above the estimate.", True, True),
        # disclaimers and plans: "Not run yet.", "Worth checking next.", "Running that check next", "Next I'll test
        # whether X", a "Could `code` …?" question, a need to compare code objects "to confirm"
        (CORRECT + " Not run yet.", False, True),
        (CORRECT + " Worth checking next.", False, True),
        (CORRECT + " Running that check next before changing anything.", False, True),
        ("Next I'll test whether " + CLAIM + ".", False, True),
        ("Could `planner.price()` be where the planner misses the head? It would hold three buffers while the "
         "checkpoint inputs stay live.", False, True),
        (CORRECT + " I need to compare `meter.peak()` against `planner.price()` to confirm.", False, True),
        # a denial closing its clause before a semicolon
        ("A planner that misses the head, with three buffers while the checkpoint inputs stay live, is not why "
         "these calls fail; I've ruled that out.", False, False),
        ("The idea that the planner misses the head, so three buffers are held while the checkpoint inputs stay "
         "live, is not what stalls these calls.", False, False),
        # not withdrawals or denials: "It isn't" right after someone's reading of a thing as something corrects the
        # reading; "never X and draw from Y" draws from Y
        ("Our planner misses the head, because its author built it reading the docs as being about the forward "
         "only. It isn't: three buffers, while the checkpointed inputs stay live.", True, True),
        ("I believed that the planner misses the head. It isn't: three buffers, while the checkpointed inputs stay "
         "live.", False, False),
        ("The planner never prices the head and falls back on the forward: the planner misses the head, three "
         "buffers, while the checkpointed inputs stay live.", True, True),
        # "no" negates its noun: "with no all-reduce and clip each shard" clips each shard
        ("The planner misses the head with no margin and keeps its three buffers, while the checkpointed inputs "
         "stay live.", True, True),
        # an "If …, then …" whose condition the agent only leans towards is put forward; a quoted review comment
        # under a label with a file:line is the reviewer's
        ("If the planner misses the head (looks like it from head.py), then three buffers are held while the "
         "checkpoint inputs stay live.", False, True),
        ('Review comment on planner.py:83: "' + CLAIM + '." Reviewer\'s opinion; I have not confirmed it.',
         False, False),
    ],
)  # fmt: skip
def test_round_seventeen_odds_disclaimers_and_denials(statement: str, expected: bool, hypothesis: bool) -> None:
    assert _credited(statement) == (expected, hypothesis)


@pytest.mark.parametrize(
    ("statement", "expected", "hypothesis"),
    [
        # a plan to look, after a sentence that put the claim forward, keeps the chain between them put forward;
        # the same details asserted with no plan after them are the agent's own
        ("I suspect the memory estimate is short. The planner misses the head: three buffers while the checkpoint "
         "inputs stay live. Next step: print the meter's peak per chunk.", False, True),
        ("I suspect the memory estimate is short. The planner misses the head: three buffers while the checkpoint "
         "inputs stay live. Then I'll log the meter's peak per chunk.", False, True),
        ("I suspect the memory estimate is short. The planner misses the head: three buffers while the checkpoint "
         "inputs stay live.", True, True),
        (CORRECT + " Next step: patch the planner to price the head.", True, True),
        # disclaimers: a need to check "to know", "before editing", a plan "to check", "not verified on my side",
        # "haven't run (1) yet"
        (CORRECT + " I need to dump the meter's peaks to know.", False, True),
        (CORRECT + " Need to confirm before editing.", False, True),
        (CORRECT + " Plan: log the meter's peak per chunk to check.", False, True),
        (CORRECT + " Not verified on my side.", False, True),
        ("Plan: (1) instrument the meter; (2) if the peak is high, " + CLAIM + ". Haven't run (1) yet.", False, True),
        # a paragraph opening with a yes/no question on a code name, or "Is the problem that X?", or a plan to
        # observe, is put forward; a fix plan is not
        ("Could planner_price be missing the head? " + CORRECT, False, True),
        ("Is the problem that the planner misses the head? It holds three buffers while the checkpoint inputs "
         "stay live.", False, True),
        ("Is the problem that the planner misses the head? Yes: it holds three buffers while the checkpoint "
         "inputs stay live, and the planner misses the head.", True, True),
        ("Plan: (1) log per-chunk peaks; (2) if they come out high, that would point to " + CLAIM + ".", False, True),
        ("Plan: (1) patch the planner, since " + CLAIM + "; (2) rerun.", True, True),
        # odds in brackets after a likelihood word; a one-word qualifier in brackets hedges nothing
        ("Likely (~70%) explanation: " + CLAIM + ".", False, True),
        ("The planner doesn't account for the head: three buffers for the (possibly short) chunk, while the "
         "checkpointed inputs stay live.", True, True),
    ],
)  # fmt: skip
def test_round_eighteen_plans_questions_and_disclaimers(statement: str, expected: bool, hypothesis: bool) -> None:
    assert _credited(statement) == (expected, hypothesis)


@pytest.mark.parametrize(
    ("statement", "expected", "hypothesis"),
    [
        # reported claims: "Someone linked X as the explanation: Y", a chat label with a handle, an anaphoric
        # quote label after a sentence naming someone's conclusion, "— yet the ticket's write-up insists that X",
        # "Leaving it as theirs"
        ("I don't think it applies here. Someone linked issue 812 as the explanation: " + CLAIM + ".", False, False),
        ('From chat (@dana): "' + CLAIM + '". Not verified on my side.', False, False),
        ("I don't agree with the previous agent's conclusion. For the record, it was: \"" + CLAIM + '."',
         False, False),
        ("For the record, it was: \"" + CLAIM + '."', True, True),
        ("The logs don't support it — yet the ticket's write-up insists that " + CLAIM + ". I'm not going with "
         "the ticket.", False, False),
        ("Notes left by the previous agent: " + CLAIM + ". Leaving it as theirs; I have not checked it.",
         False, False),
        # agreeing with the other side of a dispute refutes the claim; agreeing with the reporter endorses it
        ('A reviewer wrote: "' + CLAIM + '." The author answered that the meter covers it, and I agree with the '
         "author — I don't think that's what's going on.", False, False),
        ('A reviewer wrote: "' + CLAIM + '." I agree with the reviewer.', True, True),
    ],
)  # fmt: skip
def test_round_eighteen_reported_claims(statement: str, expected: bool, hypothesis: bool) -> None:
    assert _credited(statement) == (expected, hypothesis)


@pytest.mark.parametrize(
    ("statement", "expected", "hypothesis"),
    [
        # withdrawals: a terse experiment with no subject before "so that's not it", "Thought it was X", "So not
        # that", a null result before "So it's not the X —", "The overrun is elsewhere."
        ("Suspected the estimate: with chunks, " + CLAIM + ". Checked with a print of the meter — it matched, so "
         "that's not it.", False, False),
        ("Thought it was " + CLAIM + ". Printed the meter on both ranks. So not that — back to the allocator.",
         False, False),
        ("Suspected the estimate: with chunks, " + CLAIM + ". Tried pricing the head; the peak stayed at 9 GiB. So "
         "it's not the head — back to the allocator.", False, False),
        (CORRECT + " The overrun is elsewhere.", False, False),
        ("The idea would be that " + CLAIM + ".", False, True),
        ("It is not the case that the planner misses the head. The idea would be that three buffers are held "
         "while the checkpoint inputs stay live. The overrun is elsewhere.", False, False),
        # … but "elsewhere" followed by where is an account, not a withdrawal
        ("The planner prices the forward. The overrun is elsewhere: " + CLAIM + ".", True, True),
        # denials: a named explanation denied as the cause; a concession after a denial of the cause
        (CORRECT + " The head-buffer explanation (three buffers, checkpoint inputs) is not what breaks these "
         "calls.", False, False),
        ("Three buffers and live checkpoint inputs are not why calls OOM. Yes, the planner misses the head and "
         "the checkpoint inputs stay live — but that sum stays below the forward term.", False, False),
        # not withdrawals or denials: "It wasn't" right after what the code assumes corrects the assumption; "never
        # X and <subject> <verb>s Y" asserts Y
        ("The planner misses the head because it assumes three buffers are freed first. It wasn't; the checkpoint "
         "inputs stay live as well.", True, True),
        ("The planner never looks at the head and chunk memory holds three buffers, while the checkpoint inputs stay "
         "live: the planner misses the head.", True, True),
        ("The planner never looks at the head and holds three buffers, while the checkpoint inputs stay live: the "
         "planner misses the head.", False, False),
    ],
)  # fmt: skip
def test_round_eighteen_withdrawals_and_denials(statement: str, expected: bool, hypothesis: bool) -> None:
    assert _credited(statement) == (expected, hypothesis)


@pytest.mark.parametrize(
    ("statement", "expected", "hypothesis"),
    [
        # any subject that is not the agent's, with a reporting verb, is someone else's claim once the agent declines
        # it ("I'm not relying on them", "I'm not asserting it applies here", "its conclusion, not mine", "treating
        # this as unverified", "that's the answer's claim", "I'd push back on that", "leaving that conclusion aside")
        ("Notes left from the earlier run state as the root cause that " + CLAIM + ". I'm not relying on them.",
         False, False),
        ("The docstring I found on `planner.price` implies that " + CLAIM + ". I'm not asserting it applies here.",
         False, False),
        ("Another agent's run log concluded that " + CLAIM + ". I'm reporting its conclusion, not mine.",
         False, False),
        ("Previous investigator's handoff notes say: " + CLAIM + ". I'm treating this as unverified.", False, False),
        ('A forum answer on "OOM in backward" says that ' + CLAIM + ". Plausible, but that's the answer's claim and "
         "I haven't tied it to our repo.", False, False),
        ("The reviewer's comment on the draft PR says " + CLAIM + ". I'd push back on that.", False, False),
        ("The previous investigation log (someone else's) concluded: " + CLAIM + ". I'm leaving that conclusion "
         "aside.", False, False),
        # … and the agent's own account is not declined by distancing from something else
        ("The meter log says that " + CLAIM + ".", True, True),
        (CORRECT + " I'm not relying on the old estimate.", True, True),
    ],
)  # fmt: skip
def test_round_nineteen_reported_claims(statement: str, expected: bool, hypothesis: bool) -> None:
    assert _credited(statement) == (expected, hypothesis)


@pytest.mark.parametrize(
    ("statement", "expected", "hypothesis"),
    [
        ("Suspicion to verify with a 1-rank vs 2-rank diff:\n- " + CLAIM, False, True),
        ("If I'm reading planner.py right (will check with a print), " + CLAIM + ". Tentative.", False, True),
        (CORRECT + " Needs a meter dump per chunk to confirm.", False, True),
        (CORRECT + " I haven't dumped the peaks yet.", False, True),
        (CORRECT + " But I haven't confirmed where the OOM fires yet.", False, True),
        (CORRECT + " Unconfirmed until I print per-chunk peaks.", False, True),
        (CORRECT + " Putting that down as a hypothesis to check with a meter dump.", False, True),
        # a paragraph that opens with a disclaimer disclaims the one before it; a fix plan does not
        (CORRECT + "\n\nI haven't checked what the meter counts, so I'm keeping this as a candidate.", False, True),
        (CORRECT + "\n\nNext: patch the planner.", True, True),
        # a consequence in the conditional mood goes on putting forward what a sentence before put forward
        ("I suspect the estimate is short. The planner misses the head, and it would then hold three buffers while "
         "the checkpoint inputs stay live.", False, True),
        # a yes/no question opening its paragraph puts it forward, unless answered at once (round 38: one that names a
        # mechanism; "Is the estimate even right?" asks nothing of the sentences after it)
        ("Does the planner even price the head? " + CORRECT, False, True),
        ("Is the estimate right? No: " + CORRECT, True, True),
    ],
)  # fmt: skip
def test_round_nineteen_hypotheses(statement: str, expected: bool, hypothesis: bool) -> None:
    assert _credited(statement) == (expected, hypothesis)


@pytest.mark.parametrize(
    ("statement", "expected", "hypothesis"),
    [
        # a struck bullet is struck with its marker; "point 1 is wrong" after a numbered note's label; "rules the X
        # out"; "… and reject it"; "I had concluded that X" (not "I concluded"); "My claim was: X"
        ("Notes:\n* ~~" + CLAIM + "~~ (retracted)\n* next: the allocator", False, False),
        ("1. " + CLAIM + ".\n2. Re-read the meter.\n3. Conclusion: point 1 is wrong, dropping it.", False, False),
        ("I considered whether " + CLAIM + ". The meter covers it, though. That rules the head out.", False, False),
        ("The head is not why these calls fail. I looked at that explanation — " + CLAIM + " — and reject it.",
         False, False),
        ("Retracting this one. I had concluded that " + CLAIM + ".", False, False),
        ("I concluded that " + CLAIM + ".", True, True),
        ("Withdrawn. My claim was: " + CLAIM + ".", False, False),
        # a subject judged exactly right is no defect; a negated causative "does not make"
        ("Three buffers are not why the calls fail. Pricing the forward, so the planner misses the head while the "
         "checkpoint inputs stay live, is exactly right for this planner.", False, False),
        ("Holding three buffers while the checkpoint inputs stay live does not make the planner miss the head.",
         False, False),
    ],
)  # fmt: skip
def test_round_nineteen_withdrawals_and_denials(statement: str, expected: bool, hypothesis: bool) -> None:
    assert _credited(statement) == (expected, hypothesis)


@pytest.mark.parametrize(
    ("statement", "expected", "hypothesis"),
    [
        # a bracketed "(wrong)" before a noun is an adjective; at a clause's end it is a verdict
        (CORRECT + " Every rank then uses the same (wrong) estimate.", True, True),
        (CORRECT.rstrip(".") + " (wrong).", False, False),
        # "please treat it as tentative" after a paragraph; "I'd want a <check> before committing to that"
        (CORRECT + "\n\nI haven't confirmed this against a run, so please treat it as tentative.", False, True),
        (CORRECT + " I'd want a per-chunk meter comparison before committing to that.", False, True),
        # "Scrap that." takes back the explanation before it; "I had this down as X" is an earlier belief
        ("The peak is a memory leak. Scrap that. " + CORRECT, True, True),
        ("Wait — I had this down as a memory leak, but the allocator is clean. " + CORRECT, True, True),
        ("I had this down as a memory leak. " + CORRECT, True, True),
        # someone's code comment quoted after "left this in …:" is theirs, to the closing backticks, with its "?"
        ("Someone left this in a local branch of planner.py: `# NB: " + CLAIM + "?` The question mark is theirs.",
         False, False),
        ("Priya says `planner.py` is fine. " + CORRECT, True, True),
    ],
)  # fmt: skip
def test_round_nineteen_verdicts_retractions_and_quoted_code(statement: str, expected: bool, hypothesis: bool) -> None:
    assert _credited(statement) == (expected, hypothesis)


@pytest.mark.parametrize(
    ("statement", "expected", "hypothesis"),
    [
        # "Tentative until <a check>." disclaims its paragraph
        (CORRECT + " Tentative until I meter the chunks.", False, True),
        # someone else's claim declined: "No opinion from me yet", "which I haven't endorsed"
        ("Ticket T-12, filed by infra, states that " + CLAIM + ". No opinion from me yet.", False, False),
        ("Ticket T-12 states that " + CLAIM + ". I haven't endorsed it.", False, False),
        ("Ticket T-12 states that " + CLAIM + ". I agree, and the meter confirms it.", True, True),
        # a label that rejects what follows ("Tested and discarded:", "Dropped hypothesis:")
        ("Tested and discarded: the theory that " + CLAIM + ". Swapping the order changed nothing.", False, False),
        ("Dropped hypothesis: " + CLAIM + ".", False, False),
        ("Hypothesis: " + CLAIM + ".", False, True),
        # a truth value answering the sentence before is no verdict; a verdict on a claim still is
        ("The planner charges the head only when `price_head` is true. It's false, so " + CLAIM + ".", True, True),
        (CORRECT + " That's false.", False, False),
        # a negated sameness asserts a difference ("don't make the same …"); a negated causative still denies
        ("The chunks don't make the same demand twice: " + CLAIM + ".", True, True),
        ("Holding three buffers while the checkpoint inputs stay live does not make the planner miss the head.",
         False, False),
    ],
)  # fmt: skip
def test_round_twenty_disclaimers_declines_labels_and_values(statement: str, expected: bool, hypothesis: bool) -> None:
    assert _credited(statement) == (expected, hypothesis)


@pytest.mark.parametrize(
    ("statement", "expected", "hypothesis"),
    [
        # a disclaimer before a bracket, and odds given as "3 to 1"
        ("Likely, though not verified yet (I'd say 3 to 1): " + CLAIM + ".", False, True),
        ("The meter was not verified (it is new): " + CORRECT, True, True),
        # "I'd like to confirm it … before I change anything"
        ("If " + CLAIM + ", the calls fail late. I'd like to confirm it with a meter run before I change anything.",
         False, True),
        (CORRECT + " I confirmed it with a meter run before I changed anything.", True, True),
        # a noun restricted by a negated participle picks out which calls; it denies nothing
        ("For any call not marked as small the planner misses the head: three buffers while the checkpoint inputs "
         "stay live.", True, True),
        ("For any call, the planner does not miss the head: three buffers while the checkpoint inputs stay live.",
         False, False),
    ],
)  # fmt: skip
def test_round_twenty_one_disclaimers(statement: str, expected: bool, hypothesis: bool) -> None:
    assert _credited(statement) == (expected, hypothesis)


@pytest.mark.parametrize(
    ("statement", "expected", "hypothesis"),
    [
        # "To be confirmed" promises a confirmation; it confirms nothing someone else said
        ("Priya says " + CLAIM + ". To be confirmed.", False, False),
        ("Priya says " + CLAIM + ". Confirmed with the meter.", True, True),
        # the code's premise described ("…, on the theory that …") is no hedge of the agent's
        (CORRECT.rstrip(".") + ", on the theory that the forward dominates.", True, True),
        ("The theory that " + CLAIM + " is worth a meter run.", False, True),
        # both outcomes named ("has or hasn't run") disclaim nothing
        (CORRECT.rstrip(".") + ", whether or not the meter has or hasn't run.", True, True),
        # "I first pinned this on X. Wrong, …" is an earlier belief
        ("I first pinned this on a memory leak. Wrong, the allocator is clean. " + CORRECT, True, True),
    ],
)  # fmt: skip
def test_round_twenty_two_confirmations_premises_and_earlier_beliefs(
    statement: str, expected: bool, hypothesis: bool
) -> None:
    assert _credited(statement) == (expected, hypothesis)


@pytest.mark.parametrize(
    ("statement", "expected", "hypothesis"),
    [
        # a label that rejects a list's items after checking them ("Checked and eliminated: A, and the theory that X")
        ("Checked and eliminated: the meter, the allocator, and the theory that " + CLAIM + ". None of these is the "
         "cause.", False, False),
        ("Checked and confirmed: " + CORRECT, True, True),
        # code quoted after an opener and a short place ("Someone left a TODO in a branch: `# TODO: …; …`")
        ("Someone left a TODO in a branch: `# TODO: check the head; the planner misses the head, three buffers, while "
         "the checkpoint inputs stay live`. I don't consider this established.", False, False),
        # a hedged concession of someone else's claim ("Maybe that was true for their setup") endorses nothing
        ("Someone on a forum said " + CLAIM + ". Maybe that was true for their setup; I'm skeptical it applies here.",
         False, False),
        ("Someone on a forum said " + CLAIM + ". That is true here as well: I measured it.", True, True),
        # odds below certainty ("I'd give it 65%") put the claim forward; a percentage of memory does not
        (CORRECT + " I'd give it 65%; the rest is split between the meter and rounding.", False, True),
        (CORRECT + " Giving it 50% more memory does not help.", True, True),
        # a quotation in brackets after the agent's own clause is theirs; the clause is the agent's
        ('The planner misses the head; it holds three buffers and the checkpoint inputs stay live, the same symptom '
         'as issue #5618 ("the planner never prices the head backward").', True, True),
        ('Issue #5618 says the planner misses the head ("three buffers, and the checkpoint inputs stay live there"). '
         "I don't buy it.", False, False),
        # a colon after a negated causative opens the agent's own account
        ("The meter doesn't make the calls fail: the planner misses the head, three buffers while the checkpoint "
         "inputs stay live.", True, True),
        ("The meter doesn't make the planner miss the head, three buffers while the checkpoint inputs stay live.",
         False, False),
        # what a run cannot show is no disclaimer of the agent's
        (CORRECT.rstrip(".") + "; a single meter run can't show it.", True, True),
        (CORRECT.rstrip(".") + ", though I can't prove it yet.", False, True),
        # a label that chases a lead ("Lead to chase: X")
        ("Lead to chase: " + CORRECT, False, True),
        # "I started out thinking X" is an earlier belief, not a claim
        ("I started out thinking it was a memory leak, since the meter climbs. " + CORRECT, True, True),
        # a reason given for a negated verb is asserted; a negated reason is denied
        (CORRECT + " The meter never flags it because of a memory leak.", False, False),
        (CORRECT + " The meter flags it, but not because of a memory leak.", True, True),
        (CORRECT + " The meter doesn't see the head, so the allocator has a memory leak.", False, False),
        (CORRECT + " The meter doesn't see a memory leak, so the allocator is clean.", True, True),
    ],
)  # fmt: skip
def test_round_twenty_three_rejecting_labels_concessions_odds_and_earlier_beliefs(
    statement: str, expected: bool, hypothesis: bool
) -> None:
    assert _credited(statement) == (expected, hypothesis)


@pytest.mark.parametrize(
    ("statement", "expected", "hypothesis"),
    [
        # a denial after the match whose subject is a clause of its own ("…, which would explain why one process is
        # fine") denies nothing the match says; one about the match still does
        (CORRECT.rstrip(".") + ", which would explain why a single call is fine.", True, True),
        ("The planner misses the head: three buffers while the checkpoint inputs stay live is fine.", False, False),
        # "stale" naming what the claim is about ("My suspicion is stale planner tables") takes nothing back
        ("My suspicion is stale planner tables, so " + CLAIM + ".", False, True),
        ("My suspicion was that " + CLAIM + ". That suspicion is stale now.", False, False),
        # … and so is a second clause with its own subject after "and"
        (CORRECT + " The meter never resets and the allocator shows a memory leak.", False, False),
        (CORRECT + " The meter never shows a memory leak and stays flat.", True, True),
        # the code's premise ("…, under the assumption that …") is no hedge of the agent's
        (CORRECT.rstrip(".") + ", under the assumption that the forward dominates.", True, True),
        # where the failure does not show ("When …, this makes no difference") is no null result; an experiment is
        (CORRECT + " When the calls are small, this makes no difference.", True, True),
        (CORRECT + " When I split the calls further, it made no difference.", False, False),
        # "both wrong and …" describes the thing, it takes nothing back
        (CORRECT + " That total is both wrong and different per call.", True, True),
        ("Earlier I wrote that " + CLAIM + ". That is wrong.", False, False),
        # a consequence after a negated verb, whatever its subject, is asserted for a wrong explanation
        (CORRECT + " The meter isn't reset, so allocations show a memory leak.", False, False),
    ],
)  # fmt: skip
def test_round_twenty_four_clauses_before_denials_and_stale_claims(
    statement: str, expected: bool, hypothesis: bool
) -> None:
    assert _credited(statement) == (expected, hypothesis)


@pytest.mark.parametrize(
    ("statement", "expected", "hypothesis"),
    [
        # round 26: "To be confirmed with <a run of several words>: X" disclaims what follows, as a shorter "with a
        # probe" did
        ("To be confirmed with a 2-process run that logs the inner step count: " + CORRECT, False, True),
        ("Still to be checked against a per-rank dump of the live buffers: " + CORRECT, False, True),
        # attack: a confirmation by such a run is no disclaimer
        ("Confirmed with a 2-process run that logs the inner step count: " + CORRECT, True, True),
        (CORRECT + " I confirmed it with a two-rank run that logs the buffer count per step.", True, True),
        # round 26: a retraction with "back" before its object ("I take back the paragraph above"), "pulling this back"
        (CORRECT + "\n\nPS -- I take back the paragraph above. Please don't act on it.", False, False),
        (CORRECT + "\n\nEDIT \u2014 I'm pulling this back. I can't reconcile it with the numbers.", False, False),
        # attack: "pulls back" with a tensor or a value as its object retracts nothing
        (CORRECT + " The allocator then pulls back the freed blocks.", True, True),
        # a named theory checked and then refuted, the contraction too ("it's not that"); a quoted story that
        # "doesn't apply"
        ('Checked the "' + CLAIM + '" theory: it\'s not that.', False, False),
        ('The "' + CLAIM + '" story does not apply to our setup.', False, False),
        # attack: refuting another, named theory leaves the agent's own claim standing, quoted or not
        (CORRECT + " The memory-leak theory does not apply here.", True, True),
        (CORRECT + ' The "memory leak" story does not apply here.', True, True),
        ("Someone suggested a leak. It's not that. " + CORRECT, True, True),
        # round 26: a ranked list of suspects ("My ranking of suspects: (1) most likely, X; (2) less likely, Y") puts
        # its items forward
        ("My ranking of suspects, none confirmed: (1) most likely, " + CLAIM + "; (2) less likely, a memory leak.",
         False, True),
        ("(1) most likely, " + CLAIM + "; (2) less likely, a memory leak.", False, True),
        # round 26: a withdrawal promised on a condition whose line is hard-wrapped inside the condition
        ("My suspicion is that " + CLAIM + ". If the buffer counts\nmatch across ranks, this theory is dead.", False,
         True),
        # attack: the same verdict drawn now, wrapped alike, withdraws
        ("Hypothesis: " + CLAIM + ". The buffer counts\nmatch across ranks, so this theory is dead.", False, False),
        # round 26: "(correct — reason)" grades the code as "(correct)" does, so a "(wrong)" beside it grades the code
        (CORRECT + " It counts the head for the estimate (correct \u2014 it is small) and for the plan (wrong).", True,
         True),
        # attack: a shortlist mentioned after the conclusion, with no list after it, hedges nothing
        (CORRECT + " I ruled out the rest of my shortlist of suspects.", True, True),
    ],
)  # fmt: skip
def test_round_twenty_six_disclaimers_retractions_and_named_theories(
    statement: str, expected: bool, hypothesis: bool
) -> None:
    assert _credited(statement) == (expected, hypothesis)


@pytest.mark.parametrize(
    ("statement", "expected", "hypothesis"),
    [
        # round 27: a numbered hypothesis label ("H2 (open): X") puts X forward
        ("H2 (open): " + CLAIM + ".", False, True),
        ("H1: " + CLAIM + ".", False, True),
        # "Suspicion is that X", with no determiner, at a sentence's start
        ("Plan: test whether the planner is the cause. Suspicion is that " + CLAIM + ".", False, True),
        # "I asked an assistant and it said X" reports X
        ("I asked an assistant and it said " + CLAIM + ".", False, False),
        ("I asked Priya and she thinks " + CLAIM + ".", False, False),
        # attack: the agent's own diagnosis with someone's agreement after it stands
        (CORRECT + " I asked Priya and she agreed.", True, True),
        # "I am withdrawing the v1 root cause" takes back what came before …
        ("Draft root cause (v1): " + CLAIM + ".\n\nv2: I am withdrawing the v1 root cause.", False, False),
        # attack: … but one that names a wrong explanation takes back only that
        (CORRECT + " I am withdrawing the earlier memory leak note.", True, True),
        # "only if" with a past "were" states a rule and its outcome; with a modal it supposes
        ("The planner prices a call only if it is tagged, so the head calls were left out: " + CLAIM + ".", True, True),
        ("The planner would hold only if the head were free, so " + CLAIM + ".", False, True),
        # a list that grades what the code does ("… correct." / "… wrong.") grades the code, not the agent's claims …
        ("Findings:\n* head: the planner misses the head. wrong.\n* buffers: three buffers while the checkpoint inputs "
         "stay live.\n* the meter: counts every call. correct.", True, True),
        # … a lone "Wrong." after a hypothesis still withdraws it
        ("Hypothesis: " + CLAIM + ". Wrong.", False, False),
        # a hedge inside a compound adjective qualifies the adjective ("possibly-stale counters")
        (CORRECT + " The meter reads possibly-stale counters.", True, True),
        ("Possibly " + CLAIM + ".", False, True),
        # a ranked list's heading is no person ("Ranking suspects for the OOM: (1) most likely, X")
        ("Ranking suspects for the OOM, none confirmed: (1) most likely, " + CLAIM + "; (2) a memory leak.", False,
         True),
        # "the experts" report only with a reporting verb (a MoE layer's experts are its parts)
        ("The experts on the forum say " + CLAIM + ". I am not convinced.", False, False),
        # a parenthesis with its own subject after the mechanism denies its subject, not the mechanism …
        ("The planner doesn't account for the head: three buffers, while the checkpointed inputs stay live (small "
         "calls are fine).", True, True),
        # … one that points back may deny it
        ("The planner doesn't account for the head: three buffers, while the checkpointed inputs stay live (that is "
         "fine).", False, False),
        # a hard-wrapped sentence is read across its line break
        ("The planner doesn't\naccount for the head: three buffers, while the checkpointed inputs stay\nlive.", True,
         True),
        # … not across a line that opens with a label
        ("Hypothesis, not checked\nyet: " + CLAIM + ".", False, True),
    ],
)  # fmt: skip
def test_round_twenty_seven_numbered_hypotheses_asked_reports_and_withdrawing(
    statement: str, expected: bool, hypothesis: bool
) -> None:
    assert _credited(statement) == (expected, hypothesis)


@pytest.mark.parametrize(
    ("statement", "expected", "hypothesis"),
    [
        # round 28: a single-quoted named story that "doesn't stand up" is rejected, like a double-quoted one
        ("The '" + CLAIM + "' story doesn't stand up. The ranks agree.", False, False),
        ("The \u2018" + CLAIM + "\u2019 theory does not hold.", False, False),
        # attack: the agent's own diagnosis after a rejected quoted wrong story stands
        ("The 'memory leak' story doesn't stand up. " + CORRECT, True, True),
        # "instead of" / "rather than" negates its short object, not the predicate after it …
        ("Sizing by the forward instead of the backward means " + CLAIM + ".", True, True),
        ("Sizing by the forward rather than the backward means that " + CLAIM + ".", True, True),
        # attack: … a negated predicate after it is still denied
        ("Sizing by the forward instead of the backward does not mean " + CLAIM + ".", False, False),
        # a "no" after an ellipsis corrects its own sentence, not the diagnosis before it …
        (CORRECT + " The head's buffers are freed by the next step... no, they pile up until the step ends.", True,
         True),
        # attack: … and still takes back the claim in its own sentence
        ("So " + CLAIM + "... no, it's a memory leak after all.", False, False),
        # an elliptical answer under a hypothesis label is the hypothesis ("Working theory: it does not, so X") …
        ("Plan: check whether the planner prices the head. Working theory: it does not, so " + CLAIM + ".", False,
         True),
        # attack: … one in a sentence of its own takes the hypothesis back
        ("Working theory: " + CLAIM + ". It does not.", False, False),
        # an elliptical denial of an "as if" supposition takes nothing back …
        ("The planner doesn't account for the head: three buffers, while the checkpointed inputs stay live, as if the "
         "head were free. It isn't: its backward holds the most.", True, True),
        # attack: … one with no supposition before it takes the diagnosis back
        (CORRECT + " It isn't: its backward holds the most.", False, False),
    ],
)  # fmt: skip
def test_round_twenty_eight_stories_instead_of_self_corrections_and_suppositions(
    statement: str, expected: bool, hypothesis: bool
) -> None:
    assert _credited(statement) == (expected, hypothesis)


def test_round_twenty_eight_a_confirmation_on_a_condition_endorses_nothing_yet() -> None:
    assert not endorses("If the trace peaks in the head, my guess — that " + CLAIM + " — is confirmed.")
    assert not endorses("Hypothesis: " + CLAIM + ". If the trace peaks in the head, I agree with it.")
    # attack: a confirmation said now still endorses
    assert endorses("My guess — that " + CLAIM + " — is confirmed.")
    assert endorses("Hypothesis: " + CLAIM + ". If anything, the trace confirmed it: I agree with it.")


@pytest.mark.parametrize(
    ("statement", "expected", "hypothesis"),
    [
        # round 29: a quotation under a tracker's issue key is the ticket's claim …
        ('From RLM-77: "' + CLAIM + '." I do not endorse it.', False, False),
        # attack: … not one the writer quotes from their own note and confirms
        ('My note in RLM-77: "' + CLAIM + '." The trace confirms it.', True, True),
        # a "no" negates its noun: a negation after it that the phrasing is written with is not denied by it …
        ("The planner has no margin and does not account for the head: three buffers, while the checkpointed inputs "
         "stay live.", True, True),
        # attack: … a "no" after a copula says what the subject is not, to the clause's end
        ("The planner is no culprit and does not account for the head: three buffers, while the checkpointed inputs "
         "stay live.", False, False),
        # attack: … and a denial of the whole sentence still denies it
        ("It is not true that the planner has no margin and does not account for the head: three buffers, while the "
         "checkpointed inputs stay live.", False, False),
    ],
)  # fmt: skip
def test_round_twenty_nine_issue_keys_and_nominal_negations(statement: str, expected: bool, hypothesis: bool) -> None:
    assert _credited(statement) == (expected, hypothesis)


def test_round_twenty_nine_nothing_confirmed_confirms_nothing() -> None:
    assert not endorses("Odds before I dig in: ~65% " + CLAIM + ", ~35% other. Nothing confirmed; I'll print the tags.")
    assert not endorses("Hypothesis: " + CLAIM + ". None confirmed so far.")
    # attack: a confirmation said now still endorses
    assert endorses("Hypothesis: " + CLAIM + ". Confirmed by the trace.")


@pytest.mark.parametrize(
    ("statement", "expected", "hypothesis"),
    [
        # round 30: a part of the statement taken back by name, "above" after it …
        (CORRECT + "\n\nPS - I take the summary above back. Posted too early, treat it as not said.", False, False),
        # attack: … "back" in the mechanism's own words takes nothing back
        (CORRECT + " The allocator gives the summary buffers back only at the end of the step.", True, True),
        # an assistant named bare, with when it answered, owns its answer …
        ("ChatGPT's answer when I pasted the code: " + CLAIM + ". I'm not taking it as the diagnosis.", False, False),
        # … and so does one asked about something, with no "I" before "asked"
        ("Asked an LLM about the OOM and it said " + CLAIM + ". I'm not relying on it.", False, False),
        # attack: … one the writer agrees with is the writer's
        ("ChatGPT's answer when I pasted the code: " + CLAIM + ". I agree, and the trace confirms it.", True, True),
        # agreeing with one party against the one whose claim was quoted endorses nothing …
        ('Reviewer comment on PR #57: "' + CLAIM + '." The author replied that the reviewer is mistaken, and having '
         "read both sides I agree with the author, not the reviewer.", False, False),
        # attack: … agreeing with the quoted reviewer endorses the claim
        ('Reviewer comment on PR #57: "' + CLAIM + '." The author replied that the reviewer is mistaken, but having '
         "read both sides I agree with the reviewer.", True, True),
    ],
)  # fmt: skip
def test_round_thirty_parts_taken_back_assistants_and_contrastive_agreement(
    statement: str, expected: bool, hypothesis: bool
) -> None:
    assert _credited(statement) == (expected, hypothesis)


def test_round_thirty_a_predicate_in_code_called_a_test_refutes_nothing() -> None:
    code = ("The planner doesn't account for the head: the `is_head(p) or rank == 0` test excludes them, three "
            "buffers, while the checkpointed inputs stay live.")  # fmt: skip
    assert _credited(code) == (True, True)
    # attack: a test the agent ran still rules the idea out
    assert _credited(CORRECT + " The rerun excludes it.") == (False, False)


@pytest.mark.parametrize(
    ("statement", "expected"),
    [
        # round 30: an elliptical negative answer that echoes the negated verb phrase before it takes nothing back …
        ("Three buffers pile up while the checkpointed inputs stay live; the planner misses the head because its price "
         "does not include the backward. It doesn't, because static_peak() stops at the forward.", True),
        # attack: … one after a positive last clause answers it, and takes the diagnosis back
        ("The planner doesn't account for the head, so three buffers pile up while the checkpointed inputs stay "
         "live. They don't: I traced it.", False),
        # attack: … and one whose auxiliary differs from the negation's answers something else
        ("The planner doesn't account for the head: three buffers, while the checkpointed inputs stay live. They "
         "aren't.", False),
    ],
)  # fmt: skip
def test_round_thirty_an_elliptical_echo_of_a_negation(statement: str, expected: bool) -> None:
    assert _credited(statement)[0] is expected


#: A rubric in the shape of the scheduler case, for what a fix says ought not to happen.
PREPARED = dataclasses.replace(
    RUBRIC,
    concepts=(
        _concept("prepared", r"\bscheduler\b[^.;]{0,30}?\bgo(?:es)?\s+through\s+accelerator\.prepare"),
        _concept("per process", r"\bnum_processes\s+times\b"),
    ),
)


@pytest.mark.parametrize(
    ("statement", "expected"),
    [
        # round 30: what a fix says ought not to be done denies nothing the code does …
        ("The scheduler shouldn't go through accelerator.prepare(). When it does, Accelerate steps it num_processes "
         "times per update.", True),
        # attack: … a hedged verdict with "shouldn't be" still denies
        ("The scheduler goes through accelerator.prepare() and is stepped num_processes times per update, but that "
         "shouldn't be the cause.", False),
        # attack: … and a plain negation still denies
        ("The scheduler does not go through accelerator.prepare(), so nothing steps it num_processes times.", False),
    ],
)  # fmt: skip
def test_round_thirty_what_ought_not_to_be_done_denies_nothing(statement: str, expected: bool) -> None:
    assert RULES.judge(statement, PREPARED).correct is expected


#: A rubric whose effect is entailed, in the shape of the tensor-parallel clipping case.
DRIFTING = dataclasses.replace(
    RUBRIC,
    concepts=(_concept("unclipped", r"\brank\s+1\s+never\s+scales\b"),),
    entailed=(_concept("drift", r"\bdrift\w*\s+from\s+rank\s+0"),),
)


@pytest.mark.parametrize(
    ("statement", "expected"),
    [
        # round 30: "instead of" negates its short object, not a second predicate after "and" …
        ("Rank 1 never scales the replicas; its masters move by lr*g instead of lr*g*c/n and drift from rank 0's.",
         True),
        # (round 31: "we skip 6 micro-batches instead of 24 and redo old data")
        ("Rank 1 never scales the replicas; its masters take 6 steps instead of 24 and repeat updates that drift from "
         "rank 0's.", True),
        # attack: … a negation of that predicate still denies it
        ("Rank 1 never scales the replicas; its masters move by lr*g, but they don't drift from rank 0's.", False),
    ],
)  # fmt: skip
def test_round_thirty_instead_of_then_a_second_predicate(statement: str, expected: bool) -> None:
    assert RULES.judge(statement, DRIFTING).correct is expected


def test_round_thirty_what_someone_wants_done_is_their_proposal() -> None:
    # round 30: a wrong explanation someone wants acted on is theirs, and spoils nothing …
    assert _credited("Jonas wants to treat it as a memory leak. " + CORRECT + " Restarting won't help.") == (True, True)
    # attack: … one the writer states is the writer's
    assert _credited("Jonas was right: it is a memory leak. " + CORRECT) == (False, False)


@pytest.mark.parametrize(
    ("statement", "expected", "hypothesis"),
    [
        # round 31: "we" no longer believe, and a "reasoning" that was mistaken, take the claim back …
        (CORRECT.rstrip(".") + ". The reverted change rested on that idea. We no longer believe it.", False, False),
        ("The change assumed that " + CLAIM + ". That reasoning was mistaken and the change is reverted.", False,
         False),
        # attack: … a mistaken reasoning before the diagnosis leaves it standing
        ("My first reasoning was mistaken. " + CORRECT, True, True),
        # "it's not the case" after the idea it answers refutes it …
        ("I looked at the idea that " + CLAIM + ", and it's not the case.", False, False),
        # attack: … "it's not the case that" denies what follows, not the diagnosis before it
        (CORRECT + " It's not the case that a safety factor is too small.", True, True),
        # a tool's report ("its report") is someone else's claim …
        ("TrainCheck flagged the OOM and its report suggests " + CLAIM + ". I'm not taking it as our diagnosis.", False,
         False),
        # a bare "they" is the code or the ranks as often as people: what "they" do is no one's claim …
        ("Plan: trace the peak. If it sits in the head, the suspect is the planner: they price the forward only, so "
         + CLAIM + ". I'm not claiming anything yet.", False, True),
        # attack: … what "they" think is still theirs
        ("From #training: they think " + CLAIM + ". I'm not adopting it.", False, False),
        # attack: the writer's own "That is exactly what happens" after a report endorses it
        ("Priya says " + CLAIM + ". That is exactly what happens here.", True, True),
    ],
)  # fmt: skip
def test_round_thirty_one_retractions_reports_and_refutations(statement: str, expected: bool, hypothesis: bool) -> None:
    assert _credited(statement) == (expected, hypothesis)


def test_round_thirty_one_a_later_denial_answers_a_hypothesis_after_an_earlier_one() -> None:
    # the whole judge: the stance model reads it denied, and the rules see the concept put forward ("whether or not …")
    # and denied in a later sentence; an earlier denial (inside the named explanation) is no answer to it
    judge = RubricJudge()
    statement = (
        'Ruled out the "' + CLAIM + '" explanation: whether or not the planner misses the head makes no difference to '
        "the peak here, the trace is identical on both runs. So the planner missing the head is not what breaks the "
        "call."
    )
    verdict = judge.judge(statement, RUBRIC)
    assert (verdict.correct, verdict.hypothesis) == (False, False)
    # attack: only a denial before what was put forward, and none after it, answers nothing
    text = 'Not "X". Whether X holds I test next.'
    held = {"c": {"denied": Assertion(5, 6), "hypothesised": Assertion(17, 18)}}
    assert not _rejected_later(text, held, ["c"], {"c": Assertion(5, 6)})
    assert _rejected_later(text + " So X is not it.", held, ["c"], {"c": Assertion(40, 41)})


def test_round_thirty_one_the_codes_assumption_found_false_takes_nothing_back() -> None:
    # round 31: "that assumption is false" about what the code assumes is a finding; it takes back nothing before it
    statement = CORRECT + " The planner assumes the head is free. For our vocab that assumption is false."
    assert _credited(statement) == (True, True)
    # attack: the writer's own reasoning found mistaken still takes its claim back
    assert _credited("I reasoned that " + CLAIM + ". That reasoning was mistaken.") == (False, False)


def test_round_thirty_one_wrong_under_a_condition_is_a_finding() -> None:
    # round 31: "this is wrong once …" says when the computation goes wrong; it takes nothing back
    statement = (
        "The planner misses the head, and even on one call this is wrong once the vocab is large: three "
        "buffers while the checkpoint inputs stay live."
    )
    assert _credited(statement) == (True, True)
    # attack: "this is wrong" as a verdict still takes back what came before it
    assert _credited(CORRECT + " Hmm, this is wrong: the trace says otherwise.") == (False, False)


def test_round_thirty_one_someones_that_is_exactly_it_is_no_endorsement() -> None:
    # round 31: "that is exactly what happens" right after someone's report verb is their words, not the writer's
    assert ENDORSEMENT.search("A commenter on our ticket says that is exactly what happens here.") is None
    # attack: the writer's own sentence still endorses
    assert ENDORSEMENT.search("A commenter pointed at #3256. That is exactly what happens here.") is not None


def test_round_thirty_one_a_denial_inside_a_parenthesis_has_its_own_subject() -> None:
    # round 31: "… (so A is not the problem)" denies A, not the match before the parenthesis
    statement = CORRECT.rstrip(".") + " (the step runs late, so the margin is not the problem)."
    assert _credited(statement) == (True, True)
    # attack: a parenthesis inside the subject still leaves the predicate after it denying the match
    assert _credited("The planner misses the head (three buffers while the checkpoint inputs stay live) is not the "
                     "problem here.") == (False, False)  # fmt: skip


@pytest.mark.parametrize(
    ("statement", "expected"),
    [
        # stop 57: a label that calls what follows a wrong theory takes it back
        ("Wrong theory: " + CORRECT, (False, False)),
        ("Mistaken hypothesis: " + CLAIM + ".", (False, False)),
        ("False lead: " + CLAIM + ".", (False, False)),
        ("Red herring: " + CLAIM + ".", (False, False)),
        # attack: what the code wrongly assumes is a finding, and a wrong theory named before the diagnosis leaves it
        ("Wrong assumption: the planner assumes the head is free; " + CLAIM + ".", (True, True)),
        ("A wrong theory: the allocator fragments. " + CORRECT, (True, True)),
        ("Initial hypothesis: " + CLAIM + ". Confirmed by the trace.", (True, True)),
    ],
)
def test_stop_57_a_wrong_theory_label_takes_back_what_it_labels(statement: str, expected: tuple[bool, bool]) -> None:
    assert _credited(statement) == expected


@pytest.mark.parametrize(
    ("statement", "expected"),
    [
        # round 32: "instead of" denies its short object, not a second predicate with its auxiliary after "and"
        ("The planner misses the head: it charges one chunk instead of all and is missing three buffers, while the "
         "checkpoint inputs stay live.", (True, True)),
        # … and "never" does not reach a second predicate with a modal after "and"
        ("The planner misses the head and the checkpoint inputs stay live; the planner is never told about it and "
         "would keep three buffers out.", (True, True)),
        ("The planner misses the head and the checkpoint inputs stay live; the planner is never told about it and "
         "keeps three buffers out.", (True, True)),
        # … and a flag's value in a config file it names is no verdict
        ("I suspect the planner misses the head: three buffers while the checkpoint inputs stay live, since the price "
         "is tied to plan.exact and that's false in small.toml.", (False, True)),
        # attack: a verdict of false is still one, and a negated second predicate is still negated
        ("I suspect the planner misses the head: three buffers while the checkpoint inputs stay live. That's false in "
         "this code.", (False, False)),
        ("I suspect the planner misses the head: three buffers while the checkpoint inputs stay live. That's false.",
         (False, False)),
        ("The planner misses the head and the checkpoint inputs stay live, but it never charges one chunk instead of "
         "all and is never missing three buffers.", (False, False)),
    ],
)  # fmt: skip
def test_round_32_a_second_predicate_and_a_flags_value(statement: str, expected: tuple[bool | None, bool]) -> None:
    assert _credited(statement) == expected


def test_round_32_a_claim_said_withdrawn_in_the_passive_is_taken_back() -> None:
    # round 32: "Section 3 is withdrawn in full" takes back what section 3 said
    statement = "Erratum. Section 3 said that " + CLAIM + ". Section 3 is withdrawn in full; the rest stands."
    assert _credited(statement) == (False, False)
    assert _credited(CORRECT + " That claim is retracted.") == (False, False)
    # attack: a claim withdrawn before the diagnosis leaves the diagnosis, and "withdrawn" describing code is no verdict
    assert _credited("The fragmentation theory is withdrawn. " + CORRECT) == (True, True)
    assert _credited(CORRECT + " The reservation is withdrawn from the pool only after the step.") == (True, True)


def test_round_32_neither_is_confirmed_confirms_nothing() -> None:
    # round 32: "Neither is confirmed." after two candidates leaves them put forward
    assert not endorses("Best guess: X. The other candidate is Y. Neither is confirmed.")
    assert not endorses("X. Nothing is confirmed yet.") and not endorses("X or Y; none are confirmed.")
    # attack: a confirmation is still one
    assert endorses("Hypothesis: X. The probe confirmed it.") and endorses("X. Confirmed by the trace.")
    assert _credited("Best guess: " + CLAIM + ". The other candidate is a leak. Neither is confirmed.") == (False, True)


def test_round_32_an_explanation_ruled_out_by_name_is_taken_back() -> None:
    # round 32: "ruling out the <named> explanation" without quotes, like the quoted form of round 27: a concept matched
    # only in the name of what is ruled out is not asserted
    ruled_out = "So I'm ruling out the three buffers explanation."
    assert _credited("The planner misses the head and the checkpoint inputs stay live. " + ruled_out) == (False, False)
    assert _credited(ruled_out + " The planner misses the head and the checkpoint inputs stay live.") == (False, False)
    # attack: another explanation ruled out, before the diagnosis or after it, leaves the diagnosis
    assert _credited("I'm ruling out the fragmentation explanation. " + CORRECT) == (True, True)
    assert _credited(CORRECT + " I am ruling out the fragmentation explanation.") == (True, True)


def test_round_32_a_supposition_argued_against_is_no_hypothesis() -> None:
    # round 32: "It can't be X. If X were so, Y would … So not X." supposes X to refute it: with the concept denied or
    # withdrawn in another sentence, the denial answers the supposition wherever it stands
    text = "It can't be X. If X were happening, the norm would be off too. So I'm ruling out the X explanation."
    put, denial = text.index("X were"), text.index("X.")
    held = {"c": {"hypothesised": Assertion(put, put + 1), "denied": Assertion(denial, denial + 1)}}
    assert _rejected_later(text, held, ["c"])
    # attack: a supposition the statement does not argue against stays put forward, and so does a plain hypothesis
    # denied only earlier (round 26's rule: the denial must come after it)
    assert not _rejected_later(text, {"c": {"hypothesised": Assertion(put, put + 1)}}, ["c"])
    plain = "It can't be X. Hypothesis: X is happening."
    held = {"c": {"hypothesised": Assertion(plain.index("X is"), plain.index("X is") + 1),
                  "denied": Assertion(plain.index("X."), plain.index("X.") + 1)}}  # fmt: skip
    assert not _rejected_later(plain, held, ["c"])


def test_round_32_a_modal_in_an_aside_makes_no_condition() -> None:
    # round 32: "… only if it carries the tag, and ours don't (megatron-core would set it at init)": the "would" is in
    # an aside, so the "only if" sentence is a finding
    statement = (CORRECT.rstrip(".") + ", since the planner counts a buffer only if it is tagged, and the head's "
                 "are not (the allocator would tag them at init, which we disable).")  # fmt: skip
    assert _credited(statement) == (True, True)
    # attack: a modal outside the aside still makes the "only if" sentence a supposition
    assert _credited("The planner would miss the head only if " + CLAIM + ".") == (False, True)


def test_round_33_a_ruling_out_not_done_takes_nothing_back() -> None:
    # round 33: "haven't ruled that out" (another cause left open) and "can't be ruled out" refute nothing
    candidate = "Candidate: " + CLAIM + "."
    assert _credited(candidate + " Could just as well be a leak; haven't ruled that out.") == (False, True)
    assert _credited(CORRECT + " A leak can't be ruled out.") == (True, True)
    assert _credited(CORRECT + " Not ruled out yet: a leak.") == (True, True)
    # attack: a ruling-out that was done still takes the claim back, in either form
    assert _credited(candidate + " I have ruled that out.") == (False, False)
    assert _credited(CORRECT + " That has been ruled out.") == (False, False)
    assert _credited(CORRECT + " Ruled out.") == (False, False)


def test_round_33_a_settings_value_with_its_name_between() -> None:
    # round 33: "it follows the `deterministic` setting, which is false" notes the setting's value
    assert _credited(CORRECT.rstrip(".") + " (it follows the `deterministic` setting, which is false).") == (True, True)
    # attack: without a code token before the setting's name it is still a verdict on what came before
    assert _credited("The " + CLAIM[4:] + " in the default setting, which is false.") == (False, False)


def test_round_33_the_agents_own_conditional_story() -> None:
    # round 33: "if they differ, the story would be: X" is the agent's own conditional, put forward
    plan = "Plan: 1. dump the sizes. 2. if they differ, the story would be: " + CLAIM + ". Will confirm or drop it."
    assert _credited(plan) == (False, True)
    assert _credited("If so, then the story would be: " + CLAIM + ".") == (False, True)
    # attack: a case made for someone else's claim still reports it
    assert _credited("Their argument would be: " + CLAIM + ".") == (False, False)
    assert _credited("The argument would be: " + CLAIM + ". I don't buy it.") == (False, False)


def test_round_33_nor_goes_on_listing_what_an_account_leaves_out() -> None:
    # round 33: "doesn't account for X (…) nor for Y": Y is presupposed like X, however far the aside puts it
    statement = (
        "The planner doesn't account for the head (three buffers over the padded vocab) nor for the checkpoint "
        "inputs stay live."
    )
    assert _credited(statement) == (True, True)
    # attack: a "nor" opening its own predicate denies it, and a "nor" with no omission before it is a negation
    assert _credited(
        "The planner doesn't account for the head: three buffers, nor do the checkpoint inputs stay live."
    ) == (False, False)
    assert _credited(
        "The planner misses the head: three buffers. Not a leak, nor the checkpoint inputs stay live."
    ) == (False, False)


def test_round_33_a_verification_of_nothing_confirms_nothing() -> None:
    # round 33: "I lean towards A but have verified neither" leaves A put forward
    both = "Hypothesis A: " + CLAIM + ".\nHypothesis B: a leak.\n"
    assert _credited(both + "I lean towards A but have verified neither.") == (False, True)
    assert _credited(both + "I have verified none of it.") == (False, True)
    # attack: a verification is still a confirmation
    assert _credited(both + "I have verified A.") == (True, True)


def test_round_34_a_new_possessive_subject_ends_a_negation() -> None:
    # round 34: "the guard never fires and ShardBatchSampler's DistributedSampler replays …": a new subject, possessive
    statement = (
        "The planner misses the head: the guard never fires and {} three buffers while the checkpoint inputs stay live."
    )
    assert _credited(statement.format("Planner's allocator holds")) == (True, True)
    assert _credited(statement.format("HeadAllocator's pool replays")) == (True, True)
    # attack: a second predicate of the same subject stays under the negation
    assert _credited(statement.format("holds")) == (False, False)


def test_round_34_a_no_compound_negates_nothing() -> None:
    # round 34: "no-drop gating", "the no-op hook" are adjectives, not negations of what follows
    assert _credited("In no-drop mode " + CLAIM + ".") == (True, True)
    assert _credited("With the no-op hook " + CLAIM + ".") == (True, True)
    # attack: "no-one" is still a negation, and so is a plain "no"
    assert _credited("No-one thinks " + CLAIM + ".") == (False, False)
    assert _credited("In drop mode no " + CLAIM[4:] + ".") == (False, False)


def test_round_35_a_ruling_out_not_done_leaves_what_was_said_a_hypothesis() -> None:
    # round 35: "X. That can't be ruled out yet." puts X forward; it does not conclude it
    assert _credited(CLAIM.capitalize() + ". That can't be ruled out yet.") == (False, True)
    assert _credited(CLAIM.capitalize() + ". I haven't ruled it out.") == (False, True)
    # attack: a ruling-out not done about something else named leaves the claim concluded
    assert _credited(CLAIM.capitalize() + ". I can't rule out a second, smaller effect from the allocator.") == (
        True,
        True,
    )


def test_round_35_the_claim_would_be_that_opens_an_argument_the_agent_answers() -> None:
    # round 35: "The claim would be that X; but …" states a case made for X, not the agent's conclusion
    statement = "The claim would be that " + CLAIM + "; but the peak is the same with the head excluded."
    assert _credited(statement) == (False, False)
    # attack: the agent's own conditional after "if …, " still puts X forward as a hypothesis
    assert _credited("If the peaks differ, the claim would be that " + CLAIM + ".") == (False, True)


def test_round_35_an_edit_not_made_yet_takes_nothing_back() -> None:
    # round 35: "Nothing changed in the code yet." says no edit was made; it is no experiment that changed nothing
    plan = "Plan: 1. Dump the peaks per call. 2. My working hypothesis is that " + CLAIM + ".\n"
    assert _credited(plan + "Nothing changed in the code yet.") == (False, True)
    assert _credited(plan + "Nothing changed yet.") == (False, True)
    # attack: an experiment that changed nothing still refutes what it tested
    assert _credited(plan + "I priced the head in and nothing changed.") == (False, False)


def test_round_35_a_plural_list_label_is_no_person_speaking() -> None:
    # round 35: "Candidates:" before a list is a label, not a person named Candidates whose claim the agent declines
    statement = "Candidates:\n(a) " + CLAIM + ";\n(b) fragmentation.\n(a) fits best, but I haven't confirmed it."
    assert _credited(statement) == (False, True)
    # attack: a person's name before a colon still reports a claim the agent declines
    assert _credited("Priya: " + CLAIM + ". I haven't confirmed it.") == (False, False)


def test_round_35_a_claim_put_first_and_then_excluded_is_denied() -> None:
    # round 35: "The idea that X, I checked and excluded: …"
    statement = "The idea that " + CLAIM + ", I checked and excluded: the peaks match the price."
    assert _credited(statement) == (False, False)
    assert _credited("The theory that " + CLAIM + ", we ruled out.") == (False, False)
    # attack: the same opening with the agent's own conclusion after it is no denial
    assert _credited("The idea that " + CLAIM + ", I checked and confirmed: it holds.") == (True, True)


def test_round_35_an_earlier_version_called_wrong_is_withdrawn() -> None:
    # round 35: "Diagnosis (v1): X.\n\nDiagnosis (v2, replaces v1): On reflection, v1 is wrong -- Y."
    statement = "Diagnosis (v1): " + CLAIM + ".\n\nDiagnosis (v2, replaces v1): On reflection, v1 is wrong -- {}."
    assert _credited(statement.format("the allocator fragments")) == (False, False)
    # attack: a version called right keeps it
    assert _credited(statement.replace("v1 is wrong", "v1 is right").format("and the head is the cause")) == (
        True,
        True,
    )


def test_round_35_what_the_code_leaves_out_is_a_finding_not_a_ruling_out() -> None:
    # round 35: "… so rank 1's fc1 and fc2 shards are excluded": the code excludes them, the agent denies nothing
    assert _credited(CLAIM.capitalize() + ", so rank 1's gradient shards are excluded.") == (True, True)
    # attack: a claim called excluded is still ruled out
    assert _credited("The idea " + CLAIM + " is excluded.") == (False, False)


def test_round_35_a_new_subject_in_the_past_tense_ends_a_negation() -> None:
    # round 35: "the norm was never global and different ranks scaled by different factors"
    statement = (
        "The planner misses the head: the guard never fired and {} three buffers while the checkpoint inputs stay live."
    )
    assert _credited(statement.format("the allocator held")) == (True, True)
    assert _credited(statement.format("rank 1 kept")) == (True, True)
    # attack: a second participle of the same subject stays under the negation
    assert _credited(statement.format("correctly held")) == (False, False)


def test_round_35_instead_of_negates_a_four_word_object_only() -> None:
    # round 35: "uses the norm of its own shard rather than the full gradient's norm and scales by its own coefficient"
    statement = (
        "The planner misses the head rather than {} and scales three buffers while the checkpoint inputs stay live."
    )
    assert _credited(statement.format("the full decoder's memory")) == (True, True)
    # attack: a negation before the claim still denies it
    assert _credited(
        "The planner misses the head, but never scales three buffers while the checkpoint inputs stay live."
    ) == (
        False,
        False,
    )


def test_round_35_the_agents_own_account_said_not_to_hold_is_withdrawn() -> None:
    # round 35: "Notes, step 1: X. … So my step-1 explanation does not hold. Final answer: Y"
    statement = (
        "Step 1: "
        + CLAIM
        + ".\nStep 2: the peaks match the price. So my step-1 explanation {}. Final answer: none yet."
    )
    assert _credited(statement.format("does not hold")) == (False, False)
    assert _credited(statement.format("no longer stands")) == (False, False)
    # attack: someone else's account not holding takes nothing of the agent's back
    assert _credited(statement.format("does not hold").replace("my step-1", "the ticket's")) == (True, True)


def test_round_35_a_time_stamped_no_wrong_takes_the_earlier_note_back() -> None:
    # round 35: "11:20 -- X.\n11:55 -- no, wrong. Y": the later note takes the earlier one back
    statement = "11:20 -- " + CLAIM + ".\n11:55 -- {} The peaks match the price; something else."
    assert _credited(statement.format("no, wrong.")) == (False, False)
    assert _credited(statement.format("wrong.")) == (False, False)
    # attack: a later note that says nothing is wrong keeps it
    assert _credited(statement.format("confirmed.").replace(" The peaks match the price; something else.", "")) == (
        True,
        True,
    )


def test_round_35_an_expert_is_a_person_only_when_it_reports() -> None:
    # round 35: "the all-reduce for an expert runs over its group" names a MoE expert, no one whose claim is declined
    text = (
        "I suspect a mismatch: the all-reduce for an expert runs over its group and {}. I haven't confirmed this yet."
    )
    assert reading.scopes(text.format(CLAIM)).attributed == ()
    # attack: an expert who says something still reports a claim the agent declines
    assert reading.scopes(text.replace("an expert runs", "an expert says it runs").format(CLAIM)).attributed != ()


def test_round_35_a_possibility_the_agent_excluded_is_denied() -> None:
    # round 35: "I specifically excluded the possibility that X; the expert updates are consistent."
    assert _credited("I specifically excluded the possibility that " + CLAIM + ".") == (False, False)
    assert _credited("We rejected the idea that " + CLAIM + "; the peaks match.") == (False, False)
    # attack: a possibility the agent kept open is put forward
    assert _credited("I kept open the possibility that " + CLAIM + ".") != (True, True)


def test_round_35_a_proposition_called_not_the_problem_is_denied() -> None:
    # round 35: "Not the ordering -- the idea that X is not the problem here."
    text = "Not the ordering -- the idea that " + CLAIM + " is not the problem here. The spec itself differs."
    assert reading._proposition_denied(text, text.index(CLAIM), text.index(CLAIM) + len(CLAIM))
    # attack: another subject in a clause of its own called not the problem leaves the proposition standing
    text = "I hold to the idea that " + CLAIM + "; fragmentation is not the problem."
    assert not reading._proposition_denied(text, text.index(CLAIM), text.index(CLAIM) + len(CLAIM))


def test_round_35_a_no_that_swaps_a_word_leaves_its_sentence_standing() -> None:
    # round 35: "If X, DeepSpeed would count rank 1's grads... no, exclude them: it would count them only on rank 0"
    text = "If " + CLAIM + ", the planner would price the buffers... no, skip them: the peak would exceed the price."
    assert reading.withdrawals(text, []) == []
    # attack: a "no" followed by a clause of its own still takes its sentence back (round 28)
    assert reading.withdrawals("So " + CLAIM + "... no, it's a memory leak after all.", []) != []
    assert _credited("So " + CLAIM + "... no, it's a memory leak after all.") == (False, False)


def test_round_36_a_claim_checked_after_a_denial_is_denied() -> None:
    # round 36: "X is not the issue. I checked the idea that Y, and …" / "It's not the wrapper. I considered whether Y"
    tail = ", and the peaks match the price. The real failure is in the logger."
    assert _credited("The head is not the issue. I checked the idea that " + CLAIM + tail) == (False, False)
    assert _credited("It is not a planner gap. I considered whether " + CLAIM + tail) == (False, False)
    assert _credited("It's not the planner's model. We looked at the theory that " + CLAIM + tail) == (False, False)
    # attack: the same sentence with no denial before it is only put forward
    assert _credited("I considered whether " + CLAIM + ".") == (False, True)
    # attack: a check that confirmed it after the denial of something else keeps it
    assert _credited("It is not a memory leak. I checked the idea that " + CLAIM + ", and I confirmed it.") == (
        True,
        True,
    )
    # attack: "I checked that X" verifies X; a denial before it denies something else
    assert _credited("It is not a memory leak. I checked that " + CLAIM + ".") == (True, True)


def test_round_36_a_claim_ruled_out_after_its_name_is_denied() -> None:
    # round 36: "I ruled out the divisor in reduction.py, i.e. the idea that X"
    assert _credited("I ruled out the head in memory.py, i.e. the idea that " + CLAIM + ".") == (False, False)
    assert _credited("We ruled out the planner, that is, the idea that " + CLAIM + ".") == (False, False)
    # attack: a name and the idea kept open is no ruling-out
    assert _credited("I kept the head in memory.py, i.e. the idea that " + CLAIM + ", open.") != (True, True)


def test_round_36_a_numbered_section_called_wrong_or_superseded_is_withdrawn() -> None:
    # round 36: "Section 1 - X.\n\nSection 3. Given Section 2, Section 1 was wrong." / "Summary v2 (supersedes v1): Y"
    section = "Section 1 - Cause. " + CLAIM.capitalize() + ".\n\nSection 2 - Check. {}"
    assert _credited(section.format("Given the reruns, Section 1 was wrong; the logger is at fault.")) == (False, False)
    assert _credited("Summary v1: " + CLAIM + ".\n\nSummary v2 (supersedes v1): the logger.") == (False, False)
    # attack: a section called right keeps it; code that supersedes a value withdraws nothing
    assert _credited(section.format("Given the reruns, Section 1 was right.")) == (True, True)
    assert _credited(CLAIM.capitalize() + ". The new budget supersedes the old price.") == (True, True)


def test_round_36_an_endorsement_true_only_of_another_version_endorses_nothing() -> None:
    # round 36: 'Reviewer: "X." My answer: that was true for old DDP versions, but …'
    quoted = 'Reviewer: "' + CLAIM.capitalize() + '."\n\nMy answer: that was true {}, but the planner now prices it.'
    assert _credited(quoted.format("for old versions")) == (False, False)
    assert _credited(quoted.format("of the legacy planner")) == (False, False)
    # attack: an unlimited endorsement still takes the claim as the agent's own
    assert _credited('Reviewer: "' + CLAIM.capitalize() + '."\n\nMy answer: that is true.') == (True, True)


def test_round_36_an_endorsing_word_inside_the_reported_claim_endorses_nothing() -> None:
    # round 36: "A forum post I found argues that X, and that this is exactly what happens to our head."
    text = "A forum post I found argues that " + CLAIM + ", and that this is exactly what happens here. I doubt it."
    assert reading.scopes(text).attributed != ()
    # attack: the agent's own "that's exactly what happens" after the claim still endorses it
    text = "A forum post I found argues that " + CLAIM + ". That's exactly what happens here."
    assert reading.scopes(text).attributed == ()


def test_round_36_reproducing_the_run_does_not_endorse_a_reported_claim() -> None:
    # round 36: 'The previous agent\'s notes conclude: "X". I reproduced the run on one rank and saw the same gap.'
    text = "The previous agent's notes conclude: \"" + CLAIM + '." I reproduced the run on one rank and saw the same.'
    assert reading.scopes(text).attributed != ()
    # attack: reproducing the effect it claims still endorses it
    text = "The previous agent's notes conclude: \"" + CLAIM + '." I reproduced the effect on one rank.'
    assert reading.scopes(text).attributed == ()


def test_round_36_a_reported_claim_goes_on_until_the_agent_rebuts_it() -> None:
    # round 36: "A forum answer says X. Y (more of its claim).\n\nThat was true of old DeepSpeed; it is out of date."
    text = (
        "A forum answer says the planner is at fault. The planner misses the head: three buffers while the checkpoint "
        "inputs stay live.\n\nThat was true of the old planner, so the answer is out of date."
    )
    assert _credited(text) == (False, False)
    # attack: with no rebuttal after it, the next sentence is the agent's own
    spans = reading.scopes(text.split("\n\n")[0]).attributed
    assert spans and spans[0][1] <= text.index("The planner misses")
    # attack: only declining something after it ("I haven't confirmed it") leaves the agent's own sentences its own
    asked = (
        "Question for whoever wrote memory.py: is the head priced at all? If it isn't, "
        + CLAIM
        + ". That could explain the OOM, but I haven't confirmed it."
    )
    assert _credited(asked) == (False, True)
    # attack: a sentence in the agent's own voice ends the claim before the rebuttal
    own = text.replace("The planner misses", "I see the planner misses")
    assert reading.scopes(own).attributed[0][1] <= own.index("I see")


def test_round_36_a_reason_after_a_contradiction_stands() -> None:
    # round 36: "The contract says calls fit the budget; they don't, because X." (X is the agent's own reason)
    text = "The contract says admitted calls fit the budget; they don't, because " + CLAIM + "."
    assert _credited(text) == (True, True)
    # attack: a contradiction with no reason after it still takes back what came before it
    assert _credited(CLAIM.capitalize() + ". It isn't, as far as I can tell.") == (False, False)


def test_round_36_a_verdict_with_its_correction_grades_the_code() -> None:
    # round 36: "- expert slices: ÷ W/ep — wrong, should be ÷ W" marks the code's divisor as the bug
    text = "- " + CLAIM + " — wrong, should be {}\n- the rest is correct"
    assert _credited(text.format("priced at the full peak")) == (True, True)
    assert _credited(CLAIM.capitalize() + " (wrong: must be priced).") == (True, True)
    # attack: a bare verdict still marks the claim false
    assert _credited("- " + CLAIM + " — wrong.\n- the rest is correct") == (False, False)


def test_round_36_a_long_or_worded_candidates_label_opens_a_list_of_hypotheses() -> None:
    # round 36: "Candidates for why embed.weight (stage 0) and head.weight (stage 1) stop matching … with 1:" and
    # "Things that could make a resumed run differ, in the order I want to test them: (a) …"
    items = "\n1. " + CLAIM + ";\n2. the allocator fragments.\nI'll instrument each before picking one."
    long_label = (
        "Candidates for why call 3 (the long one) and call 4 (the short one) both OOM at 24 GiB but not at 40 GiB:"
    )
    assert _credited(long_label + items) == (False, True)
    assert _credited(
        "Things that could make the calls run out of memory, in the order I want to test them:" + items
    ) == (
        False,
        True,
    )
    # attack: a label that reports findings opens no list of hypotheses
    assert _credited("Things I found in the memory trace of call 3 (the long one):" + items) == (True, True)


def test_round_36_an_absence_as_a_subject_negates_nothing_after_it() -> None:
    # round 36: "No flag means it assumes it's a replica and only counts it on rank 0"
    assert _credited("No price tag means " + CLAIM + ".") == (True, True)
    assert _credited("No head term implies " + CLAIM + ".") == (True, True)
    # attack: a "no" with no "means" after its noun still negates
    assert _credited("No planner misses the head: three buffers while the checkpoint inputs stay live.") != (True, True)


def test_round_36_confirm_or_kill_puts_a_suspicion_forward() -> None:
    # round 36: "TODO: confirm or kill my suspicion that X. If confirmed, the fix is Y."
    assert _credited("TODO: confirm or kill my suspicion that " + CLAIM + ". If not, look at the logger.") == (
        False,
        True,
    )
    # attack: a probe that kills the suspicion still takes it back
    assert _credited("My suspicion was that " + CLAIM + ". The probe kills my suspicion.") == (False, False)


def test_round_36_the_code_called_wrong_is_no_rebuttal_of_a_reported_claim() -> None:
    # round 36: 'The comment says X. That's the issue: Y. …, so the current code is wrong whenever …' (agent's own)
    text = "The comment says the planner is at fault. " + CLAIM.capitalize() + ".\n\nSo the {} is {}."
    own = text.format("current code", "wrong")
    assert _credited(own) == (True, True)
    assert all(end <= own.index(CLAIM.capitalize()) for _, end in reading.scopes(own).attributed)
    # attack: the reported comment called out of date makes its continuation theirs
    rebutted = text.format("comment", "out of date")
    assert _credited(rebutted) == (False, False)
    assert any(end > rebutted.index(CLAIM.capitalize()) for _, end in reading.scopes(rebutted).attributed)


def test_round_37_a_numbered_version_point_or_log_entry_struck_is_withdrawn() -> None:
    # round 37: "## Update\nv1 withdrawn, I misattributed it.", "EDIT (v2): striking v1.", "I'm striking point 2.",
    # "09:40 Retract 09:18: …"
    first = "## Root cause (v1)\n" + CLAIM.capitalize() + ".\n\n"
    assert _credited(first + "## Update\nv1 withdrawn, I misattributed it. The logger is at fault.") == (False, False)
    assert _credited(first + "EDIT (v2): striking v1. The logger is at fault.") == (False, False)
    points = "1. Observed: peaks of 9 GiB.\n2. Cause: " + CLAIM + ".\n\nUpdate after the rerun: {}"
    assert _credited(points.format("I'm striking point 2. No replacement yet.")) == (False, False)
    log = "09:18 " + CLAIM + ". Probably it.\n09:40 {} the rerun used another seed."
    assert _credited(log.format("Retract 09:18:")) == (False, False)
    # attack: a point or entry kept, or a step number in the code, withdraws nothing
    assert _credited(points.format("point 2 stands.")) == (True, True)
    assert _credited(log.format("Confirmed 09:18:")) == (True, True)
    assert _credited(CLAIM.capitalize() + ". Step 2 strikes the balance between the two buffers.") == (True, True)


def test_round_37_a_log_entry_that_opens_with_nope_withdraws_the_one_before() -> None:
    # round 37: "09:12 - likely culprit: X\n09:48 - nope. Y. Not the planner."
    log = "09:12 - likely culprit: " + CLAIM + ".\n09:48 - {} the planner prices the head after all."
    assert _credited(log.format("nope.")) == (False, False)
    assert _credited("09:12 " + CLAIM + ".\nNope, the planner prices the head.") == (False, False)
    # attack: "nope" inside a sentence, and a "nope" answering another question, keep the claim
    assert _credited(log.format("confirmed:")) == (True, True)
    assert _credited("Is it a memory leak? Nope. " + CLAIM.capitalize() + ".") == (True, True)


def test_round_37_a_claim_spelled_out_after_a_ruled_out_label_is_denied() -> None:
    # round 37: "Ruled out: RNG replay. The theory would be that X. But …", "Examined and excluded: the possibility
    # that X. This was excluded; …"
    assert _credited("Ruled out: the head. The theory would be that " + CLAIM + ". The logger is at fault.") == (
        False,
        False,
    )
    assert _credited("Examined and excluded: the possibility that " + CLAIM + ". The logger is at fault.") == (
        False,
        False,
    )
    # attack: a theory spelled out with no ruling-out before it is only put forward; "Examined:" rules nothing out
    assert _credited("The head. The theory would be that " + CLAIM + ".") == (False, True)
    assert _credited("Examined: the possibility that " + CLAIM + ".") != (False, False)


def test_round_37_a_claim_known_after_a_part_called_fine_is_denied() -> None:
    # round 37: "The Accelerate scheduler wrapper is fine. I know the claim that X, but …"
    tail = ", but the peaks match the price. The logger is at fault."
    assert _credited("The head's planner is fine. I know the claim that " + CLAIM + tail) == (False, False)
    assert _credited("The planner is not the culprit. I have heard the theory that " + CLAIM + tail) == (False, False)
    # attack: a part called fine before an unrelated finding keeps the finding
    assert _credited("The logger is fine. " + CLAIM.capitalize() + ".") == (True, True)


def test_round_37_a_heading_labels_its_list_and_a_ruled_out_heading_its_section() -> None:
    # round 37: "## Hypotheses\n\n- X" puts X forward; "## Ruled out\n\nX. …\n\n## Root cause\n\nY" denies X
    assert _credited("## Hypotheses\n\n- " + CLAIM + ".\n- the logger.") == (False, True)
    assert _credited("### Possible causes\n- " + CLAIM + ".\n- the logger.") == (False, True)
    ruled_out = "## Ruled out\n\n{}. The rerun shows the peaks match.\n\n## Root cause\n\n{}."
    assert _credited(ruled_out.format(CLAIM.capitalize(), "The logger is at fault")) == (False, False)
    # attack: the next heading ends the ruled-out section; other headings label nothing
    assert _credited(ruled_out.format("A memory leak", CLAIM.capitalize())) == (True, True)
    assert _credited("## Findings\n\n- " + CLAIM + ".") == (True, True)
    assert _credited("## Root cause (was a hypothesis)\n\n" + CLAIM.capitalize() + ".") == (True, True)


def test_round_37_possibly_on_an_adjective_hedges_only_the_adjective() -> None:
    # round 37: 'Cause: "main" is resolved per node from possibly stale local refs, so …'
    assert _credited("Cause: the planner, from possibly stale local refs, misses the head: three buffers while the "
                     "checkpoint inputs stay live.") == (True, True)  # fmt: skip
    # attack: "possibly" on the claim, or on an adjective with no noun after it, still puts it forward
    assert _credited("Cause: possibly " + CLAIM + ".") == (False, True)
    assert _credited(CLAIM.capitalize() + ", and the refs are possibly stale.") == (False, True)


def test_round_37_a_suspicion_not_confirmed_disclaims_the_paragraph() -> None:
    # round 37: "I suspect X: … FSDP would then shard … That's a suspicion from reading hub_cache.py, not something
    # I've confirmed; next I'll hash …"
    disclaimed = CLAIM.capitalize() + ". That's a suspicion from reading memory.py, not something I've {}; next: print."
    assert _credited(disclaimed.format("confirmed")) == (False, True)
    assert _credited(disclaimed.format("checked")) == (False, True)
    # attack: a suspicion confirmed, and something confirmed, keep the claim
    assert _credited(CLAIM.capitalize() + ". That's a suspicion I confirmed with the rerun.") == (True, True)
    assert _credited(CLAIM.capitalize() + ". This is something I've confirmed with the rerun.") == (True, True)


def test_round_37_a_check_whether_answered_in_the_next_sentence() -> None:
    # round 37: "I checked whether X. It can't: …" denies X; "… It does: …" confirms it
    checked = "I checked whether " + CLAIM + ". {} the peaks {} the price."
    assert _credited(checked.format("It can't:", "match")) == (False, False)
    assert _credited(checked.format("No:", "match")) == (False, False)
    assert _credited(checked.format("It is not:", "match")) == (False, False)
    assert _credited(checked.format("It does:", "exceed")) == (True, True)
    # attack: a check still to run, or a next sentence that answers nothing, leaves it open
    assert _credited("I'll check whether " + CLAIM + ". It does in theory.") == (False, True)
    assert _credited("I checked whether " + CLAIM + ". The logger is at fault.") == (False, True)


def test_round_38_struck_versions_and_claims_no_longer_stood_behind_are_withdrawn() -> None:
    # round 38: "Summary (v2, supersedes v1): v1 was a misread.", "I'm no longer standing behind this."
    assert _credited("Summary (v1): " + CLAIM + ".\n\nSummary (v2): v1 was a misread; the logger.") == (False, False)
    assert _credited(CLAIM.capitalize() + ".\n\nSecond look: I'm no longer standing behind this.") == (False, False)
    # attack: a version that stands, and standing behind it, keep the claim
    assert _credited("Summary (v1): " + CLAIM + ".\n\nSummary (v2): v1 was a good start.") == (True, True)
    assert _credited(CLAIM.capitalize() + ".\n\nSecond look: I'm still standing behind this.") == (True, True)


def test_round_38_a_claim_named_after_a_ruling_out_or_a_denial_is_denied() -> None:
    # round 38: "I ruled out a width mismatch: the idea that X", "it's not the ordering in Y, i.e. the idea that X",
    # "Checked and not the cause: the possibility that X"
    assert _credited("I ruled out a head gap: the idea that " + CLAIM + ". The logger is at fault.") == (False, False)
    assert _credited("What it is NOT: it's not the head in memory.py, i.e. the idea that " + CLAIM + ".") == (
        False,
        False,
    )
    assert _credited("Checked and not the cause: the possibility that " + CLAIM + ". The logger is.") == (False, False)
    # attack: a name kept open, and a "checked" label that rules nothing out, do not deny it
    assert _credited("I kept a head gap open: the idea that " + CLAIM + ".") != (False, False)
    assert _credited("Checked: " + CLAIM + ".") == (True, True)


def test_round_38_a_thing_called_the_right_one_endorses_no_reported_claim() -> None:
    # round 38: 'The review bot left this on memory.py: "X" Resolved as won't-fix. …, so that's the right divisor.'
    bot = 'The review bot left this on memory.py: "' + CLAIM.capitalize() + ".\" Resolved as won't-fix. {}"
    assert _credited(bot.format("The planner prices the head, so that's the right budget.")) == (False, False)
    # attack: the claim called right, or the right diagnosis, is endorsed
    assert _credited(bot.format("On reflection that's right.")) == (True, True)
    assert _credited(bot.format("On reflection that's the right diagnosis.")) == (True, True)


def test_round_38_a_supposition_whose_consequence_is_denied_denies_its_condition() -> None:
    # round 38: "If the norms were shard-local the printed grad_norm would jump around, and it doesn't"
    supposed = "If " + CLAIM + ", the peak would exceed the price, {} The logger is at fault."
    assert _credited(supposed.format("and it doesn't.")) == (False, False)
    assert _credited(supposed.format("but it never does.")) == (False, False)
    # attack: a supposition with no denial is only put forward
    assert _credited(supposed.format("so I will measure it.")) == (False, True)


def test_round_38_a_confirmation_in_a_conditional_clause_confirms_nothing() -> None:
    # round 38: "Hypothesis to test next: X. Plan: run both; if the ep2 displacement is 2x the ep1 one, this is it."
    planned = "Hypothesis: " + CLAIM + ". Plan: rerun; {}, this is it."
    assert _credited(planned.format("if the peak exceeds the price by 3 buffers")) == (False, True)
    assert _credited(planned.format("once the peak exceeds the price by 3 buffers")) == (False, True)
    # attack: a confirmation after the run is one
    assert _credited(planned.format("I reran it: the peak exceeds the price by 3 buffers")) == (True, True)


def test_round_38_a_negation_ends_before_a_plural_subject_with_its_own_verb() -> None:
    # round 38: "with ep=2 the group is 1 rank, so nothing gets divided at all and experts get 2x the gradient"
    lead = (
        "The planner misses the head: nothing gets freed at all and {} three buffers while checkpoint inputs stay live."
    )
    assert _credited(lead.format("chunks get")) == (True, True)
    assert _credited(lead.format("chunk rows use")) == (True, True)
    # attack: a second verb of the negated subject, or "get to" (no object of its own), stays negated
    assert _credited(lead.format("chunks get to")) == (False, False)
    assert _credited("Nothing is freed and does not get three buffers while the checkpoint inputs stay live.") == (
        False,
        False,
    )


def test_round_38_an_opening_question_whether_something_is_right_leaves_the_answer_asserted() -> None:
    # round 38: "Is the loss right? compute_loss divides by its own token count, so …" (the agent's own answer)
    assert _credited("Is the budget right? " + CLAIM.capitalize() + ".") == (True, True)
    assert _credited("Is the budget right? " + CLAIM.capitalize() + ". A memory leak is the problem.") == (False, False)
    # attack: a question that names a mechanism still opens a paragraph of hypotheses
    assert _credited("Is the planner even pricing the head? " + CLAIM.capitalize() + ".") == (False, True)


def test_round_39_a_version_said_to_have_misread_its_source_is_withdrawn() -> None:
    # round 39: "Draft conclusion (v2, replaces v1): v1 misread accelerate. … Final answer: the logger."
    v1 = "Draft (v1): " + CLAIM + ".\n\n"
    assert _credited(v1 + "Draft (v2): v1 misread the planner. The logger is at fault.") == (False, False)
    assert _credited(v1 + "Draft (v2): v1 got the planner wrong. The logger is at fault.") == (False, False)
    # attack: a second version that reads the planner again keeps v1
    assert _credited(v1 + "Draft (v2): v1 read the planner right. The logger also lags.") == (True, True)


def test_round_39_a_claim_considered_after_a_verbless_topic_denial_is_denied() -> None:
    # round 39: "Not an optimizer-ownership bug. I considered whether X, which would …, but …"; "Not a stale-optimizer
    # problem. I considered it: X"
    assert _credited("Not a head-pricing bug. I considered whether " + CLAIM + ", but the logger is.") == (
        False,
        False,
    )
    assert _credited("Not the planner. I considered it: " + CLAIM + ". The logger is at fault.") == (False, False)
    # attack: without the denial the same sentence is the agent's own question, and a denial with a contrast in its
    # sentence ("Not the logger, but …") denies only its own subject
    assert _credited("I considered whether " + CLAIM + ".") == (False, True)
    assert _credited("Not the logger. " + CLAIM.capitalize() + ".") == (True, True)


def test_round_39_an_item_marked_struck_is_withdrawn() -> None:
    # round 39: "Notes:\n- [wrong, see below] X\n- below: Y"
    assert _credited("Notes:\n- [wrong, see below] " + CLAIM + "\n- below: the logger is at fault.") == (False, False)
    assert _credited("- (superseded) " + CLAIM + "\n- the logger is at fault.") == (False, False)
    # attack: an item marked right, or a bracketed note that is no verdict, keeps its claim
    assert _credited("Notes:\n- [confirmed] " + CLAIM + "\n- the logger is fine.") == (True, True)
    assert _credited("Notes:\n- [see memory.py] " + CLAIM) == (True, True)


def test_round_39_a_claim_from_the_docs_or_pointed_to_by_a_teammate_and_refuted_is_theirs() -> None:
    # round 39: "The Accelerate docs note that X. I read that as describing …; it doesn't describe our run."; "A
    # teammate pointed to scheduler.py and argued that X. I read the same file and came to the opposite conclusion:
    # that loop …, so it's correct for us."
    assert _credited("The planner docs say that " + CLAIM + ". That does not apply to us; the logger is.") == (
        False,
        False,
    )
    pointed = "A teammate pointed to memory.py and argued that " + CLAIM + ". {}"
    assert _credited(pointed.format("I read it and came to the opposite conclusion: the price is correct.")) == (
        False,
        False,
    )
    # attack: the claim endorsed after the same opening is the agent's own
    assert _credited(pointed.format("I read it and I agree.")) == (True, True)


def test_round_39_a_report_called_noise_is_not_endorsed_by_what_follows() -> None:
    # round 39: 'The lint bot flagged: "X" That lint fires on every model, and it's noise here. … I reproduced it by
    # summing the local norms.'
    bot = 'The lint bot flagged: "' + CLAIM.capitalize() + '." That lint fires everywhere, and {} I reproduced it.'
    assert _credited(bot.format("it's noise here.")) == (False, False)
    assert _credited(bot.format("it's a red herring.")) == (False, False)
    # attack: without the dismissal, reproducing it endorses the report
    assert _credited(bot.format("it fires rightly here.")) == (True, True)


def test_round_39_an_account_declared_dead_is_withdrawn() -> None:
    # round 39: "- peak seems to be head backward: …\n- … so the head story is dead"
    assert _credited(CLAIM.capitalize() + ".\n\nThe logger lags too, so the head story is dead.") == (False, False)
    assert _credited(CLAIM.capitalize() + ". That theory is now debunked: the logger is at fault.") == (False, False)
    # attack: a dead process or rank is no account declared dead
    assert _credited(CLAIM.capitalize() + ". The logger process is dead.") == (True, True)


def test_round_39_a_hyphenated_compound_is_no_negation() -> None:
    # round 39: "the loader's nominal sampler is a do-nothing sequential one" (not a denial of what follows)
    live = " misses the head: three buffers while the checkpoint inputs stay live."
    assert _credited("The do-nothing planner" + live) == (True, True)
    assert _credited("The no-op planner" + live) == (True, True)
    # attack: the plain words still negate
    assert _credited("The planner never" + live) == (False, False)
    assert _credited("No planner" + live) == (False, False)


def test_round_40_a_named_agent_or_reviewer_reports_a_claim() -> None:
    # round 40: "Agent B's report concludes that X. I went through their arithmetic and it's off"
    assert _credited("Agent B's report concludes that " + CLAIM + ". I went through it; the logger is at fault.") == (
        False,
        False,
    )
    assert _credited("Reviewer 2 says that " + CLAIM + ". The logger is at fault.") == (False, False)
    # attack: the report endorsed is the agent's own claim
    assert _credited("Agent B's report concludes that " + CLAIM + ". I agree.") == (True, True)


def test_round_40_a_claim_double_checked_after_a_topic_denial_is_denied() -> None:
    # round 40: "The set_epoch path is not the problem. I double-checked the idea that X; that would only matter …"
    assert _credited("The planner is not the problem. I double-checked the idea that " + CLAIM + ".") == (False, False)
    # attack: without the denial, the idea double-checked is only named
    assert _credited("I double-checked the idea that " + CLAIM + ".") != (True, True)


def test_round_40_a_named_part_or_account_said_not_to_hold_is_withdrawn() -> None:
    # round 40: "## Revised diagnosis\nGiven the second run, the Diagnosis section above does not hold"; "so the wrapper
    # explanation doesn't hold and I've reverted it"
    assert _credited(
        "## Diagnosis\n" + CLAIM.capitalize() + ".\n\n## Revised\nThe Diagnosis section above does not hold."
    ) == (
        False,
        False,
    )
    assert _credited(CLAIM.capitalize() + ".\n\nA rerun fails too, so the head explanation doesn't hold.") == (
        False,
        False,
    )
    # attack: a part said to hold keeps the claim
    assert _credited(CLAIM.capitalize() + ".\n\nA rerun fails too, so the head explanation holds.") == (True, True)


def test_round_40_agreeing_after_a_reply_sides_with_the_reply() -> None:
    # round 40: 'From the PR review thread: "X" The author replied that this is intentional, and I agree with the
    # author'
    thread = (
        'From the PR review thread: "'
        + CLAIM.capitalize()
        + '." The author {} that this is intentional, and I agree with the author.'
    )
    assert _credited(thread.format("replied")) == (False, False)
    assert _credited(thread.format("answered")) == (False, False)
    # attack: with no reply, agreeing endorses the thread's claim
    assert _credited('From the review thread: "' + CLAIM.capitalize() + '." I agree.') == (True, True)


def test_round_40_a_documented_claim_treated_as_a_non_issue_is_declined() -> None:
    # round 40: "The Accelerate docs note that X. … I confirmed the training loss matches the reference to 3 decimals,
    # so I'm treating this as a non-issue"
    docs = "The planner docs note that " + CLAIM + ". I confirmed the loss matches the reference, so {}."
    assert _credited(docs.format("I'm treating this as a non-issue")) == (False, False)
    # attack: without the declining words the documented fact stands
    assert _credited(docs.format("the logger lags")) == (True, True)


def test_round_40_a_label_before_the_agents_own_i_names_no_one() -> None:
    # round 40: "Mechanism I suspect: X" is the agent's hypothesis, not a person called "Mechanism I" suspecting X
    assert _credited("Mechanism I suspect: " + CLAIM + ". Not yet checked.") == (False, True)
    # attack: a name with a letter after it still reports
    assert _credited("Agent B suspects: " + CLAIM + ". The logger is at fault.") == (False, False)


def test_round_40_a_counterfactual_that_spells_out_an_assumption_hedges_nothing() -> None:
    # round 40: "Accelerate assumes a prepared scheduler was built for the batches one process would see if it did all
    # the work, so it steps it num_processes times"
    assumed = "The planner {} the head would stay small if it did all the work, so " + CLAIM + "."
    assert _credited(assumed.format("assumes")) == (True, True)
    assert _credited(assumed.format("was built for the case where")) == (True, True)
    # attack: the agent's own counterfactual still only supposes
    assert _credited("The head would stay small if it did all the work, so " + CLAIM + ".") == (False, True)


def test_round_41_a_topic_denied_in_other_words_denies_the_claim_named_after_it() -> None:
    # round 41: "I don't think the scaler is the problem. I looked at the possibility that X"; "I ruled out the clipping
    # call. I considered whether X"; "It isn't the reduce-scatter/all-reduce order. I considered it: if X"
    assert _credited("I don't think the planner is the problem. I looked at the possibility that " + CLAIM + ".") == (
        False,
        False,
    )
    assert _credited("I ruled out the planner. I considered whether " + CLAIM + ". The logger is at fault.") == (
        False,
        False,
    )
    assert _credited("It isn't the planner. I considered it: " + CLAIM + ". The logger is at fault.") == (False, False)
    # attack: the agent thinking a part is the problem denies nothing
    assert _credited("I think the planner is the problem. I looked at the possibility that " + CLAIM + ".")[1]


def test_round_41_a_question_answered_checked_not_the_problem_is_denied() -> None:
    # round 41: "Scheduler stepped num_processes times per update by Accelerate's wrapper? Checked, not the problem."
    assert _credited(CLAIM.capitalize() + "? Checked, not the problem. The logger is at fault.") == (False, False)
    # attack: the question left open stays a hypothesis
    assert _credited(CLAIM.capitalize() + "? To be checked next.") == (False, True)


def test_round_41_an_analysis_said_not_to_apply_is_withdrawn() -> None:
    # round 41: "### Initial analysis\nX\n\n### Revised analysis\nOn a second look the initial analysis doesn't apply."
    revised = "### Initial analysis\n" + CLAIM.capitalize() + ".\n\n### Revised analysis\nOn a second look {}."
    assert _credited(revised.format("the initial analysis doesn't apply")) == (False, False)
    # attack: an analysis that still applies keeps the claim
    assert _credited(revised.format("the initial analysis still applies")) == (True, True)
    # attack: another account said not to apply takes nothing back
    assert _credited(CLAIM.capitalize() + ". The memory-leak theory does not apply here.") == (True, True)


def test_round_41_wanting_to_see_it_confirmed_confirms_nothing() -> None:
    # round 41: "Plausible, but I want to see it confirmed with a mask dump before calling it."
    assert _credited("Maybe " + CLAIM + ". I want to see it confirmed with a dump before calling it.") == (False, True)
    # attack: a confirmation reported confirms
    assert _credited("Maybe " + CLAIM + ". I confirmed it with a dump.") == (True, True)


def test_round_41_ranked_guesses_are_candidates() -> None:
    # round 41: "Ranked guesses, most likely first:\n1. X;\n2. …\nTesting 1 first with a per-rank step counter."
    ranked = "Ranked guesses, most likely first:\n1. " + CLAIM + ";\n2. the logger lags.\nTesting 1 first."
    assert _credited(ranked) == (False, True)
    # attack: a ranked list of findings asserts its items
    assert _credited("Findings, most important first:\n1. " + CLAIM + ";\n2. the logger lags.") == (True, True)


def test_round_41_a_claim_true_only_of_early_releases_is_not_endorsed() -> None:
    # round 41: "A forum thread claims that X. That was true in the early FSDP releases; current torch registers a
    # hook that makes the norm global. So I don't believe it's our issue"
    thread = "A forum thread claims that " + CLAIM + ". That was true {}; the current planner prices the head."
    assert _credited(thread.format("in the early planner releases")) == (False, False)
    # attack: true here endorses it
    assert _credited(thread.format("in our run too")) == (True, True)


def test_round_41_a_thing_described_as_unrelated_negates_nothing() -> None:
    # round 41: "loader.sampler is then an unrelated SequentialSampler": the adjective describes a part, it denies
    # nothing the sentence goes on to say
    assert _credited("The planner is then an unrelated object that " + CLAIM.removeprefix("the planner ") + ".") == (
        True,
        True,
    )
    # attack: the claim called an unrelated issue is denied
    assert _credited("The planner missing the head (three buffers while the checkpoint inputs stay live) is an "
                     "unrelated issue.") == (False, False)  # fmt: skip


def test_round_41_nothing_that_confirms_a_report_endorses_it() -> None:
    # round 41 (an older fixture, v5n h35): "Someone … reported that X. The poster didn't say how they checked, and
    # nothing in our logs confirms it yet. Noting the report, not adopting it."
    report = "Someone reported that " + CLAIM + ". {} in our logs confirms it yet."
    assert _credited(report.format("Nothing")) == (False, False)
    # attack: the logs confirming it endorse the report
    assert _credited(report.format("Everything").replace(" yet", "")) == (True, True)


def test_round_41_a_wrong_label_before_what_should_happen_calls_out_the_code() -> None:
    # round 41: "- Expert grads: all-reduced over the expert-data-parallel group, divided by W/ep. Wrong: they should be
    # divided by W, since …": the verdict is on the code, it takes back nothing the agent said
    code = "- Planner: " + CLAIM + ". Wrong: {}."
    assert _credited(code.format("it should price the head backward")) == (True, True)
    # attack: a bare verdict before the agent's new account still takes the old one back
    assert _credited("First guess: " + CLAIM + ". Wrong: the logger lags.") == (False, False)


def test_round_41_a_relative_that_did_not_happen_refutes_nothing() -> None:
    # round 41: "…, so … their dropout modules sample different masks, and the gradient is computed for a forward that
    # didn't happen": "that" opens a relative clause on "a forward", it does not point back at the claim
    assert _credited(CLAIM.capitalize() + ", so the step is sized for a forward that didn't happen.") == (True, True)
    # attack: "that" pointing back at the claim still refutes it
    assert _credited(CLAIM.capitalize() + ". That didn't hold up.") == (False, False)
    assert _credited(CLAIM.capitalize() + ", but that doesn't happen here.") == (False, False)


def test_round_42_scrapping_the_draft_withdraws_it() -> None:
    # round 42: "Root cause (draft): X\n\nUpdate after running with the budget off: scrap the draft. The peak …"
    draft = "Root cause (draft): " + CLAIM.capitalize() + ".\n\nUpdate after a rerun: {} the draft. The logger lags."
    assert _credited(draft.format("scrap")) == (False, False)
    # attack: keeping the draft keeps the claim
    assert _credited(draft.format("I confirmed")) == (True, True)


def test_round_42_a_question_answered_not_the_issue_is_denied() -> None:
    # round 42: "X as the unpriced peak? Not the issue here, I checked. The OOMs come from the split path"
    assert _credited(CLAIM.capitalize() + " as the peak? Not the issue here, I checked. The logger lags.") == (
        False,
        False,
    )
    # attack: left open it stays a hypothesis
    assert _credited(CLAIM.capitalize() + " as the peak? I'll check.") == (False, True)


def test_round_42_a_theory_looked_at_and_found_not_the_problem_is_denied() -> None:
    # round 42: "I specifically looked at the theory that X, and it's not the problem."
    looked = "I specifically looked at the theory that " + CLAIM + ", and it's {}."
    assert _credited(looked.format("not the problem")) == (False, False)
    # attack: without the closing clause the theory is only looked at, and the agent's own claim with a part ruled
    # out in the same words stands
    assert _credited("I specifically looked at the theory that " + CLAIM + ".") == (False, True)
    assert _credited(CLAIM.capitalize() + "; the logger lags, but it's not the problem.") == (True, True)


def test_round_42_a_short_list_of_suspects_is_candidates() -> None:
    # round 42: "Short list of suspects:\n- X may …\n- gradient clipping under ZeRO-1\nWill bisect …"
    suspects = "Short list of {}:\n- " + CLAIM + "\n- the logger lags\nWill bisect."
    assert _credited(suspects.format("suspects")) == (False, True)
    # attack: a short list of findings asserts its items
    assert _credited(suspects.format("findings").replace("Will bisect.", "")) == (True, True)


def test_round_42_a_difference_treated_as_expected_noise_confirms_nothing() -> None:
    # round 42: "… so this doesn't concern us; I'm treating the dp2/dp2-ga1 difference as expected bf16 variance."
    assert _credited("Maybe " + CLAIM + ". For now I'm treating the gap as expected bf16 variance.") == (False, True)
    # attack: "as expected" after a hypothesis still confirms it
    assert _credited("Maybe " + CLAIM + ". The dump came back as expected.") == (True, True)


def test_round_42_a_part_that_has_not_run_yet_hedges_nothing() -> None:
    # round 42: "… all 4 layers' checkpoint inputs are still sitting there because the decoder backward hasn't run yet"
    assert _credited(CLAIM.capitalize() + ", because the decoder backward hasn't run yet.") == (True, True)
    # attack: the agent not having run its check yet still hedges
    assert _credited(CLAIM.capitalize() + ". I haven't run it yet.") == (False, True)


def test_round_42_same_state_is_no_one_stating() -> None:
    # round 42: "… the default generator, which is seeded to train.seed on every rank. Same state, same draws, same mask
    # on every sequence chunk."
    assert _credited("Same state, same draws: " + CLAIM + ".") == (True, True)
    # attack: a person who states still reports
    assert _credited("Priya states that " + CLAIM + ". The logger lags.") == (False, False)


def test_round_43_a_withdrawal_after_a_contrast_is_said_now_unless_its_clause_is_a_condition() -> None:
    # round 43: "In principle, X would leave … and repeat the order, but my diff … shows …, so that can't be it."
    supposed = "In principle, the peak would come from this: " + CLAIM + ", but {}."
    assert _credited(supposed.format("the logger shows the budget held, so that can't be it")) == (False, False)
    # attack: a withdrawal the contrast's own clause only promises takes nothing back, after a supposition or a claim
    assert _credited(supposed.format("if the rerun matches, I'll drop it")) == (False, True)
    assert _credited("I suspect " + CLAIM + ", but if the rerun matches, I'll drop it.") == (False, True)
    assert _credited("I suspect " + CLAIM + ", but the rerun matched, so I'll drop it.") == (False, False)
    # … and a contrast on the line before a condition is not in its sentence
    listed = "My leading candidate:\n- " + CLAIM + "\n- one rank skips, the other steps; shards out of step\n"
    assert _credited(listed + "If the next run disagrees, I'll drop it.") == (False, True)


def test_round_43_an_idea_the_agent_wants_to_confirm_is_put_forward() -> None:
    # round 43: "Before changing anything I want to confirm one idea: that the AcceleratedScheduler … steps …"
    assert _credited("Before changing anything I want to confirm one idea: that " + CLAIM + ".") == (False, True)
    assert _credited("Before changing anything we need to check that " + CLAIM + ".") == (False, True)
    # attack: an idea confirmed, or one the agent says it confirmed, is asserted
    assert _credited("Before changing anything I confirmed one idea: that " + CLAIM + ".") == (True, True)
    assert _credited("I wanted proof, and the probe showed that " + CLAIM + ".") == (True, True)


def test_round_43_things_that_look_like_something_else_and_are_excluded_is_a_finding() -> None:
    # round 43: "The unmarked shards on rank 1 look like replicas to DeepSpeed and are excluded, which makes the global
    # norm too small."
    head = "The planner misses the head: its three buffers "
    tail = "; the checkpoint inputs stay live."
    excluded = "look like activations to it and are excluded, so the price is small"
    assert _credited(head + excluded + tail) == (True, True)
    assert _credited(head + "are excluded from the price sum" + tail) == (True, True)
    # attack: a theory excluded, or a claim "and these are excluded", is still denied
    assert _credited("The theory that " + CLAIM + ", is excluded.") == (False, False)
    assert _credited(CLAIM.capitalize() + ", and these are excluded.") == (False, False)


def test_round_44_a_why_question_after_its_label_presupposes_what_it_asks_about() -> None:
    # round 44: "Q: Why do both TP ranks drop the same positions in the blocks? A: Because Stack.forward enters …"
    assert _credited("Q: Why do the checkpoint inputs stay live? A: Because the planner misses the head: three "
                     "buffers.") == (True, True)  # fmt: skip
    # attack: a yes/no question after the label still only asks
    assert _credited("Q: Do the checkpoint inputs stay live because the planner misses the head: three buffers?") == (
        False,
        True,
    )


def test_round_44_not_a_problem_denies_what_it_refers_back_to() -> None:
    # round 44: "I considered that X …; that is not an issue here.", "I considered the untagged-shard issue (X) and it
    # is not an actual problem: the parameters … differ by float noise"
    assert _credited("I considered that " + CLAIM + "; that is not an issue here.") == (False, False)
    assert _credited("I considered the head issue (" + CLAIM + ") and it is not an actual problem: the numbers are "
                     "noise.") == (False, False)  # fmt: skip
    # attack: another part called no problem leaves the claim asserted, and so does a colon after it
    assert _credited(CLAIM.capitalize() + "; the extra copy is not a problem.") == (True, True)
    assert _credited("Float order is not a problem: " + CLAIM + ".") == (True, True)


def test_round_44_an_assumption_of_the_code_called_wrong_takes_nothing_back() -> None:
    # round 44: "AcceleratedScheduler assumes the wrapped scheduler was written for a single-process loop …: … it calls
    # the inner step() P times … That assumption is wrong here: demandnet sizes the schedule from …"
    said = "The planner assumes the head is priced elsewhere, since " + CLAIM + "."
    assert _credited(said + " That assumption is wrong here.") == (True, True)
    # attack: the agent's own assumption called wrong is taken back
    assert _credited("I assumed that " + CLAIM + ". That assumption is wrong.") == (False, False)
    assert _credited("My assumption is that " + CLAIM + ". That assumption is wrong.") == (False, False)
    mine = "The planner assumes the head is priced. I assumed that " + CLAIM + ". My assumption is wrong."
    assert _credited(mine) == (False, False)


def test_round_44_a_denied_topic_then_granted_in_principle_stays_denied() -> None:
    # round 44: "This is not a cache-coherence problem. In principle a node copy with an outdated refs/main would …,
    # but the README says node copies only cache the mirror, so they can't disagree with it."
    granted = "In principle, " + CLAIM + " could happen, but the README says the price is exact."
    assert _credited("This is not a planner problem. " + granted) == (False, False)
    # attack: without the denial before it, the supposition is still put forward
    assert _credited(granted) == (False, True)


def test_round_44_nothing_with_a_pronoun_object_denies_nothing_after_its_colon() -> None:
    # round 44: "The collective schedule is only consistent when … Nothing enforces that: routing.route() calls …
    # without ep_group"
    assert _credited("The price must cover the head, and nothing enforces that: " + CLAIM + ".") == (True, True)
    assert _credited("Nothing enforces that: " + CLAIM + ".") == (True, True)
    # attack: "nothing suggests that X" still denies X
    assert _credited("Nothing suggests that " + CLAIM + ".") == (False, False)
    assert _credited("Nothing here shows that " + CLAIM + ".") == (False, False)


def test_round_44_a_numbered_draft_taken_back_is_withdrawn() -> None:
    # round 44: "### Findings (draft 2, supersedes draft 1)\nAfter instrumenting the run I have to take back draft 1."
    draft = "Draft 1: " + CLAIM + ".\n\nDraft 2: after instrumenting the run I {} back {}. The OOM is the logger."
    assert _credited(draft.format("have to take", "draft 1")) == (False, False)
    assert _credited("Point 1: " + CLAIM + ".\nPoint 2: I take back point 1.") == (False, False)
    # attack: "took back" something that is no part of the statement takes nothing back
    assert _credited(CLAIM.capitalize() + ". The rerun took back 2 GB.") == (True, True)


def test_round_44_or_not_with_what_decides_it_is_no_negation() -> None:
    # round 44: "scaler.step(optimizer) is called between those two and step() skips or not based on
    # found_inf_per_device, which at that point is still just this rank's own check"
    tail = " misses the head: three buffers while the checkpoint inputs stay live."
    assert _credited("The planner steps or not based on flags and" + tail) == (True, True)
    # attack: a bare "or not" in the match, and a plain negation, still deny
    assert _credited("The planner steps or not and" + tail) == (False, False)
    assert _credited("The planner does not step and" + tail) == (False, False)


def test_round_45_a_claim_said_not_to_apply_is_denied() -> None:
    # round 45: "Not the skip count: the claim that the resume skips optimizer steps where it should skip steps x GAS
    # micro-batches doesn't apply."
    assert _credited("The claim that " + CLAIM + " doesn't apply.") == (False, False)
    # attack: another claim said not to apply, or a patch that doesn't apply, leaves the agent's claim standing
    assert _credited(CLAIM.capitalize() + ". The claim that the logger leaks doesn't apply.") == (True, True)
    assert _credited(CLAIM.capitalize() + ". The patch doesn't apply to v1.") == (True, True)


def test_round_45_a_numbered_point_said_not_to_hold_is_withdrawn() -> None:
    # round 45: "4. Retest: it still hung on the 4-rank top-2 config, so point 1 doesn't hold up and I've removed the
    # patch."
    listed = "1. Root cause: " + CLAIM + ".\n2. "
    retest = "Retest: it still hung on the 4-rank config, so point 1 doesn't hold up."
    assert _credited(listed + retest) == (False, False)
    assert _credited(listed + "Point 1 does not hold.") == (False, False)
    # attack: a step that doesn't hold something, and another document's point, take nothing back
    assert _credited(CLAIM.capitalize() + ". Step 3 doesn't hold the lock.") == (True, True)
    assert _credited(CLAIM.capitalize() + ". Point 2 of the ticket does not hold for us.") == (True, True)


def test_round_45_others_claim_said_not_to_match_our_setup_is_declined() -> None:
    # round 45: "PyTorch #104336 and the icefall thread both describe people calling model.module …, with the claim that
    # X. That doesn't match our setup, in my reading: we call ddp(x) first …"
    theirs = "PyTorch #104336 and the icefall thread both describe people hitting this, with the claim that " + CLAIM
    assert _credited(theirs + ". That doesn't match our setup, in my reading: we free them.") == (False, False)
    # attack: something else said not to match our setup leaves the agent's own claim standing
    assert _credited(CLAIM.capitalize() + ". The fix in PyTorch #104336 doesn't match our setup.") == (True, True)


def test_round_45_a_list_of_things_to_rule_in_or_out_holds_candidates() -> None:
    # round 45: "Things to rule in or out:\n* data slicing …\n* the inf-flag all-reduce being completed only in update()
    # …\n* the FSDP full-state-dict gather …\nStarting with the scaler, …"
    items = "\n* the logger's cache\n* " + CLAIM + "\n* the allocator's fragmentation\nStarting with the planner."
    assert _credited("Things to rule in or out:" + items) == (False, True)
    assert _credited("Places to look at:" + items) == (False, True)
    # attack: an item marked confirmed is asserted, and a list of what was ruled out leaves a root cause after it
    assert _credited("Things to rule in or out:\n* the logger's cache\n* " + CLAIM + " (confirmed)\n") == (True, True)
    assert _credited("Things I ruled out:\n* the logger\n\nRoot cause: " + CLAIM + ".") == (True, True)


def test_round_45_a_retraction_acted_out_in_quotes_takes_nothing_back() -> None:
    # round 45: 'begin_epoch goes "does loader.sampler have set_epoch? no? ok never mind" and the real
    # DistributedSampler … never hears about the epoch'
    acted = CLAIM.capitalize() + '. The loop goes "does it have a price? no? ok never mind" and moves on.'
    assert _credited(acted) == (True, True)
    # attack: the agent's own "never mind", and one after a quotation, still take it back
    assert _credited(CLAIM.capitalize() + ". Never mind.") == (False, False)
    assert _credited(CLAIM.capitalize() + '. "Never mind", I said, and scratch that.') == (False, False)


def test_round_45_a_negation_in_a_whose_clause_picks_out_its_subject() -> None:
    # round 45: "so a rank whose shard doesn't hold the global max uses a smaller norm and clips less (or not at all)"
    tail = " misses the head: three buffers while the checkpoint inputs stay live."
    assert _credited("The planner whose price doesn't cover it" + tail) == (True, True)
    assert _credited("The planner whose price has no head term" + tail) == (True, True)
    # attack: a negation of the subject's own verb still denies
    assert _credited("The planner does not price it and" + tail) == (False, False)


def test_round_45_a_part_said_not_to_undergo_it_then_the_theory_looked_at_is_denied() -> None:
    # round 45: "The RNG fork is not being skipped. I looked at the theory that X, …, and concluded the fork does run"
    looked = "The head is not being priced. I looked at the theory that " + CLAIM + ", and {}."
    assert _credited(looked.format("concluded the price covers it")) == (False, False)
    # attack: the theory confirmed, or another part's passive denial, leaves it asserted
    assert _credited(looked.format("the probe confirmed it")) == (True, True)
    assert _credited("The logger is not being flushed. " + CLAIM.capitalize() + ".") == (True, True)


def test_round_45_a_code_predicate_false_for_some_inputs_is_its_value() -> None:
    # round 45: "keeps a gradient on ranks other than TP rank 0 only if `is_model_parallel_parameter(p)` is true; for
    # the untagged weight shards it's false, so on rank 1 `fc1.weight` and `fc2.weight` are dropped"
    valued = "The price counts a buffer only if `is_priced(b)` is true; for the head's buffers it's false, so "
    assert _credited(valued + CLAIM + ".") == (True, True)
    # attack: "it's false" with no predicate before it, or "that is false" of a claim, still takes it back
    assert _credited(CLAIM.capitalize() + ". It's false.") == (False, False)
    assert _credited("I said " + CLAIM + " and `check(x)` is true. That is false.") == (False, False)


def test_round_45_a_withdrawal_promised_in_a_conditional_clause_after_a_semicolon_takes_nothing_back() -> None:
    # round 45: "My hypothesis, still to be tested: X … Next step is to dump the replicated fp32 masters … and diff
    # them; if they are bitwise equal, this idea is dead."
    planned = "My hypothesis, still to be tested: " + CLAIM + ". Next step is to diff them; {}, this idea is dead."
    assert _credited(planned.format("if they are equal")) == (False, True)
    # attack: the result reported in that clause, or a conclusion drawn from it, takes the idea back
    assert _credited(planned.format("they are equal, so")) == (False, False)
    assert _credited("My hypothesis: " + CLAIM + ". I diffed them; they are equal, so this idea is dead.") == (
        False,
        False,
    )


def test_round_45_a_negation_stops_before_and_draw_with_an_object() -> None:
    # round 45: "so the SP blocks never enter the model-parallel RNG fork and draw dropout from the rank-identical
    # default stream"
    tail = " from a planner that misses the head: three buffers while the checkpoint inputs stay live."
    assert _credited("The calls never enter the price and draw buffers" + tail) == (True, True)
    # attack: the negated verb itself still denies what it governs
    assert _credited("The calls never draw buffers" + tail) == (False, False)
