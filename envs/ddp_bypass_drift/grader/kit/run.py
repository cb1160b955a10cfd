"""Run phase of TrainFail/DDPBypassDrift-v0: launch the pipeline, keep its outputs.

    python /kit/run.py --scenarios /io/scenarios.json --out-dir /out

Untrusted: the revision's code runs in the same sandbox, as the same user, so nothing here
is private and nothing here is a verdict. Working directory: the revision. For each
scenario it copies the revision to a fresh folder, writes the grader-owned initial weights
and data there (``fixtures.py``), runs the training the way the workspace README documents
with overrides that pin every setting the judge's reference depends on (``pipeline.py``),
and leaves under ``OUT/<scenario>/``:

* ``metrics.jsonl`` and ``checkpoints/final.pt``: the README's run outputs, copied only if
  they are regular files within a size limit;
* ``observe/rankR.pt``: the observer's per-step weights and gradients of every rank (same
  rules);
* ``job.log``: the last 200 KB of the job's combined output;
* ``timings.json``: how the launch ended (exit code, time-out) and how long each part took.

A group of scenarios shares one warm launcher (torch imported once); a single scenario, or any scenario after the warm launcher failed, gets a fresh
``torchrun``.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import stat
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

from fixtures import make_inputs, write_inputs
from pipeline import PRELOAD, RunResult, WarmLauncher, launch_env, overrides, run_pipeline
from scenario import NAME_RE, Scenario, read_requests

LOG_LIMIT = 200_000
METRICS_LIMIT = 4 << 20
LAUNCHER_LOG_LIMIT = 64_000


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """``--scenarios FILE --out-dir DIR`` (the protocol's run phase)."""
    parser = argparse.ArgumentParser(description="run DDPBypassDrift scenarios (no verdicts)")
    parser.add_argument("--scenarios", type=Path, required=True)
    parser.add_argument("--out-dir", type=Path, required=True)
    return parser.parse_args(argv)


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


def collect(sc: Scenario, run_dir: Path, dest: Path) -> list[str]:
    """Copy the README-documented outputs and the observer records the judge reads (the
    kit points the observer at ``<run_dir>/observe``); notes on anything left behind."""
    wanted = [("metrics.jsonl", METRICS_LIMIT)]
    wanted += [("checkpoints/final.pt", sc.state_limit_bytes)]
    wanted += [(f"observe/rank{r}.pt", sc.record_limit_bytes) for r in range(sc.world)]
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


class Launchers:
    """The warm launcher for a group, falling back to cold launches if it fails."""

    def __init__(self, warm: bool, backend: str, log_path: Path) -> None:
        self.warm: Any | None = None
        self.preload_s = 0.0
        if warm:
            try:
                self.warm = WarmLauncher(PRELOAD, launch_env(backend), log_path)
                self.preload_s = float(self.warm.startup_s)
            except (RuntimeError, OSError, ValueError):
                traceback.print_exc()

    def run(self, sc: Scenario, workspace: Path, args: list[str], log_path: Path,
            observe_dir: Path) -> tuple[RunResult, str]:
        """One launch: warm if the launcher is alive, otherwise a fresh torchrun."""
        if self.warm is not None:
            try:
                return run_pipeline(sc, workspace, args, log_path, observe_dir, self.warm), "warm"
            except (RuntimeError, OSError, ValueError):  # the server died: cold from here on
                traceback.print_exc()
                self.close()
        return run_pipeline(sc, workspace, args, log_path, observe_dir), "cold"

    def close(self) -> None:
        """Stop the warm server, if any."""
        if self.warm is not None:
            self.warm.close()
            self.warm = None


def run_one(sc: Scenario, source: Path, scratch: Path, dest: Path, launchers: Launchers) -> dict[str, Any]:
    """Fresh workspace copy -> fixtures -> launch -> collect; the scenario's timings record."""
    t0 = time.time()
    workspace = scratch / "workspace"
    shutil.copytree(source, workspace, symlinks=True)
    files = write_inputs(make_inputs(sc), scratch / "inputs")
    out_dir = scratch / "outputs"
    t1 = time.time()
    run, launcher = launchers.run(sc, workspace, overrides(sc, files, out_dir), scratch / "job.log",
                                  out_dir / sc.name / "observe")
    t2 = time.time()
    notes = collect(sc, out_dir / sc.name, dest)
    copy_tail(run.log_path, dest / "job.log", LOG_LIMIT)
    return {"launcher": launcher, "returncode": run.returncode, "timed_out": run.timed_out,
            "started": run.started, "ended": run.ended, "prepare_s": round(t1 - t0, 3),
            "collect_s": round(time.time() - t2, 3), "notes": notes}


def run_scenario(raw: dict[str, Any], source: Path, root: Path, out_dir: Path,
                 launchers: Launchers, preload_s: float) -> None:
    """One scenario, its artifacts and ``timings.json``, whatever happens."""
    started = time.time()
    name = str(raw.get("name", "unnamed"))
    record: dict[str, Any] = {"preload_s": round(preload_s, 3)}
    try:
        sc = Scenario.from_request(raw)
        dest = out_dir / sc.name
        shutil.rmtree(dest, ignore_errors=True)
        dest.mkdir(parents=True)
        scratch = root / sc.name
        scratch.mkdir()
        try:
            record |= run_one(sc, source, scratch, dest, launchers)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    except Exception as err:  # noqa: BLE001 - recorded for the judge, then the next scenario
        traceback.print_exc()
        record["kit_error"] = f"{type(err).__name__}: {err}"[:500]
        dest = out_dir / name
        if NAME_RE.match(name):
            dest.mkdir(parents=True, exist_ok=True)
    record["total_s"] = round(time.time() - started + preload_s, 3)
    if NAME_RE.match(name) and dest.is_dir():
        (dest / "timings.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({"scenario": name, "returncode": record.get("returncode"),
                      "timed_out": record.get("timed_out"), "notes": record.get("notes"),
                      "kit_error": record.get("kit_error")}), flush=True)


def main(argv: list[str] | None = None) -> None:
    """Run every requested scenario; exit 0 once each has had its turn."""
    args = parse_args(argv)
    requests = read_requests(args.scenarios)
    source = Path.cwd().resolve()
    args.out_dir.mkdir(parents=True, exist_ok=True)
    backend = str(requests[0].get("backend", "gloo")) if requests else "gloo"
    with tempfile.TemporaryDirectory(prefix="bypass-run-") as tmp:
        root = Path(tmp)
        launchers = Launchers(len(requests) > 1, backend, root / "launcher.log")
        try:
            for index, raw in enumerate(requests):
                preload_s = launchers.preload_s if index == 0 else 0.0
                run_scenario(raw, source, root, args.out_dir, launchers, preload_s)
        finally:
            launchers.close()
            if len(requests) > 1:
                copy_tail(root / "launcher.log", args.out_dir / "launcher.log", LAUNCHER_LOG_LIMIT)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
