"""Typed view of one scenario request (an entry of ``/io/scenarios.json``).

Both phases read the same request: the run phase to launch it, the judge to regenerate its data
and know what to expect. The judge's copy comes from the host, never from the artifacts.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class DataRecipe:
    """How the grader draws the scenario's training records."""

    recipe: str
    seed: int
    records: int


@dataclass(frozen=True)
class ModelShape:
    """The model's size when a scenario sets it (``params.model``): laid over the case's
    architecture (``configs/neox_tiny.json``) in the run and in the judge's oracle alike."""

    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    intermediate_size: int

    def config_keys(self) -> dict[str, int]:
        """The architecture-config keys this shape sets."""
        return asdict(self)

    def parameter_count(self, vocab_size: int) -> int:
        """Parameters of a GPT-NeoX of this shape with untied input and output embeddings."""
        hidden, ffn = self.hidden_size, self.intermediate_size
        per_layer = (
            4 * hidden  # two LayerNorms
            + 3 * hidden * hidden + 3 * hidden  # query_key_value
            + hidden * hidden + hidden  # attention.dense
            + 2 * hidden * ffn + ffn + hidden  # the MLP
        )
        return 2 * vocab_size * hidden + self.num_hidden_layers * per_layer + 2 * hidden


#: Upper bounds of ``params.model`` (requests are data): beyond them a scenario is refused.
MODEL_BOUNDS = {"hidden_size": 8192, "num_hidden_layers": 64, "num_attention_heads": 128, "intermediate_size": 32768}
#: The largest model a scenario may ask for, in parameters (at the case's 128-token vocabulary).
MODEL_MAX_PARAMETERS = 256 * 1024 * 1024
#: Vocabulary the parameter bound is computed at (``tokkit/datagen.py``'s ids).
MODEL_VOCAB_SIZE = 128


@dataclass(frozen=True)
class Scenario:
    """One frozen scenario: topology, accumulation, clipping, seeds and data."""

    name: str
    kind: str
    backend: str
    world_size: int
    grad_accum: int
    per_device_batch_size: int
    seed: int
    steps: int
    max_grad_norm: float
    train_timeout_s: float
    data: DataRecipe
    #: The model's size; None: the case's architecture as shipped.
    model: ModelShape | None = None

    @property
    def rows_per_update(self) -> int:
        """Distinct records one optimizer update must consume across all ranks."""
        return self.per_device_batch_size * self.world_size * self.grad_accum

    @property
    def clips(self) -> bool:
        """True when the Trainer clips the global gradient norm (``max_grad_norm > 0``)."""
        return self.max_grad_norm > 0


def _positive_int(params: dict[str, Any], key: str) -> int:
    value = params[key]
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"params.{key} must be a positive integer, found {value!r}")
    return value


def _data_recipe(raw: Any) -> DataRecipe:
    if not isinstance(raw, dict):
        raise ValueError(f"params.data must be a table, found {raw!r}")
    return DataRecipe(
        recipe=str(raw["recipe"]),
        seed=int(raw["seed"]),
        records=_positive_int(raw, "records"),
    )


def _model_shape(raw: Any) -> ModelShape | None:
    """``params.model``: every key of ModelShape, positive integers within MODEL_BOUNDS."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise ValueError(f"params.model must be a table, found {raw!r}")
    keys = set(MODEL_BOUNDS)
    if set(raw) != keys:
        raise ValueError(f"params.model must set exactly {sorted(keys)}, found {sorted(map(str, raw))}")
    for key, bound in MODEL_BOUNDS.items():
        value = raw[key]
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= bound:
            raise ValueError(f"params.model.{key} must be an integer from 1 to {bound}, found {value!r}")
    shape = ModelShape(**{key: raw[key] for key in MODEL_BOUNDS})
    heads = shape.num_attention_heads
    if shape.hidden_size % heads or (shape.hidden_size // heads) % 8:
        raise ValueError(
            f"params.model: hidden_size {shape.hidden_size} must split into {heads} heads of a multiple of 8 "
            "(the rotary quarter of a head must be even)"
        )
    if shape.parameter_count(MODEL_VOCAB_SIZE) > MODEL_MAX_PARAMETERS:
        raise ValueError(f"params.model: over {MODEL_MAX_PARAMETERS} parameters")
    return shape


def scenario_from_dict(raw: dict[str, Any]) -> Scenario:
    """Build a Scenario from the grader protocol's request object."""
    params = raw["params"]
    world_size = _positive_int(params, "world_size")
    if int(raw.get("devices", world_size)) != world_size:
        raise ValueError(f"scenario {raw['name']}: devices={raw['devices']} but params.world_size={world_size}")
    max_grad_norm = float(params.get("max_grad_norm", 0.0))
    if not math.isfinite(max_grad_norm) or max_grad_norm < 0:
        raise ValueError(f"scenario {raw['name']}: max_grad_norm must be >= 0, found {max_grad_norm}")
    return Scenario(
        name=str(raw["name"]),
        kind=str(raw["kind"]),
        backend=str(raw.get("backend", "gloo")),
        world_size=world_size,
        grad_accum=_positive_int(params, "grad_accum"),
        per_device_batch_size=_positive_int(params, "per_device_batch_size"),
        seed=int(params["seed"]),
        steps=_positive_int(params, "steps"),
        max_grad_norm=max_grad_norm,
        train_timeout_s=float(params["train_timeout_s"]),
        data=_data_recipe(params["data"]),
        model=_model_shape(params.get("model")),
    )


def load_scenarios(path: Path) -> list[Scenario]:
    """Read and validate a ``scenarios.json`` request list."""
    requests = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(requests, list) or not all(isinstance(r, dict) for r in requests):
        raise ValueError(f"{path}: expected a JSON list of scenario objects")
    return [scenario_from_dict(request) for request in requests]
