"""Configuration: a TOML file plus `section.key=value` overrides from the command line."""
from __future__ import annotations

import argparse
import tomllib
from typing import Any


def _coerce(raw: str, current: Any) -> Any:
    if isinstance(current, bool):
        return raw.lower() in ("1", "true", "yes", "on")
    if isinstance(current, int):
        return int(raw)
    if isinstance(current, float):
        return float(raw)
    return raw


def load(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="twinhead.train")
    parser.add_argument("--config", default="configs/base.toml")
    parser.add_argument("overrides", nargs="*", help="section.key=value")
    args = parser.parse_args(argv)
    with open(args.config, "rb") as handle:
        cfg: dict[str, Any] = tomllib.load(handle)
    for item in args.overrides:
        key, sep, raw = item.partition("=")
        if not sep:
            raise SystemExit(f"override {item!r} is not section.key=value")
        *path, leaf = key.split(".")
        node = cfg
        for part in path:
            node = node.setdefault(part, {})
        node[leaf] = _coerce(raw, node.get(leaf, raw))
    return cfg
