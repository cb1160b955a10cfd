"""One frozen scenario of @CASE_ID@ (public: the run phase reads it too).

Every field below is a ``[scenario.params]`` key of ``grader/scenarios.toml`` (the defaults are
the base scenario); an unknown key is refused.
"""
from __future__ import annotations

from dataclasses import dataclass

from scenario_base import ScenarioBase  # the harness library (on the path in grading sandboxes)


@dataclass(frozen=True)
class Scenario(ScenarioBase):
    """Ranks, seed and the judge's tolerance."""

    world_size: int = 2
    seed: int = 0
    #: |reported global mean - the judge's own| allowed (float32 reductions vs float64).
    tolerance: float = 1e-6

    def validate(self) -> None:
        if self.world_size != self.devices:
            raise ValueError(f"world_size={self.world_size} but the scenario holds {self.devices} devices")
