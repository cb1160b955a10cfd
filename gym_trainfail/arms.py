"""Arms: which optional tools the agent has. ``control`` has no TrainCheck; ``traincheck`` has it.

Both arms are measured from two sources (``audit`` ledger events, see :mod:`gym_trainfail.ledger`):
the host's watch on its private copies of the arm's files (:mod:`gym_trainfail.sandbox.watch`),
which nothing inside the sandbox can switch off, and the arm's hooks inside the sandbox (the
control arm's blocker, the treatment arm's usage tracker), which say more (the module, the
command line) but run in the agent's own processes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gym_trainfail.errors import TrainFailError
from gym_trainfail.paths import containers_dir


@dataclass(frozen=True)
class Arm:
    """An experimental arm: its runtime requirement set and what the agent is told."""

    name: str
    requirements: str
    blocks_traincheck: bool
    prompt_addendum: str = ""
    #: Words whose appearance in a tool call is recorded (what the arm withholds).
    watched_words: tuple[str, ...] = ()
    #: Files shown read-only in the arm's sandboxes: (path in the sandbox, path under ``containers/``).
    files: tuple[tuple[str, str], ...] = ()

    def sandbox_files(self) -> tuple[tuple[Path, str], ...]:
        """``(host file, path in the sandbox)`` of every file the arm's sandboxes show read-only."""
        return tuple((containers_dir() / source, target) for target, source in self.files)

    @property
    def requirements_file(self) -> Path:
        """The pip requirement set the arm's runtime is built from."""
        return containers_dir() / "runtime" / self.requirements


#: Labels of the files the host watches, by what an access to one means (see
#: :func:`gym_trainfail.sandbox.watch.arm_watched_paths`): TrainCheck's package and commands
#: (treatment arm; its manual is ``manual``), and the control arm's stand-ins — the decoy
#: package, the ``traincheck-*`` command shims and the blocker's refusal markers.
USE_LABELS = frozenset({"package", "command"})
BLOCKED_LABELS = frozenset({"decoy", "shim", "refusal"})


ARMS: dict[str, Arm] = {
    "control": Arm(
        name="control",
        requirements="requirements-control.txt",
        blocks_traincheck=True,
        watched_words=("traincheck",),
    ),
    "traincheck": Arm(
        name="traincheck",
        requirements="requirements-traincheck.txt",
        blocks_traincheck=False,
        prompt_addendum=(
            "TrainCheck (invariant inference and checking for training pipelines) is installed in "
            "the runtime; its manual is at /opt/trainfail/TRAINCHECK.md. Using it is optional."
        ),
        files=(("/opt/trainfail/TRAINCHECK.md", "runtime/traincheck/MANUAL.md"),),
    ),
}


def get_arm(name: str) -> Arm:
    """The arm called ``name``; unknown names list the known ones."""
    try:
        return ARMS[name]
    except KeyError:
        raise TrainFailError(f"unknown arm {name!r}; expected one of {sorted(ARMS)}") from None


#: ``audit`` reports by category (see :func:`audit_category`).
TOOL_CATEGORIES = ("traincheck", "blocked", "manual", "listed", "mention")


def audit_category(event: Mapping[str, Any]) -> str | None:
    """What an ``audit`` event shows: ``traincheck`` (TrainCheck's code or commands used),
    ``blocked`` (the control arm refused or the decoy was reached), ``manual`` (the manual read),
    ``listed`` (only a folder of them listed: ``ls``, ``find``, or a library scanning ``sys.path``)
    or ``mention`` (a tool call named TrainCheck); ``None`` for anything else."""
    report = event.get("report")
    if not isinstance(report, Mapping):
        return None
    kind = report.get("type")
    if kind == "usage":
        return "traincheck"
    if kind in ("blocked", "mention"):
        return str(kind)
    if kind != "access":
        return None
    target = report.get("target")
    if report.get("access") == "list":
        return "listed"
    if target == "manual":
        return "manual"
    if target in USE_LABELS:
        return "traincheck"
    return "blocked" if target in BLOCKED_LABELS else None
