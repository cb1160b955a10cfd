"""One frozen scenario of @CASE_ID@ (public: the run phase reads it too).

Its params and their defaults (the base scenario) are ``params.toml``; this type adds what is
checked and computed from them.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from scenario_base import params_base  # the harness library (on the path in grading sandboxes)


@dataclass(frozen=True)
class Scenario(params_base(Path(__file__).with_name("params.toml"))):
    """Ranks, seed and the judge's tolerance."""

    def validate(self) -> None:
        if self.world_size != self.devices:
            raise ValueError(f"world_size={self.world_size} but the scenario holds {self.devices} devices")
