"""How the deterministic judge reads agent prose: where a rubric phrasing is *asserted*.

A phrasing's match is an assertion unless

- a negation governs it: a negation word before it in the same clause (for the mechanism's
  concepts commas, parentheses, spaced dashes, "and"/"so" before a new subject and a subordinate
  "since"/"because"/"while"/"when" end a clause; a negated accounting verb, "doesn't account for
  X", governs the verb and leaves X asserted; "neither … nor" is one negation;
  for known wrong explanations only stronger breaks do, so "not the learning rate, padding or
  accumulation" rejects all three), or a negation word inside the match that the phrasing does
  not need (``README never documents 42`` under ``README.{0,60}42``; a phrasing written *with*
  its negation, ``doesn't account for``, keeps it);
- a denial follows it in its clause ("… is not the cause", "… is harmless", "ruled out"), or its
  sentence or list item is marked false after it ("… - rejected", "… (ruled out: …)");
- it only supposes: a conditional sentence with a modal ("If X were …, Y would …", "X would …,
  but only if …", "Had X …, Y would …", "In principle X would …"; not "If so, …" after the
  agent's own statement), a yes/no question not answered yes at once ("Could it be that X?"), or
  a question the agent means to check ("check whether X");
- it is one option in a list of candidates ("Candidates: (a) …, (b) X", "Could be A, or X") not
  marked confirmed, or an item under "Ruled out:";
- it reports an earlier belief ("earlier I said X", "my first guess was X") in its clause;
- a later withdrawal takes it back ("Edit: scratch that", "I was wrong", "that's not it", "nvm",
  "I disagree", "none of this explains it", "Update: ruled out.", a reported claim followed by
  "it is false"): a withdrawal cancels every match before the end of
  its clause. A refutation such as "that's not it" after a claim in its own sentence ("padding
  is masked, so that's not it") cancels only that sentence; a withdrawal naming a known wrong
  explanation as what it takes back only cancels wrong explanations ("I was wrong to blame the
  learning rate", "my guess that padding is counted was wrong"; not "scratch that, <new claim>").

Matching runs over three views of the statement with the same offsets back into it: as written,
without markup (backticks, brackets, asterisks, quotes; whitespace runs collapsed), and with code
identifiers split (``padded_vocab`` → ``padded vocab``, ``fc1.weight`` → ``fc1 weight``). The span
an assertion comes from is always a substring of the original statement.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

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
    r"allow(?:s|ed)?\s+for|count(?:s|ed)?|includ(?:e|es|ed)|cover(?:s|ed)?|reflect(?:s|ed)?)\b",
    re.IGNORECASE,
)
#: The agent (or its team) as the subject of a negated omission verb: "I don't consider that X" doubts X,
#: unlike "the price doesn't consider that X".
SPEAKER = re.compile(r"\b(?:i|we)(?:\s+(?:do|did|really|just|still|simply))*\s*$", re.IGNORECASE)
#: Phrases built from a negation word that do not negate ("not only", "no longer").
NOT_NEGATION = re.compile(
    r"\bnot\s+(?:only|just|merely|simply|least|surprising\w*)\b|\bno\s+(?:longer|doubt|wonder|matter)\b|"
    r"\bif\s+not\b|\bwhether\s+or\s+not\b",
    re.IGNORECASE,
)
NEITHER = re.compile(r"\bneither\b", re.IGNORECASE)
#: Where a clause ends for a concept: a negation does not reach past it.
CLAUSE_BREAK = re.compile(
    r"[;!?\n,()]|[.:](?=\s|$)|\s[-–—]+\s|—|--|\s(?:=>|->|-->|→|⇒)\s|\b(?:but|however|although|though|whereas|yet)\b"
    r"|\b(?:and|so)\s+(?=(?:the|this|that|these|those|it|they|its|their|so|then|thus|hence|therefore|each|every|both|all|"
    r"we|i|our|my|one|still|instead|also|now|nothing|none|no|nobody|neither)\b)"
    r"|(?<!\bnot\s)(?<!n't\s)(?<!\bnever\s)\b(?:because|since|while|whereas|when)\b",
    re.IGNORECASE,
)
#: Where a clause ends for a known wrong explanation (commas do not end it).
STRONG_BREAK = re.compile(r"[;!?\n]|[.:](?=\s|$)|\b(?:but|however|although|whereas)\b", re.IGNORECASE)
#: Matches of one phrasing read per view, and the sentence length read each side of a match:
#: bounded work on long or adversarial statements.
MAX_MATCHES = 64
MAX_SENTENCE = 1500
#: How far before a match a negation word is looked for.
NEGATION_REACH = 56
#: How far into a match a clause break before it may look ahead ("and" before "each", "the", "we").
BREAK_LOOKAHEAD = 16
#: A denial of what precedes it, in the same clause ("… is not the cause", "… is harmless").
DENIAL = re.compile(
    r"\b(?:is|are|was|were)\s+not\s+(?:the\s+|a\s+|an\s+)?(?:root\s+)?(?:cause|culprit|problem|issue|bug|reason|"
    r"explanation|factor)\b|\b(?:isn't|aren't|wasn't|weren't|'s\s+not|'re\s+not)\s+(?:the\s+|a\s+|an\s+)?(?:root\s+)?"
    r"(?:cause|culprit|problem|issue|bug|reason|explanation|factor)\b|\b(?:is|are|was|were|'s)\s+(?:harmless|"
    r"benign|irrelevant|a\s+red\s+herring|ruled\s+out|excluded|fine)\b|\b(?:does\s+not|doesn't|did\s+not|didn't)\s+"
    r"matter\b|\bmakes?\s+no\s+difference\b|\bhas\s+no\s+effect\b",
    re.IGNORECASE,
)
#: A verdict of "false" on the item it ends ("… - rejected", "… (ruled out: …)", "…: no").
VERDICT_FALSE = re.compile(
    r"(?:^|[\s(])(?:ruled\s+out|rejected|disproved|disproven)\b"
    r"|(?:\(\s*|\s[-–—]+\s*|—\s*|:\s*)(?:excluded|eliminated|false|wrong|no|nope|not\s+it|not\s+the\s+cause|"
    r"does\s*n[o']t\s+apply)\s*(?:[.,;:)!]|$)",
    re.IGNORECASE,
)
#: Where the clause a denial may follow in ends.
DENIAL_BREAK = re.compile(
    r"[;!?\n]|[.:](?=\s|$)|\b(?:but|however|although|whereas|while|and\s+(?:so|the|this|that|it|then))\b",
    re.IGNORECASE,
)
DENIAL_REACH = 100
#: The longest match a negation inside of which reads as a denial (longer: a sentence-level phrasing).
DENIAL_SPAN = 80
#: What limits a negation to some cases ("…, only with 2 ranks", "except at TP=1", "unless …").
SCOPE = re.compile(
    r"(?:,|\bbut|;)\s*only\s+(?:with|on|in|when|for|at|under|if|once)\b|\bexcept\b|\bunless\b", re.IGNORECASE
)
#: The agent taking back everything it said before ("scratch that", "I was wrong").
RETRACTION = re.compile(
    r"\b(?:scratch|strike|forget)\s+(?:that|this|all\s+that|the\s+above|what\s+i\s+(?:said|wrote))\b"
    r"|\b(?:disregard|ignore)\s+(?:that|this|all\s+(?:of\s+)?that|the\s+above|everything\s+above|what\s+i\s+(?:said|wrote)|"
    r"my\s+(?:earlier|previous|last|first)\b)"
    r"|\bi\s+take\s+(?:that|it|this|everything|all\s+of\s+that)\s+back\b|\bi\s+(?:hereby\s+)?(?:retract|withdraw)\b"
    r"|\b(?:retracted|withdrawn)\s*[:.!)\]]|(?:^|(?<=[.!?]\s)|(?<=\n))[\W_]*(?:retracted|withdrawn)\b"
    r"|(?<=\s)(?-i:Retracted|Withdrawn)\b|(?<=\s)(?-i:Actually|Hmm|Wait|Well),?\s+no\s*[.!,]"
    r"|\b(?:disregard|ignore)\s+(?:the|my|all|everything)\s+(?:\w+\s+){0,3}?(?:above|before\s+this)\b"
    r"|\bor\s+so\s+(?:i|we)\s+(?:thought|believed|assumed)\b"
    r"|\bnever\s*mind\b|\bnvm\b|\bi\s+stand\s+corrected\b|\bfalse\s+alarm\b"
    r"|\bi\s+was\s+(?:wrong|mistaken|incorrect)\b|\bi\s+(?:got|had)\s+(?:that|it|this)\s+wrong\b"
    r"|\b(?:the\s+above|my|this|that|the)\s+(?:earlier\s+|previous\s+|first\s+|initial\s+)?(?:theory|hypothesis|"
    r"diagnosis|explanation|analysis|reading|guess|idea|claim|conclusion|note)\s+(?:is|was)\s+(?:wrong|incorrect|false|"
    r"mistaken|disproved|disproven|refuted|ruled\s+out|not\s+right|not\s+correct|untrue|not\s+true)\b"
    r"|\bi\s+no\s+longer\s+(?:think|believe)\b|\bon\s+second\s+thoughts?\b|\bturn(?:s|ed)\s+out\s+to\s+be\s+wrong\b"
    r"|\bcorrection\s*:|\bno,?\s+wait\b|\bi\s+misread\b|\bmy\s+bad\b|\bturns?\s+out\s+i\s+(?:misread|misunderstood|was)\b"
    r"|\b(?:retract|withdraw)(?:ing|ed|n)?\s+(?:this|that|it|them|these|those|the\s+above|all\s+of\s+(?:this|that)|my\s+\w+)\b"
    r"|\b(?:retract|withdraw)(?:ing|ed|n)?\s+(?:both|all|each|every|the|these|those)\s+(?:\w+\s+){0,2}?(?:bullets?|points?|"
    r"items?|claims?|lines?|statements?|notes?|steps?)\b",
    re.IGNORECASE,
)
#: The agent reporting what it believed before ("earlier I said …", "my first guess was …"): what
#: follows in that clause is not its current belief.
PAST_BELIEF = re.compile(
    r"\b(?:earlier|previously|before|initially|at\s+first|first|originally)\s*,?\s+i\s+(?:said|claimed|thought|wrote|"
    r"assumed|suggested|believed|suspected|guessed|blamed)\b"
    r"|\bi\s+(?:had\s+)?(?:earlier|previously|initially|first|originally)\s+(?:said|claimed|thought|wrote|assumed|suggested|"
    r"believed|suspected|guessed|blamed)\b|\bi\s+(?:used\s+to\s+think|had\s+thought)\b"
    r"|\b(?:initially|at\s+first|originally|earlier)\s*,?\s+it\s+(?:looked|seemed|appeared)\s+(?:as\s+if|as\s+though|like|that)\b"
    r"|\bmy\s+(?:earlier|previous|first|initial|original|last)\s+(?:claim|guess|theory|hypothesis|diagnosis|idea|reading|"
    r"analysis|message|statement|conclusion|suspicion)\b",
    re.IGNORECASE,
)
#: The agent declaring something just said false ("that's not it", "it is false"): at the start of
#: a sentence it takes back everything before; after a claim in its own sentence ("padding is
#: masked, so that's not it") only that sentence.
REFUTATION = re.compile(
    r"\b(?:that's|that\s+is|that\s+was|this\s+is|this\s+was|it's|it\s+is|it\s+was)\s+not\s+it\b"
    r"|\bnot\s+it\s+after\s+all\b|\bnot\s+the\s+(?:cause|problem|culprit|issue|bug)\s+after\s+all\b"
    r"|\b(?:that's|that\s+is|that\s+was|this\s+is|this\s+was|which\s+is)\s+not\s+(?:the|our|what)\s+(?:issue|cause|problem|"
    r"culprit|bug|explanation|mechanism|failure|happening|happens|happened)\b"
    r"|\b(?:that|this|it)\s+(?:isn't|wasn't|is\s+not|was\s+not)\s+(?:true|correct|right)\b"
    r"|\b(?:that|this)\s+(?:isn't|wasn't|is\s+not|was\s+not)\s+the\s+case\b(?!\s+that)"
    r"|\b(?:that's|that\s+is|that\s+was|it's|it\s+is|it\s+was|this\s+is|this\s+was|which\s+is|which\s+was)\s+"
    r"(?:false|untrue|not\s+true|not\s+correct|incorrect)\b"
    r"|\b(?:that's|that\s+is|that\s+was|it's|it\s+is|it\s+was|this\s+is|this\s+was)\s+(?:wrong|mistaken)\s*"
    r"(?:[.;:!,—–-]|$|after\s+all)"
    r"|\b(?:that's|that\s+is|it's|it\s+is|this\s+is)\s+no\s+longer\s+(?:true|the\s+case|correct|right)\b"
    r"|\b(?:i|we)\s+(?:\w+\s+){0,3}?disagree\b|\b(?:i|we)\s+(?:don't|do\s+not|can't|cannot)\s+agree\b(?!\s+more)"
    r"|\b(?:that's|it's|this's)\s+not\s+(?:true|correct|right)\b"
    r"|\b(?:shows?|showed|says?|said|suggests?|suggested|indicates?|indicated|proves?|proved|tells?\s+us)\s+otherwise\b"
    r"|\bi\s+(?:doubt|question)\s+(?:it|that|this)\b"
    r"|\bi\s+(?:don't|do\s+not)\s+(?:think|believe)\s+(?:(?:that's|that\s+is|this\s+is|it's|it\s+is)\s+(?:it|right|correct|"
    r"true|the\s+(?:cause|issue|problem|culprit|explanation))\b|so\b)|\bi\s+(?:don't|do\s+not)\s+buy\s+(?:it|that|this)\b"
    r"|\b(?:this|that|it)\s+(?:can't|cannot|can\s+not|couldn't|could\s+not)\s+(?:apply|be\s+(?:it|right|true|correct|"
    r"the\s+(?:cause|issue|problem|explanation)))\b"
    r"|\b(?:none\s+of\s+(?:this|that|these|those|it|them|the\s+above)|(?:this|that|these|those|it|they)(?:\s+\w+)?)\s+"
    r"(?:doesn't|does\s+not|don't|do\s+not|can't|cannot|didn't|did\s+not)\s+explain\b"
    r"|\bnone\s+of\s+(?:this|that|these|those|the\s+above)\s+explains?\b"
    r"|\b(?:ruled\s+out|disproved|disproven|refuted|falsified|debunked)\s*(?=[.!;\n]|$)"
    r"|\b(?:is|was|are|were|has\s+been|have\s+been)\s+(?:refuted|disproved|disproven|falsified|contradicted|debunked)\b"
    r"|\b(?:isn't|is\s+not|wasn't|was\s+not)\s+what\s+(?:\w+\s+){0,2}?(?:does|do|did|happens|happened|is\s+going\s+on|"
    r"is\s+happening)\b"
    r"|\b(?:contradict(?:s|ed)?|disprove(?:s|d)?|refute(?:s|d)?|falsif(?:y|ies|ied)|rule(?:s|d)?\s+out)\s+(?:it|this|that|them|"
    r"the\s+above|my\s+\w+|all\s+of\s+that|the\s+(?:claim|theory|idea|hypothesis|note|finding|diagnosis|explanation))\b"
    r"|\brule(?:s|d)?\s+(?:it|this|that)\s+out\b"
    r"|(?:^|(?<=[.!?]\s)|(?<=\n))[\W_]*(?:edit|update|correction|actually|nope|no)\b(?:\s*\d+)?[\W_]*(?:(?:that's|that\s+is|"
    r"this\s+is|it's|it\s+is)\s+)?(?:wrong|false|incorrect|mistaken|not\s+it)\b"
    r"|(?:^|(?<=[.!?]\s)|(?<=\n))[\W_]*(?:(?:actually|hmm+|wait|well|edit|update)[\W_]+)?(?:no|nope)\s*[.!](?=\s|$)"
    r"|\bnot\s+what(?:'s|\s+is|\s+was)\s+(?:happening|going\s+on)\b"
    r"|\b(?:doesn't|does\s+not|didn't|did\s+not)\s+hold\s+(?:up|water)?\s*(?:(?:in\s+my\s+(?:view|opinion|reading)|to\s+scrutiny|"
    r"under\s+(?:scrutiny|testing)|here|either)\s*)?(?=[.;:!,—–-]|$)"
    r"|\b(?:this|that|it)\s+(?:doesn't|does\s+not)\s+apply\b",
    re.IGNORECASE,
)
#: Words before a refutation that are not a claim of their own ("Edit:", "Update: the probe …").
PREAMBLE = re.compile(
    r"(?:\W|\b(?:edit|update|actually|nvm|so|but|and|hmm+|no|wait|ok(?:ay)?|well|however|on\s+reflection|in\s+fact|"
    r"after\s+all|unfortunately|sadly|the|a|this|that|my|probe|data|run|output|numbers?|results?|test|experiment|"
    r"check|measurement|logs?|digests?|now|then|again|new|latest|second|i|we|it|checked|looked|tested|measured|"
    r"re-?runs?|repro|trace|profiler?|benchmark|evidence|experiments?|tests|probes|checks|"
    r"verified|profiled|traced|logged|ran|reran|with|our|versions?|code|source|here|myself|ourselves)\b)*",
    re.IGNORECASE,
)
#: A refutation that names what came before as its object ("none of this", "the list above"): it
#: takes back everything before it, wherever it stands in its sentence.
BACKREF = re.compile(
    r"\b(?:above|none\s+of|all\s+of|these|those|contradict\w*|disprove\w*|refute\w*|falsif\w*|rule\w*\s+(?:it|this|that)?\s*out)\b",
    re.IGNORECASE,
)
#: A sentence opening with an anaphor ("That would be a fair guess, but it isn't what this code does"):
#: a refutation in it is about what came before.
ANAPHORIC_START = re.compile(r"[\W_]*(?:that|this)\s+(?:would|might|could|is|was|sounds|seems|looks)\b", re.IGNORECASE)
#: A retraction that only dismisses ("ignore that"): after a remark in its own sentence ("the CSV logger
#: warns about fp16, ignore that") it dismisses that remark, not everything before.
DISMISSAL = re.compile(r"(?:disregard|ignore)\s+(?:that|this)", re.IGNORECASE)
#: Where a withdrawal's reach ends (matches before this point in its clause are taken back).
WITHDRAWAL_END = re.compile(r"[;!?\n]|[.:](?=\s|$)|\s[-–—]+\s")
SENTENCE_BREAK = re.compile(r"[!?\n]|[.][\x22\u201d\u2019]*(?=\s|$)")
#: A sentence that only supposes ("If …, … would", "Suppose …").
CONDITIONAL = re.compile(
    r"\W*(?:if|what\s+if|suppose|supposing|assuming|imagine|hypothetically|in\s+(?:principle|theory)|theoretically|"
    r"(?:had|were|should)\s+(?!(?:a|an|to)\b)\w)",
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
PROSE_SENTENCE_END = re.compile(r"[!?]|[.][\x22\u201d\u2019]*(?=\s|$)|\n\s*\n|\n(?=\s*(?:[-*•]|\d+[.)])\s)")
MODAL = re.compile(r"\b(?:were|would|could|might)\b", re.IGNORECASE)
ONLY_IF = re.compile(r"\bonly\s+if\b", re.IGNORECASE)
#: A yes/no question: a sentence ending in "?" that opens with an auxiliary verb or a "maybe" ("Is X …?",
#: "Could it be that X?", "So does X …?"); "why"/"what" questions are not (they often introduce the answer).
YES_NO_QUESTION = re.compile(
    r"\W*(?:(?:so|and|but|hmm+|wait|ok(?:ay)?|now|then|or)[,.]?\s+)?(?:is|are|was|were|does|do|did|could|can|would|might|"
    r"may|should|has|have|will|maybe|perhaps|possibly|what\s+if|how\s+about)\b",
    re.IGNORECASE,
)
#: An immediate yes to a question ("? Yes: …", "? It does."): the question then asserts.
ANSWER_YES = re.compile(
    r"[\s*_]*(?:yes|yep|yeah|indeed|exactly|confirmed|correct|it\s+(?:is|does|did|was)|they\s+(?:are|do|did|were))\b",
    re.IGNORECASE,
)
#: A label that opens a list of candidates ("Candidates:", "Possible causes:", "Hypotheses:", "Suspects,
#: none confirmed yet:") or of rejected explanations ("Ruled out:"): its items are options or
#: rejections, not assertions, unless an item is marked confirmed.
CANDIDATES = re.compile(
    r"(?:^|(?<=[.!?]\s)|(?<=\n))[\W_]*(?!root\b)(?:(?:open|possible|remaining|current|candidate|likely|potential|several|"
    r"two|three|four|five|some|the|other|competing|alternative)\s+){0,2}"
    r"(?:candidates?|causes|explanations|hypothes[ei]s|ideas|suspects|options|theories|possibilities|ruled\s+out|"
    r"rejected|excluded|eliminated|dismissed)\b[^:\n]{0,40}:",
    re.IGNORECASE,
)
#: A hedged sentence of alternatives ("Could be A, B, or C."): each alternative only an option.
HEDGED_ALTERNATIVES = re.compile(
    r"[\W_]*(?:(?:it\s+)?(?:could|might|may)\s+be|maybe|perhaps|possibly)\b", re.IGNORECASE
)
ALTERNATIVE = re.compile(r"\bor\b", re.IGNORECASE)
#: An item of a candidate list marked as the one that holds.
CONFIRMED = re.compile(
    r"(?<!\bnot\s)(?<!\bnone\s)(?<!\bun)\b(?:confirmed|verified|this\s+is\s+it|that's\s+it|the\s+cause)\b|[✓✔]",
    re.IGNORECASE,
)
INLINE_ITEM = re.compile(r"[,;]?\s+\(?[a-z0-9]\)\s", re.IGNORECASE)
LIST_ITEM = re.compile(r"[ \t]*(?:[-*•]|\d+[.)]|\(?[a-z0-9]\))\s")
#: A sentence that opens by denying all of it ("Not that …", "It isn't true that …") or by voicing
#: someone else's possible view ("Someone might say …", "One could argue …"); "Not that it matters" is
#: an aside, not a denial.
SENTENCE_DENIAL = re.compile(
    r"[\W_]*(?:not\s+that\b(?!\s+it\s+matters)|it(?:'s|\s+is|\s+was)\s+not\s+(?:true|the\s+case)\s+that\b|"
    r"it\s+(?:isn't|wasn't)\s+(?:true|the\s+case)\s+that\b|"
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
CONTRAST = re.compile(r"\b(?:but|however|yet|instead|rather)\b|;", re.IGNORECASE)
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


@dataclass(frozen=True)
class View:
    """A statement as the judge reads it: ``text`` and, per character, its offset in the
    statement (``origin``), so spans found here are quoted from the statement itself."""

    text: str
    origin: tuple[int, ...]
    #: The statement as written (denials and verdicts are also read there: markup can carry them).
    source: str = ""

    def span(self, start: int, end: int) -> tuple[int, int]:
        """The statement's ``[start, end)`` that this view's ``[start, end)`` came from."""
        if end <= start:
            return self.origin[start], self.origin[start]
        return self.origin[start], self.origin[end - 1] + 1


def views(statement: str) -> list[View]:
    """The statement as written, without markup, and with code identifiers split."""
    found = [View(statement, tuple(range(len(statement))), statement)]
    for split in (False, True):
        view = _normalised(statement, split_identifiers=split)
        if view.text not in {v.text for v in found}:
            found.append(view)
    return found


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


def assertions(
    patterns: Sequence[re.Pattern[str]], view: View, *, wrong: bool, live: Callable[[Assertion], bool] = bool
) -> list[Assertion]:
    """Per phrasing, its first match in ``view`` that asserts what it says (not negated, denied,
    supposed or reported) and that ``live`` accepts (not withdrawn later), as a span of the
    original statement; at most :data:`MAX_MATCHES` matches of a phrasing are read (bounded work
    on long or adversarial text)."""
    return _first_per_phrasing(patterns, view, lambda p, m, at: live(at) and _asserts(p, m, view, at, wrong=wrong))


def denials(
    patterns: Sequence[re.Pattern[str]], view: View, *, live: Callable[[Assertion], bool] = bool
) -> list[Assertion]:
    """Per phrasing, its first match in ``view`` that the agent *denies* as its own current belief
    ("the replicas do not drift apart", "… is not the cause", "Not that X", "X - rejected"): negated
    or marked false, and neither supposed, asked, one candidate among others, an earlier belief nor
    withdrawn later (``live``). A concept the mechanism entails but does not require is read this way:
    leaving it out is fine, denying it contradicts the mechanism."""
    return _first_per_phrasing(
        patterns, view, lambda p, m, at: live(at) and _reading(p, m, view, at, wrong=False) == "denied"
    )


def _first_per_phrasing(
    patterns: Sequence[re.Pattern[str]],
    view: View,
    accept: Callable[[re.Pattern[str], re.Match[str], Assertion], bool],
) -> list[Assertion]:
    """Per phrasing, its first non-empty match in ``view`` that ``accept`` takes, as a span of the
    original statement, in statement order; at most :data:`MAX_MATCHES` matches of a phrasing are
    read (bounded work on long or adversarial text)."""
    found = []
    for pattern in patterns:
        for n, match in enumerate(pattern.finditer(view.text)):
            if n >= MAX_MATCHES:
                break
            if match.end() == match.start():
                continue
            at = Assertion(*view.span(match.start(), match.end()))
            if accept(pattern, match, at):
                found.append(at)
                break
    return sorted(found, key=lambda a: a.start)


def _asserts(pattern: re.Pattern[str], match: re.Match[str], view: View, at: Assertion, *, wrong: bool) -> bool:
    return _reading(pattern, match, view, at, wrong=wrong) == "asserted"


def _reading(pattern: re.Pattern[str], match: re.Match[str], view: View, at: Assertion, *, wrong: bool) -> str:
    """How the match reads: "asserted", "denied" (negated or marked false) or "open" (supposed,
    asked, a candidate, or an earlier belief: neither asserted nor denied)."""
    if _candidate(view.source, at.start):  # read as written: list markers like "(b)" are markup in the views
        return "open"
    if _hypothetical(view.text, match.start()) or _reported_past(view.text, match.start(), match.end()):
        return "open"
    if _negated_before(view.text, match, wrong=wrong):
        return "open" if _scoped(view.text, match.end()) else "denied"
    if _negated_inside(pattern, match, wrong=wrong):
        # a negation inside a short phrasing denies it ("the replicas do not drift"); inside a long,
        # sentence-level match it may belong to another claim of that sentence: not a denial
        return (
            "denied" if match.end() - match.start() <= DENIAL_SPAN and not _scoped(view.text, match.end()) else "open"
        )
    pairs = ((view.text, match.start(), match.end()), (view.source, at.start, at.end))
    if any(_denied_after(t, e) or _judged_false(t, b) for t, b, e in pairs):
        return "denied"
    if _denied_sentence(view.text, match.start()):
        return "open" if _voiced_by_others(view.text, match.start()) else "denied"
    return "asserted"


def _negated_before(text: str, match: re.Match[str], *, wrong: bool) -> bool:
    before = text[max(0, match.start() - NEGATION_REACH) : match.start()]
    # the breaks are found with the match's first words in view: "… not averaged and each rank …" breaks
    # before "each" even when the match starts at "each" (the break's lookahead needs that word)
    window = before + text[match.start() : match.start() + BREAK_LOOKAHEAD]
    breaks = [b for b in (STRONG_BREAK if wrong else CLAUSE_BREAK).finditer(window) if b.end() <= len(before)]
    clause = before[breaks[-1].end() :] if breaks else before
    return any(
        wrong or not OMISSION.match(clause, n.end()) or SPEAKER.search(clause, 0, n.start()) for n in negations(clause)
    )


def _negated_inside(pattern: re.Pattern[str], match: re.Match[str], *, wrong: bool) -> bool:
    """Whether a negation word inside the match negates it: the match needs the words of the
    negation's clause (it does not survive with that clause blanked out) but not the negation word
    itself (it survives with only the word blanked out: the phrasing was not written with it)."""
    text = match.group(0)
    breaks = STRONG_BREAK if wrong else CLAUSE_BREAK
    for negation in negations(text):
        stop = breaks.search(text, negation.end())
        clause_end = stop.start() if stop else len(text)
        if _survives(pattern, text, negation.start(), clause_end):
            continue  # the claim stands without the negated clause: "averaging, not summing, over its own"
        if not _survives(pattern, text, negation.start(), negation.end()):
            continue  # the phrasing needs the word: "doesn't account for", "no tensor_model_parallel"
        return True
    return False


def _survives(pattern: re.Pattern[str], text: str, start: int, end: int) -> bool:
    """Whether ``pattern`` still matches ``text`` with ``[start, end)`` blanked out."""
    return pattern.search(text[:start] + "x" * (end - start) + text[end:]) is not None


def _hypothetical(text: str, at: int) -> bool:
    """Whether the match at ``at`` sits in a conditional sentence ("If X were …, Y would …"), in a
    yes/no question ("Could it be that X?", "Is X …?") or in a question the agent means to check
    ("check whether X")."""
    begin, stop = _prose_sentence(text, at)
    sentence = text[begin:stop]
    if (_supposes(text, begin, sentence) or ONLY_IF.search(sentence)) and MODAL.search(sentence):
        return True
    if text.startswith("?", stop) and YES_NO_QUESTION.match(sentence) and not ANSWER_YES.match(text, stop + 1):
        return True  # "Is X …?" asks, unless answered "Yes, …" at once
    breaks = list(CLAUSE_BREAK.finditer(text, begin, at))
    clause = breaks[-1].end() if breaks else begin
    if OPEN_QUESTION.search(text[clause:at]):
        return True
    if text[clause:at].strip():
        return False
    # the match starts its clause (a sentence-level phrasing): read the clause's opening words too,
    # after a label ("Plan: check whether …", "Next step: verify whether …")
    lead = text[at : at + OPEN_QUESTION_LEAD]
    label = LABEL.match(lead)
    lead = lead[label.end() if label else 0 :]
    cut = CLAUSE_BREAK.search(lead)
    return bool(OPEN_QUESTION.search(lead[: cut.start() if cut else len(lead)]))


def _denied_sentence(text: str, at: int) -> bool:
    """Whether the match at ``at`` is in a sentence that opens by denying or by voicing someone
    else's possible view ("Not that X …", "It is not true that X …", "Someone might say X"), up to
    a contrast ("…, but Y") that starts the agent's own claim."""
    begin = _prose_sentence(text, at)[0]
    opening = SENTENCE_DENIAL.match(text, begin)
    if opening is None:
        return False
    contrast = CONTRAST.search(text, opening.end(), at)
    return contrast is None


def _scoped(text: str, end: int) -> bool:
    """Whether the rest of the sentence after ``end`` limits a negation to some cases ("they don't
    drift in a single-process run, only with 2 ranks", "… except at TP=1", "… unless …"): such a
    negation says where the claim does not hold, not that it is false."""
    return bool(SCOPE.search(text, end, _prose_sentence(text, end)[1]))


def _voiced_by_others(text: str, at: int) -> bool:
    """Whether the sentence of ``at`` opens by voicing or reporting someone else's view ("Someone
    might say X", "A teammate claimed X"): not the agent's denial."""
    opening = SENTENCE_DENIAL.match(text, _prose_sentence(text, at)[0])
    return opening is not None and not re.match(r"[\W_]*(?:not\b|it\b)", opening.group(0), re.IGNORECASE)


def _candidate(text: str, at: int) -> bool:
    """Whether the match at ``at`` is one option in a list of candidates: its sentence opens a
    candidates label before it ("Candidates: (a) …, (b) …") or is a hedged list of alternatives
    ("Could be A, B, or C"), or it is an item of a list whose line before it is such a label; an
    item marked confirmed after the match is not an option any more."""
    begin, stop = _prose_sentence(text, at)
    following = INLINE_ITEM.search(text, at + 1, stop)  # an inline list's next item: "…, (b) …"
    if CONFIRMED.search(text, at, following.start() if following else stop):
        return False
    sentence = text[begin:stop]
    if HEDGED_ALTERNATIVES.match(sentence) and ALTERNATIVE.search(sentence):
        return True
    if CANDIDATES.search(text, begin, at) or CANDIDATES.match(sentence):
        return True
    line_start = text.rfind("\n", 0, at) + 1
    if not LIST_ITEM.match(text, line_start):
        return False
    # walk back over the list's items (bounded) to the line that introduces the list
    for _ in range(MAX_LIST_ITEMS):
        if line_start == 0:
            return False
        line_start = text.rfind("\n", 0, line_start - 1) + 1
        if not LIST_ITEM.match(text, line_start):
            return bool(CANDIDATES.search(text[line_start : text.find("\n", line_start)]))
    return False


def _supposes(text: str, begin: int, sentence: str) -> bool:
    """Whether the sentence starting at ``begin`` opens as a supposition: a conditional, unless it
    draws a consequence of the agent's own claim just before ("If so, …" after a statement; not
    after a question or another supposition)."""
    if not CONDITIONAL.match(sentence):
        return False
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
    return bool(PAST_BELIEF.search(text, breaks[-1].end() if breaks else begin, end))


def _judged_false(text: str, start: int) -> bool:
    """Whether the agent marks the claim starting at ``start`` false in the rest of its sentence
    or list item ("… - rejected", "… (ruled out: …)")."""
    return bool(VERDICT_FALSE.search(text, start, _prose_sentence(text, start)[1]))


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


def _denied_after(text: str, end: int) -> bool:
    after = text[end : end + DENIAL_REACH]
    stop = DENIAL_BREAK.search(after)
    return bool(DENIAL.search(after[: stop.start()] if stop else after))


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


def withdrawals(statement: str, wrong_patterns: Sequence[re.Pattern[str]]) -> list[Withdrawal]:
    """The statement's withdrawals, in order."""
    found = []
    for kind, regex in (("retraction", RETRACTION), ("refutation", REFUTATION)):
        for match in regex.finditer(statement):
            stop = WITHDRAWAL_END.search(statement, match.end())
            reach = stop.start() if stop else len(statement)
            target = _target(statement, match, reach)
            wrong_only = any(p.search(target) for p in wrong_patterns)
            begin = _sentence_start(statement, match.start())
            local = (
                (kind == "refutation" or DISMISSAL.fullmatch(match.group(0)) is not None)
                and PREAMBLE.fullmatch(statement, begin, match.start()) is None
                and BACKREF.search(match.group(0)) is None
                and ANAPHORIC_START.match(statement, begin) is None
            )
            found.append(Withdrawal(match.start(), reach, wrong_only, begin if local else 0))
    return sorted(found, key=lambda w: w.start)


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


def withdrawn(assertion: Assertion, taken_back: Sequence[Withdrawal], *, wrong: bool) -> bool:
    """Whether a later withdrawal takes ``assertion`` back."""
    return any(w.begin <= assertion.start < w.reach and (wrong or not w.wrong_only) for w in taken_back)
