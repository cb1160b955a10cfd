"""Stances, read structurally: every judged statement (and every concept match in it) is asserted,
hypothesised, withdrawn, attributed or denied by one rule set in the reader, for every rubric. The
pre-run-hypothesis reading counts hypothesised and asserted statements, the diagnosis reading asserted
ones; withdrawn, attributed-then-refuted and denied ones count for nothing.

The structural frames wrap each registered case's own correct fixtures, so the rules are checked
across all rubrics rather than per-case phrasings; the reader's forms are then checked one by one on
a small rubric, then the milestones, the fixture labels and the attacks on them."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from gym_trainfail.cases import load_case
from gym_trainfail.diagnosis.fixtures import check_fixtures
from gym_trainfail.diagnosis.judges import RubricJudge, Verdict
from gym_trainfail.diagnosis.milestones import diagnose
from gym_trainfail.diagnosis.reading import STANCES, scopes
from gym_trainfail.diagnosis.rubric import Fixture, Rubric, check_stance
from gym_trainfail.errors import CaseDefinitionError

from .test_diagnosis import _ledger, _step
from .test_diagnosis_reading import CORRECT, RUBRIC

ENVS = Path(__file__).resolve().parents[1] / "envs"
CASES = sorted(p.parent.parent.parent.name for p in ENVS.glob("*/grader/diagnosis/rubric.toml"))
#: Correct fixtures wrapped per frame and case (the first ones, in file order, that the frame fits).
PER_FRAME = 6
MIN_PER_FRAME = 4


@pytest.fixture(autouse=True)
def _private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRAINFAIL_HOME", str(tmp_path / "home"))


def _judge(statement: str, rubric: Rubric = RUBRIC) -> Verdict:
    """The rules alone on the toy rubric (the forms below pin the reader's rules; the learned stance model that takes
    credit away on top of them is tested in tests/test_stance_model.py), the whole judge on a case's own rubric."""
    return RubricJudge(vetoes=rubric is not RUBRIC).judge(statement, rubric)


def _readings(verdict: Verdict) -> tuple[bool | None, bool | None]:
    return verdict.correct, verdict.hypothesis


# -- one rule set, every rubric: frames around each case's own correct fixtures -------------------


def _clause(text: str) -> str:
    """A one-sentence fixture as a clause: its first letter lowered (not an identifier's), no final stop."""
    text = text.strip().rstrip(".")
    return text[0].lower() + text[1:] if text[:1].isupper() and not text[1:2].isupper() else text


def _any(text: str) -> bool:
    return '"' not in text


def _one_sentence(text: str) -> bool:
    """One plain sentence: the frames that put it inside a clause ("It is not true that …") need it."""
    text = text.strip()
    return (
        _any(text)
        and "\n" not in text
        and len(re.findall(r"[.!?](?:\s|$)", text)) <= 1
        and not re.search(r"[;:]|\b(?:but|however|though|yet|whereas)\b|^ok\b", text, re.IGNORECASE)
    )


#: The stance a frame must read as, or the stances it may read as.
Stance = str | tuple[str | None, ...]
#: name -> (frame, which fixtures it fits, expected (diagnosis, hypothesis) reading, expected stance)
FRAMES: dict[str, tuple[Callable[[str], str], Callable[[str], bool], tuple[bool, bool], Stance]] = {
    "labelled hypothesis": (lambda s: f"Hypothesis: {s}", _any, (False, True), "hypothesised"),
    "my hypothesis": (lambda s: f"My hypothesis, before running anything: {s}", _any, (False, True), "hypothesised"),
    "attributed, refuted": (lambda s: f'A colleague claims: "{s}" That\'s false.', _any, (False, False), "attributed"),
    "named claim; that's false": (lambda s: f"Priya claims that {_clause(s)}; that's false.", _one_sentence,
                                  (False, False), "attributed"),
    "ticket, not endorsed": (lambda s: f"According to the ticket, {_clause(s)}. I don't agree.", _one_sentence,
                             (False, False), "attributed"),
    "tested, no difference": (lambda s: f"Hypothesis: {s}\nI tested it by changing the code accordingly; it made no "
                              "difference, so not that.", _any, (False, False), "withdrawn"),
    "ruled out by a guarantee": (lambda s: f"My first thought: {s}\nBut the framework guarantees the opposite, which "
                                 "rules it out.", _any, (False, False), "withdrawn"),
    "it is not true that": (lambda s: f"It is not true that {_clause(s)}.", _one_sentence, (False, False), "denied"),
    "edit: scratch that": (lambda s: f"{s}\n\nEdit: scratch that, I misread the code.", _any, (False, False),
                           "withdrawn"),
    # round 6 (the v5 sets released): a mechanism said not to occur here, a bare "Ruled out" verdict, a label
    # opening with an adjective that is no name, a withdrawal or a confirmation promised on a condition, a
    # reading called a misreading, "I'm not buying it"
    # (None: the frame's colon leaves a concept unmatched; the statement still counts for nothing)
    "never happens here": (lambda s: f"{s.rstrip('.')}: that never happens in this codebase.", _one_sentence,
                           (False, False), ("withdrawn", "denied", None)),
    "ruled out, though": (lambda s: f"One candidate: {s}\nRuled out, though: the framework guarantees the opposite.",
                          _one_sentence, (False, False), ("withdrawn", "denied")),
    "unverified guess": (lambda s: f"Unverified guess: {s} Will confirm.", _any, (False, True), "hypothesised"),
    "drop it on a condition": (lambda s: f"Before running anything, my leading candidate: {s}\nIf the next run "
                               "disagrees, I'll drop it.", _any, (False, True), "hypothesised"),
    "confirmed on a condition": (lambda s: f"Hypothesis: {s}\nIf the error grows with the rank count, this is "
                                 "confirmed.", _any, (False, True), "hypothesised"),
    "a misreading": (lambda s: f'A comment in the code says: "{s}" That misreads the code.', _any, (False, False),
                     "attributed"),
    "not buying it": (lambda s: f"A teammate thinks {_clause(s)}. I'm not buying it.", _one_sentence, (False, False),
                      "attributed"),
    # the controls: the same statements held as the agent's own
    "attributed, endorsed": (lambda s: f'Priya says: "{s}" I agree.', _any, (True, True), "asserted"),
    "wrong guess retracted, then right": (lambda s: f"My first guess was the random seed, but that was wrong. {s}",
                                          _any, (True, True), "asserted"),
    "hypothesis, then confirmed": (lambda s: f"Hypothesis: {s}\n\nThe probe confirms it.", _any, (True, True),
                                   "asserted"),
}  # fmt: skip


@pytest.mark.parametrize("folder", CASES)
def test_every_rubric_reads_the_stance_frames_around_its_own_correct_fixtures(folder: str) -> None:
    rubric = load_case(ENVS / folder).rubric
    assert rubric is not None
    correct = [f.text.strip() for f in rubric.fixtures if f.correct]
    misread = []
    for name, (frame, fits, expected, stance) in FRAMES.items():
        chosen = [s for s in correct if fits(s)][:PER_FRAME]
        assert len(chosen) >= MIN_PER_FRAME, f"{folder}: too few correct fixtures fit the frame {name!r}"
        for statement in chosen:
            verdict = _judge(frame(statement), rubric)
            allowed = (stance,) if isinstance(stance, str) else stance
            if _readings(verdict) != expected or verdict.stance not in allowed:
                misread.append(f"{name}: {_readings(verdict)}, {verdict.stance} for {statement[:80]!r}")
    assert misread == []


# -- wrappers around a plain one-sentence mechanism per case ---------------------------------------
#
# Written after the first tuning round in three fresh sets, each measured once before the rules were
# widened for it (figures in docs/diagnosis.md); kept here so every rubric keeps reading them.

CORES = {
    "admission_backward_oom": (
        "the admission planner's estimate stops at the static peak and never includes the vocabulary head's "
        "backward pass, which keeps three chunk-by-padded-vocabulary buffers (logits, probabilities and their"
        " gradient) alive while the checkpointed inputs of every layer are still held"
    ),
    "ddp_bypass_drift": (
        "the view-consistency loss is back-propagated through the inner module returned by unwrap(ddp) in a "
        "separate backward, so DDP never all-reduces those gradients and the ranks' weights drift apart"
    ),
    "ddp_token_average": (
        "each rank divides its token loss by its own count of response tokens, and because the ranks hold "
        "different numbers of those tokens, DDP's average of the ranks' gradients is a mean of per-rank means"
        " instead of the global per-token mean"
    ),
    "epoch_reshuffle": (
        "begin_epoch calls set_epoch only on loader.sampler, which is the default SequentialSampler because "
        "the loader is built with batch_sampler=ShardBatchSampler, so set_epoch never reaches the "
        "DistributedSampler inside ShardBatchSampler and every epoch repeats the first epoch's order on every"
        " rank"
    ),
    "fsdp_source_coherence": (
        "one node's cache still maps main to v1 while the other serves v2, so the ranks load different "
        "checkpoint revisions and fully_shard keeps each rank's own shard, mixing the two revisions into one "
        "model"
    ),
    "moe_all_to_all_hang": (
        "each rank sizes its MoE dispatch width from its own expert counts with no MAX all-reduce over the "
        "expert group, so ranks run different numbers of all-to-all slabs and deadlock"
    ),
    "moe_expert_grad_scale": (
        "the reduction divides each expert's gradient by the expert-data-parallel group size (world divided "
        "by ep) rather than by the data-parallel world size, which makes expert gradients ep times too large"
    ),
    "pipeline_tied_embedding": (
        "the training step sums the tied table's gradient over the first and last stage only after the ZeRO "
        "reduce-scatter, when each replica holds the averaged gradient only in its own shard, and the table "
        "falls in replica 0's shard on stage 0 but in replica 1's shard on the last stage, so each tied sum "
        "adds an averaged gradient to a raw local one and the two copies drift apart"
    ),
    "recompute_dropout_rng": (
        "petite/remat.py passes preserve_rng_state=deterministic to checkpoint_wrapper and "
        "checkpoint_sequential, and train.deterministic is off by default, so torch does not restore the "
        "forward's RNG state before recomputing a checkpointed block in backward, its dropout layers draw "
        "fresh masks from the advanced generator, and the gradient is taken through different dropout masks "
        "than the ones that produced the loss"
    ),
    "resume_skip_batches": (
        "the resume code skips global_step % updates_per_epoch batches, a count of optimizer steps, while the"
        " loader yields micro-batches, so without the factor gradient_accumulation_steps the resumed run "
        "trains on micro-batches the first run already used"
    ),
    "shard_local_clip_norm": (
        "the team calls torch.nn.utils.clip_grad_norm_ on an FSDP1 model, so each rank only measures the norm"
        " of its own gradient shard and clips by that instead of the global norm"
    ),
    "sp_dropout_rng": (
        "because `with rng_context and precision_context:` evaluates to the precision context only, the "
        "tracker's fork is never entered, so hidden dropout draws from the default generator seeded "
        "identically on every TP rank and each rank applies the same mask to its own sequence chunk"
    ),
    "scaler_inf_sync": (
        "the ShardScaler starts the async MAX all_reduce of the found_inf flags in unscale_ and only waits on"
        " it and copies the combined flag back in update(), so GradScaler.step() decides from each rank's own"
        " uncombined flag, and a rank whose shard is finite takes the optimizer step while the overflowing "
        "rank skips it"
    ),
    "scheduler_per_process": (
        "the scheduler is handed to accelerator.prepare, whose AcceleratedScheduler steps it once per process"
        " on every optimizer update even though the schedule was already sized in optimizer updates, so "
        "warmup and decay finish P times too early"
    ),
    "stale_optimizer_params": (
        "the optimizer is built before runtime.prepare runs fully_shard on the root, which swaps the stem, "
        "final norm and head parameters for new DTensors, so the optimizer keeps stepping the stale originals"
        " and those layers never train"
    ),
    "tp_clip_grad_norm": (
        "since perform_initialization=False skips the tagging, fc1 and fc2 have no tensor_model_parallel "
        "attribute, DeepSpeed counts their gradients only on TP rank 0, and the global norm comes out too "
        "small so clipping is too weak"
    ),
    "tp_replica_clip_drift": (
        "the rank-0-only filter for replicated parameters in get_grads_for_norm also runs when gradients are "
        "gathered for clipping, so on TP ranks other than 0 the LayerNorm and bias gradients are never "
        "clipped and those replicated weights drift apart"
    ),
    "zero1_boundary_microbatch": (
        "the overridden _backward_epilogue calls allreduce_gradients() before "
        "BF16_Optimizer.backward_epilogue() adds the last micro-batch into the fp32 buffer, so that micro-"
        "batch's gradient is never averaged across ranks and stays rank-local"
    ),
}


def _cap(text: str) -> str:
    return text[0].upper() + text[1:]


#: (name, wrapper, expected (diagnosis, hypothesis) reading, expected stance)
WRAPPERS: list[tuple[str, Callable[[str], str], tuple[bool, bool], str]] = [
    (
        "asserted plain",
        lambda c: f"{_cap(c)}.",
        (True, True),
        "asserted",
    ),
    (
        "endorsed, spot on",
        lambda c: f"Dana reckons {c}, and she's spot on.",
        (True, True),
        "asserted",
    ),
    (
        "hyp: working hypothesis dash",
        lambda c: f"Working hypothesis — {c}. Next: a probe to check it.",
        (False, True),
        "hypothesised",
    ),
    (
        "hyp: conjecture untested",
        lambda c: f"Conjecture (not yet tested): {c}.",
        (False, True),
        "hypothesised",
    ),
    (
        "hyp: I'd guess, need a run",
        lambda c: f"I'd guess that {c}, but I need a run to be sure.",
        (False, True),
        "hypothesised",
    ),
    (
        "att: teammate reckons, unconvinced",
        lambda c: f"My teammate Dana reckons {c}. I'm not convinced: the logs say otherwise.",
        (False, False),
        "attributed",
    ),
    (
        "att: per the bug report",
        lambda c: f"Per the bug report, {c}. That doesn't match what I measured.",
        (False, False),
        "attributed",
    ),
    (
        "att: blockquote, then rejected",
        lambda c: f"> {_cap(c)}.\n\nThat's from the handoff note. It's wrong; the code already handles it.",
        (False, False),
        "attributed",
    ),
    (
        "att: last agent concluded",
        lambda c: (
            f"The last agent concluded that {c}. Having read the code myself, I think that conclusion is mistaken."
        ),
        (False, False),
        "attributed",
    ),
    (
        "rej: numbers don't bear it out",
        lambda c: f"Initial theory: {c}. The numbers don't bear it out, so I'm dropping it.",
        (False, False),
        "withdrawn",
    ),
    (
        "rej: swapping changed nothing",
        lambda c: f"Possibly {c}. Swapping that logic changed nothing in the outcome, so that theory is dead.",
        (False, False),
        "withdrawn",
    ),
    (
        "den: question answered no",
        lambda c: f"Is it the case that {c}? No: I checked and it isn't.",
        (False, False),
        "denied",
    ),
    (
        "wd: update, disregard this",
        lambda c: f"{_cap(c)}.\n\nUpdate: I was looking at the wrong branch, disregard this.",
        (False, False),
        "withdrawn",
    ),
    (
        "asserted: root cause, confirmed",
        lambda c: f"Root cause, confirmed with a probe: {c}.",
        (True, True),
        "asserted",
    ),
    (
        "asserted: fairly confident",
        lambda c: f"I'm fairly confident that {c}.",
        (True, True),
        "asserted",
    ),
    (
        "asserted: it looks like",
        lambda c: f"It looks like {c}.",
        (True, True),
        "asserted",
    ),
    (
        "endorsed: verified, holds",
        lambda c: f"Kim's write-up says {c} — I verified it and it holds.",
        (True, True),
        "asserted",
    ),
    (
        "hyp: one possibility",
        lambda c: f"One possibility: {c}.",
        (False, True),
        "hypothesised",
    ),
    (
        "hyp: question + leading guess",
        lambda c: f"{_cap(c)}? That's my leading guess; I'll instrument it next.",
        (False, True),
        "hypothesised",
    ),
    (
        "hyp: theory to test",
        lambda c: f"Theory to test: {c}.",
        (False, True),
        "hypothesised",
    ),
    (
        "att: reviewer argued, code doesn't",
        lambda c: f"A reviewer on the PR argued that {c}. I looked and the code doesn't do that.",
        (False, False),
        "attributed",
    ),
    (
        "att: quoting Sam",
        lambda c: f"Quoting Sam from standup: {c}. Not what I see in the trace.",
        (False, False),
        "attributed",
    ),
    (
        "att: popular explanation",
        lambda c: f"The popular explanation on the forum is that {c}; it does not apply to this repo.",
        (False, False),
        "attributed",
    ),
    (
        "rej: briefly believed, until",
        lambda c: f"I briefly believed {c}, until the per-rank dump showed identical values.",
        (False, False),
        "withdrawn",
    ),
    (
        "rej: suspect #1, ruled out",
        lambda c: f"Suspect #1: {c}. Ruled out after the A/B run.",
        (False, False),
        "withdrawn",
    ),
    (
        "rej: could be, fix changed nothing",
        lambda c: f"Could be that {c}. Tried the obvious fix, nothing changed, so no.",
        (False, False),
        "withdrawn",
    ),
    (
        "den: no, not what is going on",
        lambda c: f"No, {c} is not what is going on here.",
        (False, False),
        "denied",
    ),
    (
        "den: nothing suggests",
        lambda c: f"Nothing suggests that {c}.",
        (False, False),
        "denied",
    ),
    (
        "wd: hmm no, rereading",
        lambda c: f"{_cap(c)}. Hmm, no — rereading, the code already does the right thing.",
        (False, False),
        "withdrawn",
    ),
    (
        "wd: strike that",
        lambda c: f"{_cap(c)}. Strike that; wrong file.",
        (False, False),
        "withdrawn",
    ),
    (
        "asserted: that's the bug",
        lambda c: f"After reading the code: {c}. That's the bug.",
        (True, True),
        "asserted",
    ),
    (
        "asserted: diagnosis dash",
        lambda c: f"Diagnosis — {c}.",
        (True, True),
        "asserted",
    ),
    (
        "asserted: not the lr after all",
        lambda c: f"Not the learning rate after all. {_cap(c)}.",
        (True, True),
        "asserted",
    ),
    (
        "endorsed: note is right",
        lambda c: f"The on-call's note is right: {c}.",
        (True, True),
        "asserted",
    ),
    (
        "hyp: my money is on this",
        lambda c: f"My money is on this: {c}. Will verify with a two-rank run.",
        (False, True),
        "hypothesised",
    ),
    (
        "hyp: tentative diagnosis",
        lambda c: f"Tentative diagnosis: {c}.",
        (False, True),
        "hypothesised",
    ),
    (
        "hyp: I have a hunch",
        lambda c: f"I have a hunch that {c}.",
        (False, True),
        "hypothesised",
    ),
    (
        "att: per Alex, don't think right",
        lambda c: f"Per Alex, {c}. I don't think that's right.",
        (False, False),
        "attributed",
    ),
    (
        "att: reporter is convinced",
        lambda c: f"The issue reporter is convinced that {c}. I tested it and it's not so.",
        (False, False),
        "attributed",
    ),
    (
        "att: ChatGPT suggested, but",
        lambda c: f"ChatGPT suggested that {c}, but the numbers say otherwise.",
        (False, False),
        "attributed",
    ),
    (
        "rej: first glance, closer inspection",
        lambda c: f"At first glance {c}. On closer inspection that's not what the code does.",
        (False, False),
        "withdrawn",
    ),
    (
        "rej: candidate, verdict false",
        lambda c: f"Candidate: {c}. Verdict after the probe: false.",
        (False, False),
        "withdrawn",
    ),
    (
        "rej: probe killed it",
        lambda c: f"I spent an hour on the idea that {c}; the probe killed it.",
        (False, False),
        "withdrawn",
    ),
    (
        "den: contrary to the ticket",
        lambda c: f"Contrary to what the ticket says, it is not the case that {c}.",
        (False, False),
        "denied",
    ),
    (
        "wd: correction, misreading",
        lambda c: f"{_cap(c)}.\n\nCorrection: that was a misreading on my part.",
        (False, False),
        "withdrawn",
    ),
    (
        "wd: never mind, false alarm",
        lambda c: f"{_cap(c)}. Never mind — false alarm.",
        (False, False),
        "withdrawn",
    ),
    # round 8 (blind set E released): quotations under a label that names someone else, an endorsement in
    # that label or after the quote, a short leading phrase, a relative clause or two places after the speaker,
    # a time that owns the document, a negated endorsement; earlier worries and sayings walked back; long
    # candidate labels
    (
        "att: labelled quote",
        lambda c: f'Reviewer comment on the PR, copied for the record: "{_cap(c)}." I have not looked into it myself.',
        (False, False),
        "attributed",
    ),  # fmt: skip
    (
        "att: handover quote",
        lambda c: f'Handover note from last week\'s on-call: "{_cap(c)}." Not reproducible here.',
        (False, False),
        "attributed",
    ),  # fmt: skip
    (
        "att: parenthetical quote",
        lambda c: f'Re Priya\'s message ("{c}"): the numbers say otherwise.',
        (False, False),
        "attributed",
    ),  # fmt: skip
    (
        "end: label says right",
        lambda c: f"The reviewer's summary on the ticket is right and I'll adopt it as the diagnosis: \"{_cap(c)}.\"",
        (True, True),
        "asserted",
    ),  # fmt: skip
    (
        "end: agreed after quote",
        lambda c: f'The reviewer left this on the PR: "{_cap(c)}." Agreed, and verified.',
        (True, True),
        "asserted",
    ),  # fmt: skip
    (
        "att: leading phrase, numbered report",
        lambda c: f"For reference: upstream issue #5618 reports that {c}. Just noting it.",
        (False, False),
        "attributed",
    ),  # fmt: skip
    (
        "att: relative clause",
        lambda c: f"A forum answer I found claims that {c}. It does not carry over to this repo.",
        (False, False),
        "attributed",
    ),  # fmt: skip
    (
        "att: two places, nobody confirmed",
        lambda c: f"Someone on the forum thread for issue #1256 says that {c}. Nobody has confirmed it.",
        (False, False),
        "attributed",
    ),  # fmt: skip
    (
        "att: a time owns the ticket",
        lambda c: f"Yesterday's ticket states that {c}. I have not checked it.",
        (False, False),
        "attributed",
    ),  # fmt: skip
    (
        "wd: first read, dropping",
        lambda c: f"My first read was that {c}. Dropping that theory.",
        (False, False),
        "withdrawn",
    ),  # fmt: skip
    (
        "wd: worry does not hold",
        lambda c: f"I was worried that {c}. That worry doesn't hold.",
        (False, False),
        "withdrawn",
    ),  # fmt: skip
    (
        "wd: said, walked back",
        lambda c: f"I said an hour ago that {c}. I've walked that back.",
        (False, False),
        "withdrawn",
    ),  # fmt: skip
    (
        "wd: ruling it out",
        lambda c: f"Hypothesis was: {c}. Tested it with equal shards; ruling it out.",
        (False, False),
        "withdrawn",
    ),  # fmt: skip
    (
        "hyp: long candidate label",
        lambda c: f"Candidates for the mismatch, none confirmed yet:\n1. {c};\n2. the seed differs per rank.",
        (False, True),
        "hypothesised",
    ),  # fmt: skip
    (
        "hyp: possible reasons",
        lambda c: f"Possible reasons for the failure:\n1. {c};\n2. a stale config file.",
        (False, True),
        "hypothesised",
    ),  # fmt: skip
    (
        "asserted: Q and A, A: No.",
        lambda c: (
            f"Q: What goes wrong?\nA: {_cap(c)}.\nQ: Does anything complain?\nA: No. Training just drifts quietly."
        ),
        (True, True),
        "asserted",
    ),  # fmt: skip
    (
        "den: Q, A: No, it doesn't",
        lambda c: f"Q: Is it the case that {c}?\nA: No, it isn't.",
        (False, False),
        "denied",
    ),  # fmt: skip
    (
        "wd: first guess, Wrong, actual cause",
        lambda c: f"First guess was that {c}. Wrong: the seeds differ per rank.",
        (False, False),
        "withdrawn",
    ),  # fmt: skip
    (
        "asserted: hypothesis label, Confirmed:",
        lambda c: f"Hypothesis: the seeds differ per rank. Probe: dumped them. Confirmed: {c}.",
        (True, True),
        "asserted",
    ),  # fmt: skip
    # round 9 (blind set F released): a label that itself reports someone's words, a pronoun speaker after
    # it, an embedded "whether he's right"; a tracker key as the speaker; "There's an answer … saying that";
    # a report's topic after it ("answer about X says"); a claim the agent came across ("I came across issue
    # #N, which reports"); the symptom's cause denied; a lettered theory rejected; a gerund abandoning the line
    (
        "att: relayed label, he thinks, whether he's right",
        lambda c: f"Passing on what Marco said in standup: he thinks {c}. I haven't checked whether he's right.",
        (False, False),
        "attributed",
    ),  # fmt: skip
    (
        "att: tracker key claims",
        lambda c: f"JIRA MOE-212 claims {c}. I'd push back on that; closing as not-a-bug.",
        (False, False),
        "attributed",
    ),  # fmt: skip
    (
        "att: there's an answer saying",
        lambda c: f"There's an answer on the forum saying that {c}. Interesting, but I'm not pursuing it.",
        (False, False),
        "attributed",
    ),  # fmt: skip
    (
        "att: answer about a topic says",
        lambda c: f"A Stack Overflow answer about this library says {c}. I haven't formed an opinion yet.",
        (False, False),
        "attributed",
    ),  # fmt: skip
    (
        "att: came across, which reports",
        lambda c: f"Status: while searching I came across upstream issue #1256, which reports that {c}. Noting it.",
        (False, False),
        "attributed",
    ),  # fmt: skip
    (
        "wd: lettered theory rejected",
        lambda c: f"Theory A: {c}.\n\nTest: compared both runs, no sign of it. Theory A rejected.",
        (False, False),
        "withdrawn",
    ),  # fmt: skip
    (
        "wd: first idea, can't be it, abandoning",
        lambda c: (
            f"First idea: {c}. But the one-rank run is just as far off, so the ordering can't be it. "
            "Abandoning that line; checking the data next."
        ),
        (False, False),
        "withdrawn",
    ),  # fmt: skip
    # round 10 (blind set G released): a bot or a linter as the speaker, "commented", "flagged … as", "left a
    # note saying", a project's numbered report that "describes", "answered … with"; someone else's question
    # stays theirs; "If I had to guess", "A possible explanation for X (…) is"; "Hypothesis was:" then
    # "Abandoned it"
    (
        "att: bot commented, false positive",
        lambda c: f'The code-review bot commented "{c}". False positive as far as I\'m concerned.',
        (False, False),
        "attributed",
    ),  # fmt: skip
    (
        "att: flagged as",
        lambda c: f'The review bot flagged this line as "{c}". That\'s a false positive in my view.',
        (False, False),
        "attributed",
    ),  # fmt: skip
    (
        "att: left a note saying",
        lambda c: f"The previous on-call left a note saying {c}. Having read the code, I don't think so.",
        (False, False),
        "attributed",
    ),  # fmt: skip
    (
        "att: project#N describes",
        lambda c: f"pytorch#75870 describes a setup where {c}. Our pinned version is past that, so not relevant.",
        (False, False),
        "attributed",
    ),  # fmt: skip
    (
        "att: answered with",
        lambda c: f"Someone on the forum answered a similar question with {c}. Noting it for later.",
        (False, False),
        "attributed",
    ),  # fmt: skip
    (
        "att: a reviewer's question, answered no",
        lambda c: f"Reviewer on my PR: \"isn't it that {c}?\" No. Both ranks' weights match after every step.",
        (False, False),
        "attributed",
    ),  # fmt: skip
    (
        "hyp: if I had to guess",
        lambda c: f"If I had to guess before running anything: {c}. Might be off; I'll test it.",
        (False, True),
        "hypothesised",
    ),  # fmt: skip
    (
        "hyp: a possible explanation for X (…) is",
        lambda c: f"A possible explanation for the gap between the configs (and I stress possible) is that {c}.",
        (False, True),
        "hypothesised",
    ),  # fmt: skip
    (
        "att: someone's TODO in quotes",
        lambda c: f'Someone left a TODO near the loop: "{c}". I think the comment is stale; disregarding it.',
        (False, False),
        "attributed",
    ),  # fmt: skip
    (
        "hyp: a plan to confirm or rule it out",
        lambda c: f"TODO (hypothesis, unverified): {c}. Next: compare both runs to confirm or rule this out.",
        (False, True),
        "hypothesised",
    ),  # fmt: skip
    (
        "den: the idea that X is incorrect",
        lambda c: f"The idea that {c} is incorrect for this workspace.",
        (False, False),
        "denied",
    ),  # fmt: skip
    (
        "den: X, as an aside, is not why",
        lambda c: f"The usual suspect — {c} — is not why the runs differ here.",
        (False, False),
        "denied",
    ),  # fmt: skip
    (
        "hyp: a label, then if … might",
        lambda c: f"Reading the code before running anything: if {c}, the runs might differ. I'll check.",
        (False, True),
        "hypothesised",
    ),  # fmt: skip
    (
        "asserted: a setting's value noted (false)",
        lambda c: f"{_cap(c)}, with `train.deterministic` (false) as shipped.",
        (True, True),
        "asserted",
    ),  # fmt: skip
    (
        "asserted: a setting's value, which is false",
        lambda c: f"{_cap(c)}, all of it hanging on `cfg.train.deterministic`, which is false.",
        (True, True),
        "asserted",
    ),  # fmt: skip
    (
        "wd: I rule that mechanism out",
        lambda c: f"{_cap(c)}. I rule that mechanism out for this failure.",
        (False, False),
        "withdrawn",
    ),  # fmt: skip
    (
        "att: a factive report, then doubted",
        lambda c: f"pytorch#75870 points out that {c}. I don't see how it applies here.",
        (False, False),
        "attributed",
    ),  # fmt: skip
    (
        "asserted: a factive report, not doubted",
        lambda c: f"pytorch#75870 points out that {c}. That matches our logs.",
        (True, True),
        "asserted",
    ),  # fmt: skip
    (
        "wd: hypothesis was, abandoned it",
        lambda c: f"Hypothesis was: {c}. Abandoned it after seeing the one-rank run drift just as much.",
        (False, False),
        "withdrawn",
    ),  # fmt: skip
]


def test_every_case_has_a_plain_core() -> None:
    assert sorted(CORES) == CASES


@pytest.mark.parametrize("folder", CASES)
def test_every_rubric_reads_the_wrappers_around_a_plain_mechanism(folder: str) -> None:
    rubric = load_case(ENVS / folder).rubric
    assert rubric is not None
    misread = []
    for name, wrap, expected, _stance in WRAPPERS:
        verdict = _judge(wrap(CORES[folder]), rubric)
        if _readings(verdict) != expected:
            misread.append(f"{name}: {_readings(verdict)}, {verdict.stance}")
    assert misread == []


# -- the reader's forms, one by one --------------------------------------------------------------

C = _clause(CORRECT)
#: (statement, stance, diagnosis reading, pre-run-hypothesis reading)
FORMS = [
    (CORRECT, "asserted", True, True),
    # hedged but committed: asserted
    (f"Most likely {C}.", "asserted", True, True),
    (f"I think {C}.", "asserted", True, True),
    (f"Probably {C}.", "asserted", True, True),
    # put forward to be tested: hypothesised
    (f"Hypothesis: {CORRECT}", "hypothesised", False, True),
    (f"My working theory (untested): {CORRECT}", "hypothesised", False, True),
    (f"My hypothesis is that {C}.", "hypothesised", False, True),
    (f"I suspect {C}.", "hypothesised", False, True),
    ("I suspect the planner misses the head. If so, three buffers are held while checkpoint inputs stay live.",
     "hypothesised", False, True),
    (f"Maybe {C}.", "hypothesised", False, True),
    (f"{CORRECT} Not verified yet.", "hypothesised", False, True),
    (f"{CORRECT} I haven't checked this yet.", "hypothesised", False, True),
    (f"Could it be that {C}?", "hypothesised", False, True),
    (f"Hmm, {C}?", "hypothesised", False, True),
    (f"Hypothesis: {CORRECT}\nI'll compare price and peak next.", "hypothesised", False, True),
    # a label at the start covers the statement; one further down covers its paragraph only
    (f"Hypothesis:\n\n{CORRECT}", "hypothesised", False, True),
    (f"I read the planner.\n\nHypothesis: the allocator is slow.\n\n{CORRECT}", "asserted", True, True),
    # a confirmation after a hypothesis asserts it; a plan to confirm does not
    (f"Hypothesis: {CORRECT} Confirmed by the allocator trace.", "asserted", True, True),
    (f"I suspect {C}; the probe confirms it.", "asserted", True, True),
    (f"My working theory, which the trace supports: {CORRECT}", "asserted", True, True),
    (f"Hypothesis: {CORRECT} I'll run the probe to confirm.", "hypothesised", False, True),
    (f"Hypothesis: {CORRECT} If confirmed, I'll reprice the head.", "hypothesised", False, True),
    # someone else's claim: attributed unless the agent endorses it
    (f"Priya says {C}.", "attributed", False, False),
    (f"Priya says {C}. I agree.", "asserted", True, True),
    (f"Priya says {C}, and she's right.", "asserted", True, True),
    (f"Priya says {C}. I don't agree.", "attributed", False, False),
    (f"Priya says {C}. That's not right: the trace peaks in the layers.", "attributed", False, False),
    (f"According to the ticket, {C}.", "attributed", False, False),
    (f"The reviewer's theory is that {C}. I disagree.", "attributed", False, False),
    (f"Someone on Slack suggested that {C}. Not the case.", "attributed", False, False),
    (f'The on-call note says: "{CORRECT} The fix is easy." That\'s false.', "attributed", False, False),
    (f"{CORRECT[:-1]}, or so the ticket claims.", "attributed", False, False),
    (f"It was suggested that {C}.", "attributed", False, False),
    (f"As Priya said, {C}.", "asserted", True, True),
    (f"Priya pointed out that {C}.", "asserted", True, True),
    # put forward, then rejected: withdrawn
    (f"Hypothesis: {CORRECT} I tested it by pricing the head; it made no difference, so not that.", "withdrawn",
     False, False),
    (f"My first thought was that {C}. But the allocator guarantees a free head, which rules it out.", "withdrawn",
     False, False),
    (f"I considered that {C}. But the head is priced, so this cannot be the cause.", "withdrawn", False, False),
    (f"{CORRECT} Edit: scratch that.", "withdrawn", False, False),
    (f"{CORRECT} Actually I was wrong about this.", "withdrawn", False, False),
    (f"My earlier explanation was that {C}. Please ignore the earlier explanation.", "withdrawn", False, False),
    (f"My first guess was a memory leak, but that was wrong. {CORRECT}", "asserted", True, True),
    # denied
    (f"It is not true that {C}.", "denied", False, False),
    # a counterfactual only supposes
    (f"{C} would explain it if the trace were right.", "hypothesised", False, True),
    # … in its own clause only
    (f"{CORRECT[:-1]}; that would matter less if the budget were larger.", "asserted", True, True),
]  # fmt: skip


@pytest.mark.parametrize(("statement", "stance", "correct", "hypothesis"), FORMS)
def test_each_form_gets_its_stance(statement: str, stance: str, correct: bool, hypothesis: bool) -> None:
    verdict = _judge(statement)
    assert (verdict.stance, verdict.correct, verdict.hypothesis) == (stance, correct, hypothesis)
    assert verdict.withdrawn is (stance == "withdrawn")


def test_a_credited_hypothesis_has_evidence_and_the_stances_are_the_five() -> None:
    verdict = _judge(f"Hypothesis: {CORRECT}")
    assert verdict.passage and verdict.concepts == ()  # nothing asserted, the hypothesis quoted
    assert STANCES == ("asserted", "hypothesised", "withdrawn", "attributed", "denied")
    assert Verdict.from_json(verdict.to_json()) == verdict


def test_a_wrong_explanation_asserted_spoils_a_hypothesis_and_one_only_hypothesised_does_not() -> None:
    assert _readings(_judge(f"There is a memory leak.\n\nHypothesis: {CORRECT}")) == (False, False)
    assert _readings(_judge(f"Hypotheses: {CORRECT} Or maybe a memory leak.")) == (False, True)


# -- attacks on the scopes -------------------------------------------------------------------------


def test_an_endorsement_inside_the_quoted_claim_is_the_other_persons() -> None:
    assert _judge(f'Priya wrote: "{CORRECT} I agree with myself." Hmm.').stance == "attributed"


def test_a_negated_endorsement_is_no_endorsement() -> None:
    for tail in ("I do not agree.", "She is not right.", "That is not correct."):
        assert _judge(f"Priya says {C}. {tail}").stance == "attributed", tail


def test_a_label_further_down_does_not_reach_back_and_a_label_in_prose_is_no_label() -> None:
    assert _judge(f"{CORRECT}\n\nHypothesis: the allocator also rounds up.").stance == "asserted"
    # "My first guess was …, but …:" is a sentence, not a label: the mechanism after the contrast stands
    assert _judge(f"My first guess was a memory leak, but {C}.").stance == "asserted"


def test_an_unrelated_disclaimer_or_a_plan_does_not_make_a_claim_a_hypothesis() -> None:
    for tail in ("The fix has not been tested on GPUs.", "I'll print the per-call peaks to confirm."):
        assert _judge(f"{CORRECT} {tail}").stance == "asserted", tail


def test_scopes_are_bounded_on_long_statements() -> None:
    unit = 'Priya says "the planner misses the head. Hypothesis: three buffers. '
    found = scopes(unit * 2000)
    assert len(found.attributed) <= 2 * 256 and len(found.tentative) <= 3 * 256


# -- milestones: the pre-run hypothesis counts hypotheses; the diagnosis milestones do not -------------


def test_a_labelled_hypothesis_reaches_the_pre_run_milestone_only(tmp_path: Path) -> None:
    rubric = load_case(ENVS / "ddp_token_average").rubric
    assert rubric is not None
    hypothesis = ("Hypothesis: sft/losses.py averages the cross-entropy over each micro-batch's own response "
                  "tokens, so with uneven token counts across ranks DDP's gradient average is a mean of per-rank "
                  "means, not the global token mean.")  # fmt: skip
    refuted = ("Lena claims the loss is normalised per rank by the local token count, so with uneven counts DDP "
               "averages per-rank means instead of the global token mean. That's false.")  # fmt: skip
    events = _ledger(
        tmp_path / "run",
        [
            {"event": "reset", "t": 0.0},
            {"event": "message", "t": 1.0, "role": "assistant", "kind": "message", "text": refuted},
            {"event": "message", "t": 2.0, "role": "assistant", "kind": "message", "text": hypothesis},
            _step(1, "read_file", 3.0, 4.0, path="sft/losses.py"),
            {"event": "message", "t": 5.0, "role": "assistant", "kind": "message", "text": hypothesis},
        ],
        {1: "def response_token_loss(logits, labels): ..."},
    )
    found = diagnose(tmp_path / "run", events, rubric, arm="control", first_valid_at=None)
    m = found["milestones"]
    assert m["pre_run_hypothesis"]["raw_s"] == 2.0 and "Hypothesis" not in m["pre_run_hypothesis"]["excerpt"][:3]
    assert m["source_supported_diagnosis"] is None  # a hypothesis after reading the culprit is not a diagnosis
    assert found["statements"] == {"count": 3, "correct": 0, "hypothesised": 2, "undecided": 0}


# -- stance labels on fixtures -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expect", "stance", "mechanism", "withdrawn", "problem"),
    [
        ("correct", "asserted", "right", None, None),
        ("incorrect", "hypothesised", "right", None, None),
        ("incorrect", "asserted", "wrong", None, None),
        ("incorrect", "withdrawn", "right", True, None),
        ("incorrect", None, None, None, None),
        ("incorrect", "hypothesised", None, None, "give both or neither"),
        ("incorrect", None, "right", None, "give both or neither"),
        ("incorrect", "sure", "right", None, "stance: expected one of"),
        ("incorrect", "denied", "half", None, "mechanism: expected 'right' or 'wrong'"),
        ("correct", "hypothesised", "right", None, "correct exactly when the mechanism is right and asserted"),
        ("incorrect", "asserted", "right", None, "correct exactly when the mechanism is right and asserted"),
        ("correct", "asserted", "wrong", None, "correct exactly when"),
        ("incorrect", "denied", "right", True, "withdrawn is true exactly for stance 'withdrawn'"),
        ("incorrect", "withdrawn", "right", False, "withdrawn is true exactly for stance 'withdrawn'"),
    ],
)
def test_stance_labels_must_agree(
    expect: str, stance: str | None, mechanism: str | None, withdrawn: bool | None, problem: str | None
) -> None:
    found = check_stance(expect, stance, mechanism, withdrawn)
    assert (found is None) if problem is None else (found is not None and problem in found), found


def test_a_rubric_refuses_a_mislabelled_fixture(tmp_path: Path) -> None:
    from shutil import copytree

    from .conftest import ECHO_CASE

    case = tmp_path / "case"
    copytree(ECHO_CASE, case)
    path = case / "grader" / "diagnosis" / "rubric.toml"
    fixture = '\n[[fixture]]\nexpect = "correct"\nstance = "hypothesised"\nmechanism = "right"\ntext = "x"\n'
    path.write_text(path.read_text() + fixture)
    with pytest.raises(CaseDefinitionError, match="correct exactly when"):
        load_case(case)


def test_fixture_checks_read_both_readings() -> None:
    from dataclasses import replace

    hypothesis = Fixture(f"Hypothesis: {CORRECT}", False, "hyp", "hypothesised", "right")
    refuted = Fixture(f"Priya says {C}. I disagree.", False, "att", "attributed", "right")
    plain = Fixture(f"Hypothesis: {CORRECT}", False, "unlabelled")  # no stance: no hypothesis reading checked
    check = check_fixtures(replace(RUBRIC, fixtures=(hypothesis, refuted, plain)), RubricJudge())
    assert check.misjudged == () and (check.hypothesis_recall, check.hypothesis_false) == (1.0, 0)
    # the attack: a hypothesis the reader misses, and a refuted attribution labelled as a hypothesis
    missed = Fixture("The planner is fine.", False, "missed", "hypothesised", "right")
    mislabelled = Fixture(f"Priya says {C}. I disagree.", False, "mislabelled", "hypothesised", "right")
    check = check_fixtures(replace(RUBRIC, fixtures=(missed, mislabelled, refuted)), RubricJudge())
    assert check.misjudged == ("missed (expected credited as a hypothesis)",
                               "mislabelled (expected credited as a hypothesis)")  # fmt: skip
    assert check.hypothesis_recall == 0.0


# -- v5a release rules: a premise of the code, a verdict later in a list item, the actual finding after
# a refuted opening suspicion, and a denied manner ---------------------------------------------------


@pytest.mark.parametrize(
    ("statement", "expected"),
    [
        # the code's premise described ("on the assumption that"): the agent's own claim stays asserted
        (f"{CORRECT} The allocator sizes it on the assumption that the planner is exact.", (True, True)),
        # attack: the agent's own proposition ("the assumption that", "the idea that") is still put forward
        (f"I'm working with the assumption that {C}.", (False, True)),
        (f"I keep coming back to the idea that {C}.", (False, True)),
    ],
)  # fmt: skip
def test_a_premise_of_the_code_is_no_hedge_of_the_agent(statement: str, expected: tuple[bool, bool]) -> None:
    assert _readings(_judge(statement)) == expected


@pytest.mark.parametrize(
    ("statement", "expected"),
    [
        # a verdict in the item's next sentence confirms the candidate and the item's later sentences
        (f"Candidates I went through:\n1. A memory leak. Not it.\n2. {CORRECT} This is it. No doubt left.\n",
         (True, True)),
        # attacks: an item without a verdict stays an option; a verdict in the next item does not reach back
        (f"Candidates I went through:\n1. {CORRECT} Worth a probe.\n2. A memory leak.\n", (False, True)),
        (f"Candidates I went through:\n1. {CORRECT}\n2. Allocator fragmentation. This is it.\n", (False, True)),
    ],
)  # fmt: skip
def test_a_verdict_later_in_a_list_item_confirms_its_candidate(statement: str, expected: tuple[bool, bool]) -> None:
    assert _readings(_judge(statement)) == expected


@pytest.mark.parametrize(
    ("statement", "expected"),
    [
        # the opening suspicion is refuted; the paragraph saying what actually goes wrong is the agent's own
        (f"First suspicion: a memory leak. Not the case, the allocator is clean.\n\nWhat actually goes wrong: {C}.",
         (True, True)),
        (f"First suspicion: a memory leak. Not the case.\n\nIn fact, {C}.", (True, True)),
        # attack: a later paragraph without such an opening stays under the statement's hypothesis label
        (f"First suspicion: a memory leak. Not the case.\n\nNext: {C}.", (False, True)),
    ],
)  # fmt: skip
def test_a_paragraph_on_what_actually_happens_ends_an_opening_label(
    statement: str, expected: tuple[bool, bool]
) -> None:
    assert _readings(_judge(statement)) == expected


@pytest.mark.parametrize(
    ("statement", "expected"),
    [
        # a denied manner reaches the consequence it names ("not … in a way that makes X")
        ("The planner is not wrong in a way that means it doesn't account for the head: three buffers, while the "
         "checkpointed inputs stay live.", (False, False)),
        # attacks: the same manner affirmed asserts; a contrast after the denied manner starts a claim of its own
        ("The planner is built in a way that means it doesn't account for the head: three buffers, while the "
         "checkpointed inputs stay live.", (True, True)),
        (f"The sizes are not off in a way that matters; {C}.", (True, True)),
    ],
)  # fmt: skip
def test_a_denied_manner_denies_its_consequence(statement: str, expected: tuple[bool, bool]) -> None:
    assert _readings(_judge(statement)) == expected
    assert (_judge(statement).stance == "denied") is (expected == (False, False))
