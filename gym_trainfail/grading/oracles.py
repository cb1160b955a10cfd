"""Cached oracles: a scenario's reference computed once, with no revision anywhere near it.

A case that declares ``grader.oracle_command`` has revision-independent references (trusted
same-topology runs): each is computed once per (case version, scenario, topology) in a sandbox
whose workspace is empty, kept under ``$TRAINFAIL_HOME/oracles`` and mounted read-only for every
revision's judge at ``/oracle/<scenario>``.
"""

from __future__ import annotations

import fcntl
import json
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from gym_trainfail.cases import Scenario
from gym_trainfail.devices import Lease
from gym_trainfail.grading.phases import HARNESSLIB_DIR, HARNESSLIB_MOUNT, Phases
from gym_trainfail.hashing import bytes_digest
from gym_trainfail.paths import home
from gym_trainfail.sandbox import Mount


class OracleCache:
    """Each scenario's reference, computed once per (case version, scenario, topology).

    The oracle runs in a fresh sandbox whose workspace is empty, so no revision's code can
    touch it; its ``--out-dir`` is kept under ``$TRAINFAIL_HOME/oracles`` (or, not
    ``persistent``, in a folder that lives as long as the grader) and mounted read-only for
    every revision's judge. Concurrent graders on a node compute it once (a lock file).
    """

    def __init__(
        self, phases: Phases, grader_hash: str, command: Sequence[str], *, retries: int, persistent: bool = True
    ) -> None:
        self.phases, self.grader_hash, self.retries = phases, grader_hash, retries
        self.command = tuple(command)
        self.root = home() / "oracles" if persistent else Path(tempfile.mkdtemp(prefix="trainfail-oracles-"))

    def key(self, scenario: Scenario) -> str:
        """Digest of what decides the oracle: grader files and runtime, scenario, topology, backend."""
        request = self.phases.request(scenario)
        return bytes_digest(json.dumps([self.grader_hash, request], sort_keys=True).encode())

    def folder(self, scenario: Scenario) -> Path:
        return self.root / self.phases.case.id.replace("/", "__") / self.key(scenario)[:24]

    def ensure(self, scenario: Scenario) -> tuple[Path | None, float, float]:
        """The scenario's oracle folder (``None`` when it cannot be made) and the device- and
        queue-seconds spent making it now (0 when it was cached)."""
        folder = self.folder(scenario)
        folder.parent.mkdir(parents=True, exist_ok=True)
        with (folder.parent / f"{folder.name}.lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if (folder / ORACLE_DONE).exists():
                return folder, 0.0, 0.0
            device_s = queue_s = 0.0
            for _ in range(self.retries + 1):
                done, lease = self._compute(scenario, folder)
                device_s += lease.device_seconds
                queue_s += lease.queue_wait_s
                if done:
                    return folder, device_s, queue_s
            return None, device_s, queue_s

    def _compute(self, scenario: Scenario, folder: Path) -> tuple[bool, Lease]:
        with tempfile.TemporaryDirectory(prefix="trainfail-oracle-") as scratch:
            root = Path(scratch)
            (root / "empty").mkdir()
            io = root / "io"
            io.mkdir()
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
            made = io / "oracle"
            if not phase.result.ok or not made.is_dir():
                return False, lease
            (made / ORACLE_DONE).write_text(json.dumps({"scenario": scenario.name, "created": time.time()}))
            shutil.rmtree(folder, ignore_errors=True)
            shutil.copytree(made, folder)
        return True, lease


#: Marks a complete oracle folder.
ORACLE_DONE = ".complete"
