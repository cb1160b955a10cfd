"""Run configuration: `configs/train.toml`, then `section.key=value` arguments on top."""
from __future__ import annotations

import ast
import tomllib
from pathlib import Path
from types import SimpleNamespace


def _parse(text: str):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        lowered = text.lower()
        if lowered in ("true", "false"):
            return lowered == "true"
        return text


def _namespace(tree: dict) -> SimpleNamespace:
    return SimpleNamespace(**{k: _namespace(v) if isinstance(v, dict) else v for k, v in tree.items()})


def read(path: str | Path, overrides: list[str]) -> SimpleNamespace:
    tree = tomllib.loads(Path(path).read_text())
    for item in overrides:
        dotted, eq, text = item.partition("=")
        section, dot, key = dotted.partition(".")
        if not (eq and dot) or section not in tree or key not in tree[section]:
            raise SystemExit(f"unknown setting {dotted!r} (expected section.key=value)")
        value = _parse(text)
        if isinstance(tree[section][key], float) and isinstance(value, int):
            value = float(value)
        tree[section][key] = value
    return _namespace(tree)
