"""Run arguments, Megatron style: one flat namespace (``args.hidden_size``, ``args.train_iters``)
read from a YAML run file, then from ``key=value`` words on the command line.

The run files (``configs/*.yaml``) keep the sections the team documents; ``YAML_TO_ARG`` says
which argument each key sets. A word on the command line names a key of the run file
(``train.steps=8``, ``deepspeed.bf16=false``); its value is read as YAML. A key that is not in
the table is refused, so a misspelt override never trains on the file's value.

The launcher reads one argument through this module::

    python -m emulator.arguments configs/tp2.yaml [key=value ...] --print tensor_model_parallel_size
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import yaml

#: run-file key -> argument name
YAML_TO_ARG = {
    "run_name": "run_name",
    "output_dir": "output_dir",
    "seed": "seed",
    "parallel.tensor_model_parallel_size": "tensor_model_parallel_size",
    "model.input_dim": "input_dim",
    "model.hidden_size": "hidden_size",
    "model.ffn_hidden_size": "ffn_hidden_size",
    "model.num_layers": "num_layers",
    "model.output_dim": "output_dim",
    "model.init_checkpoint": "load",
    "data.path": "data_path",
    "data.batch_size": "micro_batch_size",
    "train.steps": "train_iters",
    "train.lr": "lr",
    "train.log_interval": "log_interval",
    "deepspeed.bf16": "bf16",
    "deepspeed.zero_stage": "zero_stage",
    "deepspeed.gradient_clipping": "clip_grad",
}

_ARGS: argparse.Namespace | None = None


def _flatten(tree: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    for key, value in tree.items():
        if isinstance(value, dict):
            yield from _flatten(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", value


def _like(current: Any, value: Any) -> Any:
    """``value`` as the run file's type for that key: YAML reads ``1e-05`` as text, and a float
    key stays a float (an integer one an integer) when the text is a number."""
    if isinstance(value, str) and isinstance(current, (int, float)) and not isinstance(current, bool):
        try:
            return type(current)(value)
        except ValueError:
            return value
    return value


def load_args(run_file: str | Path, words: Sequence[str] = ()) -> argparse.Namespace:
    """The arguments of ``run_file`` with the ``key=value`` words applied."""
    values = dict(_flatten(yaml.safe_load(Path(run_file).read_text(encoding="utf-8")) or {}))
    for word in words:
        key, sep, text = word.partition("=")
        if not sep:
            sys.exit(f"{word!r}: expected key=value")
        values[key] = _like(values.get(key), yaml.safe_load(text))
    unknown = sorted(set(values) - set(YAML_TO_ARG))
    missing = sorted(set(YAML_TO_ARG) - set(values))
    if unknown or missing:
        sys.exit(f"{run_file}: unknown keys {unknown}, missing keys {missing}")
    args = argparse.Namespace(**{YAML_TO_ARG[key]: value for key, value in values.items()})
    args.run_file = str(run_file)
    if args.ffn_hidden_size % args.tensor_model_parallel_size:
        sys.exit(f"ffn_hidden_size {args.ffn_hidden_size} is not divisible by "
                 f"tensor_model_parallel_size {args.tensor_model_parallel_size}")
    return args


def parse_args(description: str) -> argparse.Namespace:
    """``--config RUN_FILE [key=value ...]`` from the command line, as arguments."""
    cli = argparse.ArgumentParser(description=description)
    cli.add_argument("--config", required=True, help="run file (configs/*.yaml)")
    cli.add_argument("words", nargs="*", metavar="key=value")
    ns = cli.parse_args()
    return load_args(ns.config, ns.words)


def set_args(args: argparse.Namespace) -> None:
    """Make ``args`` what :func:`get_args` answers for the rest of the run."""
    global _ARGS
    _ARGS = args


def get_args() -> argparse.Namespace:
    """The run's arguments (after :func:`set_args`)."""
    if _ARGS is None:
        raise RuntimeError("arguments are not set yet")
    return _ARGS


def run_file_view(args: argparse.Namespace) -> dict[str, Any]:
    """The resolved arguments in the run file's sections (what ``config.yaml`` records)."""
    tree: dict[str, Any] = {}
    for key, name in YAML_TO_ARG.items():
        *sections, leaf = key.split(".")
        node = tree
        for section in sections:
            node = node.setdefault(section, {})
        node[leaf] = getattr(args, name)
    return tree


if __name__ == "__main__":
    cli = argparse.ArgumentParser(description="print one resolved run argument")
    cli.add_argument("run_file")
    cli.add_argument("words", nargs="*")
    cli.add_argument("--print", dest="name", required=True)
    ns = cli.parse_args()
    print(getattr(load_args(ns.run_file, ns.words), ns.name))
