"""One frozen scenario of TrainFail/TPClipGradNorm-v0, as the gym's scenario request gives it.

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
    """Topology, training hyper-parameters, inputs and pass thresholds of one scenario.

    Every field below ``backend`` may be set from the scenario's ``params`` table; the
    defaults are the base scenario's values.
    """

    name: str
    kind: str
    devices: int
    backend: str
    tp: int = 2
    seed: int = 11
    #: ``grader``: the grader's own generator; ``prepare``: the shipped ``surrogate.prepare``
    #: recipe (so the shipped seed gives the shipped initial weights and data).
    fixtures: str = "grader"
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
    # parameters (and losses) are compared.
    compare_grad_norm: bool = True
    compare_loss: bool = True
    param_atol: float = 1e-5
    norm_rtol: float = 1e-5
    loss_rtol: float = 1e-5
    replicated_atol: float = 0.0
    # Guards on the scenario itself: a clipping scenario must actually clip, and one that
    # covers unclipped steps must have some.
    min_clipped_fraction: float = 0.5
    min_unclipped_steps: int = 0
    run_timeout_s: float = 420.0

    def __post_init__(self) -> None:
        if not NAME_RE.match(self.name):
            raise ValueError(f"scenario name {self.name!r} is not a plain file name")
        if self.fixtures not in FIXTURE_FLAVORS:
            raise ValueError(f"fixtures must be one of {FIXTURE_FLAVORS}, not {self.fixtures!r}")
        if self.steps < 1 or self.batch_size < 1:
            raise ValueError(f"steps={self.steps} and batch_size={self.batch_size} must be positive")
        if self.tp < 1 or self.ffn_hidden_size % self.tp:
            raise ValueError(f"ffn_hidden_size={self.ffn_hidden_size} does not split over tp={self.tp}")

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
    def parameter_count(self) -> int:
        """Parameters of the full (TP=1) model: the README's architecture at these sizes."""
        h, f = self.hidden_size, self.ffn_hidden_size
        block = 2 * h + (h * f + f) + (f * h + h)  # ln, fc1, fc2
        return (self.input_dim * h + h) + self.num_layers * block + 2 * h + (h * self.output_dim + self.output_dim)

    @property
    def state_limit_bytes(self) -> int:
        """The most one rank's saved model state may weigh: twice the full model in float32
        (room for the checkpoint's own overhead), and never under 64 MiB."""
        return max(64 << 20, 8 * self.parameter_count)

    @property
    def clipping(self) -> bool:
        """Whether gradient clipping is on in this scenario."""
        return self.max_norm > 0


def read_requests(path: Path) -> list[dict[str, Any]]:
    """The scenario requests of ``scenarios.json`` (a JSON list of objects)."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(raw, list) or not all(isinstance(r, dict) for r in raw):
        raise ValueError(f"{path}: expected a JSON list of scenario objects")
    return raw
