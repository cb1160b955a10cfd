"""One frozen scenario of TrainFail/MoEExpertGradScale-v0, as the gym's scenario request gives it.

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
#: The dense (non-expert) parameters of the README's model.
DENSE_NAMES = ("input_proj.weight", "input_proj.bias", "moe.deepspeed_moe.gate.wg.weight",
               "head.weight", "head.bias")
#: The parameters of one expert.
EXPERT_NAMES = ("0.weight", "0.bias", "2.weight", "2.bias")


@dataclass(frozen=True)
class Scenario:
    """Topology, training hyper-parameters, inputs and pass thresholds of one scenario.

    Every field below ``backend`` may be set from the scenario's ``params`` table; the
    defaults are the shipped ``configs/ep2.yaml`` values.
    """

    name: str
    kind: str
    devices: int
    backend: str
    world: int = 2
    ep: int = 2
    zero_stage: int = 2
    seed: int = 1234
    steps: int = 8
    lr: float = 0.2
    weight_decay: float = 0.01
    global_batch: int = 64
    input_dim: int = 16
    hidden_size: int = 32
    ffn_hidden_size: int = 64
    output_dim: int = 4
    num_experts: int = 4
    aux_loss_coef: float = 0.01
    #: Largest |saved parameter - reference| after the last step; grader/README.md gives the
    #: measured figures behind it.
    param_atol: float = 1e-4
    #: Largest |logged loss - reference loss| at any step.
    loss_atol: float = 1e-4
    #: Expert replicas (same global expert on different ranks) must agree this closely.
    replica_atol: float = 0.0
    run_timeout_s: float = 300.0

    def __post_init__(self) -> None:
        if not NAME_RE.match(self.name):
            raise ValueError(f"scenario name {self.name!r} is not a plain file name")
        if self.world < 1 or self.ep < 1 or self.world % self.ep or self.num_experts % self.ep:
            raise ValueError(f"ep={self.ep} must divide world={self.world} and num_experts={self.num_experts}")
        if self.global_batch % self.world or self.steps < 1:
            raise ValueError(f"global_batch={self.global_batch} must split over world={self.world}; steps >= 1")
        if self.zero_stage not in (0, 1, 2):
            raise ValueError(f"zero_stage={self.zero_stage} must be 0, 1 or 2")

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
    def local_experts(self) -> int:
        """Experts per rank."""
        return self.num_experts // self.ep

    def expert_ids(self, rank: int) -> list[int]:
        """Global expert ids rank ``rank`` holds (expert-parallel rank ``rank % ep``)."""
        first = (rank % self.ep) * self.local_experts
        return list(range(first, first + self.local_experts))

    @property
    def parameter_count(self) -> int:
        """Parameters of the full model."""
        h, f = self.hidden_size, self.ffn_hidden_size
        dense = self.input_dim * h + h + self.num_experts * h + h * self.output_dim + self.output_dim
        return dense + self.num_experts * (2 * h * f + f + h)

    @property
    def state_limit_bytes(self) -> int:
        """The most one rank's saved file may weigh: twice the full model in float32, never
        under 16 MiB."""
        return max(16 << 20, 8 * self.parameter_count)


def read_requests(path: Path) -> list[dict[str, Any]]:
    """The scenario requests of ``scenarios.json`` (a JSON list of objects)."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(raw, list) or not all(isinstance(r, dict) for r in raw):
        raise ValueError(f"{path}: expected a JSON list of scenario objects")
    return raw
