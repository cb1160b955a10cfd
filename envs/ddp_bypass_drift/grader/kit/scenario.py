"""One frozen scenario of TrainFail/DDPBypassDrift-v0, as the gym's scenario request gives it.

Pure data: shared by the run kit (what to launch) and the judge (what to expect). Nothing
here is private: the run phase reads the same request from ``/io/scenarios.json``.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

#: Scenario names become file and folder names on both sides.
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
#: Initial-weight and data generators (``fixtures.py``).
FIXTURE_FLAVORS = ("grader", "prepare")


@dataclass(frozen=True)
class Scenario:
    """World size, training hyper-parameters, inputs and pass thresholds of one scenario.

    Every field below ``backend`` may be set from the scenario's ``params`` table; the
    defaults are the base scenario's values.
    """

    name: str
    kind: str
    devices: int
    backend: str
    seed: int = 11
    #: ``grader``: the grader's own generator; ``prepare``: the shipped ``gaitnet.prepare``
    #: recipe (so the shipped seed gives the shipped initial weights and data).
    fixtures: str = "grader"
    steps: int = 12
    lr: float = 0.2
    global_batch_size: int = 64
    consistency_weight: float = 0.5
    input_dim: int = 24
    hidden_size: int = 64
    embed_dim: int = 32
    num_classes: int = 6
    #: Parameters (at the start of every step and after the last) must be bitwise identical
    #: on every rank.
    replica_atol: float = 0.0
    #: Largest ||g_rank - g_spec|| / ||g_spec|| of one parameter's gradient at any step, where
    #: g_spec is the judge's float64 gradient of the global-batch objective at the recorded
    #: weights (grader/README.md gives the measured figures behind it).
    grad_rtol: float = 1e-4
    #: Largest |p_{k+1} - (p_k - lr * g_k)| between recorded steps (float32 SGD replayed).
    replay_atol: float = 1e-6
    run_timeout_s: float = 300.0

    def __post_init__(self) -> None:
        if not NAME_RE.match(self.name):
            raise ValueError(f"scenario name {self.name!r} is not a plain file name")
        if self.fixtures not in FIXTURE_FLAVORS:
            raise ValueError(f"fixtures must be one of {FIXTURE_FLAVORS}, not {self.fixtures!r}")
        if self.steps < 1 or self.devices < 1 or self.global_batch_size % self.devices:
            raise ValueError(f"steps={self.steps}, global_batch_size={self.global_batch_size} "
                             f"over {self.devices} ranks")

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
    def world(self) -> int:
        """Data-parallel ranks (one per device)."""
        return self.devices

    @property
    def rows(self) -> int:
        """Rows of the grader's dataset: every step's global batch, none reused."""
        return self.steps * self.global_batch_size

    @property
    def shapes(self) -> dict[str, tuple[int, ...]]:
        """Parameter names and shapes of the README's model at these sizes."""
        d, h, e, c = self.input_dim, self.hidden_size, self.embed_dim, self.num_classes
        return {"proj_in.weight": (h, d), "proj_in.bias": (h,), "proj_out.weight": (e, h),
                "proj_out.bias": (e,), "norm.weight": (e,), "norm.bias": (e,),
                "head.weight": (c, e), "head.bias": (c,)}

    @property
    def record_limit_bytes(self) -> int:
        """The most one rank's observer record may weigh (parameters and gradients of every
        step in float32, doubled for overhead, never under 16 MiB)."""
        count = sum(_numel(s) for s in self.shapes.values())
        return max(16 << 20, 2 * 4 * count * (2 * self.steps + 1))

    @property
    def state_limit_bytes(self) -> int:
        """The most the saved final checkpoint may weigh."""
        return max(16 << 20, 8 * sum(_numel(s) for s in self.shapes.values()))


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def read_requests(path: Path) -> list[dict[str, Any]]:
    """The scenario requests of ``scenarios.json`` (a JSON list of objects)."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(raw, list) or not all(isinstance(r, dict) for r in raw):
        raise ValueError(f"{path}: expected a JSON list of scenario objects")
    return raw
