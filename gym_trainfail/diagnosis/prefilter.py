"""A cheap necessary condition for a phrasing to match: the words any match of it must contain.

A rubric's concepts hold hundreds of phrasings each, and the judge scans every one over every
view of a statement; most find nothing, and Python's regex engine tries each at every position
to learn that. :func:`required` reads a compiled pattern's parse tree once and gives sets of
strings such that every match contains (case folded) one string of each set: literal runs, small
finite alternations expanded, a positive lookaround's words; nothing from an optional part, a
negative lookaround, a backreference or a conditional. :func:`may_match` then skips a phrasing
whose text lacks a set. It only ever skips a pattern that could not match, so verdicts are the
same with it as without it (tests/test_diagnosis_prefilter.py checks that with optional words,
random patterns and every rubric's phrasings).

Only ASCII literals are used: under ``re.IGNORECASE`` four non-ASCII characters match ASCII
letters (``İ``, ``ı``, ``ſ``, the Kelvin sign), and :func:`fold` maps them before lowering, so a
literal found by the regex engine is always found in the folded text.
"""

from __future__ import annotations

import re
from re import _constants as sre  # type: ignore[attr-defined]
from re import _parser as sre_parse  # type: ignore[attr-defined]
from typing import Any

#: A finite language larger than this is treated as unknown (its cross products would grow fast).
MAX_STRINGS = 48
#: The characters that match an ASCII letter under IGNORECASE but do not lower to it.
_ODD = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"})

Strings = frozenset[str]


def fold(text: str) -> str:
    """``text`` as the requirements are checked against: lowered, with the odd case pairs mapped."""
    return text.translate(_ODD).lower()


def required(pattern: re.Pattern[str]) -> tuple[Strings, ...]:
    """Sets of strings such that every match of ``pattern`` contains (folded) one string of each set,
    the most selective first; empty when nothing is known (then the pattern must be run)."""
    # keyed by identity (a compiled pattern hashes its whole program each time); the entry keeps it alive
    known = _REQUIRED.get(id(pattern))
    if known is None or known[0] is not pattern:
        known = _REQUIRED[id(pattern)] = (pattern, _required(pattern))
    return known[1]


_REQUIRED: dict[int, tuple[re.Pattern[str], tuple[Strings, ...]]] = {}


def _required(pattern: re.Pattern[str]) -> tuple[Strings, ...]:
    try:
        parsed = sre_parse.parse(pattern.pattern, pattern.flags)
    except Exception:  # noqa: BLE001 - an unreadable pattern is simply run
        return ()
    _, need = _sequence(list(parsed))
    # a string that holds another of its set adds nothing ("scheduler" is found wherever "schedule" is not)
    sets = {frozenset(s for s in one_of if not any(t != s and t in s for t in one_of)) for one_of in need}
    return tuple(sorted(sets, key=lambda s: (-min(map(len, s)), len(s), sorted(s))))


def may_match(pattern: re.Pattern[str], folded: str) -> bool:
    """False only when no match of ``pattern`` can exist in the text ``folded`` came from."""
    for one_of in required(pattern):
        for string in one_of:
            if string in folded:
                break
        else:
            return False
    return True


Need = frozenset[Strings]  # every set in it is required


def _useful(strings: Strings | None) -> bool:
    return strings is not None and "" not in strings


def _best(need: Need) -> Strings | None:
    """The most selective single set of a requirement (the longer shortest string, then fewer strings)."""
    return max(need, key=lambda s: (min(map(len, s)), -len(s), sorted(s)), default=None)


def _sequence(items: list[tuple[Any, Any]]) -> tuple[Strings | None, Need]:
    """A sequence's finite language (``None`` if not finite) and what any match of it contains."""
    run: Strings = frozenset({""})
    exact: Strings | None = frozenset({""})
    need: set[Strings] = set()
    for item in items:
        lang, inner = _item(item)
        need |= inner
        if lang is None:
            if _useful(run):
                need.add(run)
            run, exact = frozenset({""}), None
            continue
        exact = _concat(exact, lang)
        longer = _concat(run, lang)
        if longer is None:  # grown too large: what it held is required; start again from this item
            if _useful(run):
                need.add(run)
            longer = lang if len(lang) <= MAX_STRINGS else frozenset({""})
        run = longer
    if _useful(run):
        need.add(run)
    return exact, frozenset(need)


def _concat(a: Strings | None, b: Strings) -> Strings | None:
    if a is None or len(a) * len(b) > MAX_STRINGS:
        return None
    return frozenset(x + y for x in a for y in b)


NOTHING: Need = frozenset()


def _item(item: tuple[Any, Any]) -> tuple[Strings | None, Need]:
    """One parsed item's finite language (``None`` for unknown) and requirement."""
    op, av = item
    if op is sre.LITERAL:
        char = chr(av)
        return (frozenset({char.lower()}), NOTHING) if char.isascii() else (None, NOTHING)
    if op is sre.AT:
        return frozenset({""}), NOTHING  # zero width
    if op is sre.IN:
        chars = set()
        for sub_op, sub_av in av:
            if sub_op is not sre.LITERAL or not chr(sub_av).isascii():
                return None, NOTHING
            chars.add(chr(sub_av).lower())
        return frozenset(chars), NOTHING
    if op is sre.SUBPATTERN:
        return _sequence(list(av[-1]))
    if op is getattr(sre, "ATOMIC_GROUP", None):
        return _sequence(list(av))
    if op is sre.BRANCH:
        langs: set[str] = set()
        needs: set[str] = set()
        finite, known = True, True
        for branch in av[1]:
            lang, need = _sequence(list(branch))
            best = _best(need | {lang} if lang is not None and _useful(lang) else need)
            if lang is None:
                finite = False
            else:
                langs |= lang
            if best is None:
                known = False
            else:
                needs |= best
        lang_out = frozenset(langs) if finite and len(langs) <= MAX_STRINGS else None
        return lang_out, (frozenset({frozenset(needs)}) if known else NOTHING)
    if op in (sre.MAX_REPEAT, sre.MIN_REPEAT, getattr(sre, "POSSESSIVE_REPEAT", None)):
        low, high, body = av
        lang, need = _sequence(list(body))
        if low >= 1 and lang is not None and _useful(lang):
            need = need | {lang}
        if lang is not None and high != sre.MAXREPEAT and high <= 3:
            out: Strings | None = frozenset({""}) if low == 0 else None
            power: Strings | None = frozenset({""})
            for count in range(1, high + 1):
                power = _concat(power, lang)
                if power is None:
                    out = None
                    break
                if count >= low:
                    out = power if out is None else frozenset(out | power)
            if out is not None and len(out) <= MAX_STRINGS:
                return out, (need if low >= 1 else NOTHING)
        return None, (need if low >= 1 else NOTHING)
    if op is sre.ASSERT:
        _, need = _sequence(list(av[1]))
        return frozenset({""}), need  # zero width; a lookaround's own text must be there too
    return None, NOTHING
