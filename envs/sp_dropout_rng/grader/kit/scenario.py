"""One frozen scenario of TrainFail/SPDropoutRNG-v1, as the gym's scenario request gives it.

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


@dataclass(frozen=True)
class Scenario:
    """Topology, training settings and pass thresholds of one scenario.

    Every field below ``backend`` may be set from the scenario's ``params`` table; the
    defaults are the base scenario's values.
    """

    name: str
    kind: str
    devices: int
    backend: str
    tp: int = 2
    sequence_parallel: bool = True
    seed: int = 11
    data_seed: int = 5
    steps: int = 6
    lr: float = 0.05
    seq_length: int = 16
    batch_size: int = 4
    input_dim: int = 8
    hidden_size: int = 32
    ffn_hidden_size: int = 64
    num_layers: int = 2
    output_dim: int = 4
    hidden_dropout: float = 0.1
    embed_dropout: float = 0.1
    #: ``model.bf16``: the blocks run under bf16 autocast. The run kit then records, through
    #: the library's autocast class, the autocast every module forward ran under (a no-op on
    #: CPU ranks, where a bf16 autocast cannot run megatron-core's layers), and the judge
    #: requires every block module to have run under it.
    bf16: bool = False
    #: ``grader``: the kit passes every setting as an override; ``shipped``: the shipped
    #: configs/tp2-sp.toml as it is, only the run name, output folder and step count set.
    config: str = "grader"
    #: Largest share of equal positions allowed between two masks that must be independent
    #: (two tensor-parallel ranks' sequence chunks; one module at consecutive steps; two
    #: modules in one step). Independent masks at p = 0.1 agree on p^2 + (1-p)^2 = 0.82 of
    #: positions; grader/README.md gives the measured spread.
    max_agreement: float = 0.92
    #: Largest |dropped fraction - p| of one mask.
    rate_tolerance: float = 0.06
    #: Largest |recorded next weight - weight the judge's float64 step gives|.
    update_atol: float = 2e-5
    run_timeout_s: float = 300.0

    def __post_init__(self) -> None:
        if not NAME_RE.match(self.name):
            raise ValueError(f"scenario name {self.name!r} is not a plain file name")
        if self.config not in ("grader", "shipped"):
            raise ValueError(f"config must be 'grader' or 'shipped', not {self.config!r}")
        if self.bf16 and self.config == "shipped":
            raise ValueError("bf16 is set through the grader's overrides; the shipped config keeps it off")
        if self.steps < 1 or self.tp < 1:
            raise ValueError(f"steps={self.steps} and tp={self.tp} must be positive")
        if self.ffn_hidden_size % self.tp or self.seq_length % self.tp:
            raise ValueError(f"ffn_hidden_size={self.ffn_hidden_size} and seq_length={self.seq_length} "
                             f"must split over tp={self.tp}")

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
    def dropout_modules(self) -> list[tuple[str, float]]:
        """The README's dropout modules in call order, with their probabilities."""
        names = [("embed_dropout", self.embed_dropout)]
        names += [(f"stack.layers.{i}.hidden_dropout", self.hidden_dropout) for i in range(self.num_layers)]
        return names

    @property
    def autocast_state(self) -> str:
        """The autocast state the observer records for a module run under ``model.bf16``."""
        return f"{'cuda' if self.backend == 'nccl' else 'cpu'}:bfloat16"

    @property
    def parameter_count(self) -> int:
        """Parameters of the full (TP=1) model."""
        h, f = self.hidden_size, self.ffn_hidden_size
        block = 2 * h + (h * f + f) + (f * h + h)
        return (self.input_dim * h + h) + self.num_layers * block + 2 * h + (h * self.output_dim + self.output_dim)

    @property
    def record_limit_bytes(self) -> int:
        """The most one rank's observer record may weigh: the full model in float32 and every
        mask as bytes, per step, doubled for overhead, never under 16 MiB."""
        masks = len(self.dropout_modules) * self.seq_length * self.batch_size * self.hidden_size
        return max(16 << 20, 2 * self.steps * (4 * self.parameter_count + masks))

    @property
    def state_limit_bytes(self) -> int:
        """The most one rank's saved parameters may weigh."""
        return max(16 << 20, 8 * self.parameter_count)


def read_requests(path: Path) -> list[dict[str, Any]]:
    """The scenario requests of ``scenarios.json`` (a JSON list of objects)."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(raw, list) or not all(isinstance(r, dict) for r in raw):
        raise ValueError(f"{path}: expected a JSON list of scenario objects")
    return raw
