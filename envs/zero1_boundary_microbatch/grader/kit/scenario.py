"""One frozen scenario of TrainFail/ZeroBoundaryMicrobatch-v0, as the gym's scenario request gives it.

Pure data: shared by the run kit (what to launch) and the judge (what to expect). Nothing here
is private: the run phase reads the same request from ``/io/scenarios.json``.
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
#: How rank shards of a global batch relate: their own rows, or one shard repeated on every rank.
SHARD_KINDS = ("distinct", "identical")


@dataclass(frozen=True)
class Scenario:
    """Topology, split of the global batch, inputs and pass thresholds of one scenario.

    Every field below ``backend`` may be set from the scenario's ``params`` table; the defaults
    are the base values. ``devices`` is the data-parallel world size.
    """

    name: str
    kind: str
    devices: int
    backend: str
    seed: int = 11
    #: ``grader``: the grader's own generator; ``prepare``: the shipped ``surrogate.prepare``
    #: recipe (so the shipped seed gives the shipped initial weights and data).
    fixtures: str = "grader"
    shards: str = "distinct"
    micro_batch: int = 4
    #: Rows per micro-batch are ``micro_batch * row_scale`` (profiles scale batches with it).
    row_scale: int = 1
    accumulation: int = 4
    steps: int = 8
    lr: float = 0.2
    input_dim: int = 16
    hidden_size: int = 64
    num_layers: int = 2
    output_dim: int = 8
    #: Largest relative L2 error of the gradient an optimizer step applies, against the judge's
    #: float64 gradient of the global-batch mean loss at the step's weights (grader/README.md
    #: gives the measured figures behind it).
    grad_rtol: float = 2e-2
    #: Largest |recorded weight - replayed SGD step| (fp32; the replay is exact in practice).
    replay_atol: float = 1e-6
    run_timeout_s: float = 300.0

    def __post_init__(self) -> None:
        if not NAME_RE.match(self.name):
            raise ValueError(f"scenario name {self.name!r} is not a plain file name")
        if self.fixtures not in FIXTURE_FLAVORS:
            raise ValueError(f"fixtures must be one of {FIXTURE_FLAVORS}, not {self.fixtures!r}")
        if self.shards not in SHARD_KINDS:
            raise ValueError(f"shards must be one of {SHARD_KINDS}, not {self.shards!r}")
        if min(self.devices, self.micro_batch, self.row_scale, self.accumulation, self.steps, self.num_layers) < 1:
            raise ValueError("devices, micro_batch, row_scale, accumulation, steps and num_layers must be positive")

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
    def micro_rows(self) -> int:
        """Rows per rank per forward/backward (the pipeline's ``data.micro_batch_size``)."""
        return self.micro_batch * self.row_scale

    @property
    def global_batch(self) -> int:
        """Rows one optimizer step consumes: micro-batch x accumulation x ranks."""
        return self.micro_rows * self.accumulation * self.devices

    @property
    def shapes(self) -> list[tuple[str, tuple[int, ...]]]:
        """Parameter names and shapes in the model's order (the workspace README's model)."""
        dims = [self.input_dim] + [self.hidden_size] * self.num_layers + [self.output_dim]
        out: list[tuple[str, tuple[int, ...]]] = []
        for i in range(len(dims) - 1):
            out += [(f"net.{2 * i}.weight", (dims[i + 1], dims[i])), (f"net.{2 * i}.bias", (dims[i + 1],))]
        return out

    @property
    def parameter_count(self) -> int:
        """Parameters of the model."""
        total = 0
        for _, shape in self.shapes:
            n = 1
            for d in shape:
                n *= d
            total += n
        return total

    @property
    def state_limit_bytes(self) -> int:
        """The most the saved fp32 model may weigh: twice the model, never under 16 MiB."""
        return max(16 << 20, 8 * self.parameter_count)

    @property
    def record_limit_bytes(self) -> int:
        """The most one rank's observer record may weigh: weights and gradient for every step
        plus the final weights, all fp32, doubled for overhead; never under 16 MiB."""
        return max(16 << 20, 8 * (2 * self.steps + 1) * self.parameter_count)


def read_requests(path: Path) -> list[dict[str, Any]]:
    """The scenario requests of ``scenarios.json`` (a JSON list of objects)."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(raw, list) or not all(isinstance(r, dict) for r in raw):
        raise ValueError(f"{path}: expected a JSON list of scenario objects")
    return raw
