"""How the leaderboard's figures tell agents and arms apart, the same way in every figure.

An agent has one hue (in the batch's agent order); its control arm is drawn solid in the dark
shade, its TrainCheck arm in the light shade with a dark hatch and a square marker, so the arms
stay apart in grayscale print too. The TrainCheck arm's split by activation keeps the arm's
colours and changes only the hatch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gym_trainfail.leaderboard.table import ACTIVATED, CONTROL, NOT_ACTIVATED, TREATMENT

#: (dark, light) shades of Tableau's 20-colour palette (matplotlib's ``tab20``), one pair per agent.
PAIRS: tuple[tuple[str, str], ...] = (
    ("#1f77b4", "#aec7e8"),
    ("#ff7f0e", "#ffbb78"),
    ("#2ca02c", "#98df8a"),
    ("#d62728", "#ff9896"),
    ("#9467bd", "#c5b0d5"),
    ("#8c564b", "#c49c94"),
    ("#e377c2", "#f7b6d2"),
    ("#7f7f7f", "#c7c7c7"),
    ("#bcbd22", "#dbdb8d"),
    ("#17becf", "#9edae5"),
)
#: Arms in a fixed order (control dark, TrainCheck light), whatever order a batch lists them in.
ARM_ORDER = (CONTROL, TREATMENT)
#: What a group of episodes is called in a legend: an arm, or the TrainCheck arm's split.
GROUP_LABELS = {ACTIVATED: f"{TREATMENT} (activated)", NOT_ACTIVATED: f"{TREATMENT} (not activated)"}
_GROUP_ARM = {ACTIVATED: TREATMENT, NOT_ACTIVATED: TREATMENT}
_GROUP_HATCH = {ACTIVATED: "xxx", NOT_ACTIVATED: "..."}
_ARM_HATCHES = ("", "///", "\\\\\\", "+++")
_ARM_MARKERS = ("o", "s", "D", "^")


@dataclass(frozen=True)
class Style:
    """How one agent × group is drawn: fill, edge (also hatch and whisker) colour, hatch, marker."""

    face: str
    edge: str
    hatch: str
    marker: str


class Palette:
    """The styles of one leaderboard: agents get hues in the order given, arms their fixed shade."""

    def __init__(self, agents: Sequence[str], arms: Sequence[str]) -> None:
        self._agents = list(dict.fromkeys(agents))
        self._arms = [*ARM_ORDER, *(a for a in dict.fromkeys(arms) if a not in ARM_ORDER)]

    def rank(self, group: str) -> int:
        """The position of ``group``'s arm in the fixed arm order (control 0, TrainCheck 1, …)."""
        arm = _GROUP_ARM.get(group, group)
        if arm not in self._arms:
            raise ValueError(f"group {group!r} is not one of this leaderboard's arms {self._arms} or their splits")
        return self._arms.index(arm)

    def style(self, agent: str, group: str) -> Style:
        """The style of ``agent``'s episodes in ``group`` (an arm, or the TrainCheck arm's split)."""
        if agent not in self._agents:
            raise ValueError(f"agent {agent!r} is not one of this leaderboard's agents {self._agents}")
        rank = self.rank(group)
        dark, light = PAIRS[self._agents.index(agent) % len(PAIRS)]
        hatch = _GROUP_HATCH.get(group, _ARM_HATCHES[rank % len(_ARM_HATCHES)])
        return Style(dark if rank % 2 == 0 else light, dark, hatch, _ARM_MARKERS[rank % len(_ARM_MARKERS)])


def group_label(group: str) -> str:
    """``traincheck (activated)`` for the split, the arm's own name otherwise."""
    return GROUP_LABELS.get(group, group)
