"""The scenario a harness run grades, read from the ``scenario.json`` the grader writes."""
from __future__ import annotations

import json
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Scenario:
    """One frozen scenario: topology, training hyper-parameters and pass thresholds.

    Every field below ``backend`` may be set from the scenario's ``params`` table; the
    defaults are the base scenario's values.
    """

    name: str
    kind: str
    devices: int
    backend: str
    tp: int = 2
    seed: int = 11
    steps: int = 24
    lr: float = 0.1
    batch_size: int = 64
    max_norm: float = 0.5
    input_dim: int = 16
    hidden_size: int = 32
    ffn_hidden_size: int = 128
    num_layers: int = 2
    output_dim: int = 4
    # With clipping off the logged norm does not influence training, so only the
    # parameters are compared.
    compare_grad_norm: bool = True
    param_atol: float = 1e-5
    norm_rtol: float = 1e-5
    replicated_atol: float = 0.0
    # Guard on the scenario itself: a clipping scenario must actually clip.
    min_clipped_fraction: float = 0.5
    run_timeout_s: float = 420.0

    @classmethod
    def from_json(cls, path: str | Path) -> Scenario:
        """Build from a ``scenario.json`` file."""
        return cls.from_request(json.loads(Path(path).read_text(encoding="utf-8")))

    @classmethod
    def from_request(cls, raw: dict[str, Any]) -> Scenario:
        """Build from ``{"name", "kind", "devices", "backend", "params": {...}}``."""
        known = {f.name for f in fields(cls)}
        params = raw.get("params", {})
        unknown = set(params) - known
        if unknown:
            raise ValueError(f"unknown scenario params: {sorted(unknown)}")
        return cls(name=raw["name"], kind=raw["kind"], devices=int(raw["devices"]),
                   backend=raw.get("backend", "gloo"), **params)

    @property
    def clipping(self) -> bool:
        """Whether gradient clipping is on in this scenario."""
        return self.max_norm > 0
