"""The adjudication's rubric ``diagnosis`` as flat episode-row columns: when each milestone was
reached (seconds, token range, solver device-seconds), how far the agent engaged with TrainCheck,
and how much validation it ran.

An absent or ``null`` diagnosis (older adjudications, cases without a rubric) means no milestone
data: every column is ``None`` and ``diagnosed`` is false. A diagnosis without a rubric
(``"rubric": null``) can still time the device request and the first valid submission, but not
the three rubric milestones (``rubric_judged`` false).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gym_trainfail.diagnosis.engagement import LEVELS
from gym_trainfail.diagnosis.milestones import LABELS as MILESTONE_LABELS
from gym_trainfail.diagnosis.milestones import MILESTONES

__all__ = ["ENGAGEMENT_LEVELS", "MILESTONES", "MILESTONE_LABELS", "column", "diagnosis_columns", "judge_label", "timed"]

#: The milestones only a rubric judge can find (the agent's stated diagnosis).
RUBRIC_MILESTONES = MILESTONES[:3]
#: Engagement with TrainCheck, by rank (0–4); rank ≥ :data:`ACTIVATED_RANK` means it was activated.
ENGAGEMENT_LEVELS = LEVELS
ACTIVATED_RANK = 3
#: Per-milestone episode-row column suffix → the milestone's key in the adjudication.
MEASURES = {
    "raw_s": "raw_s",
    "adjusted_s": "adjusted_s",
    "tokens_low": "tokens_low",
    "tokens_high": "tokens_high",
    "solver_dev_s": "solver_device_seconds",
}


def column(milestone: str, measure: str) -> str:
    """The episode-row column of a milestone's measure: ``m_pre_run_hypothesis_adjusted_s``."""
    return f"m_{milestone}_{measure}"


def diagnosis_columns(adjudication: Mapping[str, Any]) -> dict[str, Any]:
    """The diagnosis's episode-row columns (``None`` values where it is absent or ``null``)."""
    found = adjudication.get("diagnosis")
    diagnosed = isinstance(found, Mapping)
    diagnosis: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    milestones = diagnosis.get("milestones") or {}
    row: dict[str, Any] = {"diagnosed": diagnosed, "rubric_judged": diagnosis.get("rubric") is not None}
    heldout = diagnosis.get("judge_heldout")
    row["judge"] = diagnosis.get("judge")
    row["judge_heldout_recall"] = heldout.get("recall") if isinstance(heldout, Mapping) else None
    for name in MILESTONES:
        reached = milestones.get(name) or {}
        for suffix, key in MEASURES.items():
            row[column(name, suffix)] = reached.get(key)
    engagement = diagnosis.get("engagement")
    row["engagement_level"] = engagement["level"] if engagement else None
    row["engagement_rank"] = engagement["rank"] if engagement else None
    row["traincheck_activated"] = bool(engagement and engagement["rank"] >= ACTIVATED_RANK) if diagnosed else None
    validation = diagnosis.get("validation") or {}
    row["validation_jobs"] = validation.get("jobs")
    row["validation_device_s"] = validation.get("device_seconds")
    row["validation_distinct_commands"] = validation.get("distinct_commands")
    return row


def timed(row: Mapping[str, Any], milestone: str) -> bool:
    """Whether the episode row could have reached ``milestone`` (it has the data to time it)."""
    return bool(row["diagnosed"] and (row["rubric_judged"] or milestone not in RUBRIC_MILESTONES))


def judge_label(rows: Sequence[Mapping[str, Any]]) -> str:
    """Which judge found the rows' diagnosis milestones and its held-out recall, e.g.
    ``rubric judge (held-out recall 83%; times are upper bounds)``."""
    found = sorted({(str(r["judge"]), r.get("judge_heldout_recall")) for r in rows if r.get("judge")}, key=str)
    if rows and not any("judge" in r for r in rows):  # rows read back from a leaderboard made before this column
        return "judge not recorded"
    if not found:
        return "no judge (no rubric)"
    labels = []
    for judge, recall in found:
        held = f"held-out recall {recall:.0%}" if isinstance(recall, float) else "no held-out set"
        bound = "; times are upper bounds" if judge == "rubric" else ""
        labels.append(f"{judge} judge ({held}{bound})")
    return ", ".join(labels)
