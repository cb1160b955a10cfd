"""The run phase's scaffolding shared by case run kits (untrusted: it runs beside the revision).

A case's ``kit/run.py`` supplies what is its own (how one scenario is prepared, launched and
which outputs the judge reads) as :class:`RunKit`; this module does the rest of the protocol's
run phase (``docs/grader-protocol.md``): it reads ``--scenarios`` and ``--out-dir``, gives every
scenario a fresh scratch folder and its own ``OUT/<scenario>/`` with a ``timings.json`` record
(whatever happens: a kit error is recorded for the judge and the next scenario runs), and
shares one warm launcher (:mod:`warm_launch`) across a scenario group, falling back to cold
launches if it fails. Each scenario's launches stop at its deadline (its request's ``timeout_s``,
counted from the scenario's start, the first one's from the kit's own start), so a scenario that
hangs is stopped, with every process it started, and the next scenario of the group runs; the
judge then fails it with "no progress after N s". Nothing here is private and nothing here is a
verdict. Standard library only (plus :mod:`warm_launch` beside it).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
import stat
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __package__:  # imported as part of the package
    from . import warm_launch
    from .protocol import NAME_RE, read_requests
else:  # imported from /harnesslib by a case's run kit
    import warm_launch  # type: ignore[no-redef,import-not-found,unused-ignore]
    from protocol import NAME_RE, read_requests  # type: ignore[no-redef,import-not-found,unused-ignore]

#: How much of a job's and of a warm launcher's combined output the judge gets.
LOG_LIMIT = 200_000
LAUNCHER_LOG_LIMIT = 64_000
#: Where the host mounts the case's cached fixtures (``grader.fixtures_command``), read-only.
FIXTURES = Path("/fixtures")


def cached_fixture(name: str, dest: Path) -> bool:
    """Copy ``FIXTURES/name`` (a file or folder its fixtures command made) to ``dest`` when the
    host mounted the case's cached fixtures; ``False`` when it did not (build it yourself: a
    fixture the host could not make only costs time). A copy, so that the scenario's files can be
    hard links to it, as ``/fixtures`` is another mount."""
    cached = FIXTURES / name
    if cached.is_dir():
        shutil.copytree(cached, dest, symlinks=True)
    elif cached.is_file():
        shutil.copyfile(cached, dest)
    else:
        return False
    return True


def copy_regular(src: Path, dest: Path, limit: int) -> str | None:
    """Copy ``src`` if it is a regular file (links not followed) of at most ``limit`` bytes;
    otherwise say why not."""
    try:
        fd = os.open(src, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as err:
        return f"{src.name}: {err.strerror}"
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fh.fileno())
        if not stat.S_ISREG(info.st_mode):
            return f"{src.name}: not a regular file"
        if info.st_size > limit:
            return f"{src.name}: {info.st_size} bytes, over the {limit}-byte limit"
        data = fh.read(limit + 1)
    if len(data) > limit:
        return f"{src.name}: grew past the {limit}-byte limit"
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(data)
    return None


def copy_tail(src: Path, dest: Path, limit: int) -> None:
    """The last ``limit`` bytes of a log, if it is still a regular file (links not followed)."""
    try:
        fd = os.open(src, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                raise OSError("not a regular file")
            size = fh.seek(0, os.SEEK_END)
            fh.seek(max(0, size - limit))
            data = fh.read(limit)
    except OSError as err:
        data = f"(log unreadable: {err})\n".encode()
    dest.write_bytes(data)


def collect(run_dir: Path, dest: Path, wanted: list[tuple[str, int]]) -> list[str]:
    """Copy each ``(relative path, byte limit)`` of ``wanted`` from ``run_dir`` to ``dest``
    (regular files only, no folder on the path a link); notes on anything left behind."""
    notes = []
    for rel, limit in wanted:
        folders = [run_dir, *[run_dir / p for p in Path(rel).parents if p != Path(".")]]
        if any(folder.is_symlink() for folder in folders):
            notes.append(f"{rel}: a folder on its path is a link")
            continue
        note = copy_regular(run_dir / rel, dest / rel, limit)
        if note is not None:
            notes.append(note)
    return notes


def rank_files(folder: str, ranks: int, limit: int) -> list[tuple[str, int]]:
    """``wanted`` entries for one observer record per rank: ``folder/rank0.pt`` ..
    ``folder/rank<ranks-1>.pt``, each of at most ``limit`` bytes."""
    return [(f"{folder}/rank{rank}.pt", limit) for rank in range(ranks)]


class Launchers:
    """The warm launcher for a scenario group, falling back to cold launches if it fails."""

    def __init__(self, warm: bool, preload: list[str], env: dict[str, str], log_path: Path) -> None:
        self.warm: Any | None = None
        self.preload_s = 0.0
        if warm:
            try:
                self.warm = warm_launch.WarmLauncher(preload, env, log_path)
                self.preload_s = float(self.warm.startup_s)
            except (RuntimeError, OSError, ValueError):
                traceback.print_exc()

    def run(self, launch: Callable[[Any | None], Any]) -> tuple[Any, str]:
        """``launch(warm_launcher)`` if the warm launcher is alive, else ``launch(None)`` (a
        fresh ``torchrun``); the result and which of the two ran."""
        if self.warm is not None:
            try:
                return launch(self.warm), "warm"
            except (RuntimeError, OSError, ValueError):  # the server died: cold from here on
                traceback.print_exc()
                self.close()
        return launch(None), "cold"

    def close(self) -> None:
        """Stop the warm server, if any."""
        if self.warm is not None:
            self.warm.close()
            self.warm = None


def pipeline_scenario(
    sc: Any,
    source: Path,
    scratch: Path,
    dest: Path,
    launchers: Launchers,
    *,
    write_fixtures: Callable[[Any, Path], Any],
    launch: Callable[[Any, Path, Any, Path, Path, Any | None], Any],
    wanted: Callable[[Any], list[tuple[str, int]]],
) -> dict[str, Any]:
    """The common shape of a scenario: a fresh copy of the revision in ``scratch/workspace``,
    the grader-owned inputs written by ``write_fixtures(sc, folder)``, one launch
    ``launch(sc, workspace, inputs, out_dir, log_path, warm_launcher_or_None)`` (answering an
    object with ``returncode``, ``timed_out``, ``started``, ``ended`` and ``log_path``), and the
    ``wanted(sc)`` outputs of ``out_dir/<scenario>`` copied to ``dest``; the timings record."""
    t0 = time.time()
    workspace = scratch / "workspace"
    shutil.copytree(source, workspace, symlinks=True)
    inputs = write_fixtures(sc, scratch / "inputs")
    out_dir, log_path = scratch / "outputs", scratch / "job.log"
    t1 = time.time()
    run, launcher = launchers.run(lambda warm: launch(sc, workspace, inputs, out_dir, log_path, warm))
    t2 = time.time()
    notes = collect(out_dir / sc.name, dest, wanted(sc))
    copy_tail(run.log_path, dest / "job.log", LOG_LIMIT)
    return {
        "launcher": launcher,
        "returncode": run.returncode,
        "timed_out": run.timed_out,
        "started": run.started,
        "ended": run.ended,
        "prepare_s": round(t1 - t0, 3),
        "collect_s": round(time.time() - t2, 3),
        "notes": notes,
    }


@dataclass(frozen=True)
class RunKit:
    """What a case's run kit supplies.

    ``scenario(request)`` parses one entry of ``scenarios.json`` (raising on a bad one);
    ``run_one(sc, source, scratch, dest, launchers)`` copies the revision ``source`` into the
    fresh folder ``scratch``, launches the scenario through ``launchers``, copies what the judge
    reads into ``dest`` and returns the scenario's timing record; ``preload`` and
    ``launch_env(backend)`` start the group's warm launcher."""

    name: str
    scenario: Callable[[dict[str, Any]], Any]
    run_one: Callable[[Any, Path, Path, Path, Launchers], dict[str, Any]]
    preload: list[str]
    launch_env: Callable[[str], dict[str, str]]
    read_requests: Callable[[Path], list[dict[str, Any]]]
    #: Start the warm launcher for one scenario too (a scenario of several launches, such as an
    #: interrupted and resumed run, pays the imports once instead of once per launch).
    warm_alone: bool = False


def case_kit(
    name: str,
    scenario: Callable[[dict[str, Any]], Any],
    pipeline: Any,
    *,
    fixtures: Callable[[Any, Path], Any],
    launch: Callable[[Any, Path, Any, Path, Path, Any | None], Any],
    wanted: Callable[[Any], list[tuple[str, int]]],
    warm_alone: bool = False,
) -> RunKit:
    """The run kit of a case whose scenarios are one launch of its pipeline each (the usual
    shape): ``pipeline`` a :class:`launch.Pipeline`, ``fixtures(sc, folder)`` writes the
    grader-owned inputs, ``launch(sc, workspace, inputs, out_dir, log_path, warm)`` runs the
    pipeline (usually ``pipeline.run`` with the scenario's overrides), ``wanted(sc)`` lists the
    outputs the judge reads; see :func:`pipeline_scenario`."""
    run_one = functools.partial(pipeline_scenario, write_fixtures=fixtures, launch=launch, wanted=wanted)
    return RunKit(name, scenario, run_one, list(pipeline.preload), pipeline.launch_env, read_requests, warm_alone)


def deadline_s(raw: dict[str, Any], since: float) -> float | None:
    """Seconds left until the scenario's deadline: its request's ``timeout_s`` counted from
    ``since`` (``time.monotonic()``); ``None`` when the request sets no plausible one."""
    value = raw.get("timeout_s")
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < 1e7:
        return None
    return float(value) - (time.monotonic() - since)


def run_scenario(
    kit: RunKit,
    raw: dict[str, Any],
    source: Path,
    root: Path,
    out_dir: Path,
    launchers: Launchers,
    preload_s: float,
    since: float | None = None,
) -> None:
    """One scenario, its artifacts and ``timings.json``, whatever happens. Its launches stop at
    its deadline, counted from ``since`` (``time.monotonic()``; default: now)."""
    started = time.time()
    warm_launch.set_deadline(deadline_s(raw, time.monotonic() if since is None else since))
    name = str(raw.get("name", "unnamed"))
    record: dict[str, Any] = {"preload_s": round(preload_s, 3)}
    dest = out_dir / name
    try:
        sc = kit.scenario(raw)
        dest = out_dir / sc.name
        shutil.rmtree(dest, ignore_errors=True)
        dest.mkdir(parents=True)
        scratch = root / sc.name
        scratch.mkdir()
        try:
            record |= kit.run_one(sc, source, scratch, dest, launchers)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    except Exception as err:  # noqa: BLE001 - recorded for the judge, then the next scenario
        traceback.print_exc()
        record["kit_error"] = f"{type(err).__name__}: {err}"[:500]
        if NAME_RE.match(name):
            dest = out_dir / name
            dest.mkdir(parents=True, exist_ok=True)
    finally:
        warm_launch.set_deadline(None)
    record["total_s"] = round(time.time() - started + preload_s, 3)
    if NAME_RE.match(name) and dest.is_dir():
        (dest / "timings.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    print(
        json.dumps(
            {
                "scenario": name,
                "returncode": record.get("returncode"),
                "timed_out": record.get("timed_out"),
                "notes": record.get("notes"),
                "kit_error": record.get("kit_error"),
            }
        ),
        flush=True,
    )


def main(kit: RunKit, argv: list[str] | None = None) -> None:
    """``--scenarios FILE --out-dir DIR``: run every requested scenario from the revision in the
    working directory; exit 0 once each has had its turn. Run as the phase's program (``argv``
    from the command line), the process adopts the orphans of its launches
    (:func:`warm_launch.become_subreaper`) so that none outlives its scenario."""
    parser = argparse.ArgumentParser(description=f"run {kit.name} scenarios (no verdicts)")
    parser.add_argument("--scenarios", type=Path, required=True)
    parser.add_argument("--out-dir", type=Path, required=True)
    args = parser.parse_args(argv)
    began = time.monotonic()  # the first scenario's deadline counts the kit's own start-up
    if argv is None:  # the run phase's program: what a launch daemonises comes back here, to be stopped with it
        warm_launch.become_subreaper()
    requests = kit.read_requests(args.scenarios)
    source = Path.cwd().resolve()
    args.out_dir.mkdir(parents=True, exist_ok=True)
    backend = str(requests[0].get("backend", "gloo")) if requests else "gloo"
    with tempfile.TemporaryDirectory(prefix="trainfail-run-") as tmp:
        root = Path(tmp)
        warm = len(requests) > 1 or (kit.warm_alone and bool(requests))
        launchers = Launchers(warm, kit.preload, kit.launch_env(backend), root / "launcher.log")
        try:
            for index, raw in enumerate(requests):
                preload_s = launchers.preload_s if index == 0 else 0.0
                since = began if index == 0 else time.monotonic()
                run_scenario(kit, raw, source, root, args.out_dir, launchers, preload_s, since)
        finally:
            launchers.close()
            if warm:
                copy_tail(root / "launcher.log", args.out_dir / "launcher.log", LAUNCHER_LOG_LIMIT)
    sys.stdout.flush()
