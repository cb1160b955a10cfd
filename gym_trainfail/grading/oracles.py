"""Cached oracles and fixtures: what a case computes once, with no revision anywhere near it.

A case that declares ``grader.oracle_command`` has revision-independent references (trusted
same-topology runs): each is computed once per (case version, scenario, topology) in a sandbox
whose workspace is empty, kept under ``$TRAINFAIL_HOME/oracles`` and mounted read-only for every
revision's judge at ``/oracle/<scenario>``.

A case that declares ``grader.fixtures_command`` has public inputs every run phase would
otherwise rebuild (authentic checkpoints, datasets): computed once per case version from the run
kit alone (the sandbox sees ``/kit``, never the rest of ``grader/``), kept under
``$TRAINFAIL_HOME/fixtures`` and mounted read-only at ``/fixtures`` in every run phase. Run kits
should still build them when ``/fixtures`` is absent (a fixture that could not be made only costs
time).
"""

from __future__ import annotations

import fcntl
import json
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from gym_trainfail.cases import Scenario
from gym_trainfail.grading.phases import HARNESSLIB_DIR, HARNESSLIB_MOUNT, KIT_MOUNT, Phases
from gym_trainfail.hashing import bytes_digest
from gym_trainfail.paths import home
from gym_trainfail.sandbox import Mount

#: Marks a complete oracle or fixtures folder.
ORACLE_DONE = ".complete"
#: ``compute(scratch)``: the folder it made there (``None`` when its command failed), and the
#: device- and queue-seconds that took.
Compute = Callable[[Path], tuple[Path | None, tuple[float, float]]]


class _Computed:
    """Folders computed once each by a trusted command (``--out-dir /io/made``) in a fresh
    sandbox whose workspace is empty, kept under ``$TRAINFAIL_HOME/<kind>`` (or, not
    ``persistent``, in a folder that lives as long as the grader). Concurrent graders on a node
    compute each once (a lock file); a folder without its completion mark is never used."""

    kind = ""

    def __init__(
        self, phases: Phases, grader_hash: str, command: Sequence[str], *, retries: int, persistent: bool = True
    ) -> None:
        self.phases, self.grader_hash, self.retries = phases, grader_hash, retries
        self.command = tuple(command)
        self.root = home() / self.kind if persistent else Path(tempfile.mkdtemp(prefix=f"trainfail-{self.kind}-"))

    def _ensure(self, folder: Path, compute: Compute) -> tuple[Path | None, float, float]:
        """``folder`` once complete (``None`` when it cannot be made), and the device- and
        queue-seconds spent making it now (0 when it was cached)."""
        folder.parent.mkdir(parents=True, exist_ok=True)
        with (folder.parent / f"{folder.name}.lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if (folder / ORACLE_DONE).exists():
                return folder, 0.0, 0.0
            device_s = queue_s = 0.0
            for _ in range(self.retries + 1):
                with tempfile.TemporaryDirectory(prefix=f"trainfail-{self.kind}-") as scratch:
                    root = Path(scratch)
                    (root / "empty").mkdir()
                    (root / "io").mkdir()
                    made, spent = compute(root)
                    device_s, queue_s = device_s + spent[0], queue_s + spent[1]
                    if made is not None and made.is_dir():
                        (made / ORACLE_DONE).write_text(json.dumps({"folder": folder.name, "created": time.time()}))
                        shutil.rmtree(folder, ignore_errors=True)
                        shutil.copytree(made, folder)
                        return folder, device_s, queue_s
            return None, device_s, queue_s


class OracleCache(_Computed):
    """Each scenario's reference, computed once per (case version, scenario, topology).

    The oracle runs with the case's whole ``grader/`` at ``/grader`` and the scenario at
    ``/io/scenario.json`` on the devices the scenario asks for; its ``--out-dir`` is mounted
    read-only for every revision's judge.
    """

    kind = "oracles"

    def key(self, scenario: Scenario) -> str:
        """Digest of what decides the oracle: grader files and runtime, scenario, topology, backend."""
        request = self.phases.request(scenario)
        return bytes_digest(json.dumps([self.grader_hash, request], sort_keys=True).encode())

    def folder(self, scenario: Scenario) -> Path:
        return self.root / self.phases.case.id.replace("/", "__") / self.key(scenario)[:24]

    def ensure(self, scenario: Scenario) -> tuple[Path | None, float, float]:
        """The scenario's oracle folder (``None`` when it cannot be made) and the device- and
        queue-seconds spent making it now (0 when it was cached)."""

        def compute(root: Path) -> tuple[Path | None, tuple[float, float]]:
            io = root / "io"
            (io / "scenario.json").write_text(json.dumps(self.phases.request(scenario), indent=2))
            argv = [*self.command, "--scenario", "/io/scenario.json", "--out-dir", "/io/oracle"]
            mounts = (
                Mount(self.phases.case.grader_dir, "/grader"),
                Mount(HARNESSLIB_DIR, HARNESSLIB_MOUNT),
                Mount(io, "/io", writable=True),
            )
            with self.phases.pool.lease(scenario.devices) as lease:
                phase = self.phases.phase(
                    f"oracle-{scenario.name}", root / "empty", mounts, argv, scenario.timeout_s, lease
                )
            made = io / "oracle" if phase.result.ok else None
            return made, (lease.device_seconds, lease.queue_wait_s)

        return self._ensure(self.folder(scenario), compute)


class FixtureCache(_Computed):
    """A case's run-phase fixtures, computed once per case version (grader files, runtime,
    backend) from the run kit alone, on no device, and mounted read-only at ``/fixtures``."""

    kind = "fixtures"

    def __init__(
        self, phases: Phases, grader_hash: str, command: Sequence[str], *, retries: int, persistent: bool = True
    ) -> None:
        super().__init__(phases, grader_hash, command, retries=retries, persistent=persistent)
        self._made: Path | None = None

    def folder(self) -> Path:
        backend = "nccl" if self.phases.pool.kind == "gpu" else "gloo"
        key = bytes_digest(json.dumps([self.grader_hash, "fixtures", backend]).encode())
        return self.root / self.phases.case.id.replace("/", "__") / key[:24]

    def ensure(self) -> Path | None:
        """The fixtures folder (``None`` when it cannot be made: the run kit builds its own)."""
        if self._made is not None:
            return self._made
        timeout_s = max(s.timeout_s for s in self.phases.case.scenarios)

        def compute(root: Path) -> tuple[Path | None, tuple[float, float]]:
            io = root / "io"
            argv = [*self.command, "--out-dir", "/io/fixtures"]
            mounts = (
                Mount(self.phases.case.kit_dir, KIT_MOUNT),
                Mount(HARNESSLIB_DIR, HARNESSLIB_MOUNT),
                Mount(io, "/io", writable=True),
            )
            phase = self.phases.phase("fixtures", root / "empty", mounts, argv, timeout_s, None)
            return (io / "fixtures" if phase.result.ok else None), (0.0, 0.0)

        self._made, _, _ = self._ensure(self.folder(), compute)
        return self._made
