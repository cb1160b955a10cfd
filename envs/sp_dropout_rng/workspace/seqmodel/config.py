"""Configuration: a TOML file laid over built-in defaults, read back as attribute namespaces.

``DEFAULTS`` is itself TOML: it lists every setting a run has, and the type of its default is
the type the setting must have. ``load(path, overrides)`` lays the file over it, then each
``section.key=value`` word from the command line (the value read as a TOML literal, so
``false``, ``0.2`` and ``7`` are a bool, a float and an integer; anything else stays text). A
setting that is not in ``DEFAULTS``, or a value of another type, stops the run.

    python -m seqmodel.config configs/tp2-sp.toml parallel.tensor_model_parallel_size [k=v ...]
"""
from __future__ import annotations

import copy
import sys
import tomllib
from pathlib import Path
from types import SimpleNamespace
from typing import Any

DEFAULTS: dict[str, Any] = tomllib.loads("""
run_name = "run"
output_dir = "outputs"

[parallel]
tensor_model_parallel_size = 2
sequence_parallel = true

[model]
input_dim = 8
hidden_size = 32
ffn_hidden_size = 64
num_layers = 2
output_dim = 4
hidden_dropout = 0.1
embed_dropout = 0.1
bf16 = false

[data]
seq_length = 16
batch_size = 4
seed = 7

[train]
steps = 20
lr = 0.05
seed = 1234
log_every = 1
""")

#: What a run's code reads: ``cfg.model.hidden_size``, ``cfg.train.seed`` ...
Config = SimpleNamespace


def _checked(where: str, default: Any, value: Any) -> Any:
    if isinstance(default, float) and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if type(value) is not type(default):
        raise TypeError(f"{where} must be {type(default).__name__}, got {value!r}")
    return value


def _lay(base: dict[str, Any], layer: dict[str, Any], prefix: str = "") -> None:
    for key, value in layer.items():
        where = prefix + key
        if key not in base:
            raise KeyError(f"unknown setting {where!r}")
        if isinstance(base[key], dict):
            if not isinstance(value, dict):
                raise TypeError(f"{where} is a section, not a value")
            _lay(base[key], value, where + ".")
        else:
            base[key] = _checked(where, base[key], value)


def _literal(text: str) -> Any:
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def _default(dotted: str) -> Any:
    node: Any = DEFAULTS
    for part in dotted.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    return node


def _namespace(tree: dict[str, Any]) -> SimpleNamespace:
    return SimpleNamespace(**{k: _namespace(v) if isinstance(v, dict) else v for k, v in tree.items()})


def load(path: str | Path, overrides: list[str] | None = None) -> Config:
    """DEFAULTS, then the file at ``path``, then each ``section.key=value`` override."""
    tree = copy.deepcopy(DEFAULTS)
    _lay(tree, tomllib.loads(Path(path).read_text(encoding="utf-8")))
    for word in overrides or []:
        dotted, equals, text = word.partition("=")
        if not equals:
            raise ValueError(f"override {word!r} is not section.key=value")
        *sections, leaf = dotted.split(".")
        # text settings (names, paths) take the word as written
        layer: dict[str, Any] = {leaf: text if isinstance(_default(dotted), str) else _literal(text)}
        for section in reversed(sections):
            layer = {section: layer}
        _lay(tree, layer)
    return _namespace(tree)


if __name__ == "__main__":
    node: Any = load(sys.argv[1], sys.argv[3:])
    for part in sys.argv[2].split("."):
        node = getattr(node, part)
    print(node)
