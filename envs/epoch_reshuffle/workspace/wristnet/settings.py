"""Settings: a TOML file, changed key by key with ``--set section.key=value``.

A ``--set`` may only change a key the file already has (a misspelt key stops the run), and its
value is read as a TOML value, so ``train.epochs=4`` is an integer and ``data.drop_last=true``
a boolean.

``python -m wristnet.settings CONFIG KEY [--set ...]`` prints one resolved value (for shell
scripts).
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path
from typing import Any

Settings = dict[str, dict[str, Any]]


def parse_value(text: str) -> Any:
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text  # a bare word: a string


def change(settings: Settings, assignment: str) -> None:
    key, sep, text = assignment.partition("=")
    section, dot, name = key.strip().partition(".")
    if not sep or not dot:
        raise SystemExit(f"--set wants section.key=value, got {assignment!r}")
    if section not in settings or name not in settings[section]:
        raise SystemExit(f"unknown setting {key!r}")
    value = parse_value(text.strip())
    old = settings[section][name]
    if isinstance(old, float) and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if type(value) is not type(old):
        raise SystemExit(f"{key} is a {type(old).__name__}, not {text!r}")
    settings[section][name] = value


def load(path: str | Path, assignments: list[str] | tuple[str, ...] = ()) -> Settings:
    settings: Settings = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    for item in assignments:
        change(settings, item)
    return settings


def _assignments(argv: list[str]) -> list[str]:
    out, it = [], iter(argv)
    for arg in it:
        if arg == "--set":
            out.append(next(it))
        elif arg.startswith("--set="):
            out.append(arg[len("--set="):])
    return out


if __name__ == "__main__":
    config, key, *rest = sys.argv[1:]
    section, _, name = key.partition(".")
    print(load(config, _assignments(rest))[section][name])
