"""How the deterministic judge reads agent prose: the *stance* each rubric phrasing's match takes.

Every match is asserted, hypothesised, withdrawn, attributed or denied (:data:`STANCES`;
``docs/diagnosis.md``, "Stances"), by one rule set for every rubric (:func:`_reading`, then later
withdrawals):

- hypothesised: one option in a list of candidates ("Candidates: (a) …, (b) X", "Could be A, or X")
  not marked confirmed; a supposition ("If X were …, Y would …", "X would … if Y were …"), a yes/no or
  a mused question not answered at once ("Could it be that X?", "Hmm, X?"), a question still to check
  ("check whether X"); or inside a hypothesis scope (:func:`scopes`: a "Hypothesis:" label, "I
  suspect …", "maybe …", an "unverified" disclaimer) not confirmed later;
- withdrawn: an earlier belief reported ("my first guess was X"), or a match asserted or
  hypothesised and taken back later (:func:`withdrawals`: "Edit: scratch that", "I was wrong",
  "it made no difference, so not that", "which rules it out"; a refutation after a claim of its own
  sentence takes back only that sentence);
- attributed: inside someone else's claim the agent does not endorse (:func:`scopes`: "Priya says
  X", "According to the ticket, X", a quoted note, "X, or so the reviewer claims");
- denied: a sentence that opens by denying it ("It is not true that X"), a negation governing the
  match (a negation word before it in its clause, or inside it where the phrasing does not need it:
  ``README never documents 42`` under ``README.{0,60}42``; a phrasing written *with* its negation,
  ``doesn't account for``, keeps it; a negated accounting verb, "doesn't account for X", governs the
  verb and leaves X asserted), a denial after it ("… is not the cause"), a verdict of false ("… -
  rejected"), an item under "Ruled out:", a question answered "No";
- asserted: otherwise (hedged but committed, "most likely X", is asserted; a confirmation after a
  hypothesis, "the probe confirms it", asserts it).

A negation limited to some cases ("…, only with 2 ranks") or whose clause ends inside the match
neither asserts nor denies ("open"). For known wrong explanations only strong breaks end a negated
clause, so "not the learning rate, padding or accumulation" rejects all three.

Matching runs over three views of the statement with the same offsets back into it: as written,
without markup (backticks, brackets, asterisks, quotes; whitespace runs collapsed), and with code
identifiers split (``padded_vocab`` → ``padded vocab``, ``fc1.weight`` → ``fc1 weight``). The span
a match comes from is always a substring of the original statement. Work is bounded on long or
adversarial text (:data:`MAX_MATCHES`, :data:`MAX_SENTENCE`, :data:`MAX_SCOPES`, :data:`MAX_QUOTE`).
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from gym_trainfail.diagnosis.prefilter import fold, may_match

#: Before a full stop that is part of an abbreviation ("i.e.", "e.g.", "vs.", "cf."; "i e." in the view with code
#: identifiers split), not a sentence's end.
_ABBR = r"(?<![iI][.\s][eE])(?<![eE][.\s][gG])(?<!\b[vV]s)(?<!\b[cC]f)"
#: Words that take back what follows them in their clause ("not the per-rank mean").
NEGATION = re.compile(
    r"\b(?:not|no|never|nor|neither|none|nothing|isn't|aren't|wasn't|weren't|doesn't|don't|didn't|cannot|can't|"
    r"rather\s+than|instead\s+of|rules?\s+out|ruled\s+out|unlikely|unrelated|irrelevant)\b|n't\b",
    re.IGNORECASE,
)
#: What a negation governs when it omits something from an account ("doesn't account for X", "never
#: prices X", "doesn't consider that X"): the verb, not its object, which is presupposed (X exists; the
#: account leaves it out).
OMISSION = re.compile(
    r"\s+(?:(?:even|really|actually|properly|correctly)\s+)?(?:account(?:s|ed)?\s+for|pric(?:e|es|ed)|"
    r"charg(?:e|es|ed)|budget(?:s|ed)?\s+for|reserv(?:e|es|ed)\s+(?:memory\s+|room\s+)?for|"
    r"consider(?:s|ed)?(?:\s+(?:that|the\s+fact\s+that))?|take(?:s|n)?\s+into\s+account|factor(?:s|ed)?\s+in|"
    r"allow(?:s|ed)?\s+for|count(?:s|ed)?|includ(?:e|es|ed)|cover(?:s|ed)?|reflect(?:s|ed)?|appear(?:s|ed)?\s+in|"
    # "it has no notion that X", "no idea of X", "no term for X": the subject is unaware of X, which holds
    r"(?:notion|idea|knowledge|awareness|concept)\s+(?:that|of)|(?:term|model|line)\s+for"
    # round 14: "static_peak doesn't know about X" / "knows about A but not B": X and B hold, unknown to it
    r"|know(?:s|n)?\s+(?:about|of))\b",
    re.IGNORECASE,
)
#: "the fact that X" presupposes X whatever negates it ("… neither does the fact that X", "ignores the fact that X").
FACT_THAT = re.compile(r"\bthe\s+fact\s+that\b", re.IGNORECASE)
#: "Nothing in the planner charges for X": the omission verb after a place ("in the planner") leaves X asserted too.
NOTHING = re.compile(r"nothing|none", re.IGNORECASE)
NOTHING_IN = re.compile(
    r"\s+(?:in|of|inside|within)\s+(?:the\s+|our\s+|its\s+|this\s+)?[\w.`'-]+(?:\s+[\w.`'-]+)?" + OMISSION.pattern,
    re.IGNORECASE,
)
#: The agent (or its team) as the subject of a negated omission verb: "I don't consider that X" doubts X,
#: unlike "the price doesn't consider that X".
SPEAKER = re.compile(r"\b(?:i|we)(?:\s+(?:do|did|really|just|still|simply))*\s*$", re.IGNORECASE)
#: Phrases built from a negation word that do not negate ("not only", "no longer").
NOT_NEGATION = re.compile(
    r"\bnot\s+(?:only|just|merely|simply|least|surprising\w*)\b|\bno\s+(?:longer|doubt|wonder|matter)\b|"
    # round 45: an extent given as an alternative ("clips less (or not at all) than it should"), and a negation in a
    # relative clause that picks out which one ("a rank whose shard doesn't hold the global max uses a smaller norm")
    r"\bor\s+not\s+at\s+all\b|"
    r"\bwhose\s+(?:[\w'-]+\s+){0,3}?(?:doesn't|does\s+not|don't|do\s+not|isn't|aren't|wasn't|weren't|didn't|did\s+not|"
    r"(?:has|have|holds?|had|gets?|got)\s+no)\b|"
    # round 34: a compound adjective built on "no-" ("no-drop gating", "the no-op hook"; not "no-one")
    r"\bno-(?!one\b)(?=[a-z])|"
    # round 39: … or ending in a negating word ("the loader's nominal sampler is a do-nothing sequential one")
    r"(?<=[a-z]-)(?:nothing|none|no|not|never)\b|"
    # round 41: a part described as unrelated or irrelevant ("loader.sampler is then an unrelated SequentialSampler");
    # not a claim called an unrelated issue ("X is an unrelated issue")
    r"\b(?:a|an|another|some)\s+(?:unrelated|irrelevant)\b(?!\s+(?:issue|problem|bug|matter|question|thing|cause|concern|"
    r"factor|detail|effect|symptom|story|explanation|point|red\s+herring|one|to|here|for|in)\b)|"
    # round 36: an absence as a subject ("No flag means it assumes it's a replica"): the "no" is the subject's
    r"\bno\s+[\w-]+(?:\s+[\w-]+)?\s+(?:means|meant|implies|implied|tells\s+it)\b|"
    r"\bif\s+not\b|\bwhether\s+or\s+not\b"
    # round 16: a condition stated negatively ("when batches are not split across processes its wrapper advances …"):
    # the negation is the condition's, not a denial of what follows it
    r"|\b(?:when|whenever|unless|once)\s+(?:[\w'-]+\s+){1,3}?(?:is|are|was|were)(?:\s+not|n't)\b"
    # round 14: "not … until" says when it happens ("the tied grad isn't summed until after the reduce-scatter"), and
    # "nor that X" goes on listing what an account leaves out ("… but not the buffers — nor that the inputs stay live")
    r"|\b(?:not|never|isn't|aren't|wasn't|weren't|doesn't|don't|didn't)\s+(?:\w+\s+){0,2}?until\b|\bnor\s+that\b"
    # … and a question's "or not" before its closing quote or mark ('the "skip this step or not" decision')
    r"|\bor\s+not\b(?=\s*[\x22\u201d'?)\]])"
    # round 44: … and one that says what decides ("step() skips or not based on found_inf_per_device")
    r"|\bor\s+not\b(?=,?\s+(?:based\s+on|depending\s+on|according\s+to|as\s+decided\s+by)\b)"
    # round 29: what ought to hold ("The replicas should never differ: …, so the only way for them to diverge is …")
    # says nothing of what happens
    r"|\b(?:should|must|ought\s+to|are\s+supposed\s+to|is\s+supposed\s+to)\s+(?:never|not)\b(?=\s+(?:differ|diverge|drift|"
    r"disagree|change|move\s+apart|come\s+apart)\b)"
    # round 30: … and what ought not to be done ("The scheduler shouldn't go through accelerator.prepare(). When it
    # does, …"): a fix, which denies nothing it says the code does; not a hedged verdict ("… shouldn't be the cause",
    # "… should not matter")
    r"|\b(?:shouldn't|should\s+not|mustn't|must\s+not)\b(?!\s+(?:\w+\s+)?(?:be|been|matter|affect|make|cause|explain|change|"
    r"have|happen|break|hurt|impact|influence|differ|apply|show|see|need)\b)"
    # round 21: a noun restricted by a negated participle ("for any weight not marked as split it only counts rank 0's
    # copy"): the negation picks out which weights, it denies nothing the clause says
    r"|\b(?:any|every|each|all|a|the)\s+[\w-]+\s+(?:that\s+(?:is|are|was|were)\s+|which\s+(?:is|are)\s+)?not\s+[a-z]+ed\b"
    # round 20: sameness denied asserts a difference ("Ranks don't make the same number of all-to-all calls: …")
    r"|\b(?:not|never|isn't|aren't|wasn't|weren't|doesn't|don't|didn't)\s+(?:\w+\s+){0,2}?the\s+same\b"
    # an imperative that warns against what the code does ("# Do NOT compute the aux term on unwrap(ddp)")
    r"|(?:^|(?<=[.!?#]\s)|(?<=\n))[\W_]*(?:do\s+not|don't|never)(?=\s+(?:compute|call|use|run|route|apply|pass|build|"
    r"create|put|send|take|skip)\b)",
    re.IGNORECASE,
)
NEITHER = re.compile(r"\bneither\b", re.IGNORECASE)
#: Words after "and" that go on with the same subject, not a new one with its own verb ("and then applied").
_SAME_SUBJECT = (
    r"then|also|therefore|thus|so|just|only|still|never|not|is|are|was|were|be|been|being|gets?|got|has|have|had"
)
#: Where a clause ends for a concept: a negation does not reach past it.
CLAUSE_BREAK = re.compile(
    r"[;!?\n,()]|[.:](?=\s|$)|\s[-–—]+\s|—|--|\s(?:=>|->|-->|→|⇒)\s|\b(?:but|however|although|though|whereas|yet)\b"
    r"|\b(?:and|so)\s+(?=(?:the|this|that|these|those|it|they|its|their|so|then|thus|hence|therefore|each|every|both|all|"
    r"we|i|our|my|one|still|instead|also|now|nothing|none|no|nobody|neither)\b)"
    # round 16: a second predicate of the same subject ("averaged over W/ep instead of W and end up ep times too large")
    r"|\band\s+(?=(?:end(?:s|ed)?\s+up|come(?:s)?\s+out|came\s+out|wind(?:s)?\s+up|wound\s+up|turn(?:s|ed)?\s+out|"
    r"become(?:s)?|became"
    # round 32: … with a modal ("the DistributedSampler might never be told the epoch and would keep reshuffling"), or
    # one that goes on ("never hears about new passes and keeps producing the first pass's order")
    r"|(?:would|will|could|might)\s+(?:then\s+|therefore\s+|also\s+)?(?:keep|stay|remain|repeat|replay|reuse|re-use|"
    r"drift|diverge|differ|skip|miss|draw|use|apply|end\s+up|come\s+out)"
    r"|(?:then\s+|therefore\s+|so\s+|thus\s+)?(?:keeps|kept|stays|stayed|remains|remained|goes\s+on|went\s+on|carries\s+on|"
    r"continues|continued)"
    r")\b"
    # round 17: "the blocks never run inside the tracker's fork and draw from the default stream"
    # (round 45: with its object between: "never enter the fork and draw dropout from the rank-identical stream")
    r"|(?:draw|draws|drew|pull|pulls|pulled|fall|falls|fell)\s+(?:back\s+)?(?:[\w-]+\s+){0,2}?(?:from|on|to)\b"
    # round 18: a new subject with its own verb ("the fork is never entered and hidden dropout uses the default stream")
    # (round 34: also a possessive one, "the guard never fires and ShardBatchSampler's DistributedSampler replays …")
    r"|(?:[a-z_]+(?:'s)?\s+){1,2}(?:uses|draws|gets|takes|reads|runs|keeps|stays|sees|applies|steps|holds|loads|calls|sits|"
    r"repeats|replays|reuses|produces|returns|skips|falls|gives|makes|starts|ends|lands|comes|goes)\b"
    # round 35: … in the past tense ("the norm was never global and different ranks scaled by different factors"), not
    # a second participle of the same subject ("is never all-reduced and then applied", "and gets scaled")
    rf"|(?!(?:{_SAME_SUBJECT}|[a-z]+ly)\b)(?:[a-z_0-9]+(?:'s)?\s+){{1,2}}(?:scaled|clipped|used|drew|took|ran|kept|saw|applied|stepped|held|loaded|"
    r"called|repeated|replayed|reused|produced|returned|skipped|gave|made|started|ended|landed|came|went|computed|divided|"
    r"multiplied)\b"
    # round 38: … or a plural subject's ("nothing gets divided at all and experts get 2x the gradient")
    rf"|(?!(?:{_SAME_SUBJECT}|do|does|did|to|[a-z]+ly)\b)(?:[a-z_0-9]+(?:'s)?\s+){{1,2}}(?:get|use|draw|take|read|run|see|apply|hold|load|receive|"
    r"end\s+up|come\s+out)\s+(?!(?:to|by|with|and|or)\b)\w)"
    r"|(?<!\bnot\s)(?<!n't\s)(?<!\bnever\s)\b(?:because|since|while|whereas|when)\b"
    # round 28: "instead of" / "rather than" negates its short object, not the predicate after it ("Dividing by W/ep
    # instead of W leaves a factor ep")
    # (round 35: a four-word object, "rather than the full gradient's norm and scales by its own coefficient")
    r"|\b(?:instead\s+of|rather\s+than)\s+[^\s,;:.!?]+(?:\s+[^\s,;:.!?]+){0,3}?\s+(?=(?:leaves|left|gives|gave|yields|"
    r"yielded|makes|made|means|meant|produces|produced|inflates|inflated|multiplies|multiplied|scales|scaled|results\s+in|"
    r"resulted\s+in|leads\s+to|led\s+to|causes|caused)\b"
    # round 30: … nor a second predicate after "and" ("the masters move by lr*g instead of lr*g*c/n and drift from
    # rank 0's")
    # (round 31: "we skip 6 micro-batches instead of 24 and redo old data")
    r"|and\s+(?:then\s+)?(?:drift|diverge|differ|move|end|fall|come|stay|get|become|lag|update|step|leave|redo|re-?use|"
    r"repeat|replay|re-?train|miss|lose|drop|skip|train|see|consume|overwrite|scale|clip|divide|multipl)\w*\b"
    # round 32: … or with its auxiliary ("the skip is counted in optimizer steps instead of micro-batches and is missing
    # a factor of gradient_accumulation_steps")
    r"|and\s+(?:is|are|was|were)\s+(?:then\s+|therefore\s+|thus\s+|also\s+|now\s+)?(?:missing|short|off|lacking|"
    r"skipping|replaying|redoing|repeating|drifting|diverging|dropping|losing|training|drawing|applying|using)\b)",
    re.IGNORECASE,
)
#: Where a clause ends for a known wrong explanation (commas do not end it).
STRONG_BREAK = re.compile(r"[;!?\n]|" + _ABBR + r"[.:](?=\s|$)|\b(?:but|however|although|whereas)\b", re.IGNORECASE)
#: Where a negation's reach ends before a known wrong explanation: a clause break (:data:`STRONG_BREAK`); a reason given
#: for a negated verb ("tensors that nothing uses because X" blames X; "not because X" denies it) or a consequence drawn
#: from it ("The planner doesn't price the head, so it splits calls into too many pieces"), round 23; a second clause
#: with its own subject after "and" ("the blocks never learn and only the stem and head train"), round 24. An earlier
#: belief still reaches past them (:func:`_reported_past` uses :data:`STRONG_BREAK`: "My earlier claim that X, so Y, was
#: wrong").
WRONG_BREAK = re.compile(
    STRONG_BREAK.pattern + r"|(?<!\bnot\s)(?<!n't\s)(?<!\bnever\s)\bbecause\b"
    r"|,\s*(?:and\s+)?so\s+(?!(?:much|many|far|long|that|as|to)\b)(?=[\w`])"
    # round 24: … or a second clause with its own subject ("the blocks never learn and only the stem and head train")
    r"|\band\s+(?=(?:only|the|this|that|these|those|it|they|its|their|each|every|both|all)\b)",
    re.IGNORECASE,
)
#: Matches of one phrasing read per view, and the sentence length read each side of a match:
#: bounded work on long or adversarial statements.
MAX_MATCHES = 64
MAX_SENTENCE = 1500
#: How far before a match a negation word is looked for.
NEGATION_REACH = 56
#: How far into a match a clause break before it may look ahead ("and" before "each", "the", "we").
BREAK_LOOKAHEAD = 16
#: What code leaves out of a sum or a list (a shard, a gradient): "… are excluded" after it is a finding.
_LEFT_OUT = (
    "shard",
    "shards",
    "grad",
    "grads",
    "gradient",
    "gradients",
    "parameter",
    "parameters",
    "params",
    "weight",
    "weights",
    "tensor",
    "tensors",
    "token",
    "tokens",
    "row",
    "rows",
    "element",
    "elements",
    "sample",
    "samples",
    "entries",
    "terms",
)
#: A denial of what precedes it, in the same clause ("… is not the cause", "… is harmless").
DENIAL = re.compile(
    r"\b(?:is|are|was|were)\s+not\s+(?:the\s+|a\s+|an\s+)?(?:root\s+)?(?:cause|culprit|problem|issue|bug|reason|"
    r"explanation|factor)\b|\b(?:isn't|aren't|wasn't|weren't|'s\s+not|'re\s+not)\s+(?:the\s+|a\s+|an\s+)?(?:root\s+)?"
    r"(?:cause|culprit|problem|issue|bug|reason|explanation|factor)\b"
    # round 35: what the code leaves out is a finding, not a ruling-out ("rank 1's fc1 and fc2 shards are excluded")
    # (round 43: nor things that "… and are excluded", a plural predicate after another of theirs, nor what is
    # "excluded from the norm")
    r"|" + "".join(rf"(?<!\b{noun}\s)" for noun in _LEFT_OUT) + r"\b(?:is|was|(?<!\band\s)(?:are|were))\s+excluded\b"
    r"(?!\s+from\s+(?:the\s+|its\s+|their\s+|every\s+)?(?:[\w-]+\s+)?(?:norm|sum|total|count|list|reduction|"
    r"all-?reduce|average|mean|price|estimate|bucket|clip\w*)\b)"
    r"|\b(?:is|are|was|were|'s)\s+(?:harmless|"
    r"benign|irrelevant|a\s+red\s+herring|ruled\s+out|fine|(?:exactly|perfectly|entirely)\s+(?:right|correct)|by\s+design|"
    r"as\s+designed|intended)\b|\b(?:does\s+not|doesn't|did\s+not|didn't)\s+"
    r"matter\b|\bmakes?\s+no\s+difference\b|\bhas\s+no\s+effect\b",
    re.IGNORECASE,
)
#: A verdict of "false" on the item it ends ("… - rejected", "… (ruled out: …)", "…: no").
VERDICT_FALSE = re.compile(
    r"(?:^|[\s(])(?:ruled\s+out|rejected|disproved|disproven)\b"
    r"|(?:\(\s*|\s[-–—]+\s*|—\s*|:\s*)(?:excluded|eliminated|false|wrong|no|nope|not\s+it|not\s+the\s+cause|"
    r"does\s*n[o']t\s+apply)\s*(?:[.,;:!]|\)(?!\s*[\w`])|$)",
    re.IGNORECASE,
)
#: Where the clause a denial may follow in ends.
DENIAL_BREAK = re.compile(
    r"[;!?\n]|" + _ABBR + r"[.:](?=\s|$)|\s[\u2014\u2013]\s|\s--?\s"
    r"|\b(?:but|however|although|whereas|while|and\s+(?:so|the|this|that|it|then))\b",
    re.IGNORECASE,
)
DENIAL_REACH = 100
#: The longest match a negation inside of which reads as a denial (longer: a sentence-level phrasing).
DENIAL_SPAN = 80
#: What limits a negation to some cases ("…, only with 2 ranks", "except at TP=1", "unless …").
SCOPE = re.compile(
    r"(?:,|\bbut|;)\s*only\s+(?:with|on|in|when|for|at|under|if|once)\b|\bexcept\b|\bunless\b", re.IGNORECASE
)
#: What a claim is called when the agent refers back to it ("that idea", "the stale-cache story", "this line").
_CLAIMS = (
    r"(?:idea|theory|theories|hypothes[ie]s|explanations?|claims?|story|stories|line(?:\s+of\s+\w+)?|leads?|avenue|angle|"
    r"thread|direction|suspicions?|guess(?:es)?|hunch|reading|diagnos[ie]s|conclusions?|analysis|notes?|comments?|findings?|"
    r"suggestions?|proposals?|possibilit(?:y|ies)|candidates?|notion|assumptions?|premise|bet|take|answer|argument|"
    r"description|report|account|version|writeup|write-up|mechanisms?)"
)
#: A phrase that points back at a claim made before: a pronoun ("it", "that", "the above") or a claim noun with a
#: determiner ("that idea", "my explanation", 'the "untagged shards" story', "Kenji's theory"). Mechanism prose uses
#: "them" and "those" for tensors and ranks, so they are not here.
_BACK_PRONOUN = r"(?:it|this|that|the\s+above|all\s+(?:of\s+)?(?:this|that|it))"
_BACK_NOUN = (
    r"(?:the|this|that|these|those|my|our|his|her|their|its|[A-Z][a-z]+'s)\s+"
    rf"(?:[\w\"'\u201c\u201d-]+\s+){{0,3}}?{_CLAIMS}"
)
_BACK = rf"(?:{_BACK_PRONOUN}|{_BACK_NOUN})"
#: The verbs that take a claim back with "back" ("take it back", "walked back the claim", "pulling this back").
_TAKE = r"(?:take|takes|taking|took|taken|walk|walks|walking|walked|pull|pulls|pulling|pulled)"
#: A part of the agent's own text, named to take it back ("the paragraph above", "my summary").
_PART = (
    r"(?:the|my|this|that|these|those)\s+(?:[\w-]+\s+){0,2}?(?:paragraphs?|section|message|post|bullets?|points?|summary)"
    r"(?:\s+(?:above|before|earlier))?"
)
#: A named part or account of the statement itself ("the Diagnosis section", "the initial analysis"), and the negation
#: that says it no longer stands, for the retractions below.
_OWN_ACCOUNT = r"(?:section|part|paragraph|diagnosis|analysis|explanation|theory|hypothesis|reading|conclusion|story)"
_NO_LONGER = r"(?:does\s+not|doesn't|did\s+not|didn't|no\s+longer)"
#: Where a sentence starts for an elliptical verdict ("Not the cause.", "It isn't;"): after a full stop, a colon or
#: a blank line, not at a line break inside a wrapped sentence ("… when split_batches is\n False.").
_START = r"(?:^|(?<=[.!;:]\s)|(?<=[.!;:][\x22\u201d]\s)|(?<=\n\n)|(?<=\n)(?=[ \t]*[-*\u2022>]))"
#: An elliptical answer's words ("It isn't", "but they don't"), for a retraction and for what it may answer.
_ELLIPTICAL = (
    r"[\W_]*(?:(?:but|and|so)\s+)?(?:it|that|this|they)\s+(?:isn't|is\s+not|wasn't|was\s+not|doesn't|does\s+not|didn't|"
    r"did\s+not|aren't|are\s+not|don't|do\s+not|weren't|were\s+not)"
)
#: A claim in double quotes, named as a story or an idea ('the "X" story', 'ruled out the "X" idea').
_QUOTED = r"(?:\x22[^\x22\n]{1,200}\x22|\u201c[^\u201d\n]{1,200}\u201d)"
#: What makes a "confirmed" no confirmation yet: "not", "nothing", "none", "(to) be", "been", "yet" before it; round
#: 32: "neither", and "nothing / none / neither is" (or was, are, were: "The other one is … Neither is confirmed.")
_UNCONFIRMED = (
    r"(?<!\bnot\s)(?<!\bnothing\s)(?<!\bnone\s)(?<!\bneither\s)(?<!\bbe\s)(?<!\bbeen\s)(?<!\byet\s)"
    r"(?<!\bnothing\sis\s)(?<!\bnothing\swas\s)(?<!\bneither\sis\s)(?<!\bneither\swas\s)(?<!\bnone\sis\s)(?<!\bnone\swas\s)"
    r"(?<!\bnone\sare\s)(?<!\bnone\swere\s)"
)
#: What makes "nothing changed" no experiment: an edit not made yet ("Nothing changed in the code yet.", round 35).
_NOT_AN_EDIT = (
    r"(?!\s+(?:in|to)\s+(?:the\s+|our\s+|my\s+)?(?:code|source|sources|repo|repository|files?|tree|config|workspace)\b)"
    r"(?!\s+yet\b)"
)
#: An experiment that changed nothing ("made no difference", "unchanged", "still differ by the same amount",
#: "same failure"): a verdict after it in its sentence is about the hypothesis the experiment tested.
NULL_RESULT = re.compile(
    r"\b(?:made|makes|make)\s+(?:no|zero)\s+(?:\w+\s+)?(?:difference|change|effect|impact)\b|\bno\s+(?:difference|change|"
    r"effect)\b|\b(?:didn't|did\s+not|doesn't|does\s+not)\s+(?:change|move|improve|budge)\b|\bunchanged\b|\bunaffected\b"
    r"|\b(?:same|identical)\s+(?:failure|error|numbers|values|results?|outcome|curves?|amount|point|byte\s+count|as\s+before)\b"
    r"|\bstill\s+(?:~?\s*[\d.]+\s*%?\s+)?(?:apart|off|wrong|different|broken|present)\b"
    # (round 45: "it still hung on the 4-rank config")
    r"|\bas\s+before\b|\bstill\s+(?:differ|diverge|drift|fail|crash|OOM|mismatch|disagree|show|stayed?|sits?|agree|hung|"
    r"hang|deadlock|stall)\w*"
    r"|\b(?:stayed|remained|stays|remains)\s+(?:at|the\s+same|identical|unchanged|put)\b|\bby\s+nothing\b|"
    # (round 35: not an edit not made yet: "Nothing changed in the code yet.")
    r"\bnothing\s+(?:measurable|changed|moved|improved)\b"
    + _NOT_AN_EDIT
    + r"|\b(?:changed|did|fixed|moved)\s+nothing\b",
    re.IGNORECASE,
)
#: The agent taking back everything it said before ("scratch that", "I was wrong").
RETRACTION = re.compile(
    # at the end of its clause: "the skip forgets that each step consumed …" describes code, not a retraction
    # (round 42: also "scrap the draft")
    r"\b(?:scratch|strike|forget|scrap)\s+(?:that|this|all\s+that|the\s+above|what\s+i\s+(?:said|wrote)|"
    r"(?:the|my)\s+(?:(?:first|earlier|initial|original|previous)\s+)?draft)\b"
    r"(?:\s+(?:idea|theory|hypothesis|explanation|guess|part|bit|one|last\s+\w+))?(?=\s*(?:[.;:,!?\u2014\u2013)]|\s-\s|$))"
    r"|\b(?:disregard|ignore)\s+(?:that|this|all\s+(?:of\s+)?that|the\s+above|everything\s+above|what\s+i\s+(?:said|wrote)|"
    r"my\s+(?:earlier|previous|last|first)\b)"
    r"|\bi\s+take\s+(?:that|it|this|everything|all\s+of\s+that)\s+back\b|\bi\s+(?:hereby\s+)?(?:retract|withdraw)\b"
    r"|\b(?:retracted|withdrawn)\s*[:.!)\]]|(?:^|(?<=[.!?]\s)|(?<=\n))[\W_]*(?:[\w.-]{1,12}(?::\d\d)?\s*:\s*)?(?:retracted|withdrawn)\b"
    # round 32: the passive at the end of its clause ("Section 3 is withdrawn in full; the remaining sections stand")
    r"|\b(?:is|are|was|were)\s+(?:hereby\s+|now\s+)?(?:retracted|withdrawn)(?=\s*(?:[.;:,!)\u2014\u2013]|\s-\s|$)|\s+in\s+"
    r"(?:full|its\s+entirety|whole)\b|\s+(?:entirely|completely)\b)"
    # round 17: "Struck that out: …", "so withdrawing the shard-norm theory"
    r"|\bstruck\s+(?:that|this|it)(?:\s+out)?\b"
    r"|\b(?:retract|withdraw)(?:ing|ed|n)?\s+(?:the|my|that|this)\s+(?:[\w-]+\s+){0,3}?(?:theory|hypothesis|idea|claim|"
    r"diagnosis|explanation|suspicion|guess)\b"
    r"|(?<=\s)(?-i:Retracted|Withdrawn)\b|(?<=\s)(?-i:Actually|Hmm|Wait|Well),?\s+no\s*[.!,]"
    r"|\b(?:disregard|ignore)\s+(?:the|my|all|everything)\s+(?:\w+\s+){0,3}?(?:above|before\s+this)\b"
    r"|\b(?:disregard|ignore)\s+(?:the|my)\s+(?:earlier|previous|first|initial|original|last)\s+(?:explanation|theory|"
    r"hypothesis|diagnosis|claim|answer|message|note|analysis|reading|idea|guess|conclusion|statement|suggestion|update|edit)\b"
    r"|\bor\s+so\s+(?:i|we)\s+(?:thought|believed|assumed)\b"
    r"|\bnever\s*mind\b|\bnvm\b|\bi\s+stand\s+corrected\b|\bfalse\s+alarm\b"
    # round 16: "Update 2: ignore update 1."
    r"|\b(?:disregard|ignore|scratch|forget)\s+(?:my\s+|the\s+)?(?:update|point|item|note|edit|step|message|entry|bullet|"
    r"paragraph|comment)\s*#?\d+\b"
    r"|\b(?:i|we)\s+(?:was|were|had\s+been)\s+(?:looking\s+at|reading|checking|running|testing|on|in)\s+(?:the\s+)?(?:wrong|"
    r"old|stale|outdated)\s+(?:branch|file|version|commit|code|run|log|config|checkout|case|machine|copy)\b"
    r"|\bi\s+was\s+(?:wrong|mistaken|incorrect)\b|\bi\s+(?:got|had)\s+(?:that|it|this)\s+wrong\b"
    # round 36: a numbered section or version of the statement called wrong or superseded ("Given Section 2, Section 1
    # was wrong", "Summary v2 (supersedes v1): …")
    r"|\b(?:section|part|paragraph|summary|draft|version|v)\s*#?\d{1,2}\s+(?:is|was)\s+(?:(?:simply|just|plainly)\s+)?"
    r"(?:wrong|incorrect|mistaken|false)\b"
    r"|(?:\(\s*|(?:^|(?<=[.!?:]\s)|(?<=\n))[\W_]*)(?:this\s+)?(?:supersedes|replaces|overrides)\s+(?:v\d{1,2}|version\s+\d{1,2}|"
    r"(?:the\s+)?(?:earlier|previous|first|above|prior)\s+(?:one|summary|version|draft|note|answer|diagnosis|update|analysis|"
    r"section))\b"
    r"|\b(?:the\s+above|my|this|that|the)\s+(?:earlier\s+|previous\s+|first\s+|initial\s+)?(?:theory|hypothesis|"
    # (round 31: also "reasoning" and "argument": 'That reasoning was mistaken and the change is reverted'; not
    # "assumption", which is the code's as often: "For our split weights that assumption is false, so …")
    r"diagnosis|explanation|analysis|reading|guess|idea|claim|conclusion|note|reasoning|argument)\s+"
    r"(?:is|was)\s+(?:wrong|incorrect|false|"
    r"mistaken|disproved|disproven|refuted|ruled\s+out|not\s+right|not\s+correct|untrue|not\s+true)\b"
    # round 39: an account declared dead ("so the head story is dead", "that theory is dead in the water")
    r"|\b(?:the|my|our|this|that)\s+(?:[\w-]+\s+){0,2}?(?:theory|hypothesis|story|idea|explanation|lead|suspicion|diagnosis)\s+"
    r"(?:is|was|'s)\s+(?:now\s+|officially\s+)?(?:dead|debunked|busted|off\s+the\s+table)\b"
    # round 35: the agent's own account said not to hold ("So my step-1 explanation does not hold. Final answer: …")
    r"|\b(?:my|our|the\s+above)\s+(?:[\w-]+\s+){0,2}?(?:theory|hypothesis|diagnosis|explanation|analysis|reading|guess|idea|"
    rf"claim|conclusion|reasoning|argument|story|account)\s+{_NO_LONGER}\s+(?:(?:hold|stand|survive)s?|appl(?:y|ies))\b"
    # round 40: a named part or account of the statement said not to hold ("the Diagnosis section above does not hold",
    # "so the wrapper explanation doesn't hold and I've reverted it")
    rf"|\bthe\s+(?:[\w-]+\s+){{0,2}}?{_OWN_ACCOUNT}(?:\s+(?:above|before))?\s+{_NO_LONGER}\s+(?:hold|stand|survive)s?\b"
    # round 41: an earlier part of the statement said not to apply ("On a second look the initial analysis doesn't
    # apply"); not another account ("The memory-leak theory does not apply here")
    rf"|\bthe\s+(?:initial|original|first|earlier|previous|preceding|above)\s+(?:[\w-]+\s+)?{_OWN_ACCOUNT}"
    rf"(?:\s+(?:above|before))?\s+{_NO_LONGER}\s+appl(?:y|ies)\b"
    # round 35: an earlier version named and called wrong ("Diagnosis (v2, replaces v1): On reflection, v1 is wrong")
    r"|\b(?:v|version|draft|revision|rev|take|diagnosis)\s*#?\d{1,2}\s+(?:is|was)\s+(?:wrong|incorrect|"
    r"mistaken|false|untrue|not\s+right|not\s+correct|(?:a|my)\s+(?:misread(?:ing)?|mistake|misunderstanding))\b"
    # round 39: an earlier version said to have misread its source ("v1 misread accelerate")
    r"|\b(?:v|version|draft|revision|rev|take)\s*#?\d{1,2}\s+(?:misread|misunderstood|misattributed|misinterpreted|"
    r"got\s+(?:\w+\s+){0,2}?wrong)\b"
    # round 37: a numbered version, point or log entry withdrawn or struck ("## Update: v1 withdrawn, I misattributed
    # it", "EDIT (v2): striking v1", "I'm striking point 2", "09:40 Retract 09:18: …")
    r"|\b(?:v|version|draft|revision|rev|section|part|point|item|step|update|entry|bullet|note|paragraph)\s*#?\d{1,2}\s+"
    r"(?:(?:is|was|has\s+been)\s+(?:hereby\s+|now\s+)?)?(?:withdrawn|retracted|struck(?:\s+out)?|scrapped)\b"
    # round 45: … or said not to hold ("Retest: it still hung …, so point 1 doesn't hold up")
    r"|\b(?:v|version|draft|revision|rev|section|part|point|item|step|update|entry|bullet|note|paragraph)\s*#?\d{1,2}\s+"
    rf"{_NO_LONGER}\s+(?:hold|stand|survive)s?(?:\s+up)?"
    # (the verb ends its clause: not "step 3 doesn't hold the lock")
    r"(?=\s*(?:[.;:,!)\u2014\u2013]|$)|\s+(?:and|any\s*more|either|here|after\s+all|so|for\s+(?:us|this|our))\b)"
    # (round 44: also taken back: "After instrumenting the run I have to take back draft 1.")
    rf"|\b(?:retract(?:ing)?|withdraw(?:ing)?|strik(?:e|ing)|scratch(?:ing)?|scrap(?:ping)?|cross(?:ing)?\s+out|{_TAKE}\s+back)\s+"
    r"(?:(?:(?:my|the)\s+)?(?:point|item|step|entry|bullet|note|update|section|paragraph|v|version|draft|line)\s*#?\d{1,2}"
    r"|\d{1,2}:\d\d)\b"
    # round 37: a log entry or line that opens with "nope" ("09:48 - nope. GradScaler.step() itself …")
    r"|(?:^|(?<=\n)|(?<=[.!?]\s))[\W_]*(?:\d{1,2}:\d\d\s*[-\u2013\u2014:]?\s*)?(?:nope|nah)\b(?=\s*[.!,;:\u2014\u2013-])"
    r"|\b(?:i|we)\s+no\s+longer\s+(?:think|believe|stand\s+by|stand\s+behind|hold|buy)\b"
    # round 38: "Second look, an hour later: I'm no longer standing behind this."
    r"|\b(?:i'm|i\s+am|we're|we\s+are)\s+no\s+longer\s+(?:standing\s+(?:behind|by)|backing|defending)\b"
    r"|\b(?:withdrawing|retracting)\s+what\s+(?:i|we)\s+(?:said|wrote|"
    r"posted|claimed|suggested|proposed)\b|\bon\s+second\s+thoughts?\b|\bturn(?:s|ed)\s+out\s+to\s+be\s+wrong\b"
    r"|\bcorrection\s*:|\bno,?\s+wait\b|\bi\s+misread\b|\bmy\s+bad\b|\bturns?\s+out\s+i\s+(?:misread|misunderstood|was)\b"
    r"|\b(?:retract|withdraw)(?:ing|ed|n)?\s+(?:this|that|it|them|these|those|the\s+above|all\s+of\s+(?:this|that)|my\s+\w+)\b"
    r"|\b(?:retract|withdraw)(?:ing|ed|n)?\s+(?:both|all|each|every|the|these|those)\s+(?:\w+\s+){0,2}?(?:bullets?|points?|"
    r"items?|claims?|lines?|statements?|notes?|steps?)\b"
    # round 2: "retracting 1-3", "Update: retracting.", "Please disregard;", "I'm taking this back", "I had the wrong
    # file open", "based on the old commit", "That was my reading an hour ago"
    r"|\bretracting\b|\b(?:striking|scratching|crossing\s+out)\s+(?:this|that|it|the\s+above)\b|(?:^|(?<=[.!?:]\s)|(?<=\n))[\W_]*(?:(?:i'm|i\s+am|we're|we\s+are)\s+)?(?:retract|withdraw)\b"
    r"|(?:^|(?<=[.!?:;]\s)|(?<=\n))[\W_]*(?:please\s+)?(?:disregard|ignore)(?:\s+(?:it|this|that|all\s+(?:of\s+)?(?:it|this|that)|"
    r"everything|the\s+above))?\s*(?=[.;:,!\u2014\u2013]|\s-\s|$)"
    # (round 26: "pull" too, and "back" before the object: "PS -- I take back the paragraph above", "EDIT — I'm pulling
    # this back")
    # (round 30: the part named in either order: "I take the summary above back. Posted too early, treat it as not
    # said")
    rf"|\b{_TAKE}\s+(?:{_BACK}|{_PART})\s+back\b|\b{_TAKE}\s+back\s+(?:{_BACK}|{_PART})\b"
    r"|\btreat\s+(?:it|this|that|them|the\s+above)\s+as\s+(?:not\s+said|unsaid|not\s+written|void|withdrawn|retracted)\b"
    # round 27: "v2: I am withdrawing the v1 root cause"
    r"|\b(?:i'm|i\s+am|we're|we\s+are)\s+(?:now\s+|hereby\s+|formally\s+)?(?:withdrawing|retracting)\b"
    r"(?:\s+(?:the|my|our|this|that|these|those|its|his|her|their)\b[^.;:!?\n]{0,80})?"  # … with what it names
    r"|\b(?:i|we)\s+(?:had|opened|read|used|checked|ran|looked\s+at|(?:was|were)\s+(?:on|in|using|reading|running))\s+(?:the\s+|an?\s+)?"
    r"(?:wrong|old|stale|outdated)\s+(?:file|branch|version|commit|code|run|log|config|checkout|machine|copy|data|dump|checkpoint)s?\b"
    r"|\b(?:based\s+on|came\s+from|comes?\s+from|taken\s+from)\s+(?:the\s+|an?\s+)?(?:wrong|old|stale|outdated)\s+(?:file|branch|"
    r"version|commit|code|run|log|config|checkout|copy|data|dump|checkpoint)s?\b"
    r"|\b(?:that|this)\s+was\s+my\s+(?:\w+\s+)?(?:reading|view|theory|guess|thinking|belief|take|understanding|assumption|"
    r"hypothesis|explanation|idea)\s+(?:(?:an?|one|two|some)\s+\w+\s+ago|\w+\s+ago|earlier|before|at\s+first|initially|"
    r"yesterday|this\s+morning)\b",
    re.IGNORECASE,
)
#: The agent reporting what it believed before ("earlier I said …", "my first guess was …"): what
#: follows in that clause is not its current belief.
PAST_BELIEF = re.compile(
    r"\b(?:earlier|previously|before|initially|at\s+first|first|originally)\s*,?\s+i\s+(?:said|claimed|thought|wrote|"
    r"assumed|suggested|believed|suspected|guessed|blamed)\b"
    # round 22: "I first pinned this on X. Wrong, …"
    r"|\b(?:i|we)\s+(?:first|initially|originally)\s+(?:pinned|blamed|suspected|thought|assumed|guessed|chalked|put)\b"
    # round 23: "I started out thinking X", "We began by assuming X"
    r"|\b(?:i|we)\s+(?:started(?:\s+out)?|began)\s+(?:by\s+)?(?:thinking|assuming|believing|suspecting|blaming|guessing)\b"
    r"|\bi\s+(?:briefly|once|for\s+a\s+while|at\s+one\s+point|wrongly|mistakenly)\s+(?:believed|thought|assumed|suspected|"
    r"guessed|blamed|was\s+(?:sure|convinced|certain))\b"
    r"|\bi\s+(?:had\s+)?(?:earlier|previously|initially|first|originally)\s+(?:said|claimed|thought|wrote|assumed|suggested|"
    r"believed|suspected|guessed|blamed)\b|\bi\s+(?:used\s+to\s+think|had\s+thought)\b"
    r"|\b(?:initially|at\s+first|originally|earlier)\s*,?\s+it\s+(?:looked|seemed|appeared)\s+(?:as\s+if|as\s+though|like|that)\b"
    r"|\bmy\s+(?:earlier|previous|first|initial|original|last)\s+(?:claim|guess|theory|hypothesis|diagnosis|idea|reading|"
    r"analysis|message|statement|conclusion|suspicion|thought|hunch|instinct|impression|explanation|understanding|"
    r"take|answer|note|suggestion|diagnoses)\b"
    # round 2: "I thought the problem was X", "I proposed that X", "My claim was: X", "I was going with X", "I had put
    # this down to X" (a later confirmation still makes X asserted: "I thought X, and the probe confirms it")
    r"|(?<!\bas\s)\b(?:i|we)\s+(?:had\s+)?(?:thought|believed|assumed|figured|supposed|reckoned|proposed|presumed|"
    # round 19: "I had concluded that X" (a conclusion held before; "I concluded" alone is a finding)
    r"(?<=\bhad\s)concluded|(?<=\bhad\s)decided|"
    r"hypothesi[sz]ed|theori[sz]ed)\b(?!\s+(?:about|of|through|hard|so|it\s+over|again|twice)\b)"
    r"|\b(?:i|we)\s+(?:was|were)\s+(?:going\s+with|leaning\s+towards?|betting\s+on|working\s+on\s+the\s+(?:assumption|"
    r"theory|idea|hypothesis))\b|\b(?:i|we)\s+(?:had\s+|'d\s+)?(?:put|pinned|chalked)\s+(?:this|it|that|the\s+\w+)\s+"
    r"(?:down\s+|up\s+)?(?:to|on)\b|\b(?:i|we)\s+(?:had|'d)\s+been\s+(?:assuming|thinking|blaming|suspecting|believing)\b"
    r"|\bmy\s+(?:\w+\s+)?(?:claim|guess|theory|hypothesis|diagnosis|idea|reading|suspicion|explanation|take|answer|bet|"
    r"story|conclusion|assumption|understanding|thinking|belief|read|worry|concern|impression|instinct|hunch)\s+"
    r"(?:was|had\s+been)\b"
    # round 8: "I was worried that X", "I said an hour ago that X", "I said the grads were …" (not "As I said")
    r"|\b(?:i|we)\s+(?:was|were|had\s+been)\s+(?:worried|concerned|afraid)\s+(?:that|about)\b"
    r"|(?<!\bas\s)\b(?:i|we)\s+(?:had\s+)?said\b(?!\s+(?:so|no|yes|nothing)\b)"
    # round 15: "I'd said the router gradient was wrong" ("I'd" for "I had")
    r"|(?<!\bas\s)\b(?:i|we)'d\s+(?:said|thought|assumed|believed|suspected|guessed|blamed|claimed)\b"
    # round 12: "I had written: "X"" (not "I wrote a probe")
    r"|\b(?:i|we)\s+(?:had\s+)?(?:written|wrote)\b(?!\s+(?:a|an|the|some|this|that|my|our)\s+(?:\w+\s+)?(?:test|probe|script|"
    r"patch|fix|check|repro|reproducer|harness|hook|tool|program|function|loop|version|change)s?\b)"
    # "First guess was that X", "Initial theory: X" (no "my")
    r"|(?:^|(?<=[.!?]\s)|(?<=\n))[\W_]*(?:(?:first|initially|originally|briefly)\s+)?suspected\b"
    # round 19: "I had this down as `_copy_repo` racing with readers"
    r"|\b(?:i|we)\s+(?:had|'d)\s+(?:this|it|that)\s+down\s+as\b"
    # round 18: "Thought it was the missing tag on fc1/fc2 …" (no subject)
    r"|(?:^|(?<=[.!?]\s)|(?<=\n))[\W_]*(?:(?:first|initially|originally|at\s+first)\s*,?\s+)?(?:thought|assumed|figured)\s+"
    r"(?:it\s+was|it\s+might\s+be|that|the)\b"
    r"|(?:^|(?<=[.!?]\s)|(?<=\n))[\W_]*(?:first|initial|original|earlier)\s+(?:guess|thought|theory|hypothesis|read|idea|"
    r"suspicion|hunch|instinct|take)\s*(?:was\b|:)",
    re.IGNORECASE,
)
#: The agent declaring something just said false ("that's not it", "it is false"): at the start of
#: a sentence it takes back everything before; after a claim in its own sentence ("padding is
#: masked, so that's not it") only that sentence.
#: Not a plan to test a claim ("compare the norms to confirm or rule this out", "a run that could rule it out"): the
#: words before a "rule … out" that make it one.
_NOT_PLANNED = (
    r"(?<!\bto\s)(?<!\bor\s)(?<!\bcan\s)(?<!\bcould\s)(?<!\bwould\s)(?<!\bwill\s)(?<!\bshould\s)(?<!\bmight\s)"
    r"(?<!\bmay\s)(?<!\bhelp\s)"
    # round 33: … nor one not (yet) done ("Could be something in DDP; haven't ruled that out", "can't rule it out")
    r"(?<!n't\s)(?<!\bnot\s)(?<!\bnever\s)(?<!\byet\s)"
)
REFUTATION = re.compile(
    r"\b(?:that's|that\s+is|that\s+was|this\s+is|this\s+was|it's|it\s+is|it\s+was)\s+not\s+it\b"
    r"|\bnot\s+it\s+after\s+all\b|\bnot\s+the\s+(?:cause|problem|culprit|issue|bug)\s+after\s+all\b"
    r"|\b(?:that's|that\s+is|that\s+was|this\s+is|this\s+was|which\s+is)\s+not\s+(?:the|our|what)\s+(?:issue|cause|problem|"
    r"culprit|bug|explanation|mechanism|failure|happening|happens|happened)\b"
    r"|\b(?:that|this|it)\s+(?:isn't|wasn't|is\s+not|was\s+not)\s+(?:true|correct|right)\b"
    r"|\b(?:that|this|it)(?:'s|\s+is|\s+was)\s+not\s+why\b"
    # "The cause is somewhere else.", "…; something else is going on"
    r"|\bthe\s+(?:real\s+)?(?:cause|problem|bug|culprit|issue)\s+(?:is|lies|must\s+be|has\s+to\s+be)\s+(?:somewhere\s+else|"
    r"elsewhere)\b"
    # round 19: "I looked at that explanation — … — and reject it.", "That rules the ordering out.", "point 1 is wrong"
    r"|\b(?:and\s+)?(?:i|we)?\s*reject(?:ed)?\s+(?:it|this|that|them)\s*(?=[.;!\n]|$)"
    rf"|{_NOT_PLANNED}\brul(?:e|es|ed|ing)\s+the\s+(?:[\w-]+\s+){{0,2}}?[\w-]+\s+out\b"
    # round 27: 'Ruled out the "optimizer holds the pre-shard root params" idea: …' (a named claim after "ruled out")
    rf"|{_NOT_PLANNED}\brul(?:e|es|ed|ing)\s+out\s+(?:the|that|this|my|our|their|his|her)\s+{_QUOTED}\s+"
    rf"(?:[\w-]+\s+){{0,2}}?{_CLAIMS}\b"
    # round 32: … or named unquoted ("So I'm ruling out the untagged-shard explanation.")
    rf"|{_NOT_PLANNED}\brul(?:e|es|ed|ing)\s+out\s+(?:the|that|this|my|our|their|his|her)\s+(?:[\w-]+\s+){{1,3}}?{_CLAIMS}\b"
    r"|\b(?:point|item|step|bullet|note|line|claim)\s*#?\d{1,2}\s+(?:is|was)\s+(?:wrong|incorrect|false|mistaken)\b"
    # round 18: "So not that — back to looking at the engine."
    rf"|{_START}[\W_]*(?:so|hence|thus|therefore)\s*,?\s+not\s+(?:that|it|this)\s*(?=[.;!\u2014\u2013]|\s-+\s|$)"
    # round 18: "The overrun is elsewhere.", "the shard-local-norm explanation (…) is not what breaks the update"
    rf"|{_START}[\W_]*the\s+(?:real\s+|actual\s+)?[\w-]+(?:\s+[\w-]+)?\s+(?:is|lies|must\s+be|has\s+to\s+be|comes?\s+from)\s+"
    r"(?:somewhere\s+else|elsewhere)\s*(?=[.!\n]|$)"
    rf"|\bthe\s+(?:[\w-]+\s+){{0,3}}?{_CLAIMS}\s*(?:\([^()\n]{{0,200}}\)\s*)?(?:isn't|wasn't|is\s+not|was\s+not)\s+(?:what(?:'s|\s+is)?\s+"
    r"(?:\w+ing|causes|caused|breaks|broke)|why\b|the\s+(?:root\s+|real\s+)?(?:cause|reason|culprit|explanation))\b"
    r"|\bsomething\s+else\s+(?:is|must\s+be)\s+(?:going\s+on|happening|at\s+play|the\s+cause|causing\s+(?:it|this))\b"
    # "This isn't the cause.", "that isn't why", "which wasn't what's breaking it"
    r"|\b(?:that|this|which|it)\s+(?:isn't|wasn't|is\s+not|was\s+not)\s+(?:the\s+(?:root\s+|real\s+|actual\s+)?(?:cause|reason|"
    r"culprit|explanation|issue|problem|bug|mechanism|failure)\b|why\b|what(?:'s|\s+is|\s+was)?\s+(?:\w+ing|causes|caused|breaks|"
    r"blocks)\b)"
    # (round 31: and "it": "I looked at the idea that X, and it's not the case.")
    r"|\b(?:that|this|it)(?:'s\s+not|\s+(?:isn't|wasn't|is\s+not|was\s+not))\s+the\s+case\b(?!\s+that)"
    # round 16: a conclusion drawn from an experiment ("The swap changed nothing, so the ordering is not the cause.")
    r"|\b(?:so|hence|thus|therefore)\s*,?\s+(?:the|that|this)\s+[\w-]+(?:\s+[\w-]+)?\s+(?:isn't|wasn't|is\s+not|was\s+not)\s+"
    r"the\s+(?:real\s+)?(?:cause|reason|culprit|explanation|problem|issue)\s*(?=[.!;\n]|$)"
    # round 14: a noun pointing back at the sentence's start ("That accounting is not the reason.")
    rf"|{_START}[\W_]*(?:that|this)\s+[\w-]+(?:\s+[\w-]+)?\s+(?:isn't|wasn't|is\s+not|was\s+not)\s+the\s+(?:real\s+)?(?:cause|reason|"
    r"culprit|explanation|problem|issue)\s*(?=[.!;\n]|$)"
    # … not a truth value answering the sentence before ("… only when `train.deterministic` is true. It's false, so …")
    r"|(?<!\btrue\.\s)(?<!\bfalse\.\s)(?<!\btrue`\.\s)(?<!\bfalse`\.\s)"
    r"\b(?:that's|that\s+is|that\s+was|it's|it\s+is|it\s+was|this\s+is|this\s+was|which\s+is|which\s+was)\s+"
    r"(?:false|untrue|not\s+true|not\s+correct|incorrect)\b"
    # round 16: a flag's value ("It's false in the shipped config, so …"), not a verdict
    r"(?!\s+(?:by\s+default|(?:in|for|under)\s+(?:the\s+|our\s+)?(?:shipped|default|current|base|production)\s+(?:config|"
    r"configuration|yaml|settings?|setup|run)"
    # round 32: … or in a config file it names ("tied to train.deterministic and that's false in small.toml")
    r"|(?:in|for|under)\s+`?[\w./-]+\.(?:toml|ya?ml|json|cfg|ini|conf)\b))"
    r"|\b(?:that's|that\s+is|that\s+was|it's|it\s+is|it\s+was|this\s+is|this\s+was)\s+(?:wrong|mistaken)\s*"
    r"(?:[.;:!,—–-]|$|after\s+all)"
    r"|\b(?:that's|that\s+is|it's|it\s+is|this\s+is)\s+no\s+longer\s+(?:true|the\s+case|correct|right)\b"
    r"|\b(?:i|we)\s+(?:\w+\s+){0,3}?disagree\b|\b(?:i|we)\s+(?:don't|do\s+not|can't|cannot)\s+agree\b(?!\s+more)"
    # round 39: "That lint fires on every model we have, and it's noise here"; "I read the same file and came to the
    # opposite conclusion"
    r"|\b(?:that's|that\s+is|it's|it\s+is|this\s+is)\s+(?:just\s+|only\s+|pure\s+)?(?:noise|a\s+red\s+herring|"
    r"a\s+false\s+(?:positive|alarm))\b"
    r"|\b(?:came|come|coming|arrived?|arriving|reached?|reaching)\s+(?:at\s+|to\s+)?the\s+opposite\s+conclusion\b"
    r"|\b(?:that's|it's|this's)\s+not\s+(?:true|correct|right)\b"
    # round 42: a clause that closes the sentence naming a claim ("I looked at the theory that X, and it's not the
    # problem")
    r"|,\s*and\s+(?:it's|it\s+is|it\s+was|that's|that\s+is|that\s+was)\s+not\s+the\s+(?:problem|issue|cause|culprit|bug)\b"
    r"|\b(?:shows?|showed|says?|said|suggests?|suggested|indicates?|indicated|proves?|proved|tells?\s+us)\s+otherwise\b"
    r"|\bi\s+(?:doubt|question)\s+(?:it|that|this)\b"
    r"|\bi\s+(?:don't|do\s+not)\s+(?:think|believe)\s+(?:(?:that's|that\s+is|this\s+is|it's|it\s+is)\s+(?:it|right|correct|"
    r"true|the\s+(?:cause|issue|problem|culprit|explanation)|what(?:'s|\s+is)\s+(?:going\s+on|happening)|why\b)\b|so\b|(?:that|this|it)\s+(?:holds|applies|explains\s+(?:it|this|"
    r"that|anything|the\s+\w+)|is\s+what\s+happens)\b)|\bi\s+(?:don't|do\s+not)\s+buy\s+(?:it|that|this)\b"
    r"|\b(?:this|that|it)\s+(?:can't|cannot|can\s+not|couldn't|could\s+not)\s+(?:apply|be\s+(?:it|right|true|correct|"
    r"the\s+(?:cause|issue|problem|explanation)))\b"
    r"|\b(?:none\s+of\s+(?:this|that|these|those|it|them|the\s+above)|(?:this|that|these|those|it|they)(?:\s+\w+)?)\s+"
    r"(?:doesn't|does\s+not|don't|do\s+not|can't|cannot|didn't|did\s+not)\s+explain\b"
    r"|\bnone\s+of\s+(?:this|that|these|those|the\s+above)\s+explains?\b"
    # (round 33: not one that cannot be or has not been done: "That can't be ruled out.", "not yet ruled out")
    r"|(?<!n't\sbe\s)(?<!not\sbe\s)(?<!n't\sbeen\s)(?<!not\sbeen\s)(?<!\bnot\s)(?<!n't\s)(?<!\byet\s)"
    r"\b(?:ruled\s+out|disproved|disproven|refuted|falsified|debunked)\s*(?=[.!;\n]|$)"
    r"|\b(?:is|was|are|were|has\s+been|have\s+been)\s+(?:refuted|disproved|disproven|falsified|contradicted|debunked)\b"
    r"|\b(?:isn't|is\s+not|wasn't|was\s+not)\s+what\s+(?:\w+\s+){0,2}?(?:does|do|did|happens|happened|is\s+going\s+on|"
    r"is\s+happening)\b|\b(?:isn't|is\s+not|wasn't|was\s+not)\s+what(?:'s|\s+is|\s+was)\s+(?:happening|going\s+on)\b"
    rf"|\b(?:contradict(?:s|ed)?|disprove(?:s|d)?|refute(?:s|d)?|falsif(?:y|ies|ied)|{_NOT_PLANNED}rule(?:s|d)?\s+out)\s+(?:it|this|that|them|"
    r"the\s+above|my\s+\w+|all\s+of\s+that|the\s+(?:claim|theory|idea|hypothesis|note|finding|diagnosis|explanation))\b"
    # … but not a plan to test it ("compare the norms to confirm or rule this out", "a run that could rule it out")
    rf"|{_NOT_PLANNED}\brul(?:e|es|ed|ing)\s+(?:it|this|that)\s+out\b"
    r"|(?:^|(?<=[.!?]\s)|(?<=\n))[\W_]*(?:edit|update|correction|actually|nope|no)\b(?:\s*\d+)?[\W_]*(?:(?:that's|that\s+is|"
    r"this\s+is|it's|it\s+is)\s+)?(?:wrong|false|incorrect|mistaken|not\s+it)\b"
    r"|(?:^|(?<=[.!?]\s)|(?<=\n))[\W_]*(?:(?:actually|hmm+|wait|well|edit|update)[\W_]+)?(?:no|nope)\s*(?:[.!](?=\s|$)|\s*[,;:]\s|"
    r"\s[\u2014\u2013-]+\s|[\u2014\u2013])"
    r"|\bnot\s+what(?:'s|\s+is|\s+was)\s+(?:happening|going\s+on)\b"
    # round 8: a bare verdict sentence ("First guess was X. Wrong: …", "… Wrong.")
    # (round 35: also after a note's time stamp and a "no": "11:55 -- no, wrong. FSDP1 unshards …")
    r"|(?:^|(?<=[.!?]\s)|(?<=\n))[\W_]*(?:\d{1,2}:\d\d\s*(?:[\u2014\u2013-]+|:)\s*)?(?:(?:no|nope)\s*[,.!]?\s*)?wrong\s*"
    r"(?:[.:!]|\s[\u2014\u2013-]+\s|[\u2014\u2013])"
    # (round 41: not a verdict on the code before what it should do: "divided by W/ep. Wrong: they should be divided
    # by W")
    r"(?![ \t]*(?:(?:it|they|this|that|these|those|[\w.`()'-]+|the\s+[\w.`()'-]+)\s+)?"
    r"(?:should|must|needs?\s+to|ought\s+to)\b)"
    r"|(?:^|(?<=[.!?]\s)|(?<=\n))[\W_]*(?:ruled\s+out|rejected|disproved|disproven|refuted|excluded|eliminated|falsified|"
    r"debunked|dismissed)\b(?=\s+(?:after|by|once|when|because|since|given|on|following|via|with)\b)"
    # (round 35: not an edit not made yet: "Nothing changed in the code yet.")
    r"|\bnothing\s+(?:changed|improved|moved|happened)\b"
    + _NOT_AN_EDIT
    + r"|\b(?:so|then)\s*,?\s+(?:no|nope)\s*(?=[.!;]|$)"
    # (round 30: not a predicate in code called a test: "the `is_model_parallel_parameter(p) or rank == 0` test excludes
    # them" says which parameters the code leaves out)
    r"|(?<![`)]\s)\b(?:probe|run|rerun|trace|numbers|counts|logs?|test|experiment|measurement|data|dump|check|diff)\s+(?:\w+\s+)?(?:killed|sank|"
    r"sunk|buried|refuted|disproved|falsified|debunked|rules?\s+out|ruled\s+out|excludes?|excluded|contradicts?|contradicted)\s+"
    r"(?:it|this|that|them|the\s+(?:idea|theory|hypothesis|claim|explanation))\b"
    r"|\bverdict\b[^.;:\n]{0,40}:\s*(?:false|wrong|no|rejected|refuted|ruled\s+out|not\s+it)\b"
    r"|\b(?:on\s+closer\s+(?:inspection|look|reading)|looking\s+closer|on\s+a\s+second\s+look|after\s+a\s+closer\s+look)\b"
    r"[^.;!?]{0,40}?\b(?:that's|that\s+is|this\s+is|it's|it\s+is)\s+(?:not|wrong|false)\b"
    r"|\b(?:doesn't|does\s+not|didn't|did\s+not)\s+survive\b|\bfalls?\s+apart\b|\bfails?\s+to\s+explain\b"
    r"|,\s*until\s+(?:the|a|an|my|our|i|we)\b[^.;!?]{0,80}?\b(?:showed|proved|revealed|made\s+(?:it\s+)?clear|turned\s+up|"
    r"came\s+back)\b"
    r"|\b(?:doesn't|does\s+not|didn't|did\s+not)\s+hold\s+(?:up|water)?\s*(?:(?:in\s+my\s+(?:view|opinion|reading)|to\s+scrutiny|"
    r"under\s+(?:scrutiny|testing)|here|either)\s*)?(?=[.;:!,—–-]|$)"
    r"|\b(?:this|that|it)\s+(?:doesn't|does\s+not)\s+apply\b"
    # round 26: 'the "each rank clips its own shard by its own norm" story doesn't apply to our setup' (a named claim)
    # round 28: single quotes too, and "doesn't stand up"
    rf"|\b(?:the|that|this|your|their|his|her)\s+(?:{_QUOTED}|'[^'\n]{{1,200}}'|\u2018[^\u2019\n]{{1,200}}\u2019)\s+"
    r"(?:theory|story|hypothesis|idea|claim|explanation|suggestion)\s+(?:doesn't|does\s+not|didn't|did\s+not|can't|cannot)\s+"
    r"(?:apply|hold|stand\s+up)\b"
    # round 8: "that worry doesn't hold", "so it wasn't that", "That can't be the drift then"
    r"|\b(?:that|this|the|my)\s+(?:worry|concern|theory|idea|hypothesis|explanation|reading|suspicion|guess)\s+"
    r"(?:doesn't|does\s+not|didn't|did\s+not)\s+hold\b"
    # round 26: "Checked the … theory: it's not that." (the contracted form too)
    r"|\b(?:(?:it|that)\s+(?:wasn't|was\s+not|isn't|is\s+not)|(?:it's|that's)\s+not)\s+(?:that|it)\s*(?=[.!;,\n)]|$)"
    r"|\b(?:this|that|it)\s+(?:can't|cannot|can\s+not|couldn't|could\s+not)\s+be\s+the\s+(?:drift|bug|reason|source|"
    r"mechanism|failure|divergence|difference)\b"
    # an experiment that refutes a hypothesis put forward before ("it made no difference, so not that")
    r"|\b(?:it|this|that|which|doing\s+(?:so|that|this)|the\s+(?:change|fix|patch|experiment|test|swap|edit|rewrite|"
    r"rerun)|(?:this|that)\s+(?:change|fix|patch|experiment|test))\s+(?:made|makes|had|has|did)\s+(?:no|zero)\s+"
    r"(?:difference|effect|impact)\b|\b(?:it|this|that)\s+(?:changed|fixed|helped)\s+nothing\b"
    r"|\b(?:it|this|that)\s+(?:didn't|did\s+not)\s+(?:change|fix|help)\s+(?:anything|a\s+thing|the\s+\w+)\b"
    r"|\b\w+ing\s+(?:[\w'-]+\s+){0,4}?(?:changed|fixed|helped)\s+nothing\b"
    r"|\b(?:don't|doesn't|didn't|do\s+not|does\s+not|did\s+not)\s+bear\s+(?:it|this|that|them|the\s+\w+)\s+out\b"
    # round 9: "Theory A rejected", "Hypothesis 2 is ruled out", "the ordering can't be it", a sentence opening
    # "Abandoning that line;"
    r"|\b(?:theory|hypothesis|idea|suspect|candidate|guess|lead)\s*#?(?:\d+|(?-i:[A-Z]))\s+(?:is\s+|was\s+)?(?:now\s+)?"
    r"(?:rejected|refuted|ruled\s+out|disproved|disproven|falsified|dead|eliminated|excluded)\b"
    r"|\bthe\s+[\w-]+(?:\s+[\w-]+)?\s+(?:can't|cannot|can\s+not|couldn't|could\s+not)\s+be\s+it\b"
    # round 10: and "Abandoned it after seeing …"
    rf"|{_START}[\W_]*(?:abandon(?:ing|ed)|dropp(?:ing|ed)|scrapp(?:ing|ed)|shelv(?:ing|ed)|discard(?:ing|ed)|reject(?:ing|ed)|park(?:ing|ed))\s+{_BACK}\b"
    r"|\b(?:that|this|the|my)\s+(?:theory|hypothesis|idea|explanation|guess|suspicion)\s+(?:is|was)\s+(?:now\s+)?(?:dead|out|"
    r"gone|busted|debunked|off\s+the\s+table)\b"
    r"|\b(?:so|then|hence|therefore|thus)\s*,?\s+(?:it's\s+|it\s+is\s+)?not\s+(?:that|this|it)\s*(?=[.!;,\n)]|$)"
    r"|\b(?:that's|that\s+is|this\s+is|it's|it\s+is|that\s+would\s+be|which\s+is)\s+(?:\w+\s+)?impossible\b"
    r"|\b(?:that|this|it)\s+(?:can't|cannot|could\s+not|couldn't)\s+(?:happen|occur|be\s+the\s+case)\b"
    r"|\b(?:he|she|they)(?:'s|'re|\s+is|\s+are|\s+was|\s+were)\s+(?:\w+\s+)?(?:wrong|mistaken|incorrect)\b"
    r"|\b(?:that's|that\s+is|this\s+is|it's|it\s+is)\s+not\s+(?:what|how)\b"
    r"|(?:^|(?<=[.!?:;]\s)|(?<=\n))[\W_]*not\s+(?:the\s+case|so|true|it)\s*(?=[.!;,\n]|$)"
    r"|\b(?:i'm|i\s+am|we're|we\s+are)\s+(?:\w+\s+)?(?:not|un)\s*convinced\b"
    r"|\b(?:i|we|i'm|we're|i'll|we'll|let's|so)\s+(?:\w+\s+)?(?:scrap(?:s|ped|ping)?|drop(?:s|ped|ping)?|abandon(?:s|ed|"
    r"ing)?|discard(?:s|ed|ing)?|reject(?:s|ed|ing)?|dismiss(?:es|ed|ing)?)\s+(?:it|this|that|the\s+(?:idea|theory|hypothesis|"
    r"explanation|claim)|(?:this|that)\s+(?:idea|theory|hypothesis|explanation))\b|\b(?:scrap|drop|abandon|discard|reject|dismiss)(?:s|ped|ping|ed|ing)?\s+(?:the|this|that|my)\s+"
    r"(?:idea|theory|hypothesis|explanation)\b|\bdead\s+end\b|\b(?:didn't|did\s+not)\s+pan\s+out\b"
    r"|\b(?:doesn't|does\s+not|don't|do\s+not|didn't|did\s+not)\s+(?:fit|match)\s+(?:the\s+(?:data|numbers|evidence|"
    r"measurements?|logs?|trace)|what\s+(?:i|we)\s+(?:see|saw|measured|found))\b"
    # a claim (not a quantity: "the prices are inconsistent with the real footprint" is a finding) found unsupported
    rf"|\b(?:{_CLAIMS}|it|this|that|which|they)\s+(?:is|was|are|were)\s+(?:not\s+supported|inconsistent\s+with|contradicted)\b"
    # round 2, one class each: an anaphor that cannot be ("That can't be, because …", "this cannot be what happens
    # here"; not "it can't be that X", a denial of X), is not so / not happening, does not hold / happen (at the end
    # of its clause: "it doesn't happen for the last micro-batch" is a claim)
    # (round 30: and one that ought not to be the cause: "… , but that shouldn't be the cause"; not "It shouldn't be:
    # …", which says the code does what it ought not to)
    r"|\b(?:that|this|which)\s+(?:shouldn't|should\s+not)\s+be\s+(?:the\s+(?:cause|culprit|reason|problem|issue|bug|"
    r"explanation)|it|an?\s+(?:issue|problem))\b"
    r"|\b(?:that|this|it|which)\s+(?:can't|cannot|can\s+not|couldn't|could\s+not)\s+(?:possibly\s+)?be\b(?!\s+(?:that|ruled|excluded|"
    r"the\s+case\s+that)\b)(?=\s*(?:[,.;:!?\u2014\u2013)]|\s-\s|$|because|since|as\b|given|what|how|right|true|correct|so\b|it\b|"
    r"here|the\s+(?:case|cause|reason|problem|issue|explanation|culprit|bug|mechanism|story|term|source|factor|thing|part|piece|"
    r"one|driver)))"
    r"|\b(?:that|this|it)(?:'s|\s+is|\s+was)\s+(?:simply\s+|just\s+|definitely\s+|clearly\s+|really\s+)?not\s+(?:so|happening|"
    r"what(?:'s|\s+is)\s+happening)\b(?!\s+that\b)|\b(?:that|this|it)\s+(?:isn't|wasn't)\s+(?:so|happening)\b(?!\s+that\b)"
    # (round 41: not a relative "that" on a noun: "the gradient is computed for a forward that didn't happen")
    r"|(?:\b(?:this|it)|(?:(?<=^)|(?<=\n)|(?<=[.;:,!?(\x22\u201c\u2014\u2013-])|(?<=[.;:,!?(\x22\u201c\u2014\u2013-]\s)|(?<=\band\s)|"
    r"(?<=\bbut\s)|(?<=\bso\s)|(?<=\byet\s)|(?<=\bthink\s)|(?<=\bsay\s))that)"
    r"\s+(?:doesn't|does\s+not|didn't|did\s+not|won't|will\s+not)\s+(?:happen|hold(?:\s+up|\s+water)?|apply|"
    r"survive|stand\s+up|check\s+out|add\s+up|work\s+out)\b(?=\s*(?:(?:here|either|at\s+all|anymore|in\s+(?:practice|this\s+\w+|"
    r"our\s+\w+)|for\s+(?:us|our\s+[\w-]+|this\s+[\w-]+|this\s+run|the\s+shipped\s+[\w-]+))\s*)*(?:[,.;:!?\u2014\u2013)]|\s-\s|$))"
    # … an experiment that changed nothing, with no subject or any subject ("Made no difference", "chunk size made no
    # difference"); a result or a verdict that shows the claim false ("the trace proves it wrong"); a claim killed,
    # rejected or dropped by name ("which kills that idea", "That rules my explanation out", "I reject the stale-cache
    # story", "I've abandoned that line"); the agent's own or someone's claim called false ("Kenji's explanation (…) is
    # false", "The comment is stale")
    r"|(?:^|(?<=[.!?:;,]\s)|(?<=\n)|(?<=\bso\s)|(?<=\band\s))[\W_]*(?:(?:it|this|that)\s+)?(?:made|makes)\s+(?:no|zero)\s+"
    r"(?:\w+\s+)?(?:difference|change|effect|impact)\b|\bno\s+(?:difference|change|effect)\s+(?:at\s+all|whatsoever)\b"
    r"|\b(?:proves?|proved|proven|shows?|showed|shown|makes?|made|demonstrates?|demonstrated)\s+(?:it|this|that|them|the\s+(?:\w+\s+)?"
    r"(?:idea|theory|hypothesis|explanation|claim|story|guess))\s+(?:to\s+be\s+)?(?:wrong|false|incorrect|untrue|impossible|moot)\b"
    rf"|\b(?:refutes?|refuted|disproves?|disproved|contradicts?|contradicted|undermines?|undermined|falsifies|falsified|"
    rf"rules?\s+out|ruled\s+out|debunks?|debunked|invalidates?|invalidated)\s+{_BACK}\b"
    # (round 36: not one of two outcomes to test: "confirm or kill my suspicion that X")
    rf"|{_NOT_PLANNED}\b(?:kills?|killed|sinks?|sank|buries|buried)\s+{_BACK_NOUN}\b|{_NOT_PLANNED}\brule(?:s|d)?\s+{_BACK}\s+out\b"
    r"|\b(?:i|i've|i'm|i'll|i\s+have|i\s+am|i\s+will|we|we've|we're|we'll)\s+(?:\w+\s+)?(?:abandon(?:ed|ing|s)?|drop(?:ped|ping|s)?|"
    r"discard(?:ed|ing|s)?|reject(?:ed|ing|s)?|dismiss(?:ed|ing|es)?|shelve[sd]?|shelving|scrap(?:ped|ping|s)?|ignor(?:e|ed|es|ing)|"
    rf"giv(?:e|ing)\s+up\s+on|gave\s+up\s+on|set(?:ting)?\s+aside|let\s+go\s+of)\s+{_BACK_NOUN}"
    r"|\b(?:i|i've|i'm|i'll|i\s+have|i\s+am|i\s+will)\s+(?:\w+\s+)?(?:abandon(?:ed|ing|s)?|drop(?:ped|ping|s)?|"
    rf"discard(?:ed|ing|s)?|reject(?:ed|ing|s)?|dismiss(?:ed|ing|es)?|shelve[sd]?|shelving|scrap(?:ped|ping|s)?)\s+{_BACK_PRONOUN}\b"
    rf"|\b(?:{_CLAIMS}|it|this|that)\s*(?:\([^()\n]{{0,400}}\)\s*)?(?:is|was|are|were|seems|looks|turned\s+out\s+to\s+be|turns\s+out\s+to\s+be)"
    # (round 24: not "both wrong and different per rank", two properties of the thing described)
    r"\s+(?:(?!both\b)\w+\s+)?(?:false|wrong|incorrect|mistaken|untrue|bogus|off\s+base|a\s+dead\s+end|a\s+red\s+herring|"
    # (round 24: not an adjective of what the claim names: "My suspicion is stale node refs -> …")
    r"(?:stale|outdated|obsolete)(?![ \t]+(?!(?:now|too|anyway|already|then|here|there|and|or|but|so|since|because|as|"
    r"after|for|in|on|by|with|given|from)\b)[\w-]+))\b"
    # (round 31: not what the code computes under a condition: "Even on one rank this is wrong once gradient
    # accumulation is on: …")
    r"(?!\s+(?:once|when|whenever|if|unless|under|as\s+soon\s+as)\b)"
    # … an elliptical answer that takes back what came before ("It isn't;", "Not the cause.", "Wrong, as far as I can
    # tell.", "Definitely not."): not after a question, which it answers instead; "None of that happens"
    rf"|{_START}{_ELLIPTICAL}\s*(?=[.;:!,\u2014\u2013]|\s-\s|$)"
    rf"|{_START}[\W_]*(?:(?:definitely|certainly|clearly|absolutely|obviously|surely|so|then|also)\s+)?not\s+"
    r"(?:(?:the|a|our)\s+(?:root\s+|real\s+|actual\s+)?(?:cause|culprit|problem|issue|bug|explanation|reason|mechanism)|that|"
    rf"this)(?:\s+(?:then|either|after\s+all))?\s*(?=[.!;,\n]|$)|{_START}[\W_]*(?:definitely|certainly|clearly|absolutely|obviously|surely)\s+"
    rf"not\s*(?=[.!;\n]|$)|{_START}[\W_]*(?:wrong|false|incorrect|untrue|bogus)\s*(?:,\s*(?:as\s+far\s+as\s+"
    r"(?:i|we)\s+can\s+(?:tell|see)|i\s+think|it\s+seems|i'm\s+afraid))?\s*(?=[.!;\n]|$)"
    r"|\bnone\s+of\s+(?:this|that|it|these|those|the\s+above)\s+(?:\w+\s+)?(?:happens|happened|is\s+(?:true|the\s+case|"
    r"happening|right|correct)|applies|holds|occurs|is\s+what\s+happens)\b"
    # … a preamble, then "no" ("On reflection, no:", "Second pass, after printing the tensors: no, …")
    r"|(?:^|(?<=[.!?]\s)|(?<=\n))[^.!?\n]{0,60}?[,:]\s*(?:no|nope)\s*(?:[.!,;:]|\s[\u2014\u2013-]+\s|[\u2014\u2013])"
    # round 3, one class each: a reading called a misreading ("That misreads the code"), a claim false for this code
    # ("That's wrong for this code", "is simply false for this repository"), "Impossible here:", "I'm not buying it",
    # "I don't think that reading is right", a bare verdict label ("Ruled out, though:"), and a mechanism named and then
    # said not to occur in this code ("X: that never happens in this loop", "X does not occur in this code")
    r"|\b(?:that|this|which)\s+misreads?\b"
    r"|\b(?:that's|that\s+is|this\s+is|it's|it\s+is)\s+(?:simply\s+|just\s+|plainly\s+)?(?:wrong|false|incorrect|untrue)\s+"
    r"(?:for|in|about)\s+(?:this|our|the)\s+(?:code|codebase|repo\w*|version|setup|loop|project|pipeline)\b"
    r"|\b(?:is|are)\s+(?:simply\s+|just\s+|plainly\s+)?(?:false|untrue)\s+(?:for|in)\s+(?:this|our)\s+(?:code|codebase|repo\w*|"
    r"version|setup|loop|project|pipeline)\b"
    rf"|{_START}[\W_]*impossible\b(?=\s*(?:[:,.;!\u2014\u2013]|\s-\s|here\b|in\s+(?:this|our)\b|for\s+(?:this|our|us)\b))"
    r"|\b(?:i'm|i\s+am|we're|we\s+are)\s+not\s+buying\s+(?:it|that|this)\b"
    rf"|{_START}[\W_]*not\s+(?:convinced|buying\s+it)\b"
    r"|\b(?:i|we)\s+(?:don't|do\s+not)\s+(?:think|believe)\s+(?:that|this|the|their|his|her)\s+(?:\w+\s+)?(?:reading|claim|"
    r"theory|idea|explanation|story|diagnosis|interpretation)\s+is\s+(?:right|correct|true|accurate)\b"
    rf"|{_START}[\W_]*ruled\s+out\s*(?:,\s*(?:though|however|then|sadly|unfortunately)\s*)?(?:[:,.;!\u2014\u2013]|\s-\s)"
    r"|\b(?:that|this|which)\s+(?:simply\s+)?never\s+(?:happens|occurs)\s+(?:here|in\s+(?:this|our)\s+[\w-]+)\s*(?=[.;:!,]|$)"
    r"|\b(?:doesn't|does\s+not|don't|do\s+not)\s+(?:occur|happen)\s+in\s+(?:this|our)\s+(?:code|codebase|repo\w*|loop|"
    r"setup|pipeline|project)\s*(?=[.;:!,]|$)",
    re.IGNORECASE,
)
#: Words before a refutation that are not a claim of their own ("Edit:", "Update: the probe …").
PREAMBLE = re.compile(
    r"(?:\W|\b(?:edit|update|actually|nvm|so|but|and|hmm+|no|wait|ok(?:ay)?|well|however|on\s+reflection|in\s+fact|"
    r"after\s+all|unfortunately|sadly|the|a|this|that|my|probe|data|run|output|numbers?|results?|test|experiment|"
    r"check|measurement|logs?|digests?|now|then|again|new|latest|second|i|we|it|checked|looked|tested|measured|"
    r"re-?runs?|repro|trace|profiler?|benchmark|evidence|experiments?|tests|probes|checks|"
    r"verified|profiled|traced|logged|ran|reran|with|our|versions?|code|source|here|myself|ourselves|"
    # round 19: a numbered note's label ("3. Conclusion: point 1 is wrong")
    r"\d{1,2}|conclusion|verdict|summary|finding|bottom\s+line)\b)*",
    re.IGNORECASE,
)
#: A refutation that names what came before as its object ("none of this", "the list above"): it
#: takes back everything before it, wherever it stands in its sentence.
BACKREF = re.compile(
    r"\b(?:above|none\s+of|all\s+of|these|those|contradict\w*|disprove\w*|refute\w*|falsif\w*|rule\w*\s+(?:it|this|that)?\s*out"
    r"|(?:no|zero)\s+(?:difference|effect|impact)|(?:changed|fixed|helped)\s+nothing|(?:so|then|hence|therefore|thus)\s*,?\s+"
    r"not\s+(?:that|this|it)|impossible"
    r"|scrap\w*|drop\w*|abandon\w*|discard\w*|bear\s+\w+\s+out|is\s+(?:now\s+)?(?:dead|busted|debunked)|nothing\s+\w+|"
    r"(?:so|then)\s*,?\s+(?:no|nope)|(?:ruled\s+out|rejected|disproved|disproven|refuted|excluded|eliminated|falsified|"
    r"debunked|dismissed)\s+(?:after|by|once|when|because|since|given|on|following|via|with)|killed|sank|sunk|buried|verdict|"
    r"closer|survive|falls?\s+apart|kills?|sinks?|buries|undermine\w*|invalidat\w*|debunk\w*|reject\w*|shelv\w*|"
    r"gave\s+up|give\s+up|set\s+aside|let\s+go|none\s+of|(?:proves?|proved|proven|shows?|showed|shown|demonstrat\w*)\s+"
    r"(?:it|this|that|them|the\s+(?:\w+\s+)?(?:idea|theory|hypothesis|explanation|claim|story|guess)))\b",
    re.IGNORECASE,
)
#: A sentence opening with an anaphor ("That would be a fair guess, but it isn't what this code does"):
#: a refutation in it is about what came before.
ANAPHORIC_START = re.compile(
    r"[\W_]*(?:that|this)\s+(?:would|might|could|is|was|sounds|seems|looks|(?:simply\s+)?never)\b", re.IGNORECASE
)
#: A retraction that only dismisses ("ignore that"): after a remark in its own sentence ("the CSV logger
#: warns about fp16, ignore that") it dismisses that remark, not everything before.
DISMISSAL = re.compile(r"(?:disregard|ignore)\s+(?:that|this)", re.IGNORECASE)
#: Where a withdrawal's reach ends (matches before this point in its clause are taken back).
WITHDRAWAL_END = re.compile(r"[;!?\n]|" + _ABBR + r"[.:](?=\s|$)|\s[-–—]+\s")
# "!=" is an operator, not an exclamation
SENTENCE_BREAK = re.compile(r"[!?](?!=)|\n|" + _ABBR + r"[.][\x22\u201d\u2019]*(?=\s|$)")
#: A sentence that only supposes ("If …, … would", "Suppose …").
# round 28: "If anything, …" conditions nothing
CONDITIONAL = re.compile(
    r"\W*(?:if(?!\s+anything\b)|what\s+if|suppose|supposing|assuming|imagine|hypothetically|in\s+(?:principle|theory)|theoretically|"
    r"(?:had|were|should)\s+(?!(?:a|an|to)\b)\w)",
    re.IGNORECASE,
)
#: The consequence of an explicit "If …, then …".
IF_THEN = re.compile(r",\s*then\b", re.IGNORECASE)
#: A hedge inside a conditional sentence ("(looks like it from line 83)", "probably", "I think"; brackets are markup).
HEDGED_CONDITION = re.compile(
    r"\b(?:it\s+)?(?:looks|seems|appears)\s+(?:like\s+it|so)\b|\b(?:probably|likely|i\s+think|maybe|presumably)\b",
    re.IGNORECASE,
)
#: A conditional on the agent's own preceding claim ("I suspect X. If so, Y would …"): it draws a
#: consequence of that claim rather than supposing, unless that claim was itself only a question or
#: a supposition.
ANAPHORIC_IF = re.compile(
    r"\W*(?:if\s+(?:so|that's\s+(?:right|correct|true|the\s+case)|that\s+is\s+(?:right|correct|true|the\s+case)|"
    r"this\s+(?:is\s+right|holds)|that\s+holds|i'm\s+right|i\s+am\s+right)|assuming\s+(?:that's|that\s+is|this\s+is)\s+"
    r"(?:right|correct|true))\b",
    re.IGNORECASE,
)
#: Where a sentence ends for :data:`CONDITIONAL` (a line break inside a paragraph does not end it).
PROSE_SENTENCE_END = re.compile(
    r"[!?](?!=)|" + _ABBR + r"[.][\x22\u201d\u2019]*(?=\s|$)|\n\s*\n|\n(?=\s*(?:[-*•]|\d+[.)])\s)"
)
MODAL = re.compile(r"\b(?:were|would|could|might|likely|probably)(?:n't)?\b", re.IGNORECASE)
#: A sentence that concedes what it goes on to dismiss ("Even granting that X, the difference would be …"): what
#: it grants is neither claimed nor put forward.
GRANTING = re.compile(r"[\W_]*(?:even\s+)?(?:granting|granted|conceding|admitting)\s+that\b", re.IGNORECASE)
#: A verb that says what something other than the agent assumes ("Accelerate assumes …", "the wrapper expects …").
ASSUMED = re.compile(
    r"(?<!\bi\s)(?<!\bwe\s)(?<!\byou\s)\b(?:assumes|assumed|presumes|presumed|expects|(?:is|was)\s+built\s+for|"
    r"(?:is|was)\s+designed\s+for)\b",
    re.IGNORECASE,
)
#: A counterfactual with its condition after it ("X would make Y if accumulation were above 1").
COUNTERFACTUAL = re.compile(
    r"\bwould\b[^.;!?]{0,200}?\bif\s+(?:\w+\s+){1,6}?(?:were|had\s+been|was\s+ever|did)\b", re.IGNORECASE
)
ONLY_IF = re.compile(r"\bonly\s+if\b", re.IGNORECASE)
#: A parenthesis (not nested).
PARENTHESIS = re.compile(r"\([^()\n]{0,300}\)")
#: A yes/no question: a sentence ending in "?" that opens with an auxiliary verb or a "maybe" ("Is X …?",
#: "Could it be that X?", "So does X …?"); "why"/"what" questions are not (they often introduce the answer).
YES_NO_QUESTION = re.compile(
    r"\W*(?:(?:so|and|but|hmm+|wait|ok(?:ay)?|now|then|or)[,.]?\s+)?(?:is|are|was|were|does|do|did|could|can|would|might|"
    r"may|should|has|have|will|maybe|perhaps|possibly|what\s+if|how\s+about)\b",
    re.IGNORECASE,
)
#: A question mused rather than asked with an auxiliary ("Hmm, rank 1 never clips …?"); "So why …?" asks
#: for an answer that often follows, so a wh-word after the opener is not one.
MUSED_QUESTION = re.compile(
    r"\W*(?:hmm+|huh|so|wait|ok(?:ay)?|right|or|and)\b[,.]?\s+(?!(?:why|what|how|where|when|which|who|whose)\b)",
    re.IGNORECASE,
)
#: A statement asked with a question mark ("The scheduler steps twice per update?"): not a "why"/"what"
#: question (those introduce their answer), nor one ending in one (", why?").
DECLARATIVE_QUESTION = re.compile(
    # (round 44: also after a question's label: "Q: Why do both TP ranks drop the same positions? A: Because …")
    r"(?![\W_]*(?:(?:q|question)\s*[:.)]\s*)?(?:why|what|how|where|when|which|who|whose)\b)"
    r"(?:(?!\b(?:why|what|how)\s*$)[\s\S]){12,}",
    re.IGNORECASE,
)
#: A negated predicate whose manner clause states the consequence ("is not normalised … in a way that makes X",
#: "doesn't scale them in any way that would …"): the consequence is denied with it.
NEGATED_MANNER = re.compile(
    r"\b(?:(?:is|are|was|were|does|do|did)\s+not|isn't|aren't|wasn't|weren't|doesn't|don't|didn't)\s+[^.;:!?\n]{0,120}?"
    r"\bin\s+(?:a|any|such\s+a)\s+way\s+(?:that|which)\b",
    re.IGNORECASE,
)
#: The label of an answer in a question-and-answer layout ("Q: … ?" / "A: …").
_ANSWER_LABEL = r"(?:a|answer)\s*[:.)]\s*"
#: An immediate no to a question ("? No: …", "? It isn't.", "?\nA: No."): the question then denies.
ANSWER_NO = re.compile(
    rf"[\s*_]*(?:{_ANSWER_LABEL})?(?:no|nope|not\s+at\s+all|"
    # round 41: a terse check answered no ("? Checked, not the problem.", "? Looked: no.")
    r"(?:checked|verified|tested|looked)\s*(?:it\s*)?[,:;\u2014\u2013-]\s*(?:not|no|nope)\b|ruled\s+out|"
    # round 42: "? Not the issue here, I checked."
    r"not\s+(?:the|our|an?)\s+(?:issue|problem|cause|culprit|bug)|"
    r"(?:definitely|certainly|absolutely|clearly|obviously|surely)\s+not|hardly|it\s+(?:isn't|is\s+not|doesn't|does\s+not|wasn't|didn't)|they\s+(?:aren't|don't|weren't|"
    r"didn't))\b",
    re.IGNORECASE,
)
#: An immediate yes to a question ("? Yes: …", "? It does."): the question then asserts.
ANSWER_YES = re.compile(
    rf"[\s*_]*(?:{_ANSWER_LABEL})?(?:yes|yep|yeah|indeed|exactly|confirmed|correct|it\s+(?:is|does|did|was)|they\s+(?:are|do|did|were))\b",
    re.IGNORECASE,
)
#: The words of a label or heading that rules its items out ("Ruled out:", "## Rejected", "Examined and excluded:").
_REJECTING = r"ruled\s+out|rejected|excluded|eliminated|dismissed"
#: A label that opens a list of candidates ("Candidates:", "Possible causes:", "Hypotheses:", "Suspects,
#: none confirmed yet:") or of rejected explanations ("Ruled out:"): its items are options or
#: rejections, not assertions, unless an item is marked confirmed.
CANDIDATES = re.compile(
    r"(?:^|(?<=[.!?]\s)|(?<=\n))[\W_]*(?!root\b)(?:(?:open|possible|remaining|current|candidate|likely|potential|several|"
    r"two|three|four|five|some|the|other|competing|alternative)\s+){0,2}"
    # (round 37: "Examined and excluded: the possibility that X")
    rf"(?:(?:examined|checked|considered|investigated|tested|looked\s+at)\s*(?:and|&|,)\s*(?=(?:{_REJECTING}|"
    r"not\s+the\s+cause)))?"
    # (round 38: "Checked and not the cause: the possibility that X")
    r"(?:candidates?|causes|explanations|hypotheses|ideas|suspects|options|theories|possibilities|guesses|"
    rf"{_REJECTING}|not\s+the\s+cause)\b[^:\n]{{0,40}}:"
    # round 8: a label that says its items are only candidates may be long ("Candidates for the rank mismatch, none
    # confirmed yet:", "Open candidates for why TP=2 doesn't reproduce TP=1 (none tested yet):", "Possible reasons X:")
    # (round 41: "Ranked guesses, most likely first:")
    # (round 42: three words before it, "Short list of suspects:")
    r"|(?:^|(?<=[.!?]\s)|(?<=\n))[\W_]*(?:[\w-]+\s+){0,3}?(?:candidates|hypotheses|suspects|possibilities|guesses|"
    # (round 36: a label up to 160 characters: "Candidates for why embed.weight (stage 0) and head.weight … with 1:")
    r"(?:possible|potential|candidate)\s+(?:reasons|causes|explanations|culprits|mechanisms))\b[^:\n]{0,160}:"
    # round 36: "Things that could make a resumed run differ, in the order I want to test them: (a) X; (b) Y"
    r"|(?:^|(?<=[.!?]\s)|(?<=\n))[\W_]*(?:the\s+)?(?:\w+\s+)?(?:things|ways|factors|mechanisms|reasons|places|bugs)\s+"
    r"(?:that|which)\s+(?:could|might|may|would)\s+(?:\w+\s+)?(?:make|cause|explain|produce|lead\s+to|give|account\s+for)\b"
    r"[^:\n]{0,100}:"
    # round 2: a list of things still to check ("To check:", "TODO / possible cause to check:", "Open questions:")
    # (round 45: "Things to rule in or out:", "Places to look at:")
    r"|(?:^|(?<=[.!?]\s)|(?<=\n))[\W_]*(?:[\w/-]+\s+){0,4}?(?:to\s+(?:check|verify|test|confirm|investigate|inspect|examine|"
    r"look\s+(?:at|into)|rule\s+(?:in\s+(?:or|and)\s+)?out)|todo|to-?do|"
    r"open\s+questions)\b[^:\n]{0,30}:",
    re.IGNORECASE,
)
#: A hedged sentence of alternatives ("Could be A, B, or C."): each alternative only an option.
HEDGED_ALTERNATIVES = re.compile(
    r"[\W_]*(?:(?:it\s+)?(?:could|might|may)\s+be|maybe|perhaps|possibly)\b", re.IGNORECASE
)
ALTERNATIVE = re.compile(r"\bor\b", re.IGNORECASE)
#: A candidates label whose items are rejected ("Ruled out:", "Rejected:").
REJECTED_LABEL = re.compile(rf"\b(?:{_REJECTING}|not\s+the\s+cause)\b", re.IGNORECASE)
#: An item of a candidate list marked as the one that holds.
CONFIRMED = re.compile(
    r"(?<!\bnot\s)(?<!\bnone\s)(?<!\bun)\b(?:confirmed|verified|this\s+is\s+it|that's\s+it|the\s+cause)\b|[✓✔]",
    re.IGNORECASE,
)
INLINE_ITEM = re.compile(r"[,;]?\s+\(?[a-z0-9]\)\s", re.IGNORECASE)
LIST_ITEM = re.compile(r"[ \t]*(?:[-*•]|\d+[.)]|\(?[a-z0-9]\))\s")
#: A claim named as a proposition at the start of a clause ("The idea that X, I checked and excluded", round 35).
_PROPOSITION_OPENING = (
    r"(?:the|that|this)\s+(?:idea|theory|claim|notion|suggestion|hypothesis|possibility|story|explanation)\s+that"
)
#: A sentence that opens by denying all of it ("Not that …", "It isn't true that …") or by voicing
#: someone else's possible view ("Someone might say …", "One could argue …"); "Not that it matters" is
#: an aside, not a denial.
SENTENCE_DENIAL = re.compile(
    r"[\W_]*(?:not\s+that\b(?!\s+it\s+matters)|it(?:'s|\s+is|\s+was)\s+(?:simply\s+|just\s+|certainly\s+|definitely\s+|"
    r"clearly\s+)?not\s+(?:true|the\s+case|happening|so)\s+that\b|"
    # round 14: "It's not that X." (not "It's not that simple."), a rejecting label ("Not the cause: X", "Ruled out:")
    r"it(?:'s|\s+is|\s+was)\s+not\s+that\b(?!\s+[\w-]+\s*(?:[.,;:!?]|$))|it\s+(?:isn't|wasn't)\s+that\b(?!\s+[\w-]+\s*(?:[.,;:!?]|$))|"
    r"(?:not\s+(?:the\s+)?(?:cause|culprit|reason|bug|problem|issue|it)|ruled\s+out|rejected|excluded|eliminated|disproved|"
    r"disproven|dismissed)\s*:\s|"
    # round 20: "Tested and discarded: the theory that X", "Dropped hypothesis: X"
    # round 23: "Checked and eliminated: A, B, and the theory that X. None of these is the cause."
    r"(?:(?:tested|checked|tried|probed|measured|investigated|examined)\s+and\s+)?(?:discarded|dropped|abandoned|refuted|killed|"
    r"ruled\s+out|rejected|excluded|eliminated|disproved|disproven|dismissed)(?:\s+(?:hypothesis|theory|idea|lead|candidate|suspect|explanation|guess))?\s*:\s|"
    # stop 57: a label that calls what follows a wrong theory ("Wrong theory: X", "False lead: X", "Red herring: X");
    # not a bare "Wrong:", nor "Wrong assumption:" (what the code wrongly assumes is a finding)
    r"(?:(?:wrong|false|mistaken|incorrect|failed|bogus|debunked|busted|dead)\s+(?:hypothesis|theory|idea|lead|candidate|"
    r"suspect|explanation|guess|track|trail|diagnosis)|red\s+herring)\s*:\s|"
    # round 35: a claim put first and then ruled out by the agent ("The idea that X, I checked and excluded: …")
    + _PROPOSITION_OPENING
    + r"\b(?=[^.!?;\n]{1,400}?,\s+(?:i|we)\s+(?:(?:\w+\s+){1,2}(?:and|then)\s+)?(?:(?:have|'ve|had|also)\s+)?"
    r"(?:excluded|ruled\s+(?:it\s+)?out|rejected|dismissed|disproved|refuted|eliminated|discarded|killed|dropped)\b)|"
    # round 2: "There's no path where X", "I can rule out that X", "I found nothing to indicate that X", "It can't be
    # that X", "I don't think (that) X"
    r"there(?:'s|\s+is|\s+was)\s+no\s+(?:\w+\s+){0,2}?(?:way|path|mechanism|place|point|case|scenario|chance|route)\s*(?:where|"
    r"in\s+which|by\s+which|through\s+which|whereby|that|for)?\b|(?:i|we)\s+(?:can\s+|could\s+|have\s+|'ve\s+)?(?:rule|ruled)\s+"
    r"out\s+(?:the\s+possibility\s+)?that\b|"
    # round 38: "it's not the ordering in _backward_epilogue, i.e. the idea that X"
    r"it(?:'s|\s+is|\s+was)\s+not\s+(?:[^.!?;:\n]|\.(?=\w)){1,80}?,\s*(?:i[.\s]\s?e\.|that\s+is|namely)\s*,?\s*the\s+"
    r"(?:possibility|idea|theory|notion|hypothesis|explanation|claim)\s+that\b|"
    # round 35: "I specifically excluded the possibility that X"
    r"(?:i|we)\s+(?:have\s+|'ve\s+|had\s+)?(?:\w+ly\s+)?(?:excluded|eliminated|rejected|dismissed|disproved|refuted|ruled\s+out)\s+"
    # round 36: … after what it is named ("I ruled out the divisor in reduction.py, i.e. the idea that X")
    # (round 38: or after a colon: "I ruled out a width mismatch between ranks: the idea that X")
    r"(?:(?:[^.!?;:\n]|\.(?=\w)){1,80}?(?:,\s*(?:i[.\s]\s?e\.|that\s+is|namely)\s*,?|:)\s*)?the\s+"
    r"(?:possibility|idea|theory|notion|hypothesis|explanation|claim)\s+that\b|(?:i|we)\s+(?:found|find|see|saw|have|had)\s+(?:nothing|no\s+(?:\w+\s+)?(?:evidence|"
    r"sign|indication|trace|hint))\s+(?:(?:to\s+(?:indicate|suggest|show)|suggesting|indicating|showing|that\s+(?:suggests?|"
    r"indicates?|shows?))\s+)?that\b|it\s+(?:can't|cannot|can\s+not|couldn't)\s+be\s+(?:the\s+case\s+)?that\b|"
    r"it(?:'s|\s+is)\s+impossible\s+that\b|(?:i|we)\s+(?:really\s+|honestly\s+)?(?:don't|do\s+not|didn't|did\s+not)\s+"
    r"(?:think|believe|buy|accept)\s+(?:for\s+a\s+(?:second|moment|minute)\s+)?(?:that\b|the\s+(?:idea|claim|theory|notion|"
    r"story)\s+that\b)?|"
    r"(?:nothing|no\s+(?:evidence|data|measurement|log|trace)|there(?:'s|\s+is)\s+no\s+(?:evidence|sign|indication|reason\s+to\s+"
    # (round 44: "that" a complementizer, not the pronoun of "Nothing enforces that: X calls Y without Z")
    r"(?:think|believe)))\s+(?:\w+\s+)?(?:suggests?|shows?|indicates?|supports?|points?\s+to)?\s*that\b(?!\s*[:;,.!?])|"
    r"(?:i|we)\s+(?:see|found|find|saw|have)\s+no\s+(?:evidence|sign|indication)\s+that\b|"
    r"it\s+(?:isn't|wasn't)\s+(?:true|the\s+case)\s+that\b|"
    # round 9: the symptom as the subject of a denied cause ("the discrepancy is not caused by X"), when the
    # sentence names no other cause ("… but by Y")
    r"(?:the|this|that|our|a)\s+(?:[\w-]+\s+){0,2}?(?:discrepancy|drift|divergence|gap|difference|mismatch|problem|issue|bug|"
    r"failure|regression|deviation|symptom|error|oom|spike|desync|slowdown|hang|deadlock|stall|crash|divergence)s?\s+(?:is|are|was|were)(?:\s+not|n't)\s+(?:(?:caused|"
    r"explained|driven|triggered)\s+by|due\s+to|coming\s+from)\b(?![^.!?\n]*\b(?:but|rather(?!\s+than)|instead(?!\s+of))\b)|"
    r"(?:someone|somebody|one|people|you|a\s+reviewer|others|a\s+skeptic)\s+(?:might|may|could|would)\s+"
    r"(?:say|argue|think|claim|suggest|guess|assume|object)\b|"
    r"(?:someone|somebody|people|others|(?:a|one|another|my|our|the)\s+(?:[\w-]+\s+)?(?:teammates?|colleagues?|"
    r"co-?workers?|reviewers?|team|user|reporter|issue|ticket|maintainers?|engineers?|developers?|authors?)"
    r"(?:'s\s+(?:note|message|comment|review|post|theory|claim|summary|writeup|write-up))?)"
    r"(?:\s+(?:on|in|from)\s+(?:the|our|my)\s+\w+)?\s+"
    r"(?:(?:first|initially|originally|earlier|also|confidently)\s+)?(?:said|says|claimed|claims|thought|thinks|believed|"
    r"believes|suggested|suggests|proposed|proposes|argued|argues|insisted|insists|guessed|blamed|blames|assumed|"
    r"assumes|reckons|reckoned|wrote|writes|reported|reports)\b)",
    re.IGNORECASE,
)
#: A contrast that starts another claim ("…, but Y", "; instead, Y"); "instead of" and "rather than" only
#: compare within the claim.
#: A leading adverbial phrase before a sentence's denial ("Contrary to what the ticket says, …").
LEADING_PHRASE = re.compile(r"[\W_]*[A-Za-z][^,.;:!?\n]{0,60},\s*")
CONTRAST = re.compile(
    r"\b(?:but|however|yet(?!\s*(?:[,.;:!?)\u2014\u2013]|$))|instead(?!\s+of\b)|rather(?!\s+than\b))\b|;", re.IGNORECASE
)
#: What the agent still has to find out ("check whether …").
OPEN_QUESTION = re.compile(
    r"\b(?:check|verify|test|see|confirm|find\s+out|determine)\w*\s+(?:(?:next|first|now|again|later|still|also|then|"
    r"separately|carefully)\s+)?(?:whether|if)\b|^\W*(?:and\s+|or\s+)?whether\b",
    re.IGNORECASE | re.MULTILINE,
)
#: How far into a match that starts its clause an open question is looked for (a sentence-level
#: phrasing starts where "Plan: check whether …" starts).
OPEN_QUESTION_LEAD = 60
#: How many list items are walked back to find a list's label.
MAX_LIST_ITEMS = 32
#: A label opening a line or sentence ("Plan:", "Next step:", "To do:").
LABEL = re.compile(r"\W*(?:[A-Za-z]+\s+){0,2}[A-Za-z]+\s*:\s*")
#: What follows a withdrawal that names what it takes back ("… to blame X", "… about X").
WITHDRAWN_OBJECT = re.compile(
    r"\s+(?:earlier\s+|before\s+|initially\s+|at\s+first\s+)?(?:about|on|with|to\s+(?:blame|suspect|think|say|assume|"
    r"call|point\s+at|guess)|when\s+i|in\s+(?:blaming|suspecting|thinking|saying))\b",
    re.IGNORECASE,
)
#: Characters that are markup, not words.
MARKUP = frozenset('`*[]{}()<>"|#“”')

# -- stances: whose claim a match is, and how firmly it is held ----------------------------------
#
# Every match gets one of five stances (docs/diagnosis.md, "Stances"), by one rule set for every rubric:
# asserted (the agent's own current claim), hypothesised (put forward to be tested: a labelled
# hypothesis, "I suspect", "maybe", a question, a candidate, a supposition, an "unverified" disclaimer;
# a later confirmation makes it asserted), withdrawn (taken back later, or reported as an earlier belief),
# attributed (someone else's claim the agent does not endorse) and denied (negated, marked false).

#: Who may hold a claim other than the agent: people and roles, and what they write.
_PERSON = (
    r"(?:team\s*mates?|colleagues?|co-?workers?|reviewers?|(?:team\s+)?leads?|manager|boss|users?|reporters?|"
    r"maintainers?|engineers?|developers?|devs?|authors?|on-?call(?:\s+engineer)?|intern|customers?|folks|"
    r"people|somebody|someone|everyone|others|agents?|assistant|llm|chatgpt|copilot|skeptics?|"
    # round 27: "the experts" are a MoE layer's parts as often as people: people when they report ("the experts say")
    # (round 35: so is "an expert": "the all-reduce for an expert runs over its expert-data-parallel group")
    r"experts?(?=\s+(?:on\s+\S+\s+)?(?:says?|said|thinks?|thought|claims?|claimed|suggests?|suggested|agrees?|agreed|"
    r"believes?|believed|argues?|argued|reckons?|reckoned|recommends?|recommended|told)\b)|"
    r"sceptics?|commenters?|posters?|predecessor|sre|researchers?|upstream|team|forum|bots?|linters?|investigators?)"
)
#: What other people write ("the ticket says"); "my notes say" is the agent's own, so no "my"/"our" here.
_DOCUMENT = (
    r"(?:todo|fixme|docstring|thread|channel|ticket|issue(?:\s+thread)?|bug\s+report|report|note|notes|message|post|comment|write-?up|"
    r"post-?mortem|pr(?:\s+description)?|pull\s+request|review|handoff|hand-off|slack(?:\s+thread)?|email|"
    r"memo|draft|summary|analysis|answer|reply|handover|hand-?over\s+notes?|chat(?:\s+log)?|"
    # round 39: a library's documentation ("The Accelerate docs note that X")
    r"docs|documentation)"
)
#: What someone else's claim is called after a possessive ("Priya's theory", "the reviewer's note").
_CLAIM_NOUN = (
    r"(?:theory|claim|hypothesis|diagnosis|explanation|note|notes|message|comment|summary|write-?up|take|"
    r"read|reading|conclusion|suggestion|guess|idea|analysis|argument|position|view|story|answer|report|post|"
    r"review|assessment|finding|suspicion|proposal|verdict|ticket|issue|thread|todo)"
)
#: A capitalised name starting a clause ("Priya says"); determiners, pronouns and libraries are not names.
_NAME = (
    r"(?-i:(?!(?:It|This|That|These|Those|The|A|An|Which|What|There|Here|So|And|But|Then|Now|Also|My|Our|As|Like|Per|"
    r"According|Unlike|"
    r"Your|Their|His|Her|Its|One|Each|Every|Both|All|No|Nothing|Everything|Edit|Update|Note|Hypothesis|Root|"
    r"Cause|Fix|Result|Plan|Step|Rank|Ranks|Loss|Code|Python|Torch|PyTorch|Accelerate|Megatron|Transformers|"
    r"Trainer|I|We|You|If|When|While|Because|Since|Maybe|Perhaps|Possibly|Probably|Likely|Most|Some|Someone|"
    r"Somebody|Everyone|Nobody|Why|How|Where|Who|Yes|Nope|Actually|Also|Hmm|Wait|Well|Ok|Okay|Still|Yet|"
    r"Either|Neither|Only|Even|Just|Instead|Again|First|Second|Next|Finally|Later|Earlier|Initially|"
    # adjectives that open a hypothesis label ("Unverified guess:", "Wild guess:"), not a person's name
    r"Un[a-z]+ed|Wild|Educated|Rough|Quick|Gut|Working|Leading|Tentative|Best|Current|Main|Top|Early|"
    # round 27: a list's heading ("Ranking suspects for the drift: …"), not a person who suspects
    r"Ranking|Ranked|Listing|Shortlist|Possible|Candidate|Prime|"
    # round 35: a list's label in the plural ("Candidates:\n(a) …"), not a person speaking
    r"Candidates|Hypotheses|Suspects|Options|Possibilities|Theories|Ideas|Causes|Explanations|Reasons|Leads|"
    # round 42: a sentence that opens with an adjective ("Same state, same draws, same mask on every chunk"), not a
    # person who states
    r"Same|Different|Identical|Equal|Other)\b)"
    # (round 40: a second word of one capital or digit, "Agent B's report says that X", "Reviewer 2"; not the agent's
    # "I", "Mechanism I suspect: X")
    r"[A-Z][a-z\u00e0-\u00ff]+(?:\s+(?:[A-Z][a-z\u00e0-\u00ff]+|(?!I\b)[A-Z0-9]))?\b)"
)
#: A time that owns a person or a document ("last week's on-call", "yesterday's ticket").
_WHEN = r"(?:last\s+\w+'s|yesterday's|previous|earlier)"
#: Someone other than the agent as a subject ("Priya", "a colleague", "the previous on-call", "the ticket").
_OTHER = (
    rf"(?:(?:{_NAME}|(?:he|she|they|someone|somebody|people|others|everyone)|"
    # round 30: an assistant named bare ("ChatGPT's answer when I pasted the code: X"; "ChatGPT" is no _NAME)
    r"(?:chatgpt|gpt-?\d[\w.]*|claude|gemini|copilot)\b|"
    rf"(?:a|an|one|another|my|our|the|some|their|his|her|this|that|{_WHEN})\s+(?:[\w-]+\s+){{0,2}}?{_PERSON}"
    # (round 31: "its report suggests X", a tool's report)
    rf"|(?:a|an|one|another|the|some|their|his|her|its|this|that|{_WHEN})\s+(?:[#\w.-]+\s+){{0,3}}?{_DOCUMENT}(?:\s*\([^()\n]{{1,40}}\))?"
    # a numbered report ("Issue #23986 says", "PR 8624 claims")
    r"|(?:[\w-]+\s+){0,2}(?:issue|pr|pull\s+request|ticket|bug)\s*#?\d+(?:\s*(?:,|and|&|/)\s*#?\d+)*"
    # … or a tracker's key ("JIRA MOE-212 claims", "SIM-233 says")
    r"|(?:(?:jira|ticket|issue|bug)\s+)?(?-i:[A-Z][A-Z0-9]{1,9})-\d+"
    # … or a project's numbered report ("pytorch#75870 says", "DeepSpeed #1801 describes")
    r"|[\w.-]+\s*#\d+(?:\s*(?:,|and|&|/)\s*(?:[\w.-]+\s*)?#\d+)*)"
    rf"(?:\s+(?:(?:attached|linked|filed|posted|opened|left|written|pinned)\s+(?:to|in|on|by|against|under)|on|in|from|at|of|for|"
    rf"about|with)\s+(?:the\s+|our\s+|my\s+|a\s+|this\s+)?(?:[\w'+&-]+\s+){{0,2}}?[#\w+&-]+(?:\.[\w-]+)*){{0,2}}"
    # … and a parenthetical after it ("The upstream issue (#34242) claims")
    r"(?:\s*\([^()\n]{1,40}\))?)"
)
#: Verbs that report a claim without endorsing it ("says", "claims", "thinks"); factive ones ("pointed
#: out", "showed", "found") presuppose the claim true and are not here.
_REPORT = (
    r"(?:says?|said|claims?|claimed|thinks?|thought|believes?|believed|suggests?|suggested|proposes?|proposed|"
    r"argues?|argued|insists?|insisted|guess(?:es|ed)?|blames?|blamed|assumes?|assumed|reckons?|reckoned|"
    r"wrote|writes|reports?|reported|asserts?|asserted|states?|stated|maintains?|maintained|contends?|contended|"
    r"hypothesi[sz]e[sd]?|suspects?|suspected|mentions?|mentioned|posted|posits?|posited|concludes?|concluded|"
    r"speculates?|speculated|theori[sz]e[sd]?|alleges?|alleged|impl(?:y|ies|ied)|told\s+(?:me|us)|reads?(?=\s*:)|puts?\s+it\s+on|lays?\s+it\s+on|laid\s+it\s+on|"
    # round 30: what someone wants done is their proposal ("Jonas wants to divide the loss by expert_parallel_size")
    r"wants\s+to|wanted\s+to|"
    r"(?:pinged|messaged|emailed|texted|dm'?d|slacked|wrote\s+to)\s+(?:me|us)(?:\s+(?:saying|to\s+say|that))?|"
    r"annotat(?:e|es|ed)(?:\s+(?:it|this|that|the\s+\w+))?|(?:is|was|are|were)\s+"
    r"(?:convinced|sure|certain|adamant)|swears|swore|puts?\s+it\s+down\s+to|pins?\s+it\s+on|pinned\s+it\s+on|"
    r"attribute[sd]?\s+(?:it|this|that|the\s+\w+)\s+to|reads?\s+(?:it|this|that)\s+as|"
    # round 10: "the bot commented", "flagged X as", "#1801 describes", "connect it to", "answered … with", "left a
    # note saying"
    r"comment(?:s|ed)|flag(?:s|ged)|describes?|described|connects?\s+(?:it|this|that)\s+to|connected\s+(?:it|this|that)\s+to|"
    r"answer(?:s|ed)(?:\s+(?:[\w-]+\s+){0,3}?with)?|repl(?:y|ies|ied)(?:\s+with)?|"
    r"left\s+(?:a|an|this|that)\s+(?:[\w-]+\s+)?(?:note|comment|message|todo|fixme)(?:\s+(?:saying|claiming|arguing))?|"
    # round 19: "Someone left this in a local branch of schedule.py: `# NB: …`"
    r"left\s+(?:this|that|it|the\s+following)(?:\s+(?:in|on|at|under)\s+(?:[^:.!?\n]|\.(?=\w)){1,60}?)?(?=\s*:))"
)
_REPORT_ADVERB = (
    r"(?:(?:also|first|initially|originally|earlier|confidently|still|now|once|apparently|previously|"
    r"repeatedly|strongly|firmly|loudly|just|then|had|has|have|would|might|may|could|will)\s+)*"
)
#: The opening of someone else's claim: "Priya says (that)", "A colleague's note:", "According to the
#: ticket,", "It was suggested that", "I was told that", "Quoting the bug report:". "As Priya said, X" and
#: "Priya is right that X" are the agent's own claims, and "Priya correctly says" endorses.
ATTRIBUTION = re.compile(
    r"(?:(?<=^)|(?<=\n)|(?<=[.!?;:,(\u201c\x22>*\u2014\u2013-]\s)|(?<=[(\u201c\x22])|(?<=\band\s)|(?<=\bbut\s)|(?<=\bwhile\s)|(?<=\bwhereas\s)|(?<=\bthough\s)"
    # round 18: "… isn't supported by my measurements — yet the ticket's write-up insists that X"
    r"|(?<=\byet\s)"
    # what the agent came upon ("I came across issue #1256, which reports that X")
    r"|(?<=\bacross\s)|(?<=\bfound\s)|(?<=\bsaw\s)|(?<=\bread\s)|(?<=\bupon\s)|(?<=\binto\s)|(?<=\bwhere\s)|(?<=\bwith\s)|(?<=\)\s)"
    # "What the ticket claims: X" reports it; "This is exactly what the ticket describes: X" agrees with it
    r"|(?<=(?<!\bexactly\s)(?<!\bprecisely\s)\bwhat\s))"
    rf"[\W_]*(?:(?<!\bas\s)(?<!\blike\s){_OTHER}(?:\s+(?:i|we)\s+(?:found|saw|read|came\s+across|got|dug\s+up)"
    r"(?:\s+(?:while|when)\s+\w+ing|\s+(?:earlier|yesterday|online|upstream|today)|\s+(?:on|in|about|for|from|under)\s+"
    r"(?:the\s+)?[\w.#/-]+)?"
    r"|\s+(?:someone|somebody|(?:a|the|one)\s+[\w-]+)\s+(?:left|wrote|posted|added|filed|opened)(?:\s+(?:on|in|under|at|to)\s+"
    r"(?:the\s+|our\s+|a\s+)?[\w.-]+)?"
    # (round 39: "A teammate pointed to Accelerate's scheduler.py and argued that X")
    r"|\s+(?:linked|posted|shared|cited|quoted|pasted|opened|filed|pointed\s+(?:to|at)|referred\s+to|brought\s+up)\s+"
    r"(?:[^.;:!?\n]|\.(?=\w)){1,60}?\s+and)?"
    rf"(?:\s*,?\s+which)?\s+{_REPORT_ADVERB}{_REPORT}\b(?:\s+that\b)?"
    # round 17: "I'm not adopting what Marco said in #training — that X", "That conclusion was: X"
    rf"|what\s+{_OTHER}\s+{_REPORT_ADVERB}{_REPORT}\b[^.!?;:\n]{{0,40}}?(?:\s+[\u2014\u2013-]+\s*|\s*:\s*)(?:that\b)?"
    rf"|(?:that|this)\s+(?:[\w-]+\s+)?{_CLAIM_NOUN}\s+(?:was|is)\s*:"
    # round 18: "Someone linked Lightning #13316 as the explanation: X"
    rf"|{_OTHER}\s+(?:linked|posted|shared|cited|offered|gave|proposed|suggested|put\s+forward|pointed\s+to)\s+[^.;:!?\n]{{1,60}}?\s+as\s+"
    r"(?:the|an?)\s+(?:[\w-]+\s+)?(?:explanation|cause|root\s+cause|answer|diagnosis|reason|culprit)\s*:"
    # round 16: "Someone linked huggingface/transformers#5605 in our channel, with the claim that X"
    rf"|{_OTHER}\s+(?:linked|posted|shared|cited|quoted|pasted|opened|filed|raised|sent|dropped)\s+[^.;:!?\n]{{1,60}}?,?\s+"
    rf"(?:with|and)\s+(?:the|a|an)\s+(?:[\w-]+\s+)?{_CLAIM_NOUN}\s+that\b"
    rf"|(?:{_NAME}|{_OTHER})'s\s+(?:[\w-]+\s+){{0,2}}?{_CLAIM_NOUN}\b(?:\s+(?:on|in|from|at)\s+(?:the\s+)?[#\w-]+)?"
    r"(?:\s*\([^()\n]{1,40}\))?(?:(?:\s+(?:when|after|once)\s+[^:.;!?\n\x22\u201c]{1,40}?)?\s*:|\s+(?:is|was)\b(?!\s+(?:\w+\s+)?(?:right|correct|spot\s+on|accurate|wrong|mistaken|false)\b)(?:\s+that\b)?"
    rf"|\s+(?:{_REPORT_ADVERB}{_REPORT}|reads?|goes|went)\b(?:\s+that\b)?|\s+that\b)"
    r"|according\s+to\s+(?:[\w'.-]+\s+){0,4}?[\w'.-]+\s*[,:]"
    rf"|(?:per|according\s+to)\s+(?!(?:my|our|the\s+above)\b)(?=[^,:;.!?\n]{{0,70}}?\b(?:{_PERSON}|{_DOCUMENT})\b)[^,:;.!?\n]{{1,70}}?\s*[,:]"
    rf"|(?:his|her|their)\s+(?:[\w-]+\s+){{0,2}}?{_CLAIM_NOUN}\s*(?:\([^()\n]{{1,40}}\)\s*)?:"
    rf"|(?:(?:a|the|my|our|one)\s+)?{_PERSON}\s*:(?=\s)"
    r"|(?:quoting|citing|paraphrasing)\s+[^:\n.!?]{1,60}?:"
    r"|(?:quoting|from|per|citing)\s+(?:the\s+|a\s+|an\s+|our\s+|my\s+)?(?:[\w-]+\s+){0,2}?"
    rf"(?:{_PERSON}|{_DOCUMENT}|{_CLAIM_NOUN})\s*:"
    r"|it\s+(?:was|has\s+been|had\s+been|is|gets|got)\s+(?:\w+\s+)?(?:claimed|suggested|said|argued|proposed|"
    r"reported|assumed|believed|alleged|speculated|hypothesi[sz]ed|posited)\s+(?:\w+\s+){0,3}?that\b"
    r"|(?:i|we)\s+(?:was|were|have\s+been|had\s+been|got|get)\s+told\b(?:\s+that\b)?"
    # "There's an answer on the HF forum saying that X", "There was a comment claiming X"
    rf"|there(?:'s|\s+is|\s+was|\s+are|\s+were)\s+(?:a|an|one|some|this|that)\s+(?:[\w-]+\s+){{0,3}}?(?:{_DOCUMENT}|{_PERSON})\b"
    r"[^.!?;\n]{0,80}?\s(?:saying|claiming|arguing|suggesting|stating|reporting|insisting|describing|explaining|proposing|"
    r"asserting|blaming|who\s+(?:says|said|thinks|claims|claimed|believes)|(?:that|which)\s+(?:says|said|claims|claimed|argues|states|"
    r"suggests|reports)"
    # … or where someone in it claims ("an upstream issue (#844) where someone argues that X")
    rf"|(?:where|in\s+which)\s+(?:someone|somebody|people|they|he|she|(?:a|an|the|one)\s+(?:[\w-]+\s+)?{_PERSON})"
    rf"(?:\s+(?:with|from|on|at|in)\s+[^,.;:!?\n]{{1,50}}?)?\s+{_REPORT_ADVERB}{_REPORT})"
    r"\b(?:\s+that\b)?"
    # round 14: "…scheduler.py, whose comment says that X", "Their argument is that X", "summarising what Marco
    # wrote: X", "the pytorch issue saying X", "…, and one could argue X"
    rf"|whose\s+(?:[\w-]+\s+){{0,2}}?(?:{_DOCUMENT}|{_CLAIM_NOUN})s?\s+{_REPORT_ADVERB}{_REPORT}\b(?:\s+that\b)?"
    rf"|(?:his|her|their)\s+(?:[\w-]+\s+){{0,2}}?{_CLAIM_NOUN}\s+(?:is|was)\s+that\b"
    r"|(?:summari[sz]ing|relaying|forwarding|passing\s+on|paraphrasing)\s+what\s+[^:\n.!?]{1,50}?\s+(?:wrote|said|posted|says|"
    r"claimed|claims|thinks|argued|argues|suggested)\s*:"
    rf"|(?-i:(?!(?:I|We)\b))(?:the|a|an|one|another|this|that)\s+(?:[#\w.-]+\s+){{0,3}}?(?:{_DOCUMENT}|{_PERSON})\s+(?:saying|claiming|arguing|"
    r"suggesting|stating|reporting|insisting)\b(?:\s+that\b)?"
    r"|(?:someone|somebody|one|people|a\s+reviewer|others|a\s+skeptic)\s+(?:might|may|could|would)\s+(?:say|argue|claim|suggest)\b"
    r"(?:\s+that\b)?"
    # round 15: a case made for a claim the agent is about to answer ("The argument would go: X", "I know the claim: X")
    # (round 33: not the agent's own conditional, "3. if they differ, the story would be: X. Will confirm or drop it")
    r"|(?:the|their|his|her)\s+(?:argument|claim|story|reasoning|theory|case)\s+(?:would\s+go|goes|went|runs|ran)\s*:"
    r"|(?:(?<!,\s)(?<!\bthen\s)the|their|his|her)\s+(?:argument|claim|story|reasoning|theory|case)\s+would\s+be\s*:"
    # round 35: "The claim would be that X; but …" (the agent's own conditional after "if …, " or "then" is not)
    r"|(?:(?<!,\s)(?<!\bthen\s)the|their|his|her)\s+(?:argument|claim|reasoning|case)\s+would\s+be\s+that\b"
    r"|(?:i|we)\s+know\s+the\s+(?:claim|argument|story|theory)\s*:"
    r"|(?:the\s+)?(?:received|common|conventional|usual|popular|accepted|standard|team'?s?)\s+"
    r"(?:wisdom|explanation|theory|story|view|belief|assumption|diagnosis)\s+(?:is|was|says?|said)\b(?:\s+that\b)?"
    # round 16: an idea in the air, named before the agent answers it ("The idea is that X. The logs don't support it")
    r"|the\s+(?:idea|theory|suggestion|claim|argument|notion|story)\s+(?:here\s+)?(?:is|was|goes|went)\s+that\b"
    # round 27: "I asked an assistant and it said X", "I asked Priya and she thinks X"
    # (round 30: also without its subject and with what was asked: "Asked an LLM about the drift and it said X")
    r"|(?:(?:i|we)\s+)?asked\s+(?:an?\s+|the\s+|our\s+|my\s+)?(?:[\w.-]+\s+){0,2}?(?:assistant|chatbot|llm|bot|ai|colleague|"
    r"teammate|coworker|co-worker|expert|reviewer|maintainer|chatgpt|claude|copilot|[A-Z][a-z]+)"
    r"(?:\s+(?:about|for|on|regarding|re)\s+[^.;:!?\n]{1,40}?)?\s+and\s+(?:it|he|she|they)\s+"
    r"(?:said|says|told\s+(?:me|us)|claimed|claims|suggested|suggests|answered|replied|thinks|thought|reckons|reckoned)"
    r"(?:\s+that)?\b)",
    re.IGNORECASE,
)
#: Someone else's claim reported with a factive verb ("Issue #75870 points out that X", "the thread notes that X").
FACTIVE_ATTRIBUTION = re.compile(
    r"(?:(?<=^)|(?<=\n)|(?<=[.!?;:]\s))[\W_]*(?<!\bas\s)"
    rf"{_OTHER}\s+{_REPORT_ADVERB}(?:points?\s+out|pointed\s+out|notes?|noted|shows?|showed|explains?|explained|warns?|warned|"
    # round 16: "PyTorch issue #72548 warns that X", "DeepSpeed PR #1801 (…) was exactly this: X"
    r"(?:was|is)\s+(?:exactly|precisely)\s+(?:this|that|about)|makes?\s+the\s+point|made\s+the\s+point)\b"
    r"(?:\s+that\b)?",
    re.IGNORECASE,
)
#: The agent doubting that a reported claim applies ("I don't see how it applies here", "not relevant to us").
DOUBT = re.compile(
    r"\b(?:i|we)\s+(?:don't|do\s+not|can't|cannot)\s+see\s+how\s+(?:it|this|that)\s+(?:applies|is\s+relevant|matters|"
    r"(?:can|could|would)\s+(?:bite|affect|hit|apply))"
    r"|\b(?:doesn't|does\s+not|don't|do\s+not)\s+apply\s+(?:here|to\s+(?:us|our|this))"
    r"|\b(?:isn't|is\s+not|not)\s+relevant\s+(?:here|to\s+(?:us|our|this))|\b(?:i|we)\s+(?:don't|do\s+not)\s+buy\b"
    r"|\bnot\s+convinced\b",
    re.IGNORECASE,
)


#: A sentence whose subject is someone else or what they wrote ("Ticket FT-212, filed by the cluster team, gives the
#: root cause as: X", "The on-call note in the incident doc puts the hang down to X", "A colleague extends that: X",
#: "From #training, Dana: "X""), whatever its verb: what it says is theirs when the agent later declines it
#: (:data:`DISTANCING`).
THIRD_PARTY = re.compile(
    rf"{_START}[\W_]*(?:(?:from|in|on|under|per|at)\s+[^,:;.!?\n]{{1,60}}?(?:[,:]\s*|\s+(?=(?:someone|somebody|people|a|an|one|the)\s))"
    r"|(?:(?:i|we)\s+)?(?:found|read|saw|came\s+across|dug\s+up)\s+"
    r"|there(?:'s|\s+is|\s+was)\s+(?=(?:a|an|one|this)\s+(?:[#\w.'()-]+\s+){0,4}?" + _DOCUMENT + r"\b))?(?:"
    rf"(?:a|an|one|another|the|some|their|his|her|this|that|my|our|{_WHEN})\s+(?:[#\w.'-]+\s+){{0,3}}?{_PERSON}\b"
    rf"|(?:a|an|one|another|the|some|their|his|her|this|that|{_WHEN})\s+(?:[#\w.'-]+\s+){{0,3}}?{_DOCUMENT}\b"
    # (round 31: not a bare "they", which in mechanism prose is the ranks or the code as often as people: "the suspect
    # is the divisor: they use the expert-DP group's size (W/ep) where the objective needs W"; "they say X" still
    # reports)
    r"|(?:someone|somebody|he|she)\b"
    r"|(?:(?:jira|ticket|issue|bug)\s+)?(?-i:[A-Z][A-Z0-9]{1,9})-\d+\b"
    r"|(?:[\w-]+\s+){0,2}(?:issue|pr|pull\s+request|ticket|bug)\s*#?\d+\b|[\w.-]+\s*#\d+\b"
    rf"|{_NAME}\s*(?::|\s+(?:in|on|from|at)\s+(?:the\s+)?[#\w-]+\s*[:,])"
    # round 16: "Priya's message in #demand-training puts it on the wrapper: X"
    rf"|{_NAME}'s\s+(?:[\w-]+\s+){{0,2}}?(?:{_CLAIM_NOUN}|{_DOCUMENT})\b"
    # round 19: any subject not the agent's own with a reporting verb ("Notes left from the earlier investigation run
    # state as the root cause that X", "The docstring I found on … implies that X", "A Stack Overflow answer on "…"
    # says that X"): theirs when the agent declines it
    r"|(?!(?:i|we|my|our|it|this|that|these|those|there|here|so|then|thus|hence|if|when|because|since)\b)"
    r"(?:(?:[\w#.'`()\x22\u201c\u201d/-]+\s+){1,10}?"
    # round 20: … with an appositive before its verb ("Ticket TRN-212, filed by the GPU team, states that X")
    r"|(?:[\w#.'`()\x22\u201c\u201d/-]+\s+){0,9}?[\w#.'`()\x22\u201c\u201d/-]+,\s+[^,:;.!?\n]{1,60}?,\s+)(?<!\bi\s)(?<!\bwe\s)"
    rf"{_REPORT_ADVERB}(?:{_REPORT}|found|expected|expects)\b(?=\s+(?:as\s+the\s+(?:root\s+)?cause\s+)?(?:that\b|:)|\s*:))",
    re.IGNORECASE,
)
#: The agent declining a claim it reported, without refuting it ("I'm not endorsing that conclusion", "Noting it as
#: Dana's guess", "Not something I've confirmed", "I'm leaving it open", "I pushed back", "I don't think that carries
#: over to us", "I think the reviewer is mistaken", "Those threads are about different stacks; I'm not assuming it
#: applies here").
DISTANCING = re.compile(
    r"\b(?:i'm|i\s+am|we're|we\s+are)\s+(?:\w+\s+)?not\s+(?:yet\s+)?(?:endorsing|signing\s+off|adopting|relying|assuming|vouching|"
    r"accepting|buying|taking\s+(?:it|this|that)\s+(?:on|as))\b"
    r"|\bwithout\s+(?:endorsing|adopting|accepting|vouching\s+for|signing\s+off)\b"
    r"|\bnot\s+something\s+(?:i|we)(?:'ve|\s+have)\s+(?:\w+\s+)?(?:confirmed|verified|checked|tested|reproduced|seen)\b"
    r"|\b(?:i|we)\s+(?:haven't|have\s+not|couldn't|could\s+not|can't|cannot)\s+(?:yet\s+)?(?:confirm|confirmed|verify|verified|"
    r"evaluate|evaluated|reproduce|reproduced|check|checked|validate|validated|establish|established)\b"
    r"|\bleaving\s+(?:it|this|that|them|its\s+\w+|the\s+\w+)\s+(?:open|unconfirmed|unverified|aside)\b"
    r"|\b(?:noting|recording|logging|filing|keeping|passing\s+(?:it|this|that)\s+(?:along|on)|writing\s+(?:it|this|that)\s+down)\s+(?:(?:it|this|that|them)\s+)?"
    r"(?:down\s+)?as\s+(?:an?\s+)?(?:(?:his|her|their|the\s+[\w-]+'s|[\w-]+'s)\s+)?(?:[\w-]+\s+)?(?:guess|theory|claim|diagnosis|"
    r"hypothesis|view|read|take|opinion|lead|suggestion|conclusion|account)\b"
    r"|\bpushed\s+back\b|\b(?:not|isn't|aren't)\s+applicable\b"
    # round 45: "PyTorch #104336 and the icefall thread both describe …, with the claim that X. That doesn't match our
    # setup, in my reading: …"
    r"|\b(?:that|this|it|which)\s+(?:doesn't|does\s+not|didn't|did\s+not)\s+(?:match|fit|apply\s+to|describe)\s+(?:our|this|the)"
    r"\s+(?:setup|case|code|config(?:uration)?|pipeline|situation|loop|run|workspace|repo)\b"
    r"|\b(?:i|we)\s+(?:don't|do\s+not)\s+think\s+(?:that|it|this|they|those|the\s+\w+)\s+(?:carries|carry)\s+over\b"
    r"|\b(?:i|we)\s+think\s+(?:the|they|he|she|(?-i:[A-Z][a-z]+))\s+(?:\w+\s+)?(?:is|are)\s+(?:mistaken|wrong)\b"
    r"|\bnot\s+(?:assuming|adopting)\s+(?:it|this|that|their|his|her)\b"
    # round 16: "and have no view on whether …", "I don't think the analogy holds", "Whether ours behaves like theirs I
    # can't say", "recording the pointer for whoever picks this up", "I'm including their wording for completeness",
    # "I'll leave it to him to confirm", "I'm not basing the change on it yet", "Infra closed it as cannot-reproduce"
    r"|\b(?:have|has|i've|we've|with)\s+no\s+(?:\w+\s+)?(?:view|opinion|position|stance)\b"
    r"|\b(?:i|we)\s+(?:don't|do\s+not)\s+think\s+(?:that|it|this|they|those|the\s+[\w-]+)\s+(?:holds?|applies|apply|fits?)\b"
    r"|\b(?:i|we)\s+(?:can't|cannot|couldn't)\s+(?:yet\s+)?(?:say|tell)\b(?!\s+(?:why|how|where|when)\b)"
    r"|\bfor\s+(?:whoever|the\s+next\s+(?:person|engineer|on-?call)|completeness)\b"
    r"|\bleave\s+(?:it|this|that)\s+to\s+(?:him|her|them|[\w-]+)\s+to\s+(?:confirm|verify|prove|check|chase)\b"
    r"|\bnot\s+(?:yet\s+)?(?:basing|building|acting)\s+(?:\w+\s+){0,2}?on\s+(?:it|this|that)\b"
    r"|\bnot\s+(?:yet\s+)?(?:pursuing|following\s+up\s+on|chasing)\s+(?:it|this|that)\b"
    r"|\bclosed\s+(?:it|this|that|the\s+\w+)\s+as\s+(?:cannot|can't|won't|not|invalid|wontfix|duplicate|stale|unreproducible)"
    # round 19: "I'm not asserting it applies here", "I'm reporting its conclusion, not mine", "is another matter", "the
    # doc is speculation", "I'm treating this as unverified", "I haven't tied it to our repo", "I'd push back on that",
    # "I'm leaving that conclusion aside", "I don't think it transfers", "I'd rather reproduce it independently"
    r"|\b(?:i'm|i\s+am|we're|we\s+are)\s+(?:\w+\s+)?not\s+(?:asserting|claiming|saying|stating|concluding)\b"
    r"|,?\s+not\s+(?:mine|ours)\b|\b(?:is|are)\s+(?:another|a\s+(?:different|separate))\s+(?:matter|question|story)\b"
    r"|\b(?:is|was)\s+(?:just\s+|only\s+|pure\s+)?speculation\b"
    # (round 40: "so I'm treating this as a non-issue")
    r"|\btreat(?:ing)?\s+(?:it|this|that|them)\s+as\s+(?:unverified|unconfirmed|unproven|hearsay|irrelevant|inapplicable|"
    r"a\s+(?:lead|rumou?r|claim|hint|non-?issue|red\s+herring))\b"
    r"|\b(?:haven't|have\s+not|hasn't|has\s+not)\s+(?:yet\s+)?(?:tied|connected|linked|mapped|related|matched)\s+(?:it|this|that|them)\s+to\b"
    r"|\bpush(?:ing)?\s+back\b|\b(?:i|we)(?:'d|\s+would)\s+rather\s+(?:reproduce|verify|check|confirm|test)\b"
    r"|\bleaving\s+(?:that|this|their|his|her)\s+[\w-]+\s+(?:open|unconfirmed|unverified|aside)\b"
    r"|\b(?:i|we)\s+(?:don't|do\s+not)\s+think\s+(?:that|it|this|they|those|the\s+[\w-]+)\s+(?:transfers?|generali[sz]es?)\b"
    # round 20: "My teammate's read, which I haven't endorsed: X", "Ticket T says X. No opinion from me yet"
    r"|\b(?:i|we)\s+(?:haven't|have\s+not|didn't|did\s+not)\s+(?:yet\s+)?(?:endorsed|adopted|accepted|vetted|signed\s+off\s+on)\b"
    r"|\bno\s+(?:view|opinion|position|stance|verdict)\s+(?:from\s+me|of\s+(?:my|our)\s+own)\b",
    re.IGNORECASE,
)
#: How many sentences after a third party's sentence the agent may decline it.
DISTANCING_SENTENCES = 4


def _declined(text: str, opener: re.Match[str]) -> tuple[int, int] | None:
    """The span of a third party's claim that opens at ``opener`` and that the agent declines within
    :data:`DISTANCING_SENTENCES` sentences of its paragraph, up to the declining words; a sentence in the agent's
    own voice or a rebuttal before them ends it first. ``None`` when nothing declines it, or it is endorsed."""
    begin, at = _prose_sentence(text, opener.start())
    stop = min(_sentences_after(text, at, DISTANCING_SENTENCES), _paragraph_end(text, opener.end()))
    declined = DISTANCING.search(text, opener.end(), stop)
    if declined is None or _endorsed(text, opener.end(), declined.start(), reach=0):
        return None
    end = _prose_sentence(text, declined.start())[0]
    for _ in range(DISTANCING_SENTENCES):  # a sentence of the agent's own before the declining one
        start = _skip_space(text, at, end)
        if start >= end:
            break
        if FIRST_PERSON.match(text, start) or REBUTTAL_START.match(text, start):
            return begin, start
        at = max(_prose_sentence(text, start)[1], start + 1)
    return begin, end if end > begin else declined.start()


SPACE = re.compile(r"\s*")


def _skip_space(text: str, at: int, stop: int) -> int:
    """The first offset from ``at`` that is not whitespace, ``stop`` at most (where a next sentence starts)."""
    space = SPACE.match(text, min(at, stop), stop)
    return space.end() if space else stop


def _sentences_after(text: str, stop: int, count: int) -> int:
    """The end of the ``count``-th sentence after the one ending at ``stop`` (the text's end at most)."""
    for _ in range(count):
        if stop + 1 >= len(text):
            break
        stop = _prose_sentence(text, min(stop + 1, len(text) - 1))[1]
    return stop


#: A quotation under a label of two or more words that names someone else or what they wrote ("Reviewer
#: comment on the PR: "…"", "Handover note from last week's on-call: "…"", "Re Priya's message ("…")",
#: "Ticket SIM-233 (opened by the previous maintainer) states: "…""): their words, to the closing quote.
QUOTE_LABEL = re.compile(
    r"(?:^|(?<=\n)|(?<=[.!?;]\s))(?P<label>(?:[^\n.!?;:\x22\u201c]|[.:](?=\w)){2,100}?)(?:\s*:\s*|\s*\(\s*)(?=[\x22\u201c])"
)
#: (round 29: a tracker's issue key names a ticket too: 'From RLM-77: "…"')
LABEL_NAMES_OTHER = re.compile(
    rf"\b(?:{_PERSON}|{_DOCUMENT})\b|{_NAME}'s\b|#\s*\d+|@[A-Za-z][\w.-]+|(?-i:\b[A-Z]{{2,}}[A-Z0-9]*-\d{{2,}}\b)",
    re.IGNORECASE,
)
#: A label that points back at a claim the sentence before it named ("I don't agree with the previous agent's
#: conclusion. For the record, it was: "…""): the quotation is that claim.
ANAPHORIC_LABEL = re.compile(
    r"(?:[\w'-]+(?:\s+[\w'-]+){0,3}\s*,\s*)?(?:it|that|this|theirs|his|hers)\s+(?:was|is|read|reads|said|says|went|goes)",
    re.IGNORECASE,
)
FIRST_PERSON = re.compile(r"[\W_]*(?:i|i'm|i've|i'd|my|we|we're|our|me)\b", re.IGNORECASE)
#: Words a quotation needs to be a claim rather than a quoted name or value.
MIN_QUOTED_WORDS = 5
#: A short phrase that opens the sentence of someone else's claim ("For reference: ", "FWIW, "): the
#: claim's scope starts with the sentence.
LEADING_LABEL = re.compile(r"[\W_]*(?:[#\w'-]+\s+){0,3}[\w'-]+\s*[:,]\s*")
#: A label that itself reports someone else's words before their claim ("Passing on what Marco said in
#: standup: he thinks X", "Relaying the on-call's message, she believes X"): the claim's scope starts with
#: the sentence.
REPORTING_LABEL = re.compile(
    rf"[\W_]*[^.!?;:\n]{{0,60}}?\b(?:{_OTHER})\s+{_REPORT_ADVERB}{_REPORT}\b[^.!?;:\n]{{0,40}}[:,]\s*"
    # round 16: "Passing along Marek's diagnosis, which I have not checked: he says X"
    r"|[\W_]*(?:passing\s+(?:along|on)|relaying|forwarding)\s+[^.!?;:\n]{1,60}?[:,]\s*",
    re.IGNORECASE,
)
#: The agent saying where it came upon someone else's claim ("Status: while searching I came across issue
#: #1256, which reports X"): the claim's scope starts with the sentence.
FINDING_LABEL = re.compile(
    r"[\W_]*(?:[\w'-]+[:,]?\s+){0,6}?(?:i|we)\s+(?:\w+\s+)?(?:came\s+across|found|saw|read|spotted|noticed|dug\s+up|ran\s+"
    r"into|stumbled\s+(?:on|upon|across))\s+",
    re.IGNORECASE,
)
#: A word or two naming where a claim was made, with a reference in brackets ("Upstream (OpenPipe/ART #898) someone
#: describes X"): the claim's scope starts with the sentence.
PLACE_LABEL = re.compile(r"[\W_]*(?:[\w'.-]+\s+){0,2}\([^()\n]{1,40}\)\s*", re.IGNORECASE)
#: The agent refusing the claim it goes on to report ("So I'm not adopting what Marco said in #training — that X"):
#: the claim's scope starts with the sentence.
REFUSING_LABEL = re.compile(
    r"[\W_]*(?:(?:so|and|but)\s+)?(?:i'm|i\s+am|we're|we\s+are)\s+not\s+(?:\w+\s+)?(?:adopting|accepting|buying|endorsing|"
    r"taking|signing\s+off\s+on|relying\s+on)\s+(?:what\s+)?",
    re.IGNORECASE,
)
#: A place where someone else's claim is made ("Found a forum thread where someone … says X"): the claim's scope
#: starts with the sentence.
WHERE_LABEL = re.compile(r"[\W_]*[^.!?;:\n]{0,80}?\b(?:where|in\s+which)\s+", re.IGNORECASE)
#: Someone else's claim named after it: "X, Priya says." / "X — or so the ticket claims." / "X is what
#: the reviewer thinks."
POSTPOSED_ATTRIBUTION = re.compile(
    rf"(?:[,\u2014\u2013]|\s-+)\s*(?:or\s+so\s+|at\s+least\s+)?(?:(?:{_OTHER})\s+{_REPORT_ADVERB}{_REPORT}|according\s+to\s+"
    rf"(?:[\w'.-]+\s+){{0,4}}?[\w'.-]+)\s*(?=[.!;)]|$)"
    rf"|\b(?:that's|that\s+is|is|was)\s+what\s+{_OTHER}\s+{_REPORT_ADVERB}{_REPORT}\b",
    re.IGNORECASE,
)
#: A sentence that names its paragraph so far as someone else's claim ("That's his read;", "That's the upstream
#: reports' story."); "That's my read" is the agent's own.
NAMED_AS_THEIRS = re.compile(
    rf"(?:{_START}|(?<=\bbut\s))[\W_]*(?:that's|that\s+is|this\s+is|those\s+are|that\s+was|it's|it\s+is)\s+(?:all\s+|just\s+|only\s+)?(?:his|her|their|"
    rf"(?:the\s+)?(?:[\w-]+\s+)?[\w-]+(?:'s|s')|{_NAME}'s)\s+(?:[\w-]+\s+)?(?:read|reading|take|story|claim|theory|argument|version|view|"
    r"hypothesis|position|diagnosis|interpretation|explanation|words|wording|conclusion|account|opinion|guess|finding|"
    r"findings|idea|suggestion|call|description)\b"
    # round 18: "Leaving it as theirs; I have not verified it."
    r"|\b(?:leaving|leave|keeping|keep|filing|file|logging|log|recording|record)\s+(?:it|this|that|them)\s+as\s+(?:theirs|his|hers|"
    rf"their\s+(?:[\w-]+\s+)?{_CLAIM_NOUN}|(?:the\s+)?(?:[\w-]+\s+)?[\w-]+(?:'s|s')\s+(?:[\w-]+\s+)?{_CLAIM_NOUN})\b",
    re.IGNORECASE,
)
#: The agent taking someone else's claim as its own after reporting it: "I agree", "she's right", "that's
#: correct", "I confirmed it", "the probe confirms it".
#: What a run or check that the agent confirmed, verified or reproduced may be, rather than a claim ("I reproduced the
#: run", "I confirmed the training loss matches the reference").
_PROCEDURE = r"(?:run|runs|job|setup|experiment|training|script|command|loss|baseline|reference)"
ENDORSEMENT = re.compile(
    r"\b(?:i|we)\s+(?:\w+\s+){0,2}?(?:agree|concur)\b(?!\s+(?:only|partly|partially)\b)"
    # round 16: "Infra closed it as cannot-reproduce, and I agree with closing it" agrees with the rejection
    r"(?!\s+with\s+(?:closing|dismissing|rejecting|dropping|discarding|ignoring|shelving|parking|deferring|ruling))"
    # round 30: "I agree with the author, not the reviewer" sides with one party against another whose claim it may be
    r"(?!\s+with\s+[^.;:!?\n]{1,40}?,?\s+not\s+(?:with\s+)?(?:the|a|an|my|our|his|her|their|(?-i:[A-Z]))\b)"
    r"|(?:^|(?<=[.!?]\s)|(?<=[.!?][\x22\u201d]\s)|(?<=\n))agreed\b"
    r"|\b(?:he|she|they|(?-i:[A-Z][a-z]+))(?:'s|'re|\s+is|\s+are|\s+was|\s+were)\s+(?:\w+\s+)?(?:right|correct|spot\s+on)\b"
    r"|\b(?:note|ticket|report|review|reviewer|comment|claim|theory|diagnosis|message|write-?up|summary|analysis|explanation|"
    r"colleague|teammate|reporter)\s+(?:is|was)\s+(?:\w+\s+)?(?:right|correct|spot\s+on|accurate)\b"
    # (round 31: not someone's words after their report verb: "A commenter says that is exactly what happens here")
    r"|(?<!\bsays\s)(?<!\bsaid\s)(?<!\bclaims\s)(?<!\bthinks\s)(?<!\bargues\s)(?<!\binsists\s)(?<!\bwrote\s)"
    # (round 38: nor a thing called the right one: "…, so that's the right divisor"; "that's the correct diagnosis" is)
    r"\b(?:that|this|it|which)(?:'s|\s+is|\s+was)\s+(?:(?:the|a|an)\s+(?:right|correct|accurate)\s+(?:explanation|diagnosis|"
    r"answer|reading|call|analysis|theory|story|conclusion)|(?!(?:the|a|an)\s)(?:\w+\s+)?(?:right|correct|true|accurate|"
    r"exactly\s+(?:it|right|what\s+happens|what's\s+happening)))\b"
    # (round 36: not a procedure repeated: "I reproduced the run on a single rank and saw the same discrepancy")
    rf"|\b(?:i|we)\s+(?:\w+\s+)?(?:confirmed|verified|reproduced|can\s+confirm)\s+(?:it|this|that|the\s+(?!{_PROCEDURE}\b)\w+)\b"
    r"|\bwhich\s+(?:checks\s+out|i\s+(?:confirmed|verified|reproduced)|holds\s+(?:up|true)|matches\s+what)\b"
    # round 22: not a confirmation promised ("To be confirmed with a 2-process run: I believe X")
    # (round 29: not "Nothing confirmed", "none confirmed")
    # (round 40: not a procedure's own result confirmed, "I confirmed the training loss matches the reference")
    rf"|\b(?:checks|checked)\s+out\b|{_UNCONFIRMED}\bconfirmed\b(?!\s+(?:that\s+)?the\s+{_PROCEDURE}\b)"
    r"|\bbears?\s+(?:it|this|that)\s+out\b|\bbore\s+(?:it|this|that)\s+out\b"
    r"|\b(?:probe|run|trace|numbers|counts|logs?|checkpoints?|masks|test|experiment|measurement|output|data|digests?)\s+"
    r"(?:\w+\s+){0,2}?(?:confirms?|bears?\s+(?:it|this|that)\s+out|shows?\s+exactly\s+(?:that|this))\b",
    re.IGNORECASE,
)
#: The agent meaning to test what it names next ("I want to confirm", "Before changing anything we need to check").
_TO_TEST = (
    r"(?:i|we)\s+(?:want|need|'d\s+like|would\s+like|plan|intend|am\s+going|'m\s+going|are\s+going|'re\s+going)\s+to\s+"
    r"(?:first\s+)?(?:confirm|test|check|verify|probe)\s+"
)
_MEANS_TO_TEST = r"(?:[A-Za-z][^.!?:;\n]{0,60}?\s)?" + _TO_TEST
#: A hypothesis label ("Hypothesis:", "My working theory (untested):", "Suspect #1:"): what follows is put
#: forward to be tested. At the statement's start it covers the whole statement; elsewhere its paragraph.
HYPOTHESIS_LABEL = re.compile(
    r"(?:(?<=^)|(?<=\n)|(?<=[.!?]\s))[\W_]*(?:[A-Za-z][\w'-]*(?:\s+[\w'-]+){0,3},\s+)?"
    # round 43: the idea the agent means to test ("Before changing anything I want to confirm one idea: that X")
    rf"(?:{_MEANS_TO_TEST})?(?:(?:my|our|a|the|one|working|initial|"
    r"current|leading|main|first|second|third|tentative|pre-?run|new|only|best|prime|top|another|possible|candidate|unproven|"
    r"untested|unverified|unconfirmed|unchecked|untried|pending|speculative|rough|quick|gut|potential|wild|educated|"
    r"\w+-run)[\s,]+){0,3}(?:hypothesis|theory|"
    r"suspicion|conjecture|guess|hunch|suspect|possibility|candidate|candidate\s+(?:cause|explanation|mechanism)|"
    # round 27: a numbered hypothesis ("H2 (open): X", "H1: X")
    r"(?-i:H)[1-9](?=\s*(?:\([^)\n]{0,40}\)\s*)?:)|"
    r"possible\s+(?:cause|explanation|mechanism)|idea|lead|bet|wager|speculation|instinct|intuition|"
    r"(?:tentative|provisional|preliminary|unconfirmed|unverified|untested|unproven|pending|speculative|working)\s+"
    r"[\w-]+(?:\s+[\w-]+){0,2}|money\s+is\s+on\s+(?:this|that|it))\b(?:\s*#?(?:\d+|(?-i:[A-Z]))\b)?(?:\s*\([^)\n]{0,100}\)|\s*,[^:\n.!?]{0,120}?|"
    r"\s+(?:for|about|on|re)\s+[^:\n.!?,]{0,40}?|\s+(?:to\s+(?:test|check|verify|confirm|probe|rule\s+out|chase|pursue|follow(?:\s+up)?|"
    r"investigate|look\s+into|run\s+down)(?:\s+(?:with|by|using|via|on)\s+[^:\n.!?]{1,60}?)?|worth\s+(?:testing|"
    r"checking)|under\s+test|for\s+now|so\s+far|before\s+(?:running|testing|touching|changing)\s+anything|before\s+any\s+(?:runs?|tests?|experiments?)|before\s+(?:i|we)\s+"
    r"(?:run|test|touch|change|try)\s+anything))?"
    r"(?:\s+(?:was|is|were))?(?:\s*:|\s+[\u2014\u2013]\s|\s+--?\s)",
    re.IGNORECASE,
)
#: A sentence put forward tentatively: "I suspect", "my hypothesis is", "maybe", "it might be that", "one
#: candidate is". Hedges of degree ("most likely", "probably", "I think") commit and are not here.
TENTATIVE = re.compile(
    r"\b(?:i|we)(?:'d|\s+would)\s+(?:guess|bet|wager|speculate)\b(?!\s+on\s+(?:it|this|that)\b)"
    r"|\bif\s+(?:i|we)\s+had\s+to\s+(?:guess|bet|speculate)\b"
    # … and "one thing that would produce X is if Y" (a candidate cause, put forward)
    r"|\b(?:one|another|a)\s+(?:thing|mechanism|way)\s+that\s+(?:would|could|might)\s+(?:produce|cause|explain|give)\b"
    r"|\b(?:i|we)\s+(?:\w+\s+)?(?:suspect|suspected|hypothesi[sz]e|hypothesi[sz]ed|conjecture|speculate|"
    r"would\s+guess|'d\s+guess|guess|am\s+guessing|'m\s+guessing|bet)\b(?!\s+(?:not|so)\b)"
    # round 27: "Suspicion is that X" (no determiner, at a sentence's start)
    r"|(?:^|(?<=[.!?:]\s)|(?<=\n))[\W_]*(?:working\s+|current\s+|main\s+|leading\s+)?(?:suspicion|hunch|guess|hypothesis|theory)"
    r"\s+is\s+that\b"
    r"|\bmy\s+(?:\w+\s+){0,2}?(?:hypothesis|theory|guess|suspicion|hunch|bet|conjecture|working\s+assumption)"
    # round 16: "My best guess right now, which I still need to verify, is that X"
    r"(?:\s+(?:right\s+now|for\s+now|so\s+far|at\s+this\s+point|at\s+the\s+moment))?(?:\s*,[^,.;!?\n]{1,60},)?\s+"
    r"(?:is|was|would\s+be|here\s+is)\b"
    r"|\b(?:one|an|another|the)\s+(?:explanation|possibility|idea|candidate|theory|option|mechanism)\s+(?:i'm|i\s+am|we're|we\s+are|"
    r"i've\s+been|we've\s+been)\s+(?:considering|entertaining|weighing|exploring|looking\s+at|toying\s+with)\b"
    r"|(?:^|(?<=[\n.!?:;,(]\s)|(?<=[\n(]))[\W_]*(?:(?:or|and|but|so)\s+)?(?:maybe|perhaps|possibly|conceivably|plausibly)\b"
    # … not a one-word qualifier in brackets ("the (possibly short) global batch")
    r"(?!\s+[\w-]+\))"
    # … with an aside before its "that" ("It might be — I haven't run anything to show it — that X")
    r"|\b(?:it|this|that)\s+(?:might|may|could)\s+(?:well\s+|possibly\s+)?be\s+(?:[\u2014\u2013]\s[^\u2014\u2013\n]{1,100}\s[\u2014\u2013]\s+"
    r"|--?\s[^\n]{1,100}?\s--?\s+|\([^()\n]{1,100}\)\s+)?(?:that|because|due\s+to|caused\s+by)\b"
    r"|\b(?:might|could|may)\s+(?:possibly\s+|well\s+)?be\s+(?:because|due\s+to|caused\s+by)\b"
    r"|(?:^|(?<=[\n.!?:;]\s)|(?<=\n))[\W_]*(?:(?:it|this|that)\s+)?(?:could|might|may)\s+(?:well\s+)?be\s+(?:that|the|a|an)\b"
    r"|\b(?:one|a|another|the)\s+(?:possible|plausible|candidate|potential)\s+(?:explanation|cause|reason|mechanism|"
    r"culprit)(?:\s+(?:for|of|behind)\s+[^.!?;:\n]{0,80}?)?\s+(?:is|was|would\s+be)\b|\b(?:one|a|another)\s+(?:candidate|possibility|idea|option)\s+(?:is|was)\b"
    r"|\bmy\s+(?:\w+\s+)?(?:candidate|suspect|lead)\s+(?:is|was)\b"
    r"|\b(?:i|we)\s+(?:\w+\s+)?(?:considered|wondered|was\s+wondering|am\s+wondering|'m\s+wondering)\b"
    r"|\btentatively\b|\bas\s+a\s+(?:working\s+)?hypothesis\b"
    # round 18: a claim laid out as what an idea would say ("The idea would be that X")
    r"|\b(?:the|that|this|their|his|her)\s+(?:idea|theory|argument|story|hypothesis|reasoning|claim|suggestion)\s+would\s+be\s+that\b"
    # round 43: "Before changing anything I want to confirm that X" (not what was confirmed: "I confirmed that X")
    rf"|\b{_TO_TEST}that\b"
    # round 17: "Next I'll test whether the problem is that X"
    r"|\b(?:i'll|i\s+will|we'll|we\s+will|i'm\s+going\s+to|let\s+me)\s+(?:next\s+)?(?:test|check|verify|see)\s+whether\b"
    r"|\b(?:i|we)\s+have\s+(?:a|an)\s+(?:\w+\s+)?(?:hunch|feeling|inkling|suspicion|guess|theory|hypothesis)\b"
    r"|\bmy\s+(?:money|bet)\s+is\s+on\b|\b(?:tentative|provisional|preliminary|unconfirmed)\s+(?:diagnosis|explanation|"
    r"conclusion|root\s+cause|finding)\b"
    # round 2: possibility ("It's possible that", "plausibly" anywhere), inclination ("I'm tempted to say", "leaning
    # towards"), wondering, a condition on the agent's own reading ("if my reading of the code is right"), and a claim
    # named as a proposition ("the idea that X", "the hypothesis that X"): its own predicate decides, else put forward
    r"|\bit(?:'s|\s+is|\s+seems|\s+looks)\s+(?:quite\s+|entirely\s+|very\s+|at\s+least\s+)?(?:possible|conceivable|plausible)\s+"
    r"(?:that\b|(?!(?:to|for|in|with|on|at|but|and)\b)(?=[\w`]))|\b(?:plausibly|conceivably|possibly)\b(?!\s+[\w-]+\)|-\w)"
    # (round 37: not an adverb on an adjective before its noun: "resolved per node from possibly stale local refs")
    r"(?!\s+(?:stale|outdated|old|older|different|wrong|uneven|unequal|empty|partial|short|shorter|missing|corrupt\w*|cached|"
    r"truncated|mismatched|duplicated?|larger|smaller)\s+(?!(?:to|from|than|and|or|but|on|in|at|for|so|because|which|that|"
    r"as|if|when|while)\b)[\w`]+)"
    r"|\b(?:i'm|i\s+am|we're|we\s+are)\s+(?:\w+\s+)?(?:tempted|inclined)\s+to\s+(?:say|think|believe|blame|guess|suspect|"
    r"conclude)\b|\b(?:i|we)(?:'m|\s+am|\s+are|'re)?\s+lean(?:ing|s)?\s+(?:towards?|to)\b|\b(?:i|we)\s+(?:\w+\s+)?wonder\b"
    r"|\bif\s+(?:my|our)\s+(?:[\w-]+\s+){0,5}?(?:is|are)\s+(?:right|correct|accurate)\b|\bif\s+(?:i'm|i\s+am|we're|we\s+are)\s+"
    r"(?:right|correct|reading\s+(?:it|this|that|the\s+\w+)\s+(?:right|correctly))\b|\bif\s+(?:i|we)\s+(?:read|understand|"
    r"understood)\s+(?:it|this|that|the\s+\w+)\s+(?:right|correctly)\b|\bassuming\s+(?:i|we)\s+(?:read|understand|understood)\b"
    # … but not the code's or a library's premise described ("Accelerate steps it P times, on the assumption that the
    # schedule counts batches": that is how the code reasons, not the agent hedging)
    r"|\bthe\s+(?:hypothesis|possibility|suspicion|suggestion|guess|hunch|conjecture|claim)\s+that\b"
    # round 22: … nor its theory ("runs step() P times per call, on the theory that the schedule counts every batch")
    # (round 24: "iterates P inner .step() calls … under the assumption that the horizon was defined over …")
    r"|(?<!\bon\s)(?<!\bupon\s)(?<!\bunder\s)\bthe\s+(?:assumption|premise|theory|idea|notion)\s+that\b",
    re.IGNORECASE,
)
#: A paragraph that opens by putting its claim forward ("Possibly (needs a check): X", "Could the ranks be disagreeing
#: on the width?"): the paragraph is put forward, not asserted, unless confirmed. "Probably" and "I suspect" are
#: hedges of degree or cover their own sentence (:data:`TENTATIVE`); a yes/no question answered after it is no
#: hypothesis ("Do the ranks start from different weights? No, …").
HYPOTHESIS_OPENING = re.compile(
    r"(?:^|(?<=\n\n))[ \t]*[\W_]*(?:(?:maybe|perhaps|possibly)\s*(?:\([^()\n]{1,80}\)\s*)?[:,(]"
    r"|(?:could|might|may)\s+(?:(?:it|the|this|that|our|each|one|some)\b|`|(?-i:[a-z_]\w*\b))(?:[^.!?\n]|\.(?=\w)){0,200}\?"
    # round 18: a paragraph that opens with a plan to observe ("Plan: (1) log per-parameter grad norms …; (2) if …")
    r"|(?:plan|next\s+steps?)\s*:\s*(?:\(?1[.)]\s*)?(?:log|print|dump|measure|instrument|compare|trace|build|run|probe|record|"
    r"check|time|plot)\b"
    # round 19: "Is the fork in Stack.forward even entered?" (a yes/no question opening its paragraph, not answered)
    r"|(?:is|are|does|do|did|was|were)\s+(?:the|this|that|our|each|every|it|there)\b(?:[^.!?\n]|\.(?=\w)){0,200}\?"
    r"(?![\W_]*(?:yes|yep|yeah|no|nope|correct|right|indeed|exactly|it\s+is|it\s+does|they\s+do|they\s+are)\b)"
    # round 18: "Is the problem that the consistency term skips DDP?"
    r"|is\s+(?:the\s+(?:problem|issue|cause|bug|culprit|reason)|it)\s+(?:simply\s+|just\s+)?that\b(?:[^.!?\n]|\.(?=\w)){0,200}\?"
    r"(?![\W_]*(?:yes|yep|yeah|no|nope|correct|right|indeed|exactly)\b)"
    r"|is\s+it\s+(?:possible|conceivable|plausible)\b[^.!?\n]{0,200}\?)",
    re.IGNORECASE,
)
#: An opening question that only asks whether something is right ("Is the loss right? compute_loss divides by …";
#: round 38): it puts forward no mechanism, and what the paragraph goes on to say is the agent's own answer.
EVALUATIVE_QUESTION = re.compile(
    r"[ \t]*[\W_]*(?:is|are|was|were)\s+(?:the|this|that|our|it)\b(?:[^.!?\n]|\.(?=\w)){0,60}?\b(?:right|correct|wrong|"
    r"ok|okay|fine|sane|consistent)\s*\?",
    re.IGNORECASE,
)
#: Odds put on a claim ("~70% on this:", "I'd put ~70% on X", "65% likely", "Rough odds:", "P(stale cache) ~ 0.7",
#: "Best guess, maybe 60%", "Remaining 30% is something else"): the paragraph is a weighted belief, put forward.
#: Odds of 80% or more commit ("I'd put ~90% on this"); a percentage of an effect ("off by ~20%") is not odds.
ODDS = re.compile(
    r"\b(?:[1-7]\d|[1-9])\s*%\s+(?:likely|sure|confident|chance|probability)\b"
    # round 18: "Likely (~75%) explanation:"
    r"|\b(?:likely|probable|plausible|possible|possibly|probably)\s*\(\s*~?\s*(?:[1-7]\d|[1-9])\s*%\s*\)"
    r"|\b(?:put|give|bet|place)\s+(?:it\s+)?(?:at\s+)?(?:~|about\s+|around\s+|roughly\s+|maybe\s+)?(?:[1-7]\d|[1-9])\s*%\s+on\b"
    # round 23: "I'd give it 65%; the rest is split between …" (not "give it 50% more memory")
    r"|\b(?:put|give|giving|bet|place)\s+(?:it|this|that)\s+(?:at\s+)?(?:~|about\s+|around\s+|roughly\s+|maybe\s+)?(?:[1-7]\d|[1-9])\s*%"
    r"(?!\s*(?:of|more|less|faster|slower|extra|too|off|higher|lower|larger|smaller|headroom|memory)\b)"
    r"|~\s*(?:[1-7]\d|[1-9])\s*%\s+(?:on\s+(?:this|that|it)\b|that\b)"
    r"|\b(?:rough\s+|my\s+)?odds\b(?:\s+as\s+i\s+see\s+them)?\s*[:,]"
    r"|\b(?:maybe|say|perhaps)\s+~?(?:[1-7]\d|[1-9])\s*%"
    # round 21: "(I'd say 3 to 1)", "odds of 2:1"
    r"|\b(?:i'd\s+say|odds\s+(?:of\s+|are\s+)?|at\s+(?:about\s+)?)~?[1-9]\s*(?:to|:)\s*1\b"
    r"|\bP\s*\([^()\n]{1,60}\)\s*(?:~|\u2248|=|is)\s*0?\.[1-7]"
    r"|\b(?:the\s+)?(?:remaining|other|rest\s+of\s+my)\s+(?:~?(?:2[1-9]|[3-9]\d)\s*%|0?\.(?:2[1-9]|[3-9])|probability)"
    # round 26: "My ranking of suspects, none confirmed: (1) most likely, X; (2) less likely, Y"
    r"|\b(?:my\s+|a\s+|the\s+)?(?:ranking|ranked\s+list|shortlist)\s+of\s+(?:suspects|candidates|hypotheses|possible\s+causes)\b"
    r"(?=[^.!?\n]{0,40}:)"  # … a label that opens the list (not "I ruled out the rest of my shortlist of suspects.")
    r"|\(\s*[1-9]\s*\)\s*(?:most|more|less|least)\s+likely\s*[,:]",
    re.IGNORECASE,
)
#: A sentence that doubts what the paragraph put forward ("If that's right, …", "If I'm right, …"); "If so, …"
#: draws a consequence and is not here.
IF_RIGHT = re.compile(
    r"(?:^|(?<=[.!?]\s)|(?<=\n))[\W_]*(?:if|assuming)\s+(?:that's|that\s+is|this\s+is|i'm|i\s+am|we're|this\s+reading\s+is)\s+"
    r"(?:right|correct|true|the\s+case)\b",
    re.IGNORECASE,
)
#: A sentence that plans what to look at next ("Next step: print per-epoch batch indices on both ranks.", "I'll log
#: the widths to confirm."): after a sentence that put a claim forward, it keeps the chain between them put forward.
PLANNED_OBSERVATION = re.compile(
    r"(?:^|(?<=[.!?]\s)|(?<=\n))[\W_]*(?:(?:next(?:\s+step)?|plan|to-?do)\s*:\s*(?:\(?\d[.)]\s*)?|(?:next|then)\s*,?\s+"
    r"(?:i'll|i\s+will|we'll|we\s+will)\s+|(?:i'll|i\s+will|we'll|we\s+will|(?:i'm|we're)\s+going\s+to)\s+(?:\w+\s+)?)"
    r"(?:print|log|dump|measure|compare|instrument|trace|plot|record|diff|count|time|probe)\b",
    re.IGNORECASE,
)
#: A consequence drawn in the conditional mood ("The optimizer would then hold the superseded tensors", "… so X would
#: therefore …"): after a sentence that put a claim forward, it goes on putting it forward.
MODAL_CONSEQUENCE = re.compile(
    r"\b(?:would|could|might)\s+(?:then|therefore|thus|in\s+turn|consequently)\b|\b(?:then|therefore|thus)\s+(?:would|could|might)\b",
    re.IGNORECASE,
)
#: An "unverified" disclaimer ("not verified yet", "untested", "I haven't checked this"): the paragraph
#: before it is put forward, not asserted.
UNVERIFIED = re.compile(
    r"(?:\bnot\s+(?:yet\s+)?(?:been\s+)?(?:verified|confirmed|tested|checked|proven|run|tried|measured)(?:\s+yet)?"
    # round 18: "Not verified on my side."
    r"(?:\s+(?:on\s+my\s+(?:side|end)|by\s+me|myself|independently|locally))?"
    # round 23: a label that disclaims what follows ("Odds-on favourite, though untested: X")
    r"|\b(?:though|although|but|still|as\s+yet|yet)\s+(?:untested|unverified|unconfirmed|unchecked|unproven)\s*(?=:)"
    # round 19: "Tentative.", "(will check with a print)", "Putting that down as a hypothesis to check"
    r"|(?:^|(?<=[.!?]\s)|(?<=\n))[\W_]*tentative(?:ly)?\s*(?=[.!]|$)"
    # round 20: "Tentative until I dump the masks." ("Unconfirmed until …": below)
    r"|(?:^|(?<=[.!?]\s)|(?<=\n))[\W_]*(?:tentative|provisional)\s+until\s+[^.!?\n]{1,60}?(?=[.!]|$)"
    r"|(?<=\()\s*(?:will|to|going\s+to)\s+(?:check|confirm|verify|test)\b[^()\n]{0,60}(?=\))"
    r"|\b(?:putting|put|writing|noting|filing|logging)\s+(?:it|this|that)\s+down\s+as\s+(?:a|an|my)\s+(?:[\w-]+\s+)?(?:hypothesis|guess|"
    r"candidate|lead|theory|suspicion)\b(?:\s+to\s+(?:check|test|verify|confirm)\b[^.!?\n]{0,60})?"
    # round 19: "Needs a mask dump per rank to confirm.", "I haven't dumped masks yet", "I haven't confirmed where the
    # OOM fires yet", "Unconfirmed until I print per-rank norms."
    r"|\bneeds?\s+(?:a|an|another|one\s+more)\s+(?:[\w-]+\s+){0,4}?(?:run|test|probe|check|experiment|measurement|dump|trace|"
    r"diff|comparison|print(?:out)?)\b[^.!?\n]{0,40}?\bto\s+(?:be\s+sure|confirm|verify|tell|know)(?:\s+(?:it|this|that))?"
    r"|\b(?:haven't|have\s+not|hasn't|has\s+not)\s+(?:yet\s+)?(?:dumped|printed|compared|diffed|plotted)\s+(?:the\s+|any\s+)?[\w-]+"
    r"(?:\s+yet)?"
    r"|\b(?:haven't|have\s+not|hasn't|has\s+not)\s+(?:yet\s+)?(?:verified|confirmed|checked|tested|established|measured)\s+"
    r"(?:where|how|when|what|which|whether)\b[^.!?;\n]{1,80}?(?:\s+yet)?"
    r"|(?:^|(?<=[.!?]\s)|(?<=\n))[\W_]*un(?:confirmed|verified|tested|proven)\s+until\s+[^.!?\n]{1,60}?"
    # round 17: "Worth checking next.", "Running that check next before changing anything."
    r"|\bworth\s+(?:checking|testing|a\s+check|a\s+test|verifying|confirming)\b(?:\s+next)?"
    r"|\b(?:running|doing|trying)\s+(?:that|this|the|a)\s+(?:[\w-]+\s+)?(?:check|test|comparison|experiment|probe)\s+next\b"
    r"(?:\s+before\s+(?:changing|touching|fixing)\s+anything)?"
    r"|(?:^|(?<=[(\[,;:.!?\u2014\u2013\n])|(?<=\bbut\s)|(?<=\bstill\s)|(?<=\byet\s))\s*un(?:verified|confirmed|tested|proven)"
    r"|\b(?:this|that|it|the\s+(?:hypothesis|theory|idea|claim|diagnosis|explanation|guess))\s+(?:is|remains)\s+"
    r"(?:still\s+|as\s+yet\s+)?un(?:verified|confirmed|tested|proven)"
    # round 37: "That's a suspicion from reading hub_cache.py, not something I've confirmed"
    r"|\bnot\s+(?:something|anything)\s+(?:i|we)(?:'ve|\s+have)?\s+(?:yet\s+)?(?:verified|confirmed|tested|checked|proven|"
    r"measured|established)(?:\s+yet)?"
    r"|(?:^|(?<=[.!?]\s)|(?<=\n))[\W_]*(?:that|this|it)(?:'s|\s+is)\s+(?:only\s+|just\s+|still\s+)?(?:a|my)\s+(?:[\w-]+\s+)?"
    r"(?:suspicion|hunch|guess)\b"
    # … not both outcomes named ("after the optimizer has or hasn't run")
    # (round 42: "run" only with the agent as its subject: "because the decoder backward hasn't run yet" says when it
    # runs)
    r"|(?<!\bor\s)(?:\b(?:haven't|have\s+not|hasn't|has\s+not|didn't|did\s+not)\s+(?:yet\s+)?(?:verified|confirmed|tested|"
    r"checked|measured|proven|probed|instrumented|traced|profiled|reproduced|logged|established|shown|demonstrated)"
    r"|(?:\b(?:i|we)\s+|(?:^|(?<=[.!?]\s)|(?<=\n))[\W_]*)(?:haven't|have\s+not|didn't|did\s+not)\s+(?:yet\s+)?run)"
    r"(?:\s+(?:this|that|it|anything|any\s+of\s+(?:this|it)|\(?\d{1,2}\)|step\s+\d{1,2}))?(?:\s+yet)?"
    # round 14: "… whether that applies to the version we run", "I haven't established that it applies here"
    r"(?:\s+(?:whether|if|that)\s+(?:it|this|that|they|any\s+of\s+(?:this|it))\s+(?:applies|holds|is\s+(?:the\s+case|true|what))"
    r"[^.!?;\n]{0,80}?)?"
    r"|\bneeds?\s+(?:checking|confirming|confirmation|verification|verifying|testing)"
    # round 35: a ruling-out not done about what was just said ("X. That can't be ruled out yet.", "I haven't ruled it
    # out"); "I can't rule out a second effect" names something else and is not here
    r"|\b(?:(?:i|we)\s+(?:can't|cannot|can\s+not|couldn't|haven't|have\s+not)\s+(?:yet\s+)?(?:rule|ruled)\s+(?:it|this|that)\s+out"
    r"|(?:it|this|that)\s+(?:can't|cannot|can\s+not|couldn't|hasn't|has\s+not|isn't|is\s+not)\s+(?:yet\s+)?(?:be\s+|been\s+)?"
    r"ruled\s+out)(?:\s+yet)?"
    r"|\b(?:needs?\s+to\s+be|remains?\s+to\s+be|has\s+yet\s+to\s+be|to\s+be)\s+(?:verified|confirmed|checked|tested)"
    r"|\byet\s+to\s+(?:be\s+)?(?:verif\w*|confirm\w*|test\w*|check\w*)"
    r"|\b(?:that's|that\s+is|this\s+is|it's)\s+(?:just\s+|only\s+)?(?:my|our|a|the)\s+(?:\w+\s+)?(?:guess|hypothesis|theory|bet|"
    r"suspicion|hunch|working\s+assumption|conjecture)"
    r"|\bneeds?\s+(?:a|another|one\s+more|an?\s+\w+)\s+(?:run|test|probe|check|experiment|measurement)\s+to\s+(?:be\s+sure|"
    r"confirm|verify|tell|know)"
    r"|\b(?:let\s+me|i'll|i\s+will|i\s+need\s+to|i\s+must|we\s+need\s+to|we'll|we\s+will)\s+(?:\w+\s+)?(?:verify|check|confirm|test|"
    r"instrument|measure|probe|trace|log|print|dump)\s+"
    r"(?:(?:this|it|that)\s+)?(?:first\s+)?before\s+(?:claiming|concluding|asserting|committing|being\s+sure|i\s+claim|"
    r"changing|touching|fixing|patching)"
    r"(?:\s+(?:it|this|that|anything))?"
    # round 16: "nothing I've run so far isolates it", "I'll treat it as a lead until a run confirms it"
    r"|\bnothing\s+(?:i|we)(?:'ve|\s+have)\s+(?:run|tried|done|checked|measured)\s+(?:so\s+far\s+|yet\s+)?(?:isolates|confirms|"
    r"shows|proves|supports|establishes|pins)\b(?:\s+(?:it|this|that)(?:\s+down)?)?"
    r"|\b(?:treat|treating|keep|keeping|file|filing)\s+(?:it|this|that)\s+as\s+(?:tentative|provisional|unverified|unconfirmed|"
    r"preliminary)\b"
    r"|\b(?:treat|treating|keep|keeping|file|filing)\s+(?:it|this|that)\s+as\s+(?:a|an)\s+(?:\w+\s+)?(?:lead|hypothesis|guess|"
    r"candidate|possibility)\b[^.!?\n]{0,60}"
    # round 2: "though I can't prove it yet", "I still need to run it", "pending a probe", "nothing run", "Just a
    # reading of engine.py so far", "From reading only"
    # (round 23: the agent can't, not a run or a setting: "P=1 can't show it" says what a run cannot reveal)
    r"|(?:(?:^|(?<=[.!?;,:(]\s)|(?<=[(\n]))|\b(?:i|we|though|although|but|yet|still|just|and|so)\s+)"
    r"(?:can't|cannot|can\s+not|couldn't)\s+(?:yet\s+)?(?:prove|confirm|verify|show)\s+(?:it|this|that)(?:\s+yet)?"
    r"|\bstill\s+(?:need|have)\s+to\s+(?:run|check|verify|test|confirm|measure|probe)(?:\s+(?:it|this|that))?"
    # round 15: "Still need to run it to see if that's real.", "I'd want a dump to confirm", "Haven't confirmed by
    # checking `id()`s yet."
    r"(?:\s+to\s+(?:see|check|find\s+out|know)\s+(?:if|whether)\s+[^.!?\n]{1,60}?)?"
    r"|\b(?:i|we)(?:'d|\s+would)\s+(?:want|need|like)\s+(?:a|an|another|one\s+more)\s+[\w-]+(?:\s+[\w-]+)?\s+to\s+(?:confirm|verify|"
    r"be\s+sure|check)"
    r"|\b(?:haven't|have\s+not|hasn't|has\s+not)\s+(?:yet\s+)?(?:verified|confirmed|checked)\s+(?:it\s+|this\s+|that\s+)?by\s+"
    r"(?:checking|comparing|printing|logging|dumping|running|measuring)\b[^.!?\n]{1,60}?"
    r"|\bpending\s+(?:a|the|an|some)\s+(?:[\w-]+\s+){0,2}?(?:probe|run|test|check|experiment|measurement|confirmation)s?"
    r"|\bnothing\s+(?:run|tested|verified|checked|measured|confirmed|executed)(?:\s+(?:yet|so\s+far))?"
    r"|\b(?:just|only|merely)\s+(?:a|my)\s+(?:\w+\s+)?(?:reading|guess|hunch|theory|hypothesis)(?:\s+(?:of|from)\s+\S+?)?"
    r"(?:\s+so\s+far)?|\bfrom\s+(?:reading|the\s+code|the\s+source)\s+(?:only|alone)"
    r"|\bwithout\s+(?:running|testing|having\s+(?:run|tested|proved|proven|confirmed|verified|checked))\s+(?:anything|it|this|that)"
    # round 13: "I want a run that shows per-rank counts before I call it", "Looks likely from reading,",
    # "Need to dump the masters per rank to confirm."
    r"|\b(?:i|we)\s+(?:want|need|'d\s+like|would\s+like)\s+(?:a|another|one\s+more|to\s+see\s+a)\s+(?:[\w-]+\s+){0,2}?(?:run|test|"
    r"probe|check|experiment|measurement|trace|dump)\b[^.!?\n]{0,60}?\bbefore\s+(?:i|we)\s+(?:call|claim|conclude|commit|say|"
    r"touch|change)\b[^.!?\n]{0,30}"
    r"|\bfrom\s+reading(?:\s+(?:only|alone|the\s+code))?"
    # round 19: "I'd want a per-rank mask comparison before committing to that."
    r"|\b(?:i|we)(?:'d|\s+would)\s+(?:want|need|like)\s+(?:a|an|another|one\s+more)\s+(?:[\w-]+\s+){0,3}?(?:run|test|probe|check|"
    r"experiment|measurement|trace|dump|comparison|diff|print(?:out)?)\b[^.!?\n]{0,60}?\bbefore\s+(?:(?:i|we)\s+)?(?:call|claim|"
    r"conclude|commit|say|touch|change)\w*\b[^.!?\n]{0,30}"
    r"|(?:^|(?<=[.!?]\s)|(?<=\n))[\W_]*(?:(?:i|we)\s+)?(?:still\s+)?need\s+to\s+\w+(?:[^.!?\n]|\.(?=\w)){0,80}?\bto\s+(?:confirm|verify|be\s+sure|"
    r"check|know|tell|be\s+certain)(?:\s+(?:it|this|that))?"
    # round 18: "Need to confirm before editing.", "Plan: log `epoch` at the top of each epoch to check."
    r"|(?:^|(?<=[.!?]\s)|(?<=\n))[\W_]*(?:(?:i|we)\s+)?(?:still\s+)?need\s+to\s+(?:confirm|verify|check|test)(?:\s+(?:it|this|that))?"
    r"(?:\s+first)?(?:\s+before\s+(?:editing|changing|touching|fixing|patching)(?:\s+(?:it|anything|the\s+code))?)?"
    r"|(?:^|(?<=[.!?]\s)|(?<=\n))[\W_]*(?:plan|next(?:\s+step)?|to-?do)\s*:\s*(?:[^.!?\n]|\.(?=\w)){1,160}?\bto\s+(?:check|confirm|"
    r"verify|know|tell)(?:\s+(?:it|this|that))?"
    # round 3: a terse note's promise to test what it just put forward ("Will confirm.", "To verify.", "Going to
    # verify.", "Testing next.") as a sentence of its own
    r"|\bto\s+find\s+out"
    # round 21: "yet" with a bracket after it ("Likely, though not verified yet (I'd say 3 to 1): X"); "X is not checked
    # (no call to the mirror)" describes code
    r"|\bnot\s+(?:been\s+)?(?:verified|confirmed|tested|checked|proven|measured)\s+yet\s*\([^()\n]{0,60}\)"
    # round 14: the agent's own unchecked object ("I haven't checked the attributes yet"; "the layers haven't run their
    # backward yet" describes code)
    r"|\b(?:i|we)\s+(?:haven't|have\s+not|didn't|did\s+not)\s+(?:yet\s+)?(?:verified|confirmed|tested|checked|measured|probed|"
    r"inspected|looked\s+at)\s+(?:the|its|their|those|these|any)\s+[\w-]+(?:\s+[\w-]+)?"
    # round 14: "Putting this forward as a lead to test, not a conclusion.", "so I'm not drawing a conclusion from
    # it yet", "I'd want to compare the per-rank norms before saying it's the cause"
    r"|\bnot\s+(?:yet\s+)?(?:a|my|the)\s+(?:conclusion|finding|diagnosis|verdict)"
    r"|\bas\s+a\s+(?:lead|thread|avenue|direction)\s+to\s+(?:test|check|follow|pursue|chase)\w*"
    r"|\b(?:i'm|i\s+am|we're|we\s+are)\s+not\s+(?:yet\s+)?(?:drawing|making|reaching|calling)\s+(?:a|any|the)\s+(?:conclusion|"
    r"verdict)(?:\s+(?:from|on)\s+(?:it|this|that))?"
    r"|\b(?:i|we)(?:'d|\s+would)?\s+(?:want|need|like)\s+to\s+\w+[^.!?\n]{0,100}?\bbefore\s+(?:(?:i|we)\s+(?:say|claim|call|"
    r"conclude|declare|assert|commit|blame"
    # round 21: "I'd like to confirm it with a two-rank run … before I change anything."
    r"|change|touch|fix|edit|patch)\b|saying|claiming|calling|concluding|declaring|asserting|committing|blaming)\b[^.!?\n]{0,40}"
    r"|(?:^|(?<=[.!?]\s)|(?<=\n))[\W_]*(?:(?:will|going\s+to|to)\s+(?:confirm|verify|check|test)|testing\s+next|will\s+know\s+after)"
    r"(?:\s+[^.!?\n]{0,60})?)"
    # … with a few words of when ("This is a guess at this stage;", "Haven't run anything to check this yet.")
    r"(?:\s+(?:at\s+this\s+(?:stage|point)|so\s+far|for\s+now|yet|either|(?:by|with|against)\s+(?:an?\s+|the\s+)?[\w/-]+(?:\s+[\w/-]+){0,7}?(?:\s+yet)?|to\s+(?:check|verify|confirm|test|show|prove)\s+(?:it|this|that)"
    r"(?:\s+yet)?))?"
    r"(?=\s*(?:[.;,!)\]:\u2014\u2013]|$))",
    re.IGNORECASE | re.MULTILINE,
)
#: A confirmation after a hypothesis ("Confirmed:", "the probe confirms it", "as predicted"): what was
#: put forward before it is asserted.
CONFIRMATION = re.compile(
    rf"{_UNCONFIRMED}(?<!n't\s)(?<!\bif\s)(?<!\bonce\s)(?<!\buntil\s)(?<!\bunless\s)(?<!\bwhen\s)"
    # (round 33: nor one with its object negated: "I lean towards A but have verified neither")
    r"(?<!\bnever\s)(?<!\bto\s)(?<!\bnot\s\w{3}\s)"
    # (round 37: nor "not something I've confirmed")
    r"(?<!\bnot\ssomething\si've\s)(?<!\bnot\ssomething\swe've\s)(?<!\bnot\sanything\si've\s)(?<!\bnot\ssomething\si\shave\s)"
    # (round 41: nor a wish, "I want to see it confirmed with a mask dump before calling it")
    r"(?<!\bsee\sit\s)(?<!\bsee\sthis\s)(?<!\bsee\sthat\s)(?<!\bget\sit\s)(?<!\bhave\sit\s)"
    r"\b(?:confirmed|verified)\b"
    r"(?!\s+(?:whether|if|yet|neither|none|nothing|either|any|anything)\b)"
    r"|\b(?:probe|run|rerun|trace|numbers|counts|logs?|checkpoints?|masks|test|experiment|measurement|output|data|"
    r"digests?|profile|printout|diff|comparison|dumps?|checks?|plots?|curves?)\s+(?:\w+\s+){0,2}?(?<!\bto\s)(?:confirms|supports|"
    r"supported|confirm\s+(?:it|this|that)|support\s+(?:it|this|that)|bears?\s+(?:it|this|that)\s+out|bore\s+(?:it|this|that)\s+"
    r"out)\b|\bwhich\s+(?:the\s+)?(?:\w+\s+){0,3}?(?:confirms|supports|supported|bears\s+out)\b|\bas\s+(?:predicted|expected|suspected|hypothesi[sz]ed)\b(?!\s+(?:[\w-]+\s+){0,2}?(?:variance|noise|jitter|"
    r"rounding|behaviou?r|drift|fluctuations?|error)\b)|\b(?:and\s+)?(?:it|this|that)\s+"
    r"(?:checks\s+out|holds\s+up)\b|\bthis\s+is\s+it\b",
    re.IGNORECASE,
)
#: Words that make a confirmation after them a condition ("until a run confirms it", "once the probe confirms it").
CONDITIONED = re.compile(r"\b(?:until|unless|once|if|when|before|after|whether)\s+(?:[\w'-]+\s+){0,3}$", re.IGNORECASE)
#: A label that says its hypothesis agrees with what was measured or that the agent commits to it
#: ("…, consistent with every scenario I tried:", "My working diagnosis, which I believe is right:").
SUPPORTED = re.compile(
    r"\b(?:consistent\s+with|supported\s+by|backed\s+by|borne\s+out\s+by)\b"
    r"|\b(?:i|we)\s+(?:\w+\s+)?(?:believe|think|am\s+(?:sure|confident)|are\s+(?:sure|confident))\b(?![^:]*\b(?:not|n't)\b)",
    re.IGNORECASE,
)
#: A sentence that opens by rebutting what came before ("But …", "However …", "I tested it …"): a
#: refutation in it takes back what came before, not only its own sentence.
REBUTTAL_START = re.compile(
    r"[\W_]*(?:but|however|yet|though|still|alas|unfortunately|that\s+said|then\s+again|except|on\s+(?:reflection|second\s+"
    r"thoughts?|closer\s+(?:look|inspection|reading)))\b"
    r"|[\W_]*(?:i|we)\s+(?:\w+\s+)?(?:checked|tested|tried|verified|looked|measured|ran|instrumented|probed|"
    r"reproduced|printed|logged|dumped|compared|read)\s+(?:(?:at|on|into)\s+)?(?:it|this|that|(?:the|our|my|both|each|"
    r"every)\s+(?:[\w-]+\s+){0,2}?(?:hypothesis|idea|theory|claim|code|note|logs?|trace|timeline|output|numbers|counts|"
    r"digests?|checkpoints?|metrics|source|profile|masks|weights|gradients|grads|values|norms|curves?|data|snapshots?|"
    r"caches?|attributes?|list|lr|loss(?:es)?|run|runs|probe|ranks?))\b"
    r"|[\W_]*(?:testing|checking|trying)\s+(?:it|this|that)\b"
    # round 2: an experiment reported ("I checked and it isn't so", "I patched the divisor and reran: …", "To test it, I
    # …", "Instrumented it, and …")
    r"|[\W_]*(?:i|we)\s+(?:\w+\s+)?(?:checked|tested|verified|measured|probed)\s+(?:and|again|myself|it\s+myself)\b"
    r"|[\W_]*(?:i|we)\s+(?:then\s+|also\s+|just\s+)?(?:patched|changed|swapped|moved|switched|replaced|deleted|removed|multiplied|"
    r"divided|took|cut|hooked|re-?ran|reran|re-?ran|rewrote|forced|pinned|disabled|enabled|set|added|applied|tried|instrumented)\b"
    # round 18: a terse report with no subject ("Tried `preserve_rng_state=True` in both; …", "Checked with a print of
    # ids — …")
    r"|[\W_]*(?:tried|checked|tested|printed|logged|dumped|patched|reran|re-ran|instrumented|probed|measured)\s+(?:it\b|this\b|that\b|"
    r"with\b|the\b|both\b|each\b|every\b|`)"
    r"|[\W_]*(?:to\s+(?:test|check|verify|rule\s+(?:it|this|that)\s+out)\s+(?:it|this|that)?\s*,?\s*(?:i|we)\b|"
    r"(?:instrumented|patched|tested|checked|tried)\s+(?:it|this|that)\b)",
    re.IGNORECASE,
)
#: How many scopes of each kind a statement may open (bounded work on long or adversarial text), and how far
#: a quotation opened by an attribution may reach.
MAX_SCOPES = 256
MAX_QUOTE = 3000
QUOTES = {'"': '"', "\u201c": "\u201d", "\u00ab": "\u00bb"}
PARAGRAPH_END = re.compile(r"\n[ \t]*\n")
#: A paragraph that opens by saying what actually happens ("What actually goes wrong is …", "In fact, …", "The
#: real cause: …"): a hypothesis label that opened the statement does not reach into it.
ACTUAL_PARAGRAPH = re.compile(
    r"\n[ \t]*\n[\W_]*(?:what\s+(?:actually|really)\b|actually\b|in\s+(?:fact|reality)\b|the\s+(?:real|actual|true)\s+"
    r"(?:cause|problem|bug|issue|culprit|mechanism|explanation)\b)"
    # round 8: a label of what actually happens, in the same paragraph ("First guess: X. Wrong. Actual cause: Y")
    r"|(?:\n|(?<=[.!?])\s+)[\W_]*(?:(?:the\s+)?(?:real|actual|true)\s+(?:cause|problem|bug|issue|culprit|mechanism|"
    r"explanation)|confirmed|verified|root\s+cause|conclusion)\s*:",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class View:
    """A statement as the judge reads it: ``text`` and, per character, its offset in the
    statement (``origin``), so spans found here are quoted from the statement itself."""

    text: str
    origin: tuple[int, ...]
    #: The statement as written (denials and verdicts are also read there: markup can carry them).
    source: str = ""

    @functools.cached_property
    def folded(self) -> str:
        """``text`` as phrasings' required words are looked for in (:mod:`.prefilter`)."""
        return fold(self.text)

    def span(self, start: int, end: int) -> tuple[int, int]:
        """The statement's ``[start, end)`` that this view's ``[start, end)`` came from."""
        if end <= start:
            return self.origin[start], self.origin[start]
        return self.origin[start], self.origin[end - 1] + 1


def views(statement: str) -> list[View]:
    """The statement as written, without markup, with code identifiers split, and with a hard-wrapped paragraph's
    lines joined (round 27: most phrasings stop at a line break, which a wrapped sentence holds mid-clause)."""
    found = [View(statement, tuple(range(len(statement))), statement)]
    for split in (False, True):
        view = _normalised(statement, split_identifiers=split)
        if view.text not in {v.text for v in found}:
            found.append(view)
    joined = SOFT_WRAP.sub(" ", statement)  # same length: the offsets hold
    if joined != statement:
        view = _normalised(joined, split_identifiers=False)
        found.append(View(view.text, view.origin, statement))
    return found


#: A line break inside a paragraph's sentence: not after a blank line, a colon or a sentence's end, and not before a
#: blank line, a list item, a quoted line, a code fence or a label ("Q:", "A:", "PS:", "EDIT —").
SOFT_WRAP = re.compile(
    r"(?<=[^\n:.!?])\n(?![ \t]*(?:\n|[-*\u2022>]|\d+[.)]\s|\(?[a-z0-9]\)\s|`{3}"
    r"|[A-Za-z][\w-]{0,15}(?:\s[\w-]{1,15})?(?:\s*:|\s[-\u2013\u2014]+\s)))"
)


def _normalised(statement: str, *, split_identifiers: bool) -> View:
    chars: list[str] = []
    origin: list[int] = []
    for i, c in enumerate(statement):
        if c in MARKUP or split_identifiers and c in "_." and _between_word_chars(statement, i):
            c = " "
        if c.isspace():
            if chars and chars[-1] in " \n":
                if c == "\n" and chars[-1] == " ":
                    chars[-1] = "\n"
                continue
            c = "\n" if c == "\n" else " "
        chars.append(c)
        origin.append(i)
    return View("".join(chars), tuple(origin), statement)


def _between_word_chars(text: str, i: int) -> bool:
    return 0 < i < len(text) - 1 and text[i - 1].isalnum() and text[i + 1].isalnum()


@dataclass(frozen=True)
class Scopes:
    """Where a statement voices someone else's claim (``attributed``: spans the agent does not endorse)
    and where it only puts a claim forward (``tentative``: hypothesis labels, "I suspect", "maybe",
    "unverified" disclaimers), with the offsets where it confirms what it put forward before
    (``confirmations``). Offsets are into the statement as written."""

    attributed: tuple[tuple[int, int], ...]
    tentative: tuple[tuple[int, int], ...]
    confirmations: tuple[int, ...]

    def voiced(self, at: int) -> bool:
        """Whether ``at`` lies in someone else's claim that the agent does not endorse."""
        return any(a <= at < b for a, b in self.attributed)

    def tentative_at(self, at: int) -> bool:
        """Whether ``at`` is only put forward: in a tentative span and not confirmed after it."""
        return any(a <= at < b for a, b in self.tentative) and not self.confirmed_after(at)

    def confirmed_after(self, at: int) -> bool:
        """Whether the statement confirms, after ``at``, what it put forward."""
        return bisect.bisect_right(self.confirmations, at) < len(self.confirmations)


@functools.lru_cache(maxsize=32)
def scopes(text: str) -> Scopes:
    """The statement's attribution and hypothesis scopes (computed once per statement, bounded)."""
    attributed: list[tuple[int, int]] = []
    for n, opener in enumerate(ATTRIBUTION.finditer(text)):
        if n >= MAX_SCOPES:
            break
        end, quoted = _claim_end(text, opener.end())
        if not quoted:
            end = _rebutted_continuation(text, end)
        # an endorsement inside an unquoted claim's sentence ("Priya says X and I agree") or in the sentence
        # after the claim ("She's right.") makes it the agent's own
        if not _endorsed(text, opener.end() if not quoted else end, end):
            attributed.append((_claim_start(text, opener.start()), end))
    for n, label in enumerate(QUOTE_LABEL.finditer(text)):
        if n >= MAX_SCOPES:
            break
        words = label.group("label").split()
        before = _prose_sentence(text, label.start() - 2) if label.start() >= 2 else (0, 0)
        names_other = LABEL_NAMES_OTHER.search(label.group(0)) or (
            ANAPHORIC_LABEL.fullmatch(label.group("label").strip()) and LABEL_NAMES_OTHER.search(text, *before)
        )
        if len(words) < 2 or FIRST_PERSON.match(label.group("label")) or not names_other:
            continue
        end, _ = _claim_end(text, label.end())
        # endorsed in its label ("The reviewer's summary is right and I'll adopt it: "…"") or after the quote
        endorsed = _endorsed(text, label.start(), label.end(), reach=0) or _endorsed(text, end, end)
        if len(text[label.end() : end].split()) >= MIN_QUOTED_WORDS and not endorsed:
            # round 23: a quotation in brackets after a clause ("X come out ep times larger, the same symptom as
            # #5618 ("4 times bigger …")") is theirs; the clause before the bracket is the agent's own
            bracketed = label.group(0).rstrip().endswith("(")
            attributed.append((label.end() if bracketed else label.start(), end))
    for n, opener in enumerate(FACTIVE_ATTRIBUTION.finditer(text)):
        if n >= MAX_SCOPES:
            break
        # a factive report ("pytorch#75870 points out that X") presupposes X, unless the agent doubts that it applies
        end, _ = _claim_end(text, opener.end())
        stop = min(len(text), _sentences_after(text, end, 2), end + MAX_SENTENCE * 2)
        doubt = DOUBT.search(text, end, stop) or DISTANCING.search(text, end, stop)
        if doubt and not _endorsed(text, opener.end(), end):
            attributed.append((_claim_start(text, opener.start()), end))
    for n, postposed in enumerate(POSTPOSED_ATTRIBUTION.finditer(text)):
        if n >= MAX_SCOPES:
            break
        if not _endorsed(text, postposed.end(), postposed.end()):
            attributed.append((_prose_sentence(text, postposed.start())[0], postposed.end()))
    for n, opener in enumerate(THIRD_PARTY.finditer(text)):
        if n >= MAX_SCOPES:
            break
        if (span := _declined(text, opener)) is not None:
            attributed.append(span)
    for n, named in enumerate(NAMED_AS_THEIRS.finditer(text)):
        if n >= MAX_SCOPES:
            break
        if not _endorsed(text, named.end(), named.end()):
            attributed.append((_paragraph_start(text, named.start()), named.end()))
    tentative: list[tuple[int, int]] = []
    for n, label in enumerate(HYPOTHESIS_LABEL.finditer(text)):
        if n >= MAX_SCOPES:
            break
        if CONFIRMATION.search(label.group(0)) or SUPPORTED.search(label.group(0)):
            continue  # "My working theory, which the probe supports:" is put forward as confirmed
        opens_statement = not re.search(r"\w", text[: label.start()])
        end = len(text) if opens_statement else _paragraph_end(text, label.end())
        # a later paragraph that says what actually happens is the agent's own finding, not the label's
        actual = ACTUAL_PARAGRAPH.search(text, label.end(), end)
        tentative.append((label.start(), actual.start() if actual else end))
    for n, opening in enumerate(HYPOTHESIS_OPENING.finditer(text)):
        if n >= MAX_SCOPES:
            break
        # an opening question whether something is right leaves only itself open
        evaluative = EVALUATIVE_QUESTION.fullmatch(opening.group(0)) is not None
        end = opening.end() if evaluative else _paragraph_end(text, opening.end())
        actual = ACTUAL_PARAGRAPH.search(text, opening.end(), end)
        tentative.append((opening.start(), actual.start() if actual else end))
    for n, marker in enumerate(TENTATIVE.finditer(text)):
        if n >= MAX_SCOPES:
            break
        begin, stop = _prose_sentence(text, marker.start())
        contrast = CONTRAST.search(text, marker.end(), stop)
        tentative.append((begin, contrast.start() if contrast else stop))
    for n, odds in enumerate(ODDS.finditer(text)):
        if n >= MAX_SCOPES:
            break
        tentative.append((_paragraph_start(text, odds.start()), _paragraph_end(text, odds.end())))
    for n, disclaimer in enumerate(UNVERIFIED.finditer(text)):
        if n >= MAX_SCOPES:
            break
        begin, stop = _prose_sentence(text, disclaimer.start())
        paragraph = _paragraph_start(text, disclaimer.start())
        if paragraph > 0 and not re.search(r"\w", text[paragraph:begin]):
            # round 19: a paragraph that opens with the disclaimer ("X. …\n\nI haven't checked what Y counts, so I'm
            # keeping this as a candidate") disclaims the paragraph before it too
            paragraph = _paragraph_start(text, paragraph - 1)
        tentative.append((paragraph, stop))
    doubts = sorted(
        (*IF_RIGHT.finditer(text), *PLANNED_OBSERVATION.finditer(text), *MODAL_CONSEQUENCE.finditer(text)),
        key=lambda m: m.start(),
    )
    for n, doubt in enumerate(doubts):
        if n >= MAX_SCOPES:
            break
        # "I suspect X. <details>. If that's right, Y": the whole chain, from the sentence that put X forward
        paragraph = _paragraph_start(text, doubt.start())
        put = [a for a, _ in tentative if paragraph <= a < doubt.start()]
        if put:
            tentative.append((min(put), _prose_sentence(text, doubt.start())[1]))
    # a confirmation promised on a condition ("If it drops with TP size this is confirmed") confirms nothing yet
    confirmations = tuple(
        m.start()
        for _, m in zip(range(MAX_SCOPES), CONFIRMATION.finditer(text), strict=False)
        if not _on_condition(text, m.start())
        and not CONDITIONED.search(text, max(0, m.start() - 40), m.start())
        and not _clause_on_condition(text, m.start())
    )
    return Scopes(tuple(attributed), tuple(tentative), confirmations)


#: The agent calling a reported claim out of date or wrong ("so the answer is out of date and not our bug", "the
#: post is inaccurate for torch 2.x").
REBUTTED = re.compile(
    rf"\b(?:it|that|this|they|those|the\s+(?:[\w-]+\s+)?(?:{_CLAIM_NOUN}|{_DOCUMENT}|{_PERSON}))\s+(?:(?:is|was|are|were)\s+"
    r"(?:\w+\s+)?(?:out\s+of\s+date|outdated|obsolete|inaccurate|not\s+accurate|mistaken|wrong|no\s+longer\s+(?:true|accurate|"
    r"valid|right))|(?:isn't|wasn't|aren't|weren't)\s+(?:\w+\s+)?(?:accurate|right|correct)|no\s+longer\s+(?:holds?|applies|"
    r"apply))\b|\bnot\s+our\s+(?:bug|problem|issue)\b",
    re.IGNORECASE,
)


def _rebutted_continuation(text: str, end: int) -> int:
    """Where someone else's unquoted claim ending its sentence at ``end`` ends when it goes on in the next sentences
    of its paragraph, none in the agent's own voice, and the agent calls it wrong or out of date right after them ("A
    forum answer says X. Untagged shards like ours are counted on rank 0 only.\n\nThat was true of old DeepSpeed; the
    answer is out of date."; round 36): at the rebuttal or the paragraph's end. Otherwise ``end``. Only declining it
    ("I haven't confirmed it") is not enough: that may be about the agent's own sentences in between."""
    stop = _paragraph_end(text, end)
    if end >= stop:
        return end
    at = end
    for _ in range(DISTANCING_SENTENCES):
        start = _skip_space(text, at, stop)
        if start >= stop:
            break
        if (
            FIRST_PERSON.match(text, start)
            or REBUTTAL_START.match(text, start)
            or ACTUAL_PARAGRAPH.match(text, start - 1)
        ):
            return end
        sentence_end = max(_prose_sentence(text, start)[1], start + 1)
        if REBUTTED.search(text, start, sentence_end):
            return start
        at = sentence_end
    else:
        return end  # the paragraph goes on past the sentences looked at
    after = _sentences_after(text, stop, 2)
    return stop if REBUTTED.search(text, stop, after) else end


def _claim_start(text: str, at: int) -> int:
    """Where someone else's claim whose opener starts at ``at`` begins: at the start of its sentence when
    only a short leading phrase ("For reference: DeepSpeed issue #5618 reports …"), a label that reports
    someone's words ("Passing on what Marco said: he thinks …") or where the agent came upon the claim
    ("I came across issue #1256, which reports …") comes before the opener."""
    begin = _prose_sentence(text, at)[0]
    labels = (LEADING_LABEL, REPORTING_LABEL, FINDING_LABEL, WHERE_LABEL, PLACE_LABEL, REFUSING_LABEL)
    label = begin < at and any(p.fullmatch(text, begin, at) for p in labels)
    return begin if label else at


#: A participle right after a contrast word ("but waited on …"): the contrast joins parts of one claim.
PARTICIPLE_AFTER = re.compile(
    r"\s+(?:(?:only|then|also|never|not|still)\s+)?(?:[a-z]+ed\b(?!\s+(?:that|it|this)\b)"
    # … or a verb that goes on with the claim's subject ("X starts the reduce in A but waits on it in B")
    # (a verb, not a plural noun: what follows it is its object or an adverb, "but ranks clip" ends the claim)
    r"|(?!(?:this|his|its|us|as|is|was|has|does|thus|plus|yes|less|unless|always|perhaps|towards|whereas)\b)[a-z]{2,}[^s\W]s"
    r"(?=\s+(?:and|or|on|for|until|after|before|the|a|an|it|them|its|their|only|in|at|to|with|back|up|out)\b|\s+[`'\x22]))"
)


#: What may come between a claim's opener and the claim: a colon, after a short place (round 23: "Someone left a TODO
#: in a branch: `# TODO: …`").
CLAIM_LEAD = re.compile(r"[ \t]*(?:(?:in|on|at|inside|under|above)\s+[^:`\n\x22.;!?]{1,40}?(?=:))?:?[ \t]*")


def _claim_end(text: str, at: int) -> tuple[int, bool]:
    """Where someone else's claim that starts at ``at`` ends, and whether it was quoted: at its closing
    quote when it opens with one, at the end of its block when the opener ends its line (a list or a
    blockquote follows), else at the end of its sentence or at a contrast ("…, but I …", ";")."""
    lead = CLAIM_LEAD.match(text, at)
    start = lead.end() if lead else at
    opening = text[start : start + 1]
    if opening in QUOTES:
        close = text.find(QUOTES[opening], start + 1, start + MAX_QUOTE)
        if close != -1:
            return close + 1, True
        return _paragraph_end(text, start), True
    if opening in ("\n", ""):
        return _paragraph_end(text, start + 1), False
    if opening == "`" and ":" in text[at:start]:
        # round 19: code quoted after a colon ("Someone left this in schedule.py: `# NB: … runs Px fast?`"): their
        # words, to the closing backticks, when it holds a sentence's worth of words
        fence = "```" if text.startswith("```", start) else "`"
        close = text.find(fence, start + len(fence), start + MAX_QUOTE)
        if close != -1 and len(text[start + len(fence) : close].split()) >= MIN_QUOTED_WORDS:
            return close + len(fence), True
    stop = _prose_sentence(text, start)[1]
    contrast = CONTRAST.search(text, start, stop)
    # "… with the reduce started in X but waited on in Y": a "but" joining two participles stays in the claim
    while contrast and PARTICIPLE_AFTER.match(text, contrast.end()):
        contrast = CONTRAST.search(text, contrast.end(), stop)
    return (contrast.start() if contrast else stop), False


#: What before an endorsing word negates it ("not confirmed", "nobody has confirmed it", "hasn't been verified").
UNENDORSED = re.compile(
    # (round 41: also "nothing in our logs confirms it yet")
    r"\b(?:not|never|no|nobody|no\s+one|none|neither|nothing)\b(?:\s+\w+){0,3}\s*$|n't(?:\s+\w+){0,3}\s*$"
    # an embedded question ("check whether he's right") endorses nothing
    r"|\b(?:whether|if)(?:\s+[\w'-]+){0,4}\s*$"
    # round 23: a hedged concession ("Maybe that was true for their setup; I'm skeptical it applies here")
    r"|\b(?:maybe|perhaps|possibly|granted)[\s,]*$",
    re.IGNORECASE,
)


#: Someone answering a reported claim ("The author replied that this is intentional").
REPLY = re.compile(
    r"\b(?:replied|answered|responded|countered|objected|pushed\s+back|retorted|rebutted)\b", re.IGNORECASE
)
#: The party an agreement is with ("I agree with the author, …").
AGREED_WITH = re.compile(r"\s+with\s+([^,.;:!?\n]{1,40})", re.IGNORECASE)


def _sides_with_reply(text: str, start: int, found: re.Match[str]) -> bool:
    """Whether the endorsement ``found`` comes after someone's reply to the claim that starts at ``start`` and agrees
    with no one, or with the replier (named by a word of the reply's subject)."""
    replies = list(REPLY.finditer(text, start, found.start()))
    if not replies:
        return False
    reply = replies[-1]
    subject = text[_prose_sentence(text, reply.start())[0] : reply.start()].lower()
    party = AGREED_WITH.match(text, found.end())
    if party is None:
        return True
    named = set(re.findall(r"[a-z]+", party.group(1).lower())) - {"the", "a", "an", "my", "our", "their"}
    return bool(named & set(re.findall(r"[a-z]+", subject))) or bool(named & {"him", "her", "them"})


#: What limits an endorsement to another version, setup or time ("that was true for old DDP versions, but …").
LIMITED_TRUTH = re.compile(
    # (round 41: "That was true in the early FSDP releases")
    r"\s+(?:only\s+)?(?:(?:for|of|in|on|with|under|before)\s+(?:the\s+|some\s+)?(?:old|older|early|earlier|previous|past|legacy|"
    r"prior|other|ancient|pre-?[\w.]+|torch\s*1(?:\.\d+)?)\b|(?:once|back\s+then|at\s+one\s+point|historically|in\s+the\s+past)\b)",
    re.IGNORECASE,
)
#: A complementiser ending the words before an endorsing word: the word is inside a reported "that" clause.
THAT_CLAUSE_END = re.compile(r"\bthat\s+$", re.IGNORECASE)


def _endorsed(text: str, start: int, end: int, reach: int = 2) -> bool:
    """Whether the agent endorses, between ``start`` and the end of the ``reach``-th sentence after the one
    holding ``end`` (``reach=0``: between ``start`` and ``end`` only), a claim it reported ("I agree",
    "she's right", "that's correct", "I confirmed it"; "PR #7985 says X. Our
    engine copied that order. I agree with the PR's analysis."); a negated one does not."""
    stop = _prose_sentence(text, min(end, len(text) - 1))[1] if reach and end < len(text) else end
    stop = _sentences_after(text, stop, reach)
    for found in ENDORSEMENT.finditer(text, start, min(stop, start + MAX_SENTENCE)):
        before = text[max(0, found.start() - 24) : found.start()]
        if NEGATION.search(found.group(0)) or UNENDORSED.search(before):
            continue
        # round 36: true only of another version or time ("My answer: that was true for old DDP versions, but …")
        if LIMITED_TRUTH.match(text, found.end()):
            continue
        # round 36: … or the reported claim's own words, in its "that" clause ("A forum post argues that X, and that
        # this is exactly what happens to our head")
        if found.start() < end and THAT_CLAUSE_END.search(before):
            continue
        # round 28: one promised on a condition ("If the ranks print different counts, my guess — that X — is
        # confirmed") endorses nothing yet
        if _on_condition(text, found.start()):
            continue
        # round 40: agreeing after someone's reply to the claim sides with the reply ("The author replied that this is
        # intentional, and I agree with the author"), unless it names another party ("… I agree with the reviewer")
        if _sides_with_reply(text, start, found):
            continue
        # round 39: an endorsing word after the agent's own refutation calls its own account right ("A teammate argued
        # that X. I … came to the opposite conclusion: that loop exists for …, so it's correct for us")
        if REFUTATION.search(text, start, found.start()):
            continue
        # round 18: agreeing with the other side of a dispute ("The author answered that …, and I agree with the
        # author — I don't think that's what's going on") refutes the claim in the same breath
        if REFUTATION.search(text, found.end(), _prose_sentence(text, found.end())[1]):
            continue
        return True
    return False


#: What marks a statement as holding something other than its own plain claim somewhere: someone else's words, a
#: hedge or a plan to check, an earlier belief, a retraction, a refutation. (Not :data:`THIRD_PARTY`: any subject
#: that is a document or a person fits it, "that is what ANSWER holds" included; it counts only once declined.)
CUES = (
    ATTRIBUTION,
    FACTIVE_ATTRIBUTION,
    POSTPOSED_ATTRIBUTION,
    NAMED_AS_THEIRS,
    DISTANCING,
    DOUBT,
    HYPOTHESIS_LABEL,
    HYPOTHESIS_OPENING,
    TENTATIVE,
    ODDS,
    UNVERIFIED,
    IF_RIGHT,
    PLANNED_OBSERVATION,
    RETRACTION,
    REFUTATION,
    PAST_BELIEF,
    NULL_RESULT,
)


def cued(text: str) -> bool:
    """Whether any of :data:`CUES` occurs in the statement (or a quotation, a question mark, a quoted block or struck
    text does)."""
    text = text[: MAX_SENTENCE * 20]
    return any(c in text for c in ('"', "\u201c", "?", "> ", "~~")) or any(p.search(text) for p in CUES)


def endorses(text: str) -> bool:
    """Whether the statement endorses a claim anywhere ("I agree", "she's right", "I confirmed it"; not a negated
    one, nor one refuted in the same breath), or confirms what it put forward ("The probe confirms it")."""
    return _endorsed(text, 0, len(text), reach=0) or bool(scopes(text).confirmations)


def _paragraph_end(text: str, at: int) -> int:
    found = PARAGRAPH_END.search(text, at, at + MAX_QUOTE * 4)
    return found.start() if found else min(len(text), at + MAX_QUOTE * 4)


def _paragraph_start(text: str, at: int) -> int:
    floor = max(0, at - MAX_QUOTE * 4)
    found = [m.end() for m in PARAGRAPH_END.finditer(text, floor, at)]
    return found[-1] if found else floor


def negations(text: str) -> Iterator[re.Match[str]]:
    """The negating words of ``text`` (phrases like "not only" left out)."""
    kept = [m.span() for m in NOT_NEGATION.finditer(text)]
    neither = [m.end() for m in NEITHER.finditer(text)]
    for match in NEGATION.finditer(text):
        if any(a <= match.start() < b for a, b in kept):
            continue
        if match.group(0).lower() == "nor" and any(0 < match.start() - e <= NEGATION_REACH * 2 for e in neither):
            continue  # "neither X nor Y": one negation, carried by "neither"
        yield match


@dataclass(frozen=True)
class Assertion:
    """Where a phrasing is asserted: the span of the statement it matched."""

    start: int
    end: int


#: The stances a match (and a statement) can take, strongest claim first.
STANCES = ("asserted", "hypothesised", "withdrawn", "attributed", "denied")


def stances(
    patterns: Sequence[re.Pattern[str]],
    view: View,
    *,
    wrong: bool,
    live: Callable[[Assertion], bool] = bool,
    kept: Callable[[Assertion], bool] = bool,
    latest: bool = False,
) -> dict[str, Assertion]:
    """Per stance, the earliest match in ``view`` of any phrasing that reads so (see :func:`_reading`),
    as a span of the original statement. A match asserted or hypothesised but taken back (``live``
    refuses it) is withdrawn; a denial taken back after it (``kept`` refuses it) is no denial ("It is not
    true that X" opens with what also reads as a withdrawal, and stays a denial). At most
    :data:`MAX_MATCHES` matches of a phrasing are read, and none after its first asserted one (bounded
    work on long or adversarial text). ``latest``: the latest match per stance instead."""
    found: dict[str, Assertion] = {}
    for pattern in patterns:
        if not may_match(pattern, view.folded):
            continue  # none of the words every match holds is there: it cannot match
        for n, match in enumerate(pattern.finditer(view.text)):
            if n >= MAX_MATCHES:
                break
            if match.end() == match.start():
                continue
            at = Assertion(*view.span(match.start(), match.end()))
            stance = _reading(pattern, match, view, at, wrong=wrong)
            if stance in ("asserted", "hypothesised") and not live(at):
                stance = "withdrawn"
            elif stance == "open" or stance == "denied" and not kept(at):
                continue
            if stance not in found or (at.start > found[stance].start if latest else at.start < found[stance].start):
                found[stance] = at
            if stance == "asserted" and not latest:
                break
    return found


def _reading(pattern: re.Pattern[str], match: re.Match[str], view: View, at: Assertion, *, wrong: bool) -> str:
    """The match's stance before later withdrawals: "asserted", "hypothesised" (a candidate, a
    supposition, a question, or inside a hypothesis label, "I suspect …", "maybe …", an "unverified"
    disclaimer, unless confirmed later), "withdrawn" (an earlier belief reported), "attributed"
    (someone else's claim the agent does not endorse) or "denied" (negated or marked false); "open"
    for a negation limited to some cases ("… only with 2 ranks"), which neither asserts nor denies."""
    found = scopes(view.source)
    # someone else's question, supposition or list of candidates ("Reviewer: "isn't it that X?"", "Someone left a
    # TODO: "X"") is theirs, not the agent's hypothesis
    voiced = found.voiced(at.start)
    held = _candidate(view.source, at.start)  # read as written: list markers like "(b)" are markup in the views
    if held is not None and not (voiced and held == "hypothesised"):
        return held
    if _answered_no(view.text, match.start()):
        return "denied"
    if GRANTING.match(view.text, _prose_sentence(view.text, match.start())[0]):
        return "open"  # "Even granting that X, the difference would be far below what we see": X only conceded
    if not voiced and _denial_continued(view.text, match.start()):
        # before the supposition: "Ruled out: RNG replay. The theory would be that X …" (round 37)
        return "denied"
    if not voiced and _refuted_supposition(view.text, match.start()):
        return "denied"  # "If the norms were shard-local, grad_norm would jump around, and it doesn't" (round 38)
    if _hypothetical(view.text, match.start()) and not voiced:
        return "hypothesised"
    if _reported_past(view.text, match.start(), match.end()) and not found.confirmed_after(at.start):
        return "withdrawn"
    if voiced:
        return "attributed"
    if _denied_manner(view.text, match.start(), match.end()) or _denied_as_cause(view.source, at.start, at.end):
        return "denied"
    if _denied_sentence(view.text, match.start()):
        if not _voiced_by_others(view.text, match.start()):
            return "denied"
        if not _endorsed(view.source, at.start, _prose_sentence(view.source, at.start)[1]):
            return "attributed"
    if PLANNED_CHECK.match(view.text, _prose_sentence(view.text, match.start())[0]):
        return "open"  # "I'll print the per-rank norms next to check.": what it will look at, not a claim
    if _negated_before(view.text, match, wrong=wrong):
        # a negation limited to some cases, or one whose clause ends inside the match ("… are not averaged
        # across ranks and each replica moves differently": the match's own claim is past the break), denies
        # nothing the match says as a whole
        return "open" if _scoped(view.text, match.end()) or _broken_inside(match, wrong=wrong) else "denied"
    if not wrong and (_causation_denied(pattern, match) or _in_denied_causation(view.text, match.start(), match.end())):
        return "denied"
    if _negated_inside(pattern, match, wrong=wrong):
        # a negation inside a short phrasing denies it ("the replicas do not drift"); inside a long,
        # sentence-level match it may belong to another claim of that sentence: not a denial
        return (
            "denied" if match.end() - match.start() <= DENIAL_SPAN and not _scoped(view.text, match.end()) else "open"
        )
    pairs = ((view.text, match.start(), match.end()), (view.source, at.start, at.end))
    if any(_denied_after(t, e) or _judged_false(t, b) or _proposition_denied(t, b, e) for t, b, e in pairs):
        return "denied"
    if found.tentative_at(at.start):
        return "hypothesised"
    return "asserted"


def _negated_before(text: str, match: re.Match[str], *, wrong: bool) -> bool:
    before = text[max(0, match.start() - NEGATION_REACH) : match.start()]
    # the breaks are found with the match's first words in view: "… not averaged and each rank …" breaks
    # before "each" even when the match starts at "each" (the break's lookahead needs that word)
    window = before + text[match.start() : match.start() + BREAK_LOOKAHEAD]
    breaks = [b for b in (WRONG_BREAK if wrong else CLAUSE_BREAK).finditer(window) if b.end() <= len(before)]
    clause = before[breaks[-1].end() :] if breaks else before
    start = match.start() - len(clause)
    # the negations are read with the words before the clause in view ("when batches are not split …" is a condition
    # stated negatively even though "when" ends the clause before it), at their offsets in the clause
    lead = min(CONTEXT_BEFORE, start)
    found = [(n.start() - lead, n.end() - lead, n.group(0)) for n in negations(text[start - lead : match.start()])
             if n.start() >= lead]  # fmt: skip
    return any(
        wrong
        or not (
            OMISSION.match(clause, end)
            or word.lower() == "nor"
            and _continues_omission(text, start + at)
            or NOTHING_IN.match(clause, end)
            and NOTHING.fullmatch(word)
            or FACT_THAT.search(clause, end)
            or word.lower() == "no"
            and NOUN_NEGATION_END.search(clause, end) is not None
        )
        or SPEAKER.search(clause, 0, at)
        for at, end, word in found
        if not _elliptical_omission(text, start + at) and not _quoted_before(text, start + at, match.start())
    )


#: How far back in its sentence a "nor" looks for the omission it continues.
OMISSION_REACH = 300
#: A "nor" opening a predicate of its own ("… nor does it keep Y"), which negates it.
NOR_PREDICATE = re.compile(
    r"nor\s+(?:does|do|did|is|are|was|were|can|could|will|would|has|have|had|should|must)\b", re.IGNORECASE
)


def _continues_omission(text: str, at: int) -> bool:
    """Whether the "nor" at ``at`` goes on listing what a negated omission verb earlier in its sentence leaves out
    ("It never accounts for the head's backward (three buffers …) nor for the saved inputs still held": both are
    presupposed, as after the verb itself), rather than opening a predicate of its own ("nor does it keep Y")."""
    if NOR_PREDICATE.match(text, at):
        return False
    head = text[max(0, at - OMISSION_REACH, _prose_sentence(text, at)[0]) : at]
    return any(OMISSION.match(head, n.end()) for n in negations(head))


#: A verb and its object after a noun negated by "no" ("… a per-shard norm with no all-reduce and clip each shard
#: with its own coefficient"): "no" negates its noun, the verb goes on with the clause's subject.
NOUN_NEGATION_END = re.compile(r"\band\s+[a-z]+\s+(?:each|every|its|their|all|both|it|them)\b", re.IGNORECASE)
#: How many characters before a clause its negations are read with (to see a condition's "when").
CONTEXT_BEFORE = 16


def _quoted_before(text: str, at: int, end: int) -> bool:
    """Whether the negation at ``at`` is inside a quotation closed before ``end`` ('… "this is a slice, not a copy"
    only gets attached …'): it belongs to the quoted words, not to the claim after them."""
    before, after = text[_prose_sentence(text, at)[0] : at], text[at:end]
    opened = before.count('"') % 2 == 1 or before.count("\u201c") > before.count("\u201d")
    return opened and ('"' in after or "\u201d" in after)


#: An account's verb before an elliptical "but not" / ", not" in its sentence ("static_peak knows about one chunk
#: but not the three buffers"): what follows the "not" is left out of the account, and holds.
ELLIPSIS_BEFORE = re.compile(r"(?:\bbut|,)\s*$", re.IGNORECASE)


def _elliptical_omission(text: str, at: int) -> bool:
    """Whether the negation at ``at`` is an elliptical "but not X" after a positive account verb in its sentence."""
    lead = text[max(0, at - 160) : at]
    ellipsis = ELLIPSIS_BEFORE.search(lead)
    if ellipsis is None or text[at : at + 3].lower() != "not":
        return False
    clause = re.split(r"[.;!?\n]", lead[: ellipsis.start()])[-1]
    verbs = [v for v in OMISSION.finditer(clause) if not NEGATION.search(clause, max(0, v.start() - 12), v.start() + 1)]
    return bool(verbs)


#: A negated causative inside a match ("A stale node copy … does not cause its ranks to load v1 while …").
CAUSATION_DENIED = re.compile(
    r"\b(?:does|do|did)\s*(?P<neg>not|n't)\s+(?:cause|lead\s+to|result\s+in|make|let|leave|force)\b"
    # round 20: not a causative: "Ranks don't make the same number of calls" (a difference, asserted)
    r"(?!\s+the\s+same\b)",
    re.IGNORECASE,
)


def _causation_denied(pattern: re.Pattern[str], match: re.Match[str]) -> bool:
    """Whether the match runs from a subject through a negated causative to its effect ("X does not cause the
    ranks to load different revisions"), with a phrasing written without the negation and no contrast after it
    ("…, but Y does"): the causal claim the match makes is denied. A phrasing written with the negation ("calling
    it on the wrong sampler does not cause a reshuffle") keeps it as its own claim."""
    text = match.group(0)
    for predicate in CAUSATION_DENIED.finditer(text):
        if not re.search(r"\w", text[: predicate.start()]) or CONTRAST.search(text, predicate.end()):
            continue
        if _survives(pattern, text, predicate.start("neg"), predicate.end("neg")):
            return True
    return False


#: A sentence that plans a check ("I'll print the per-rank norms next to check.", "Next I'll log the widths to
#: confirm."): the words in it name what will be looked at, they claim nothing.
PLANNED_CHECK = re.compile(
    r"[\W_]*(?:(?:next|then|now)\s*,?\s+)?(?:i'll|i\s+will|we'll|we\s+will|(?:i'm|we're)\s+going\s+to)\s+(?:\w+\s+)?(?:print|log|dump|"
    r"compare|measure|trace|plot|record|time|count|check|instrument)\b[^.!?\n]{0,120}?\bto\s+(?:check|confirm|verify|see|find\s+out|"
    r"test|rule)\b[^.!?\n]{0,60}?[.!](?=\s|$)",
    re.IGNORECASE,
)
#: A sentence that only says more precisely what the sentence before it named ("I mean X", "That is, X").
CONTINUATION = re.compile(
    r"[\W_]*(?:i\s+mean|that\s+is\s*,|namely|specifically|to\s+be\s+(?:precise|specific)\s*,)", re.IGNORECASE
)


#: A sentence that names a claim the agent looked at ("I checked the idea that X", "I considered whether X", "I
#: considered that X"; round 36): after a sentence that denies a cause or a topic ("X is not the issue.", "It's not
#: the wrapper."), it spells out what was denied. ("I checked that X" verifies X, and is not here.)
CHECKED_CLAIM = re.compile(
    r"[\W_]*(?:(?:so|and|first)\s*,?\s+)?(?:i|we)\s+(?:(?:also|first|already|carefully|specifically)\s+)?(?:(?:"
    # (round 40: "I double-checked the idea that X")
    r"(?:(?:double-?|re-?)?checked|considered|tested|examined|investigated|weighed|entertained|explored|looked\s+(?:at|into)|"
    r"went\s+through|revisited|evaluated|know|knew|heard|read|saw|have\s+(?:seen|heard|read))\s+(?:the|that)\s+(?:[\w-]+\s+)?"
    r"(?:idea|theory|hypothesis|possibility|suggestion|claim|notion|story|"
    r"explanation)\s*,?\s+that|(?:considered|checked|tested|examined|investigated|wondered)\s+whether|considered\s+that)\b"
    # round 39: "I considered it: X"
    r"|considered\s+(?:it|this)\s*[:\u2014\u2013])",
    re.IGNORECASE,
)
#: A whole sentence that says what the cause is not ("It is not a width disagreement.", "It's not Accelerate's
#: scheduler wrapper.").
TOPIC_DENIED = re.compile(
    # (round 41: also "It isn't the reduce-scatter/all-reduce order.")
    r"[\W_]*(?:it|this|that)(?:(?:'s|\s+is|\s+was)\s+not|\s+(?:isn't|wasn't))\s+(?!(?:that|true|the\s+case|so|it)\b)"
    r"[^.!?;:,\n]{1,60}?[.!]?\s*"
    # round 41: the agent's own doubt that a part is at fault ("I don't think the scaler is the problem."), or a part it
    # ruled out ("I ruled out the clipping call.")
    r"|[\W_]*(?:i|we)\s+(?:don't|do\s+not)\s+(?:think|believe)\s+(?:that\s+)?(?:the|our|their|its|this|that)\s+"
    r"[^.!?;:,\n]{1,60}?\s+(?:is|are|was|were|'s)\s+(?:the\s+)?(?:problem|issue|culprit|cause|bug)\s*[.!]?\s*"
    r"|[\W_]*(?:i|we)\s+(?:(?:have|'ve)\s+)?(?:already\s+)?ruled\s+out\s+(?:the|our|their|its)\s+[^.!?;:,\n]{1,60}?[.!]?\s*"
    # round 37: a part called innocent ("The Accelerate scheduler wrapper is fine."), or a label that rules a topic
    # out ("Ruled out: RNG replay.")
    r"|[\W_]*(?:the|our|their|its)\s+[^.!?;:,\n]{1,60}?\s+(?:is|are|was|were)\s+(?:fine|innocent|blameless|not\s+at\s+fault|"
    r"not\s+(?:the\s+)?(?:problem|issue|culprit|cause|bug))\s*[.!]?\s*"
    rf"|[\W_]*(?:{_REJECTING})\s*:\s*[^.!?;:\n]{{1,60}}[.!]?\s*"
    # round 39: a verbless one ("Not an optimizer-ownership bug.", "Not the with-statement.")
    r"|[\W_]*not\s+(?:an?|the|our|its|their)\s+[^.!?;:,\n]{1,60}?[.!]?\s*"
    # round 45: a part said not to undergo what the claim says it does ("The RNG fork is not being skipped.")
    r"|[\W_]*(?:the|our|its|their)\s+[^.!?;:,\n]{1,60}?\s+(?:is|are|was|were)\s+not\s+(?:being\s+)?[a-z]+(?:ed|en)"
    r"\s*[.!]?\s*",
    re.IGNORECASE,
)
#: A sentence that spells out the claim just named ("The theory would be that X", "The idea is that X"; round 37).
EXPLAINED_CLAIM = re.compile(
    r"[\W_]*(?:the|that|this|its)\s+(?:[\w-]+\s+)?(?:idea|theory|hypothesis|possibility|suggestion|claim|notion|story|"
    r"explanation|argument)\s+(?:would\s+be|is|was|goes)\s*:?\s*(?:that\b)?",
    re.IGNORECASE,
)


def _denial_continued(text: str, at: int) -> bool:
    """Whether the match at ``at`` is in a sentence that spells out what the sentence before it denied as the cause
    ("The divisor is not why ep2 and ep1 diverge. I mean the expert-dp group's size being used instead of W.") or
    concedes its facts and goes on to deny them the effect ("X is not why calls OOM. Yes, X holds — but …"), or names
    the denied claim as one the agent looked at ("X is not the issue. I checked the idea that Y, …"), up to a contrast
    and unless it confirms it."""
    begin, stop = _prose_sentence(text, at)
    conceded = CONCESSION.match(text, begin) is not None and CONTRAST.search(text, begin, stop) is not None
    checked = CHECKED_CLAIM.match(text, begin) or EXPLAINED_CLAIM.match(text, begin)
    if begin == 0 or not (CONTINUATION.match(text, begin) or conceded or checked):
        return False
    before, end = _prose_sentence(text, begin - 1)
    if checked is not None:
        contrast = CONTRAST.search(text, checked.end(), stop)
        if (contrast is not None and contrast.start() <= at) or ENDORSEMENT.search(text, checked.end(), stop):
            return False
        if TOPIC_DENIED.fullmatch(text, before, end):
            return True
    closing = [m for m in CAUSE_DENIED.finditer(text, before, end) if _tail(m).fullmatch(text, m.end(), end)]
    return bool(closing) and not CONTRAST.search(text, closing[-1].end(), end)


def _in_denied_causation(text: str, at: int, end: int) -> bool:
    """Whether the match ``[at, end)`` lies in the subject or the effect of a negated causative in its sentence
    ("A stale node copy with refs/main on v1 does not cause its ranks to load v1 while the others load v2"), with
    no contrast after the predicate ("…, but the mirror does")."""
    begin, stop = _prose_sentence(text, at)
    for predicate in CAUSATION_DENIED.finditer(text, begin, stop):
        if CONTRAST.search(text, predicate.end(), stop) or not re.search(r"\w", text[begin : predicate.start()]):
            continue
        # round 23: a colon after the predicate opens the agent's own account ("The scaler doesn't make every rank skip
        # together: X only starts the all-reduce …")
        colon = text.find(": ", predicate.end(), stop)
        if colon != -1 and at > colon:
            continue
        if end <= predicate.start() or at >= predicate.end():
            return True
    return False


def _broken_inside(match: re.Match[str], *, wrong: bool) -> bool:
    """Whether a clause break lies inside the match (past its first word): a negation before the match
    then reaches only its first clause."""
    text = match.group(0)
    first = re.match(r"\W*\w+", text)
    return (WRONG_BREAK if wrong else CLAUSE_BREAK).search(text, first.end() if first else 0) is not None


#: A copula before a "no" ("is no culprit" says what its subject is not).
COPULA_END = re.compile(r"\b(?:is|are|was|were|be|been|being|'s|'re)\s+$", re.IGNORECASE)
#: The auxiliary a negation leans on, and the space before it ("… and are never", "… and does not").
AUXILIARY_END = re.compile(
    r"(?:\s+(?:do|does|did|is|are|was|were|has|have|had|can|could|will|would))?\s*$", re.IGNORECASE
)


def _negated_inside(pattern: re.Pattern[str], match: re.Match[str], *, wrong: bool) -> bool:
    """Whether a negation word inside the match negates it: the match needs the words of the
    negation's clause (it does not survive with that clause blanked out) but not the negation word
    itself (it survives with only the word blanked out: the phrasing was not written with it)."""
    text = match.group(0)
    breaks = WRONG_BREAK if wrong else CLAUSE_BREAK
    found = list(negations(text))
    for i, negation in enumerate(found):
        stop = breaks.search(text, negation.end())
        clause_end = stop.start() if stop else len(text)
        # round 29: a "no" negates its noun, and its clause ends at the next negation, which the phrasing may be
        # written with ("… stale: they receive no gradients and are never stepped" denies no "never stepped")
        nominal = negation.group(0).lower() == "no" and not COPULA_END.search(text, 0, negation.start())
        if nominal and i + 1 < len(found):
            clause_end = min(clause_end, len(AUXILIARY_END.sub("", text[: found[i + 1].start()])))
        if _survives(pattern, text, negation.start(), clause_end):
            continue  # the claim stands without the negated clause: "averaging, not summing, over its own"
        if not _survives(pattern, text, negation.start(), negation.end()):
            continue  # the phrasing needs the word: "doesn't account for", "no tensor_model_parallel"
        return True
    return False


def _survives(pattern: re.Pattern[str], text: str, start: int, end: int) -> bool:
    """Whether ``pattern`` still matches ``text`` with ``[start, end)`` blanked out."""
    return pattern.search(text[:start] + "x" * (end - start) + text[end:]) is not None


#: What closes a quotation right after its question mark.
CLOSING_QUOTES = ("\x22", "\u201d")


#: An inline list item's marker ("(2) ", "b) ").
ITEM_MARKER = re.compile(r"\s*\(?[a-z0-9]{1,2}[.)]\s+", re.IGNORECASE)


def _hypothetical(text: str, at: int) -> bool:
    """Whether the match at ``at`` sits in a conditional sentence ("If X were …, Y would …"), in a
    yes/no question ("Could it be that X?", "Is X …?") or in a question the agent means to check
    ("check whether X")."""
    begin, stop = _prose_sentence(text, at)
    sentence = text[begin:stop]
    supposes = _supposes(text, begin, sentence)
    if supposes and MODAL.search(sentence):
        return True
    # "X would hold only if Y": a past "were" is no modal here ("counts a parameter only if it is tagged, so the shards
    # were treated as replicas"; round 27)
    # (round 32: nor a modal in a parenthesis, an aside on something else: "counts a parameter only if it carries the
    # tag, and our weights don't have it (megatron-core would set it during init, which we disable)")
    plain = PARENTHESIS.sub(lambda m: " " * len(m.group(0)), sentence)
    if ONLY_IF.search(plain) and any(m.group(0).lower() != "were" for m in MODAL.finditer(plain)):
        return True
    if supposes and IF_THEN.search(sentence) and HEDGED_CONDITION.search(sentence):
        return True  # "If X (looks like it from line 83), then Y": a condition the agent only leans towards
    semicolon = text.rfind(";", begin, at)  # "…; if X came from Y, Z would …": a conditional clause of its own
    if semicolon != -1:
        # … after an inline item's marker ("Plan: (1) log the norms; (2) if they come out 2x, that would point to X")
        item = ITEM_MARKER.match(text, semicolon + 1, stop)
        clause = item.end() if item else semicolon + 1
        if CONDITIONAL.match(text, clause, stop) and MODAL.search(text, clause, stop):
            return True
    counterfactual = COUNTERFACTUAL.search(text, begin, stop)
    if counterfactual and counterfactual.start() >= at - MAX_SENTENCE:
        # "X would make Y if accumulation were above 1": the clause of the "would" only supposes
        breaks = list(CLAUSE_BREAK.finditer(text, begin, counterfactual.start()))
        clause = breaks[-1].end() if breaks else begin
        # round 40: … unless it spells out what something else assumes ("Accelerate assumes a prepared scheduler was
        # built for the batches one process would see if it did all the work, so it steps it P times")
        if at >= clause and not ASSUMED.search(text, clause, counterfactual.start()):
            return True
    asked = (
        YES_NO_QUESTION.match(sentence) or MUSED_QUESTION.match(sentence) or DECLARATIVE_QUESTION.fullmatch(sentence)
    )
    quoted = (
        text[stop + 1 : stop + 2] in CLOSING_QUOTES
    )  # a question someone is quoted as asking ("the "apply it?" call")
    if text.startswith("?", stop) and asked and not quoted and not ANSWER_YES.match(text, stop + 1):
        return True  # "Is X …?" asks, unless answered "Yes, …" at once
    breaks = list(CLAUSE_BREAK.finditer(text, begin, at))
    clause = breaks[-1].end() if breaks else begin
    if OPEN_QUESTION.search(text[clause:at]):
        return _check_answer(text, begin, stop) != "yes"  # "I checked whether X. It does: …" (round 37)
    if text[clause:at].strip():
        return False
    # the match starts its clause (a sentence-level phrasing): read the clause's opening words too,
    # after a label ("Plan: check whether …", "Next step: verify whether …")
    lead = text[at : at + OPEN_QUESTION_LEAD]
    label = LABEL.match(lead)
    lead = lead[label.end() if label else 0 :]
    cut = CLAUSE_BREAK.search(lead)
    return bool(OPEN_QUESTION.search(lead[: cut.start() if cut else len(lead)]))


#: A sentence that reports a check of a yes/no question ("I checked whether X.", "We tested if X."; round 37): the
#: next sentence, if it opens with an answer, answers it ("It can't: …", "It does: …").
CHECKED_WHETHER = re.compile(
    r"[\W_]*(?:(?:so|and|first|then|next)\s*,?\s+)?(?:i|we)\s+(?:(?:also|first|then|carefully|specifically|already)\s+)?"
    r"(?:checked|tested|examined|investigated|looked\s+(?:at|into))\s+(?:whether|if)\b",
    re.IGNORECASE,
)
#: "It can't" as an answer.
ANSWER_CANNOT = re.compile(r"[\s*_]*it\s+(?:can't|cannot|can\s+not|couldn't|could\s+not|won't)\b", re.IGNORECASE)


def _check_answer(text: str, begin: int, stop: int) -> str | None:
    """The answer, "no" or "yes", where the sentence ``[begin, stop)`` reports checking whether something holds and
    the next sentence opens with it ("I checked whether X. It can't: …"); ``None`` otherwise."""
    if not text.startswith(".", stop) or not CHECKED_WHETHER.match(text, begin):
        return None
    if ANSWER_NO.match(text, stop + 1) or ANSWER_CANNOT.match(text, stop + 1):
        return "no"
    return "yes" if ANSWER_YES.match(text, stop + 1) else None


def _answered_no(text: str, at: int) -> bool:
    """Whether the match at ``at`` is in a yes/no question answered "no" at once ("Is it X? No: …"), or in a check
    whether it holds answered so ("I checked whether X. It can't: …")."""
    begin, stop = _prose_sentence(text, at)
    sentence = text[begin:stop]
    asked = (
        YES_NO_QUESTION.match(sentence) or MUSED_QUESTION.match(sentence) or DECLARATIVE_QUESTION.fullmatch(sentence)
    )
    return bool(text.startswith("?", stop) and asked and ANSWER_NO.match(text, stop + 1)) or (
        _check_answer(text, begin, stop) == "no"
    )


def _denied_sentence(text: str, at: int) -> bool:
    """Whether the match at ``at`` is in a sentence that opens by denying or by voicing someone
    else's possible view ("Not that X …", "It is not true that X …", "Someone might say X"), also
    after a leading phrase ("Contrary to what the ticket says, it is not the case that X"), up to a
    contrast ("…, but Y") that starts the agent's own claim."""
    begin = _prose_sentence(text, at)[0]
    lead = LEADING_PHRASE.match(text, begin)
    # a match that starts the sentence (a sentence-level phrasing) is denied with it too
    if lead and (lead.end() <= at or at == begin) and SENTENCE_DENIAL.match(text, lead.end()):
        begin = lead.end()
    opening = SENTENCE_DENIAL.match(text, begin)
    if opening is None:
        # … or a clause after a colon opens so ("I can rule out the story here: it is not the case that X")
        colon = text.rfind(": ", begin, at)
        opening = SENTENCE_DENIAL.match(text, colon + 1) if colon != -1 else None
        if opening is None or opening.end() > at + 1 and opening.start() > at:
            return False
    contrast = CONTRAST.search(text, opening.end(), at)
    return contrast is None


#: A predicate that denies its subject is the cause ("X is not why the ranks diverge", "X does not explain the
#: mismatch", "X isn't what's causing it", "X is not the cause of the mismatch", "… are not the reason for the OOMs",
#: "that isn't what's blocking this run").
CAUSE_DENIED = re.compile(
    r"\b(?:(?:is|are|was|were)\s+not|isn't|aren't|wasn't|weren't)\s+(?:"
    r"(?:(?:the\s+)?reason\s+)?why"
    r"|(?:what(?:'s|\s+is)\s+)?(?:causing|behind|driving)"
    r"|(?:the|this|our)\s+(?:(?:root|real|actual|underlying)\s+)?(?:cause|reason|source|explanation|culprit|failure|problem|issue|bug|"
    r"mechanism|driver|trigger|story|answer)"
    # round 16: "X, which makes them ep times larger, is not a defect and not what separates ep2 from ep1"
    # (round 44: also a problem or an issue, with one word before it: "and it is not an actual problem", "This is not
    # a cache-coherence problem.")
    r"|(?P<indefinite>an?\s+(?:[\w-]+\s+)?(?:defect|bug|fault|mistake|problem|issue))"
    r"|what(?:'s|\s+is|\s+was)?\s+(?:\w+ing|causes|caused|breaks|broke|blocks|blocked|happens|happened|going\s+on|wrong|"
    r"makes|made|drives|drove|triggers|triggered|kills|explains|stalls|stalled|hangs|hung|fails|failed|deadlocks|"
    r"deadlocked|diverges|diverged|drifts|drifted))\b"
    r"|\b(?:does|do|did|can|could)\s*(?:not|n't)\s+(?:really\s+)?(?:explain|account\s+for|cause)\b"
    r"|\b(?:cannot|can't)\s+(?:explain|account\s+for)\b"
    # round 19: a subject judged correct ("Dividing expert grads by the expert-DP group size …, is exactly right for
    # experts that only exist on W/ep replicas"): what it describes is no defect
    r"|\b(?:is|are|was|were)\s+(?:exactly|perfectly|entirely)\s+(?:right|correct)\b|\b(?:is|are)\s+(?:by\s+design|as\s+designed)\b",
    re.IGNORECASE,
)
#: A denied copula ("is not", "isn't"): the predicate denies what its subject is, not what something accounts for.
COPULA = re.compile(r"(?:is|are|was|were|isn't|aren't|wasn't|weren't)\b", re.IGNORECASE)
#: What may follow such a predicate to the end of its sentence: a few words naming the symptom, then perhaps a
#: reason after a dash ("… is not why the results differ — the root shard does not …").
CAUSE_TAIL = re.compile(r"[^:;\n\u2014\u2013]{0,80}?(?:\s[\u2014\u2013-]+\s[^\n]*)?\W*", re.IGNORECASE)
#: … after "is not a problem" (no defect at all, not a cause named in place of another), a colon too gives the reason
#: ("and it is not an actual problem: the parameters differ by float noise"; round 44); after "is not why" a colon
#: opens the agent's own account ("Float order is not why: the skip counts …").
CAUSE_TAIL_REASON = re.compile(r"[^:;\n\u2014\u2013]{0,80}?(?:(?:\s[\u2014\u2013-]+\s|:\s)[^\n]*)?\W*", re.IGNORECASE)
#: … but after "does not account for" only the few words: "The planner doesn't account for the head — three buffers …"
#: says what the planner leaves out (:data:`OMISSION`), not that it does not explain a symptom.
CAUSE_TAIL_SHORT = re.compile(r"[^:;\n]{0,80}?\W*", re.IGNORECASE)
#: What may end the subject of such a predicate: a clause of its own ("…; X is not why", "… and X is not why",
#: "…, so Y — that isn't the cause"). A contrast always does; the others only when the words after them, up to
#: the predicate, hold no verb of their own (otherwise they open a clause inside the subject: "A holding B while C
#: are retained, unpriced, is not why").
SUBJECT_BREAK = re.compile(
    r"(?P<strong>;|:(?=\s+(?:that|this|it|which|these|those|both|all|none|neither)\b)|\b(?:but|however)\b)|\b(?:and|so|while|whereas|although|though|because|since)\b|\s[\u2014\u2013]\s|\s--?\s",
    re.IGNORECASE,
)
#: A verb that makes the words it is in a clause of their own.
FINITE = re.compile(
    r"\b(?:is|are|was|were|has|have|had|does|do|did|can|could|will|would|should|may|might|must)\b|n't\b"
    r"|\b(?:it|they|that|this|which|there|he|she|we|i)(?:'s|'re|'d|'ve|'ll)\b",
    re.IGNORECASE,
)
#: A pronoun that stands for everything said before it ("…, so Y — that isn't the cause", "Yes, X; but this isn't why").
RESUMPTIVE = re.compile(
    r"\s*(?:that|this|it|which|these|those|both|all\s+(?:of\s+)?(?:that|this|it|these|those)|none\s+of\s+(?:that|this|it|"
    r"these|those)|neither(?:\s+of\s+(?:them|these|those))?)(?:\s+(?:alone|one|part|bit|mechanism|path|effect))?\s*",
    re.IGNORECASE,
)
#: A sentence that opens by conceding what it then dismisses ("Yes, X …, but that isn't what's blocking this run",
#: "Yes, the inputs are still saved … — but that sum stays below …").
CONCESSION = re.compile(
    r"[\W_]*(?:yes|yeah|yep|sure|granted|true|admittedly|of\s+course|certainly|agreed|fair\s+enough|okay|ok)\b\s*[,:;\u2014\u2013-]"
    # round 44: a supposition granted in principle ("This is not a cache-coherence problem. In principle a stale node
    # copy would …, but the README says …")
    r"|[\W_]*(?:in\s+(?:principle|theory)|theoretically|on\s+paper)\b",
    re.IGNORECASE,
)
#: An aside inside a subject: between dashes or in brackets.
ASIDE = re.compile(r"\s[\u2014\u2013]\s.*?\s[\u2014\u2013]\s|\s--?\s.*?\s--?\s|\((?:[^()]|\([^()]*\))*\)")


def _tail(predicate: re.Match[str]) -> re.Pattern[str]:
    """What may follow a cause-denying predicate to the end of its sentence (:data:`CAUSE_TAIL`, the short one, or
    after "not a problem" the one that lets a colon give the reason)."""
    if "account" in predicate.group(0).lower():
        return CAUSE_TAIL_SHORT
    return CAUSE_TAIL_REASON if predicate.group("indefinite") else CAUSE_TAIL


def _denied_as_cause(text: str, at: int, end: int) -> bool:
    """Whether the match ``[at, end)`` is (in) the subject of a predicate later in its sentence that denies it is
    the cause ("The ordering — where X — is not why training diverges here", "X (…) does not explain the
    mismatch", "A holding B while C are retained is not why these calls fail"), or in what a pronoun before such a
    predicate stands for ("X, so Y — that isn't the cause of this failure"; after a concession, the whole sentence:
    "Yes, X …; but that isn't what's blocking this run")."""
    begin, stop = _prose_sentence(text, at)
    # the predicate closes the sentence ("… is not why training diverges here."), not a denial of another cause
    # that opens it before the agent's own ("Float order is not why: the skip counts …")
    # … or its clause, before a semicolon ("X is not why these calls fail; I've ruled that combination out")
    closing = [m for m in CAUSE_DENIED.finditer(text, at + 1, min(stop, at + MAX_SENTENCE))
               if _tail(m).fullmatch(text, m.end(), _clause_stop(text, m.end(), stop))]  # fmt: skip
    if not closing:
        return False
    predicate = closing[-1]
    asides = [m.span() for m in ASIDE.finditer(text, begin, stop)]
    if any(a < predicate.start() < z and not a <= at < z for a, z in asides):
        # round 31: a predicate inside a parenthesis the match is not in has its subject there ("… num_processes times
        # per optimizer step (skips micro-steps under accumulate, so A is not the problem)")
        return False
    breaks = [b for b in SUBJECT_BREAK.finditer(text, begin, predicate.start())
              if not any(a <= b.start() < z for a, z in asides)]  # fmt: skip
    contrast = next((b for b in reversed(breaks) if b.group("strong")), None)
    colon = text.find(": ", begin, predicate.start())
    if colon != -1 and any(
        COPULA.match(m.group(0)) and _tail(m).fullmatch(text, m.end(), colon)
        for m in CAUSE_DENIED.finditer(text, begin, colon)
    ):
        # "Token averaging isn't the problem: X are not what breaks the objective": both clauses deny ("The planner
        # doesn't account for the head: X" omits, and its colon opens the agent's own account)
        return begin <= at < predicate.start()
    if text[begin : predicate.start()].rstrip().endswith(","):
        # a comma between subject and predicate closes what was put inside the subject ("X, because Y, and so Z,
        # is not the failure here"): the subject starts with the clause
        return (contrast.end() if contrast else begin) <= at < predicate.start()
    # the subject starts after the last break that opens a clause of its own
    opens = [b for b in breaks if b.group("strong") or not FINITE.search(text, b.end(), predicate.start())]
    last = opens[-1] if opens else None
    subject = last.end() if last else begin
    if last is not None and RESUMPTIVE.fullmatch(text, subject, predicate.start()):
        if CONCESSION.match(text, begin):
            return begin <= at < last.start()
        before = next((b for b in reversed(breaks) if b.group("strong") and b.start() < last.start()), None)
        return (before.end() if before else begin) <= at < last.start()
    return subject <= at < predicate.start()


def _clause_stop(text: str, at: int, stop: int) -> int:
    """Where the clause holding ``at`` ends before ``stop``: at a semicolon, else ``stop``."""
    found = text.find(";", at, stop)
    return stop if found == -1 else found


def _denied_manner(text: str, at: int, end: int) -> bool:
    """Whether the match ``[at, end)`` lies in a clause that denies a manner and what it brings about ("The loss
    is not normalised per rank in a way that makes DDP's gradient a mean of per-rank means"): the negation
    reaches the words before "in a way that" and the consequence after it, up to a contrast ("; …", "but …")."""
    begin, stop = _prose_sentence(text, at)
    for manner in NEGATED_MANNER.finditer(text, begin, min(stop, end + MAX_SENTENCE)):
        if manner.start() >= end:
            break
        contrast = CONTRAST.search(text, manner.end(), stop)
        if at < (contrast.start() if contrast else stop) and not CONTRAST.search(text, begin, min(at, manner.start())):
            return True
    return False


def _scoped(text: str, end: int) -> bool:
    """Whether the rest of the sentence after ``end`` limits a negation to some cases ("they don't
    drift in a single-process run, only with 2 ranks", "… except at TP=1", "… unless …"): such a
    negation says where the claim does not hold, not that it is false."""
    return bool(SCOPE.search(text, end, _prose_sentence(text, end)[1]))


def _voiced_by_others(text: str, at: int) -> bool:
    """Whether the sentence of ``at`` opens by voicing or reporting someone else's view ("Someone
    might say X", "A teammate claimed X"): not the agent's denial."""
    opening = SENTENCE_DENIAL.match(text, _prose_sentence(text, at)[0])
    return opening is not None and not re.match(
        r"[\W_]*(?:not|it|there|i|we|nothing|no|" + _PROPOSITION_OPENING + r")\b",
        opening.group(0),
        re.IGNORECASE,
    )


def _candidate(text: str, at: int) -> str | None:
    """Whether the match at ``at`` is one option in a list of candidates ("hypothesised": its sentence
    opens a candidates label before it, "Candidates: (a) …, (b) …", or is a hedged list of alternatives,
    "Could be A, B, or C", or it is an item of a list whose line before it is such a label) or an item
    of a list of rejected explanations ("denied": "Ruled out: …"); ``None`` otherwise. An item marked
    confirmed after the match is not an option any more."""
    begin, stop = _prose_sentence(text, at)
    following = INLINE_ITEM.search(text, at + 1, stop)  # an inline list's next item: "…, (b) …"
    item = _item(text, at)
    if CONFIRMED.search(text, item[0] if item else at, following.start() if following else item[1] if item else stop):
        return None
    if _struck(text, at, item[0] if item else begin):
        return "withdrawn"  # "- [wrong, see below] X" (round 39)
    sentence = text[begin:stop]
    if HEDGED_ALTERNATIVES.match(sentence) and ALTERNATIVE.search(sentence):
        return "hypothesised"
    label = CANDIDATES.search(text, begin, at) or CANDIDATES.match(sentence)
    if label:
        return _label_stance(label.group(0))
    line_start = text.rfind("\n", 0, at) + 1
    if not LIST_ITEM.match(text, line_start):
        return "denied" if _under_rejected_heading(text, at) else None
    # walk back over the list's items (bounded) to the line that introduces the list (round 37: over one blank line
    # to a heading, "## Hypotheses\n\n- X")
    blank = False
    for _ in range(MAX_LIST_ITEMS):
        if line_start == 0:
            return None
        line_start = text.rfind("\n", 0, line_start - 1) + 1
        line = text[line_start : text.find("\n", line_start)]
        if not line.strip() and not blank:
            blank = True
            continue
        if not LIST_ITEM.match(line):
            label = CANDIDATES.search(line) or HEADING_LABEL.fullmatch(line)
            return _label_stance(label.group(0)) if label else None
    return None


#: A list item or sentence that opens marked as struck by a bracketed verdict ("- [wrong, see below] X", "(superseded)
#: X"; round 39).
STRUCK_MARK = re.compile(
    r"[ \t]*(?:(?:[-*\u2022]|\d+[.)])[ \t]+)?(?:[\[(][ \t]*(?:wrong|retracted|withdrawn|struck|superseded|scrapped|"
    r"invalid|incorrect|disproved|disproven|refuted|obsolete|dropped|rejected)\b[^\])\n]{0,40}[\])])",
    re.IGNORECASE,
)


def _struck(text: str, at: int, start: int) -> bool:
    """Whether the item or sentence starting at ``start`` opens marked as struck (:data:`STRUCK_MARK`); a match that
    starts on a bare label line ("Notes:\n- [wrong] X") is read in the line after it."""
    line_end = text.find("\n", at)
    if at == start and line_end != -1 and LABEL.fullmatch(text, at, line_end):
        start = line_end + 1
    return STRUCK_MARK.match(text, start) is not None


#: A markdown heading that names its section's items as candidates or rejected ones ("## Hypotheses", "### Ruled
#: out", "## Rejected explanations"; round 37).
HEADING_LABEL = re.compile(
    r"[ \t]*#{1,6}[ \t]*(?:[\w-]+\s+){0,3}?(?:candidates?|hypothes[ie]s|suspects|possibilities|theories|"
    rf"open\s+questions|{_REJECTING}|(?:possible|potential|candidate)\s+(?:reasons|causes|explanations|"
    r"culprits|mechanisms))\b[^\n:]{0,60}:?[ \t#]*",
    re.IGNORECASE,
)
#: Any markdown heading line.
HEADING = re.compile(r"(?m)^[ \t]*#{1,6}[ \t]+[^\n]*$")


def _under_rejected_heading(text: str, at: int) -> bool:
    """Whether ``at`` lies in a section whose heading rules its content out ("## Ruled out\n\nX …", up to the next
    heading; round 37)."""
    headings = list(HEADING.finditer(text, 0, at))
    if not headings:
        return False
    heading = HEADING_LABEL.fullmatch(headings[-1].group(0))
    return heading is not None and REJECTED_LABEL.search(heading.group(0)) is not None


def _item(text: str, at: int) -> tuple[int, int] | None:
    """The list item (one line) around ``at``, or ``None`` outside a list. A candidate confirmed anywhere in
    its own item is no option any more ("3. The scheduler going through prepare(). This is it. Accelerate
    wraps it …": the verdict is the item's second sentence and covers the item's later ones); a verdict
    never reaches into the next item."""
    line_start = text.rfind("\n", 0, at) + 1
    if not LIST_ITEM.match(text, line_start):
        return None
    line_end = text.find("\n", at)
    return line_start, min(line_end if line_end != -1 else len(text), at + MAX_SENTENCE)


def _label_stance(label: str) -> str:
    """A candidates label's stance for its items: rejected ones are denied, the others put forward."""
    return "denied" if REJECTED_LABEL.search(label) else "hypothesised"


#: A short label that opens a sentence before its supposition ("Before running anything: if …").
SUPPOSITION_LABEL = re.compile(r"(?:[^:.!?\n]|[.](?=\S)){1,80}:\s+")
#: A condition on the agent's own reading of the code ("if I'm reading admission.py right, X"): it commits.
READING_HEDGE = re.compile(
    r"\W*if\s+(?:i'm|i\s+am|we're|we\s+are|i|we)\s+(?:reading|read|understand|understood)\b", re.IGNORECASE
)


def _supposes(text: str, begin: int, sentence: str) -> bool:
    """Whether the sentence starting at ``begin`` opens as a supposition: a conditional, unless it
    draws a consequence of the agent's own claim just before ("If so, …" after a statement; not
    after a question or another supposition)."""
    if not CONDITIONAL.match(sentence):
        # … also after a short label ("Reading train.py before running anything: if X …, Y might …")
        label = SUPPOSITION_LABEL.match(sentence)
        if label is None:
            return False
        after = label.end()
        return bool(CONDITIONAL.match(sentence, after)) and not (
            ANAPHORIC_IF.match(sentence, after) or READING_HEDGE.match(sentence, after)
        )
    if not ANAPHORIC_IF.match(sentence):
        return True
    end = len(text[:begin].rstrip())
    if end == 0 or text[end - 1] == "?":
        return True
    previous = text[_prose_sentence(text, end - 1)[0] : end]
    return bool(CONDITIONAL.match(previous) and MODAL.search(previous))


def _reported_past(text: str, at: int, end: int) -> bool:
    """Whether the match ``[at, end)`` reports an earlier belief ("earlier I said X", "my first
    guess was X"): such a marker before it in its clause (commas do not end it), or inside it."""
    begin = max(_sentence_start(text, at), at - MAX_SENTENCE)
    breaks = list(STRONG_BREAK.finditer(text, begin, at))
    # round 18: "My claim was: X" — the colon introduces the belief, it does not end its clause
    while breaks and breaks[-1].group(0) == ":" and _belief_before(text, breaks[-1].start()):
        breaks.pop()
    return bool(PAST_BELIEF.search(text, breaks[-1].end() if breaks else begin, end))


def _belief_before(text: str, colon: int) -> bool:
    """Whether an earlier belief's marker ends right before the colon at ``colon`` ("My claim was:")."""
    lead = text[max(0, colon - 80) : colon]
    return any(m.end() >= len(lead.rstrip()) - 1 for m in PAST_BELIEF.finditer(lead))


#: What the code should do instead, right after a verdict ("— wrong, should be ÷ W", "(wrong: must be the norm)").
CORRECTION_AFTER = re.compile(
    r"[\s,;:\u2014\u2013-]*(?:it\s+|this\s+|that\s+)?(?:should|must|needs?\s+to|ought\s+to|has\s+to)\s+(?:be|have\s+been|"
    r"use|divide|count|include)\b",
    re.IGNORECASE,
)


def _judged_false(text: str, start: int) -> bool:
    """Whether the agent marks the claim starting at ``start`` false in the rest of its sentence
    or list item ("… - rejected", "… (ruled out: …)"). A "(wrong)" paired with a "(right)" in its sentence grades
    what the code does, not the claim ("it filters them for the norm (right) AND for the clip (wrong)")."""
    begin, stop = _prose_sentence(text, start)
    for verdict in VERDICT_FALSE.finditer(text, start, stop):
        if CODE_GRADED.match(verdict.group(0)) and CODE_GRADED_RIGHT.search(text, begin, stop):
            continue
        if CORRECTION_AFTER.match(text, verdict.end()):
            continue  # round 36: "÷ W/ep — wrong, should be ÷ W": what the code does, graded and corrected
        if _value_of_code(text, verdict.start() + (len(verdict.group(0)) - len(verdict.group(0).lstrip()))):
            continue  # "preserve_rng_state=train.deterministic (false)": the setting's value
        return True
    return False


#: A code token (an identifier with a dot, an underscore, backticks or an assignment) right before a value note
#: (round 33: or with what it is called between them: "it follows the `deterministic` setting, which is false").
CODE_TOKEN_BEFORE = re.compile(
    r"(?:`[^`\n]{1,80}`|[\w.\[\]()=]*[._=][\w.\[\]()=]*)"
    r"(?:\s+(?:setting|flag|option|switch|knob|field|key|parameter|argument|config\s+value))?\s*,?\s*$"
)
#: A value note on a setting: "(false)", ", which is false", "which is False".
VALUE_NOTE = re.compile(
    r"(?:\(\s*(?:false|true|off|on|none|0|1)\s*\)|,?\s*which\s+(?:is|was)\s+(?:false|true)\b)", re.IGNORECASE
)


#: "it's false" after a code predicate said to be true for some inputs (round 45: "keeps a gradient only if
#: `is_model_parallel_parameter(p)` is true; for the untagged weight shards it's false, so …"): the predicate's value.
PREDICATE_FALSE = re.compile(r"(?:it's|it\s+is|it\s+was)\s+false\b", re.IGNORECASE)
PREDICATE_TRUE_BEFORE = re.compile(
    r"(?:`[^`\n]{1,80}`|\b\w+\([^()\n]{0,40}\))\s+(?:is|was|returns|evaluates\s+to)\s+true\b", re.IGNORECASE
)


def _value_of_code(text: str, at: int) -> bool:
    """Whether the verdict-like words at ``at`` ("(false)", "which is false") note the value of the code token
    just before them, or of a code predicate said to be true just before (:data:`PREDICATE_FALSE`), not a verdict
    on a claim."""
    if PREDICATE_FALSE.match(text, at) and PREDICATE_TRUE_BEFORE.search(text, max(0, at - 200), at):
        return True
    return bool(VALUE_NOTE.match(text, at)) and bool(CODE_TOKEN_BEFORE.search(text, max(0, at - 100), at))


#: A parenthesised grade of what the code does, in a sentence that grades another part of it right.
CODE_GRADED = re.compile(r"\s*\(\s*(?:wrong|false)\s*\)", re.IGNORECASE)
#: … with or without a reason after the grade ("(correct — they'd be double counted)"; round 26)
CODE_GRADED_RIGHT = re.compile(
    r"\(\s*(?:right|correct|fine|ok)\b(?:\s*[-\u2013\u2014:,;][^()\n]{1,80})?\s*\)", re.IGNORECASE
)


@functools.lru_cache(maxsize=32)
def _bounds(text: str, prose: bool) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Where the sentence breaks of ``text`` start and end (computed once per text)."""
    found = list((PROSE_SENTENCE_END if prose else SENTENCE_BREAK).finditer(text))
    return tuple(m.start() for m in found), tuple(m.end() for m in found)


def _prose_sentence(text: str, at: int) -> tuple[int, int]:
    """The prose sentence (or list item) around ``at``, at most :data:`MAX_SENTENCE` each side."""
    starts, ends = _bounds(text, True)
    before = bisect.bisect_right(ends, at)
    begin = ends[before - 1] if before else 0
    after = bisect.bisect_left(starts, at)
    stop = starts[after] if after < len(starts) else len(text)
    return max(begin, at - MAX_SENTENCE), min(stop, at + MAX_SENTENCE)


#: A sentence that supposes a condition to draw its consequence ("If DeepSpeed were dropping the shards, the logged
#: norm would also be wrong"): it opens with "if" and says what "would" follow.
SUPPOSITION = re.compile(
    r"[\W_]*(?:(?:but|and|so|now|yet)\s*,?\s+)?if\b(?:[^.!?]|[.](?=\S)){0,400}?\bwould\b", re.IGNORECASE
)


#: What contradicts a supposition's consequence in its own sentence ("…, the printed norm would jump around, and it
#: doesn't"; round 38).
CONSEQUENCE_DENIED = re.compile(
    r"(?:,\s*|\s+)(?:and|but|yet)\s+(?:it|they|that|this|none|nothing)\s+(?:doesn't|don't|didn't|does\s+not|do\s+not|did\s+not|"
    r"isn't|aren't|wasn't|weren't|is\s+not|are\s+not|never|won't|can't)\b",
    re.IGNORECASE,
)


def _refuted_supposition(text: str, at: int) -> bool:
    """Whether ``at`` lies in the condition of a supposition whose consequence the same sentence then denies ("If the
    norms were shard-local, the printed grad_norm would jump around, and it doesn't"): modus tollens, the condition
    denied (round 38)."""
    begin, stop = _prose_sentence(text, at)
    supposition = SUPPOSITION.match(text, begin)
    return (
        supposition is not None
        and at < supposition.end()
        and CONSEQUENCE_DENIED.search(text, supposition.end(), stop) is not None
    )


def supposed(text: str, at: int) -> bool:
    """Whether the prose sentence holding ``at`` is a supposition (:data:`SUPPOSITION`)."""
    begin, _ = _prose_sentence(text, at)
    return SUPPOSITION.match(text, begin) is not None


def same_sentence(text: str, a: int, b: int) -> bool:
    """Whether ``a`` and ``b`` lie in one prose sentence of ``text`` (a hard-wrapped line break does not end one)."""
    return _prose_sentence(text, a) == _prose_sentence(text, b)


#: A claim named as a proposition ("the idea that X", "the claim that X") …
PROPOSITION = re.compile(
    r"\bthe\s+(?:idea|theory|hypothesis|notion|suggestion|conjecture|claim|assumption|premise|story|explanation)"
    # round 15: "the idea going around, that X, does not hold"
    r"(?:\s+(?:going|floating|doing)\s+(?:around|the\s+rounds))?\s*,?\s+that\b",
    re.IGNORECASE,
)
#: … whose own predicate, later in its sentence, calls it false ("… is incorrect for this workspace", "… doesn't hold").
PROPOSITION_FALSE = re.compile(
    r"\b(?:is|was|are|were)\s+(?:\w+\s+)?(?:incorrect|wrong|false|mistaken|untrue|unfounded|not\s+(?:true|correct|right|"
    # (round 45: "apply" alone too: "the claim that X doesn't apply")
    r"the\s+case))\b|\b(?:does\s+not|doesn't|did\s+not|didn't)\s+(?:hold|stand\s+up|describe|apply(?:\s+to)?|explain|match)\b"
    # round 35: "… the idea that X is not the problem here"
    r"|\b(?:(?:is|was)\s+not|isn't|wasn't)\s+(?:the\s+|our\s+|a\s+)?(?:problem|cause|culprit|issue|bug|reason|explanation)\b",
    re.IGNORECASE,
)


#: How far into its sentence a proposition may open and still hold a sentence-level match that starts with the sentence.
PROPOSITION_LEAD = 40


def _proposition_denied(text: str, start: int, end: int | None = None) -> bool:
    """Whether the match at ``start`` is inside a claim named as a proposition that its sentence then calls
    false: "The idea that X is incorrect for this workspace", "the claim that X doesn't hold here"."""
    begin, stop = _prose_sentence(text, start)
    # the proposition opens before the match, or opens the sentence a sentence-level match starts at
    opener = PROPOSITION.search(
        text, max(begin, start - MAX_SENTENCE), max(start + 1, min(stop, begin + PROPOSITION_LEAD))
    )
    if opener is None and end is not None:
        # a sentence-level match that spans the proposition ("Yes, X, and yes Y, but the claim that Z doesn't hold")
        opener = PROPOSITION.search(text, start, min(end, stop))
    if opener is None:
        return False
    # (round 35: in the proposition's own clause: "I hold to the idea that X; fragmentation is not the problem")
    return bool(
        PROPOSITION_FALSE.search(
            text, max(start, opener.end()), _clause_stop(text, start, min(stop, start + MAX_SENTENCE))
        )
    )


#: A clause of its own between a match and a denial after it (round 24): the denial's subject is that clause's ("X,
#: which would explain why one process is fine" denies nothing about X).
SUBORDINATE_BEFORE_DENIAL = re.compile(r"\b(?:why|whether|how|where|when|if|explains?|explaining)\b", re.IGNORECASE)


#: A parenthesis with a subject of its own after a match ("… so experts step ep x too far (dense params and ep=1 are
#: fine)"; round 27): what it denies is its subject, not the match; one that points back ("(that's fine)") may be.
ASIDE_OPEN = re.compile(r"\((?!\s*(?:it|that|this|which|these|those|they)\b)", re.IGNORECASE)


def _denied_after(text: str, end: int) -> bool:
    after = text[end : end + DENIAL_REACH]
    stop = min((m for m in (DENIAL_BREAK.search(after), ASIDE_OPEN.search(after)) if m), key=lambda m: m.start(),
               default=None)  # fmt: skip
    denial = DENIAL.search(after[: stop.start()] if stop else after)
    # round 24: … unless a clause of its own comes first
    return denial is not None and not SUBORDINATE_BEFORE_DENIAL.search(after, 0, denial.start())


@dataclass(frozen=True)
class Withdrawal:
    """A withdrawal: it takes back matches that start before ``reach`` (the end of its clause);
    ``wrong_only`` when its sentence names a known wrong explanation (it takes back only those)."""

    start: int
    reach: int
    wrong_only: bool
    #: The first offset it takes back: 0, or its sentence's start for a refutation of a claim
    #: made in its own sentence.
    begin: int = 0


#: A verdict naming what it rules out ("So it isn't the ordering; reverted."): after an experiment that changed
#: nothing it is about the hypothesis the experiment tested; elsewhere it may rule out any candidate ("So it isn't
#: the optimizer, the router or the data: …") and takes nothing back.
NULL_VERDICT = re.compile(
    r"\b(?:so|then|hence|therefore|thus)\s*,?\s+(?:it|that|this)(?:\s+(?:isn't|wasn't|is\s+not|was\s+not)|'s\s+not)\s+(?:the\s+)?"
    r"[\w-]+(?:\s+[\w-]+)?\s*(?=[.;!\u2014\u2013]|\s-+\s|$)",
    re.IGNORECASE,
)
#: How far before such a verdict the experiment is looked for.
NULL_VERDICT_REACH = 300
#: Struck-through text (``~~…~~``): the agent has crossed it out.
STRUCK = re.compile(r"~~[^~\n]{1,2000}(?:\n[^~\n]{1,2000}){0,8}~~")


def _line_markup_start(text: str, at: int) -> int:
    """Where the markup before ``at`` on its line begins ("* ~~X~~": the bullet is struck with its item)."""
    line = text.rfind("\n", 0, at) + 1
    return line if re.fullmatch(r"[ \t>*+\-\u2022\d.)]*", text[line:at]) else at


#: A "no" that corrects the words just before it, after an ellipsis ("… by the next zero_grad... no, …").
#: What such a "no" puts in place of the last words when it swaps only them: a short phrase and a colon ("… would count
#: rank 1's grads... no, exclude them: it would count them only on rank 0"); the sentence around it stands.
WORD_CORRECTION = re.compile(r"\s*[,;]?\s*(?:[\w'-]+\s+){0,2}[\w'-]+\s*:(?=\s)")
SELF_CORRECTION = re.compile(r"(?:\.{3}|\u2026)\s*(?P<no>no|nope)\b", re.IGNORECASE)


#: A reason that opens right after a withdrawal ("…, because Y", "— since Y").
REASON_AFTER = re.compile(
    r"[\s,\u2014\u2013-]*(?:because|since|given\s+that|as\s+(?=the\b|its?\b|their\b))\b", re.IGNORECASE
)


#: An assumption named by a determiner ("that assumption", "the premise"), not the agent's ("my assumption").
NAMED_ASSUMPTION = re.compile(
    r"\b(?:that|this|the|its|their)\s+(?:[\w-]+\s+)?(?:assumptions?|premise)\b", re.IGNORECASE
)
#: Something other than the agent assuming ("AcceleratedScheduler assumes", "which assumed"): "I" and "we" take no
#: "assumes", and "assumed" only after a pronoun that stands for a thing.
THIRD_PARTY_ASSUMES = re.compile(r"\bassumes\b|\b(?:it|which|that|they)\s+assumed\b", re.IGNORECASE)


#: A quotation on one line (straight or curly double quotes).
QUOTATION = re.compile(_QUOTED)


def _inside_quotation(statement: str, at: int) -> bool:
    """Whether ``at`` lies inside a quotation of its line: words the agent quotes or acts out (what the code "says"),
    not its own."""
    line_start = statement.rfind("\n", 0, at) + 1
    line_end = statement.find("\n", at)
    line_end = len(statement) if line_end == -1 else line_end
    return any(m.start() < at < m.end() - 1 for m in QUOTATION.finditer(statement, line_start, line_end))


def _codes_assumption(statement: str, match: re.Match[str]) -> bool:
    """Whether the withdrawal calls wrong an assumption that something other than the agent was said to make before
    it ("AcceleratedScheduler assumes the scheduler was written for one process … That assumption is wrong here:
    demandnet sizes it in updates"): a finding about the code, not a claim taken back."""
    named = NAMED_ASSUMPTION.search(statement, max(0, match.start() - 40), match.end())
    if named is None or named.end() <= match.start():
        return False
    return THIRD_PARTY_ASSUMES.search(statement, 0, named.start()) is not None


def withdrawals(statement: str, wrong_patterns: Sequence[re.Pattern[str]]) -> list[Withdrawal]:
    """The statement's withdrawals, in order: struck-through text takes back what it holds."""
    struck = zip(range(MAX_SCOPES), STRUCK.finditer(statement), strict=False)
    found = [Withdrawal(m.start(), m.end(), False, _line_markup_start(statement, m.start())) for _, m in struck]
    for kind, regex in (("retraction", RETRACTION), ("refutation", REFUTATION), ("verdict", NULL_VERDICT)):
        for match in regex.finditer(statement):
            tested = NULL_RESULT.search(statement, max(0, match.start() - NULL_VERDICT_REACH), match.start())
            if kind == "verdict" and not tested:
                continue
            # the clause ends at the punctuation a match may have consumed ("that was wrong. X": X stands)
            stop = WITHDRAWAL_END.search(statement, match.start() + len(match.group(0).rstrip(" .;:!,\u2014\u2013-")))
            reach = stop.start() if stop else len(statement)
            # round 36: a reason given right after it ("The contract says X; they don't, because Y") is the agent's
            # own claim: it takes back nothing after itself
            if REASON_AFTER.match(statement, match.end()):
                reach = min(reach, match.start())
            target = _target(statement, match, reach)
            wrong_only = any(p.search(target) for p in wrong_patterns)
            if _promised(statement, match.start()) and not CONCLUSION.match(match.group(0)):
                continue  # a withdrawal promised on a condition ("If the one-rank run is off too, I'll drop this")
            if (
                _answers_a_question(statement, match)
                or _labelled_answer(statement, match)
                or _denied_supposition(statement, match)
                or _echoed_negation(statement, match)
            ):
                continue  # "Q: Does anything complain?\nA: No." answers its question; it takes nothing back (nor does
                # "Working theory: it does not, so X", nor "as if every rank had the same count. They don't", nor "…
                # do not reuse the masks. They don't, because …")
            if GENERIC_NO_DIFFERENCE.search(match.group(0)) and WHEN_OPENING.match(
                statement, _sentence_start(statement, match.start())
            ):
                continue  # round 24: "When no clipping is needed, this makes no difference": when the failure shows
            if SUBORDINATE_BEFORE.search(statement, max(0, match.start() - 16), match.start()):
                continue  # "When it's false, checkpoint doesn't save …": a value in a condition, not a verdict
            if _unmet_obligation(statement, match):
                continue  # "… should be halved like everything else; it isn't, so …": the code fails to, a finding
            if _corrected_reading(statement, match):
                continue  # "…, reading torch's note as being about reproducibility. It isn't: …": the reading is wrong
            if kind == "retraction" and _inside_quotation(statement, match.start()):
                continue  # round 45: 'begin_epoch goes "does loader.sampler have set_epoch? no? ok never mind"
            if _codes_assumption(statement, match):
                continue  # round 44: "Accelerate assumes X … That assumption is wrong here: …": the code's is wrong
            if _value_of_code(statement, match.start()):
                continue  # "… bound to `train.deterministic`, which is false": a setting's value, not a verdict
            if BARE_GRADE_WRONG.fullmatch(match.group(0).strip()) and BARE_GRADE_RIGHT.search(statement):
                continue  # round 27: a list grading what the code does ("… divided by W. correct." / "… W/ep. wrong.")
            begin = _sentence_start(statement, match.start())
            # round 28: "… discarded by the next zero_grad... no, zero_grad doesn't even touch them": a "no" after
            # an ellipsis corrects its own sentence, which the ellipsis did not end
            elided = SELF_CORRECTION.search(statement, max(0, match.start() - 8), match.start() + 8)
            if elided is not None and elided.start("no") == match.start():
                if WORD_CORRECTION.match(statement, elided.end()):
                    continue  # round 35: "… would count rank 1's grads... no, exclude them: it would …" swaps a word
                found.append(Withdrawal(match.start(), reach, wrong_only, _sentence_start(statement, elided.start())))
                continue
            local = (
                (kind == "refutation" or DISMISSAL.fullmatch(match.group(0)) is not None)
                and PREAMBLE.fullmatch(statement, begin, match.start()) is None
                and BACKREF.search(match.group(0)) is None
                and ANAPHORIC_START.match(statement, begin) is None
                and REBUTTAL_START.match(statement, begin) is None
                # a verdict after an experiment that changed nothing is about the hypothesis the experiment tested
                # ("chunk size made no difference and that's not it"), not about the sentence's own words
                and NULL_RESULT.search(statement, begin, match.start()) is None
            )
            found.append(Withdrawal(match.start(), reach, wrong_only, begin if local else 0))
    return sorted(found, key=lambda w: w.start)


#: A bare "wrong." ending a sentence or a list item, in a statement that also grades something "correct." in a sentence
#: of its own: a list grading what the code does, not a verdict on the agent's claims.
BARE_GRADE_WRONG = re.compile(r"[\W_]*wrong\s*[.!]?", re.IGNORECASE)
BARE_GRADE_RIGHT = re.compile(r"(?:(?<=[.!?]\s)|(?<=\n))[\W_]*(?:correct|right|fine|ok)\s*[.!](?=\s|$)", re.IGNORECASE)

#: A verdict drawn as a conclusion ("If X were the cause, a boundary resume would be exact, so it's not that"):
#: a condition before it in its sentence is the argument, not a condition on the verdict.
CONCLUSION = re.compile(r"(?:so|hence|therefore|thus)\b", re.IGNORECASE)
#: A sentence that opens with when a claim holds ("When no clipping is needed, or there's one rank, this makes no
#: difference"): a present-tense "makes no difference" in it says where the failure does not show, it refutes nothing
#: ("When I reverted it, it made no difference" is an experiment, and refutes).
WHEN_OPENING = re.compile(r"[\W_]*(?:when|whenever|unless|as\s+long\s+as)\b", re.IGNORECASE)
GENERIC_NO_DIFFERENCE = re.compile(r"\bmakes?\s+no\s+(?:\w+\s+)?(?:difference|change|effect)", re.IGNORECASE)
#: A subordinating word right before a verdict-like clause ("When it's false, …", "if that is wrong, …"): the words
#: state a condition, they judge nothing.
SUBORDINATE_BEFORE = re.compile(r"\b(?:when|whenever|if|while|unless|once|where)\s+$", re.IGNORECASE)
#: An elliptical "it isn't" / "they don't" …
ELLIPTICAL = re.compile(_ELLIPTICAL + r"\s*", re.IGNORECASE)
#: … after what the code should do: it says the code does not, not that a claim is false.
OBLIGATION = re.compile(
    r"\b(?:should|ought\s+to|(?:is|are)\s+supposed\s+to|must|needs?\s+to|meant\s+to|expected\s+to)\b", re.IGNORECASE
)


def _unmet_obligation(text: str, match: re.Match[str]) -> bool:
    """Whether ``match`` is an elliptical "it isn't" after what something should do in its sentence ("The expert
    gradient … should be halved like everything else; it isn't, so it's 2x too large")."""
    return bool(
        ELLIPTICAL.fullmatch(match.group(0))
        and OBLIGATION.search(text, _prose_sentence(text, match.start())[0], match.start())
    )


#: Someone's reading of a thing as something ("reading torch's note as being about reproducibility", "treating the
#: flag as a determinism switch") or an assumption ("it assumes the schedule was sized over …"): an elliptical "It
#: isn't" right after it corrects the reading.
MISREADING = re.compile(
    r"\b(?:reading|read|treating|treated|taking|took|interpreting|interpreted|mistaking|mistook|misreading|misread|"
    r"understanding|understood)\b[^.!?\n]{1,120}?\bas\s+(?:being\s+)?[^.!?\n]{1,120}$"
    # round 18: what the code assumes ("… it assumes the schedule was sized over every process's batches. It wasn't; …")
    r"|\b(?:assumes?|assumed|assuming|expects?|expected|expecting|presumes?|presumed|presuming)\s+(?:that\s+)?[^.!?\n]{1,160}$",
    re.IGNORECASE,
)


def _corrected_reading(text: str, match: re.Match[str]) -> bool:
    """Whether ``match`` is an elliptical "it isn't" right after a sentence that ends on someone's reading of a thing
    as something ("The team wired X to Y, reading torch's note as being about reproducibility. It isn't: …")."""
    if not ELLIPTICAL.fullmatch(match.group(0)):
        return False
    begin = _prose_sentence(text, match.start())[0]
    before = text[_prose_sentence(text, max(0, begin - 2))[0] : begin].rstrip().rstrip(".;:")
    return begin > 0 and MISREADING.search(before) is not None


#: The "No" of an answer in a question-and-answer layout ("Q: Does anything complain?" / "A: No. …").
QA_ANSWER_NO = re.compile(rf"[ \t>*_-]*{_ANSWER_LABEL}(?:no|nope)\b", re.IGNORECASE)


def _answers_a_question(text: str, match: re.Match[str]) -> bool:
    """Whether ``match`` is the "No" that opens an answer line of a question-and-answer layout."""
    line = text.rfind("\n", 0, match.start()) + 1
    answer = QA_ANSWER_NO.match(text, line)
    return answer is not None and match.start() < answer.end()


def _labelled_answer(text: str, match: re.Match[str]) -> bool:
    """Whether ``match`` is the elliptical answer a hypothesis label puts forward ("… check whether it returns the
    replicas on rank 1. Working theory: it does not, so …"; round 28): the hypothesis itself, not a retraction."""
    begin = _sentence_start(text, match.start())
    lead = text[begin : match.start()]
    label = HYPOTHESIS_LABEL.match(text, begin + len(lead) - len(lead.lstrip()))
    return label is not None and not text[label.end() : match.start()].strip()


#: A supposition an elliptical denial may answer ("as if every rank had the same count. They don't").
AS_IF = re.compile(r"\bas\s+(?:if|though)\b", re.IGNORECASE)


def _denied_supposition(text: str, match: re.Match[str]) -> bool:
    """Whether ``match`` is an elliptical denial of the supposition the sentence before it ends with ("Then the
    averages are averaged, as if every pile had the same number of words. They don't: …"; round 28): it says the
    supposition is false, which the writer never held, and takes nothing back."""
    return (
        ELLIPTICAL.fullmatch(match.group(0)) is not None
        and AS_IF.search(_sentence_before(text, match.start())) is not None
    )


def _sentence_before(text: str, at: int) -> str:
    """The sentence before the one ``at`` is in ("" in the first), what an elliptical answer at ``at`` may answer."""
    begin = _sentence_start(text, at)
    return text[_sentence_start(text, begin - 1) : begin] if begin > 0 else ""


#: The auxiliary of an elliptical answer ("They don't", "it isn't") and of a negated verb phrase ("do not reuse").
ELLIPTICAL_AUXILIARY = re.compile(r"\b(do|does|did|is|are|was|were)(?:n't|\s+not)\b", re.IGNORECASE)
#: Where the last clause of a sentence starts: what an elliptical answer after it echoes.
LAST_CLAUSE = re.compile(
    r"[,;:]\s|\s[\u2014\u2013-]+\s|\b(?:because|since|so|and|but|as|while|whereas)\s", re.IGNORECASE
)


def _echoed_negation(text: str, match: re.Match[str]) -> bool:
    """Whether ``match`` is an elliptical negative answer that echoes the negated verb phrase the sentence before it
    ends with ("… because the recomputed blocks do not reuse the forward's masks. They don't, because …"; round 30): it
    says again what that sentence said, and takes nothing back. Not an answer to a positive last clause ("…, so the
    masks differ. They don't: …")."""
    answer = ELLIPTICAL_AUXILIARY.search(match.group(0)) if ELLIPTICAL.fullmatch(match.group(0)) else None
    if answer is None:
        return False
    before = _sentence_before(text, match.start()).rstrip().rstrip(".;:!")
    clause = before[max((m.end() for m in LAST_CLAUSE.finditer(before)), default=0) :]
    negated = ELLIPTICAL_AUXILIARY.search(clause)
    return negated is not None and negated.group(1).lower() == answer.group(1).lower()


def _target(text: str, match: re.Match[str], reach: int) -> str:
    """What a withdrawal names as withdrawn: its sentence up to it ("my guess that X was wrong"),
    and what follows it when it says so ("I was wrong to blame X", "… about X"); not a new claim
    after it ("scratch that, X")."""
    end = reach if WITHDRAWN_OBJECT.match(text, match.end()) else match.end()
    return text[_sentence_start(text, match.start()) : end]


def _sentence_start(text: str, at: int) -> int:
    ends = _bounds(text, False)[1]
    before = bisect.bisect_right(ends, at)
    return ends[before - 1] if before else 0


def _on_condition(text: str, at: int) -> bool:
    """Whether the sentence (or line) holding ``at`` opens with a condition: what it says at ``at`` is
    promised for when the condition holds, not said now ("If the next run disagrees, I'll drop it"). The prose
    sentence counts too: a hard-wrapped line may break inside the condition ("If the hook lists\nmatch across ranks,
    this theory is dead"; round 26)."""
    return any(
        CONDITIONAL.match(text, begin) is not None
        for begin in (_sentence_start(text, at), _prose_sentence(text, at)[0])
    )


def _promised(text: str, at: int) -> bool:
    """Whether what is said at ``at`` is promised on a condition rather than said now. After a contrast past the first
    comma of its sentence, the contrast's own clause decides (round 43): "In principle, X would leave Y, but the diff
    shows Z, so that can't be it" says it now; "I suspect X, but if the one-rank run matches, I'll drop this" promises
    it. Otherwise the sentence's opening does (:func:`_on_condition`), or the opening of its clause after a semicolon,
    colon or dash (:func:`_clause_on_condition`). The sentence starts at a line break too ("…; shards out of
    step\nIf the next run disagrees, I'll drop it")."""
    begin = max(_sentence_start(text, at), _prose_sentence(text, at)[0])
    comma = text.find(",", begin, at)
    contrasts = [] if comma == -1 else list(CONTRAST.finditer(text, comma, at))
    if not contrasts:
        # round 45: … or the clause's own opening, after a semicolon ("Next step is to diff them; if they are
        # bitwise equal, this idea is dead")
        return _on_condition(text, at) or _clause_on_condition(text, at)
    after = contrasts[-1].end()
    return not READING_HEDGE.match(text, after) and _opens_condition(text, after)


#: A condition still to be met ("once the rerun shows it", "unless …"); not "when", which may report what happened.
PENDING_CONDITION = re.compile(r"\W*(?:once|until|unless|as\s+soon\s+as)\b", re.IGNORECASE)
#: Where a clause starts inside a sentence (after a semicolon, colon or dash).
CLAUSE_OPENER = re.compile(r"[;:]\s|\s[\u2014\u2013]\s")


def _clause_on_condition(text: str, at: int) -> bool:
    """Whether the clause holding ``at`` opens with a condition ("Plan: run both; if the ep2 displacement is 2x the ep1
    one, this is it": a confirmation promised, not made; round 38)."""
    begin, _ = _prose_sentence(text, at)
    openers = [m.end() for m in CLAUSE_OPENER.finditer(text, begin, at)]
    return bool(openers) and _opens_condition(text, openers[-1])


def _opens_condition(text: str, at: int) -> bool:
    """Whether a condition (:data:`CONDITIONAL`) or one still to be met (:data:`PENDING_CONDITION`) opens at ``at``."""
    return CONDITIONAL.match(text, at) is not None or PENDING_CONDITION.match(text, at) is not None


def withdrawn(assertion: Assertion, taken_back: Sequence[Withdrawal], *, wrong: bool, later: bool = False) -> bool:
    """Whether a withdrawal takes ``assertion`` back (``later``: only one that starts after it)."""
    return any(
        w.begin <= assertion.start < w.reach
        and (wrong or not w.wrong_only)
        and (not later or w.start > assertion.start)
        for w in taken_back
    )
