"""Run configuration: a YAML file plus ``dotted.key=value`` overrides.

Overrides may only set keys that already exist in the YAML file, so a typo fails
loudly instead of silently adding an unused key.

Also usable as a tiny CLI to read one resolved value (used by scripts/launch.sh)::

    python -m surrogate.config configs/dp2.yaml parallel.data_parallel_size [key=value ...]
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml

Config = dict[str, Any]


def load_config(path: str | Path, overrides: list[str] | tuple[str, ...] = ()) -> Config:
    """Read a YAML config and apply ``dotted.key=value`` overrides in order."""
    with open(path, encoding="utf-8") as fh:
        cfg = yaml.safe_load(fh) or {}
    for item in overrides:
        apply_override(cfg, item)
    return cfg


def apply_override(cfg: Config, item: str) -> None:
    """Set one existing key from ``dotted.key=value``; the value is parsed as YAML."""
    key, sep, raw = item.partition("=")
    if not sep:
        raise ValueError(f"override {item!r} is not of the form key=value")
    *parents, leaf = key.split(".")
    node = cfg
    for name in parents:
        if not isinstance(node.get(name), dict):
            raise KeyError(f"unknown config section {name!r} in override {item!r}")
        node = node[name]
    if leaf not in node:
        raise KeyError(f"unknown config key {key!r}")
    node[leaf] = yaml.safe_load(raw)


def get_value(cfg: Config, key: str) -> Any:
    """Return the value at a dotted key."""
    node: Any = cfg
    for name in key.split("."):
        node = node[name]
    return node


def main(argv: list[str] | None = None) -> None:
    """Print one resolved config value: ``CONFIG KEY [key=value ...]``."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) < 2:
        raise SystemExit("usage: python -m surrogate.config CONFIG KEY [key=value ...]")
    print(get_value(load_config(args[0], args[2:]), args[1]))


if __name__ == "__main__":
    main()
