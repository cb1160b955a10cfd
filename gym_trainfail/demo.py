"""``trainfail demo``: the first run a new user sees, timed phase by phase.

``make demo`` on a fresh machine does four things, and the demo ends with how long each took:

* **system packages**: ``scripts/bootstrap-system.sh`` (bubblewrap, patch, g++ when missing);
* **package**: the project's venv with gym-trainfail and its core dependencies only
  (``gym_trainfail/installer.py``: uv when it can be had, pip otherwise);
* **runtime**: the control arm's case runtime from its lock (built once, then reused);
* **episodes**: the reference and noop agents play the demo case, and both runs are graded.

The first two happen before ``trainfail`` exists, so they are recorded by the Makefile's steps
in ``$TRAINFAIL_PHASE_LOG`` (one ``name<TAB>start<TAB>end<TAB>note`` line each, epoch seconds)
and read back here; ``$TRAINFAIL_DEMO_STARTED`` (set by ``make demo``) says which lines belong
to this run. Run as plain ``trainfail demo``, those phases show as not part of the run.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from gym_trainfail.errors import RuntimeMissingError
from gym_trainfail.installer import PHASE_LOG_ENV
from gym_trainfail.runtimes import Progress, Runtime, build_runtime, find_runtime

DEMO_STARTED_ENV = "TRAINFAIL_DEMO_STARTED"
#: The phases of a first run, in order; ``package`` lines may carry extras (``package[dev]``).
SETUP_PHASES = ("system packages", "package")
#: A phase log line bigger than this is not one a setup step wrote.
_MAX_LINE = 2000


@dataclass
class Phase:
    """One phase of the demo: its wall-clock seconds (``None``: not part of this run)."""

    name: str
    seconds: float | None
    note: str = ""


def setup_phases(env: Mapping[str, str] | None = None) -> list[Phase]:
    """The setup phases of this ``make demo`` run, read from ``$TRAINFAIL_PHASE_LOG``: the lines
    that started after ``$TRAINFAIL_DEMO_STARTED``; a phase with none is reported as not run."""
    env = os.environ if env is None else env
    since = _epoch(env.get(DEMO_STARTED_ENV, ""))
    found: dict[str, Phase] = {}
    path = env.get(PHASE_LOG_ENV)
    lines = _read_lines(Path(path)) if path and since is not None else []
    for line in lines:
        parts = line.split("\t")
        if len(parts) != 4 or len(line) > _MAX_LINE:
            continue
        name, start, end, note = parts
        began, ended = _epoch(start), _epoch(end)
        key = "package" if name.startswith("package") else name
        if key not in SETUP_PHASES or began is None or ended is None or since is None or began < since:
            continue
        phase = found.setdefault(key, Phase(key, 0.0))
        phase.seconds = (phase.seconds or 0.0) + max(0.0, ended - began)
        phase.note = "; ".join(filter(None, [phase.note, note.strip()]))
    return [found.get(name, Phase(name, None, "done before this run")) for name in SETUP_PHASES]


def _read_lines(path: Path) -> list[str]:
    try:
        return path.read_text(errors="replace").splitlines()[-200:]
    except OSError:
        return []


def _epoch(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) and value > 0 else None


def demo_started(env: Mapping[str, str] | None = None) -> float | None:
    """When ``make demo`` started (epoch seconds), if it did."""
    return _epoch((os.environ if env is None else env).get(DEMO_STARTED_ENV, ""))


@dataclass
class PhaseClock:
    """Times the demo's own phases and assembles the whole run's table."""

    setup: list[Phase] = field(default_factory=setup_phases)
    started: float | None = field(default_factory=demo_started)
    phases: list[Phase] = field(default_factory=list)

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[Phase]:
        """Time the block as phase ``name``; the block may set the phase's ``note``."""
        phase = Phase(name, None)
        began = time.monotonic()
        try:
            yield phase
        finally:
            phase.seconds = time.monotonic() - began
            self.phases.append(phase)

    def table(self, now: float | None = None) -> list[Phase]:
        """Every phase in order, then the total: since ``make demo`` started when it did, else the
        sum of the phases that ran."""
        rows = [*self.setup, *self.phases]
        if self.started is not None:
            total = Phase("total", (now or time.time()) - self.started, "since `make demo` started")
        else:
            total = Phase("total", sum(p.seconds or 0.0 for p in rows), "of the phases above")
        return [*rows, total]


def ensure_demo_runtime(arm: str, progress: Progress) -> tuple[Runtime, str]:
    """The arm's runtime, built when missing, with a note for the phase table (how it came)."""
    try:
        runtime = find_runtime(arm)
    except RuntimeMissingError:
        runtime = build_runtime(arm, progress=progress)
        return runtime, f"built {runtime.root.name} ({_installer(runtime)})"
    return runtime, f"{runtime.root.name} already built"


def _installer(runtime: Runtime) -> str:
    try:
        meta = json.loads((runtime.root / "runtime.json").read_text())
    except (OSError, ValueError):
        return "installer unknown"
    installer = str(meta.get("installer", "pip"))
    fallback = meta.get("installer_fallback")
    return f"{installer}, because {fallback}" if fallback else installer


def format_seconds(seconds: float | None) -> str:
    """``1 min 07 s`` / ``42.1 s`` / ``—`` for a phase not run."""
    if seconds is None:
        return "—"
    if seconds >= 60:
        minutes, rest = divmod(round(seconds), 60)
        return f"{minutes} min {rest:02d} s"
    return f"{seconds:.1f} s"
