"""Typed view of one scenario (``/io/scenario.json``)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class DataRecipe:
    """How the grader draws the scenario's training records."""

    recipe: str
    seed: int
    records: int


@dataclass(frozen=True)
class Scenario:
    """One frozen scenario: topology, accumulation, seeds and data."""

    name: str
    kind: str
    backend: str
    world_size: int
    grad_accum: int
    per_device_batch_size: int
    seed: int
    steps: int
    train_timeout_s: float
    data: DataRecipe

    @property
    def rows_per_update(self) -> int:
        """Distinct records one optimizer update must consume across all ranks."""
        return self.per_device_batch_size * self.world_size * self.grad_accum


def scenario_from_dict(raw: dict[str, Any]) -> Scenario:
    """Build a Scenario from the harness protocol's JSON object."""
    params = raw["params"]
    world_size = int(params["world_size"])
    if int(raw.get("devices", world_size)) != world_size:
        raise ValueError(
            f"scenario {raw['name']}: devices={raw['devices']} but params.world_size={world_size}"
        )
    return Scenario(
        name=str(raw["name"]),
        kind=str(raw["kind"]),
        backend=str(raw.get("backend", "gloo")),
        world_size=world_size,
        grad_accum=int(params["grad_accum"]),
        per_device_batch_size=int(params["per_device_batch_size"]),
        seed=int(params["seed"]),
        steps=int(params["steps"]),
        train_timeout_s=float(params["train_timeout_s"]),
        data=DataRecipe(
            recipe=str(params["data"]["recipe"]),
            seed=int(params["data"]["seed"]),
            records=int(params["data"]["records"]),
        ),
    )


def load_scenario(path: Path) -> Scenario:
    """Read and validate ``scenario.json``."""
    return scenario_from_dict(json.loads(path.read_text(encoding="utf-8")))
