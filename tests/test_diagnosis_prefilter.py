"""The phrasing prefilter (gym_trainfail/diagnosis/prefilter.py) only ever skips a pattern that
cannot match: attacked with the regex constructs that make a word optional, with the characters
that match ASCII letters under IGNORECASE without lowering to them, with random patterns and
texts, and on every rubric's own phrasings."""

from __future__ import annotations

import random
import re

import pytest

from gym_trainfail.cases import load_case
from gym_trainfail.diagnosis.prefilter import fold, may_match, required
from gym_trainfail.diagnosis.reading import views
from tests.test_diagnosis_reading import ENVS, RUBRIC_FOLDERS

IC = re.IGNORECASE


def needs(pattern: str, flags: int = IC) -> set[frozenset[str]]:
    return set(required(re.compile(pattern, flags)))


def test_the_words_a_phrasing_needs() -> None:
    assert needs(r"\bwarm-?up\s+is\s+over\b") == {
        frozenset({"warmup", "warm-up"}), frozenset({"over"}), frozenset({"is"})}  # fmt: skip
    # "scheduler" and "lr_scheduler" hold "schedule": it alone is looked for
    assert needs(r"\bprepare\b[^.;]{0,80}?\b(?:lr_scheduler|scheduler|schedule)\b") == {
        frozenset({"prepare"}), frozenset({"schedule"})}  # fmt: skip
    assert needs(r"(?=[^.]{0,200}?\bplanner\b)[^.]{1,200}") == {frozenset({"planner"})}  # a lookahead's words count
    assert needs(r"optimi[sz]er") == {frozenset({"optimiser", "optimizer"})}
    assert needs(r"(?:ab)+c") == {frozenset({"ab"}), frozenset({"c"})}  # a repeat ends the run: "ab" and "c" apart
    assert needs(r"(?:grad|gradient)s?\s+(?:is|are)\b") == {frozenset({"grad"}), frozenset({"is", "are"})}


@pytest.mark.parametrize(
    ("pattern", "text"),
    [
        (r"(?!foo)bar", "the BAR"),  # a negative lookaround's words are not needed
        (r"(?<!foo)bar", "the BAR"),
        (r"(?:foo)?bar", "the BAR"),
        (r"(?:foo|)bar", "the BAR"),  # an empty alternative
        (r"(?:foo){0,2}bar", "the BAR"),
        (r"(?:foo)*bar", "the BAR"),
        (r"\w+bar", "thebar"),
        (r"(?:x|[a-z]+)bar", "thebar"),  # one alternative without a word of its own
        (r"(foo)?(?(1)baz|bar)", "the bar"),  # a conditional
        (r"(b)a\1r", "babr"),  # a backreference
    ],
)
def test_an_optional_word_is_never_required(pattern: str, text: str) -> None:
    compiled = re.compile(pattern, IC)
    assert compiled.search(text)
    assert may_match(compiled, fold(text)), required(compiled)
    assert all("foo" not in one_of for one_of in required(compiled))


@pytest.mark.parametrize(
    ("pattern", "text"),
    [
        (r"\bkernel\b", "the \u212aernel"),  # KELVIN SIGN matches k under IGNORECASE
        (r"\bpass\b", "pa\u017f\u017f"),  # LONG S matches s
        (r"\binit\b", "\u0130nit"),  # I WITH DOT ABOVE: lower() makes two characters of it
        (r"\binit\b", "\u0131nit"),  # DOTLESS I
        (r"caf\u00e9", "CAF\u00c9"),  # a non-ASCII literal: its case pair matches
        (r"(?i:FOO)bar", "fooBAR"),
    ],
)
def test_characters_that_match_a_letter_without_lowering_to_it(pattern: str, text: str) -> None:
    compiled = re.compile(pattern, IC)
    assert compiled.search(text)
    assert may_match(compiled, fold(text)), required(compiled)


def test_a_case_sensitive_pattern_is_filtered_on_folded_text_too() -> None:
    compiled = re.compile(r"AcceleratedScheduler")
    assert may_match(compiled, fold("an AcceleratedScheduler"))
    assert not may_match(compiled, fold("a scheduler"))


ATOMS = ["a", "b", "ab", "ba", "k", "s", "\u00e9", r"\b", r"\s", r"\w", ".", "[ab]", "[^a]", "[a-c]", ""]


def _random_pattern(rng: random.Random, depth: int = 0) -> str:
    parts = []
    for _ in range(rng.randint(1, 4)):
        roll = rng.random()
        if depth < 3 and roll < 0.2:
            branches = [_random_pattern(rng, depth + 1) for _ in range(rng.randint(1, 3))]
            part = "(?:" + "|".join(branches) + ")"
        elif depth < 3 and roll < 0.3:
            part = rng.choice(["(?=", "(?!", "(?<="]) + rng.choice(["a", "b", "ab", "k"]) + ")"
        else:
            part = rng.choice(ATOMS)
        if part and rng.random() < 0.3:
            part = "(?:" + part + ")" + rng.choice(["?", "*", "+", "{0,2}", "{1,3}", "{2}", "+?"])
        parts.append(part)
    return "".join(parts)


def test_random_patterns_on_random_texts_never_lose_a_match() -> None:
    rng = random.Random(20261206)
    alphabet = "abcks \u212a\u017f\u00e9\u00c9AB.K"
    checked = 0
    for _ in range(3000):
        source = _random_pattern(rng)
        try:
            pattern = re.compile(source, rng.choice([IC, 0]))
        except re.error:
            continue
        for _ in range(8):
            text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
            if pattern.search(text):
                checked += 1
                assert may_match(pattern, fold(text)), (source, text, required(pattern))
    assert checked > 5000  # the attack exercised matches, not only misses


@pytest.mark.parametrize("folder", RUBRIC_FOLDERS)
def test_every_phrasing_of_a_rubric_keeps_its_matches(folder: str) -> None:
    """Each rubric's phrasings and wrong explanations, on a sample of its own statements: wherever one
    matches a view, the filter lets it run; and it skips most phrasings there (what it is for)."""
    rubric = load_case(ENVS / folder).rubric
    assert rubric is not None
    patterns = [p for c in (*rubric.concepts, *rubric.wrong, *rubric.entailed) for p in c.phrasings]
    assert all(required(p) for p in patterns), "every phrasing names a word it needs"
    sample = random.Random(folder).sample(list(rubric.fixtures), 12)
    skipped = total = 0
    for fixture in sample:
        for view in views(fixture.text):
            for pattern in patterns:
                total += 1
                if not may_match(pattern, view.folded):
                    skipped += 1
                    assert pattern.search(view.text) is None, (pattern.pattern, fixture.text)
    assert skipped > total / 2
