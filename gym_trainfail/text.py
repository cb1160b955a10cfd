"""Text spaces: the charset observations and actions are drawn from, and normalisation into it.

Gymnasium's ``Text.contains`` checks every character against the declared charset, so tool
output (arbitrary bytes decoded as UTF-8) is normalised: characters outside the charset are
written as escapes, and text past the space's length is cut with a notice.
"""

from __future__ import annotations

import functools

from gymnasium import spaces

OBSERVATION_MAX_CHARS = 200_000
ACTION_MAX_CHARS = 2_500_000


@functools.cache
def charset() -> frozenset[str]:
    """Tab, newline and every printable character of the Basic Multilingual Plane."""
    chars = {"\t", "\n"}
    for code in range(0x20, 0x10000):
        if 0x7F <= code <= 0x9F or 0xD800 <= code <= 0xDFFF:
            continue  # C1 controls and surrogates
        chars.add(chr(code))
    return frozenset(chars)


def observation_space() -> spaces.Text:
    return spaces.Text(max_length=OBSERVATION_MAX_CHARS, min_length=0, charset=charset())


def action_space() -> spaces.Text:
    return spaces.Text(max_length=ACTION_MAX_CHARS, min_length=1, charset=charset())


def normalize(text: str, max_chars: int = OBSERVATION_MAX_CHARS) -> str:
    """``text`` with out-of-charset characters escaped and cut to ``max_chars``."""
    allowed = charset()
    if not all(c in allowed for c in text):
        text = "".join(c if c in allowed else _escape(c) for c in text)
    if len(text) > max_chars:
        notice = f"\n[... cut at {max_chars} characters ...]"
        text = text[: max_chars - len(notice)] + notice
    return text


def _escape(char: str) -> str:
    if char == "\r":
        return "\n"
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\U{code:08x}" if code > 0xFFFF else f"\\u{code:04x}"
