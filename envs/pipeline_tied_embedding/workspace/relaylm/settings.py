"""Run settings: a JSON file plus ``section.key=value`` overrides from the command line."""
from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Settings:
    raw: dict[str, Any]

    def get(self, dotted: str) -> Any:
        node: Any = self.raw
        for part in dotted.split("."):
            node = node[part]
        return node

    @property
    def run_dir(self) -> Path:
        return Path(self.get("output_dir")) / str(self.get("run_name"))


def _coerce(old: Any, text: str) -> Any:
    if isinstance(old, bool):
        return text.lower() in ("1", "true", "yes", "on")
    if isinstance(old, int):
        return int(text)
    if isinstance(old, float):
        return float(text)
    return text


def load(argv: list[str] | None = None) -> Settings:
    parser = argparse.ArgumentParser(prog="relaylm")
    parser.add_argument("--config", required=True, help="JSON settings file (configs/)")
    parser.add_argument("overrides", nargs="*", help="section.key=value, e.g. train.steps=20")
    args = parser.parse_args(argv)
    raw = json.loads(Path(args.config).read_text())
    for item in args.overrides:
        key, _, text = item.partition("=")
        *parents, leaf = key.split(".")
        node = raw
        for part in parents:
            node = node[part]
        if leaf not in node:
            raise SystemExit(f"unknown setting {key!r}")
        node[leaf] = _coerce(node[leaf], text)
    return Settings(raw)
