"""One frozen scenario of TrainFail/AdmissionBackwardOOM-v1, as the gym's scenario request gives it.

Pure data shared by the run kit and the judge; nothing here is private.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
KNOWN = {"model", "runtime", "budget_bytes", "seed", "calls", "slack", "unit_time_limit_s", "run_timeout_s"}


@dataclass(frozen=True)
class Scenario:
    name: str
    kind: str
    params: dict[str, Any] = field(default_factory=dict)
    #: priced demand may exceed the measured peak by the 1.10 safety factor and this much more
    slack: float = 0.05
    #: bound on the whole run phase of a planning-only scenario (sandbox start, interpreter and torch
    #: import, planning the ~100k-row layout, writing results), as the host measures it: the
    #: scenario is a launch unit of its own (``alone``); what the run reports is never believed
    unit_time_limit_s: float = 30.0
    #: a scenario served alone; a group gets GROUP_TIMEOUT_S in all, then stragglers alone
    run_timeout_s: float = 120.0

    @classmethod
    def from_request(cls, raw: dict[str, Any]) -> "Scenario":
        name = str(raw.get("name", ""))
        if not NAME_RE.match(name):
            raise ValueError(f"scenario name {name!r} is not a plain file name")
        params = raw.get("params", {})
        if not isinstance(params, dict):
            raise ValueError("params must be a table")
        unknown = set(params) - KNOWN
        if unknown:
            raise ValueError(f"unknown scenario params: {sorted(unknown)}")
        return cls(name=name, kind=str(raw.get("kind", "failure")), params=params,
                   slack=float(params.get("slack", 0.05)),
                   unit_time_limit_s=float(params.get("unit_time_limit_s", 30.0)),
                   run_timeout_s=float(params.get("run_timeout_s", 120.0)))


def read_requests(path: Path) -> list[dict[str, Any]]:
    raw = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(raw, list):
        raise ValueError("scenarios.json must hold a list")
    return [r for r in raw if isinstance(r, dict)]
