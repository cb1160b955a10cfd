"""Run configuration: a YAML file plus dotted ``key=value`` overrides from the command line."""

from __future__ import annotations

import argparse
import copy
from pathlib import Path
from typing import Any

import yaml


def parse_override(item: str) -> tuple[list[str], Any]:
    """Split ``a.b.c=value`` into its key path and a YAML-typed value."""
    key, sep, raw = item.partition("=")
    if not sep or not key:
        raise ValueError(f"override {item!r} is not of the form section.key=value")
    # YAML typing makes `3` an int, `1e-3` a float, `false` a bool, as in the config file.
    return key.split("."), yaml.safe_load(raw)


def apply_overrides(config: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """Return a copy of ``config`` with every ``section.key=value`` override applied."""
    merged = copy.deepcopy(config)
    for item in overrides:
        path, value = parse_override(item)
        node = merged
        for part in path[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ValueError(f"override {item!r}: {part!r} is not a section")
        node[path[-1]] = value
    return merged


def load_config(path: str | Path, overrides: list[str] | None = None) -> dict[str, Any]:
    """Load a YAML run configuration and apply command-line overrides."""
    with open(path, encoding="utf-8") as handle:
        config = yaml.safe_load(handle) or {}
    return apply_overrides(config, overrides or [])


def parse_args(argv: list[str] | None = None) -> dict[str, Any]:
    """Parse ``--config FILE [section.key=value ...]`` into a configuration dict."""
    parser = argparse.ArgumentParser(description="Supervised fine-tuning with the HF Trainer.")
    parser.add_argument("--config", required=True, help="YAML run configuration")
    parser.add_argument("overrides", nargs="*", help="section.key=value overrides")
    args = parser.parse_args(argv)
    return load_config(args.config, args.overrides)
