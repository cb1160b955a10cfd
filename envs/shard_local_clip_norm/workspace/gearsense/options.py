"""Run options: a JSON recipe, each field overridable with a `--field-name VALUE` flag."""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from types import SimpleNamespace

FIELDS: dict[str, type] = {
    "seed": int,
    "data_file": str,
    "init": str,
    "channels": int,
    "width": int,
    "classes": int,
    "window": int,
    "rows_per_rank": int,
    "accum_steps": int,
    "steps": int,
    "lr": float,
    "max_grad_norm": float,
    "norm_type": str,
    "out_dir": str,
}


def parse(argv: list[str] | None = None) -> SimpleNamespace:
    parser = argparse.ArgumentParser(prog="gearsense.loop")
    parser.add_argument("--recipe", default="recipes/default.json")
    for name, kind in FIELDS.items():
        parser.add_argument("--" + name.replace("_", "-"), dest=name, type=kind, default=None)
    args = parser.parse_args(argv)
    recipe = json.loads(Path(args.recipe).read_text())
    missing = sorted(set(FIELDS) - set(recipe))
    if missing:
        raise SystemExit(f"{args.recipe} lacks {missing}")
    for name, kind in FIELDS.items():
        given = getattr(args, name)
        recipe[name] = kind(recipe[name]) if given is None else given
    if recipe["norm_type"] not in ("2", "inf"):
        raise SystemExit(f"norm_type must be \"2\" or \"inf\", not {recipe['norm_type']!r}")
    if recipe["max_grad_norm"] <= 0 or recipe["accum_steps"] < 1:
        raise SystemExit("max_grad_norm must be positive and accum_steps at least 1")
    return SimpleNamespace(**recipe)
