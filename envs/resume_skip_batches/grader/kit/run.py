"""Run phase of TrainFail/ResumeSkipBatches-v0: launch the pipeline, interrupt it, resume it.

    python /kit/run.py --scenarios /io/scenarios.json --out-dir /out

Untrusted: the revision's code runs in the same sandbox, as the same user, so nothing here is
private and nothing here is a verdict. Working directory: the revision. For each scenario it
copies the revision to a fresh folder, writes the grader-owned table and warm start there
(``fixtures.py``), and runs the training the way the workspace README documents, in segments:
``train.max_steps=K1`` from the warm start, then ``train.resume_from_checkpoint=.../checkpoint-K1``
with ``train.max_steps=K2``, and so on to the scenario's last step. It leaves under
``OUT/<scenario>/``:

* ``checkpoint-K/model.pt`` for every interruption point and the last step (the README's
  checkpoint layout), copied only if regular files within a size limit;
* ``observe/segS/rankR.bin``: the observer's record of the rows each rank's forwards consumed
  during launch ``S`` (same rules);
* ``job.log``: the last 200 KB of the launches' combined output;
* ``timings.json``: how each launch ended and how long it took.

The first launch that fails ends the scenario (its later segments could only resume from
nothing).
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
from pipeline import PRELOAD, WarmLauncher, launch_env, overrides, run_launch
from scenario import NAME_RE, Scenario, read_requests

LOG_LIMIT = 200_000
LAUNCHER_LOG_LIMIT = 64_000


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """``--scenarios FILE --out-dir DIR`` (the protocol's run phase)."""
    parser = argparse.ArgumentParser(description="run ResumeSkipBatches scenarios (no verdicts)")
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


def collect(sc: Scenario, run_dir: Path, observe_root: Path, dest: Path, segments_run: int) -> list[str]:
    """Copy the checkpoints' models and the observer records the judge reads."""
    wanted: list[tuple[Path, Path, int]] = []
    for index, (_, stop) in enumerate(sc.segments[:segments_run]):
        wanted.append((run_dir / f"checkpoint-{stop}" / "model.pt", dest / f"checkpoint-{stop}" / "model.pt",
                       sc.state_limit_bytes))
        for rank in range(sc.world_size):
            wanted.append((observe_root / f"seg{index}" / f"rank{rank}.bin",
                           dest / "observe" / f"seg{index}" / f"rank{rank}.bin", sc.record_limit_bytes))
    notes = []
    for src, target, limit in wanted:
        if any(p.is_symlink() for p in [src.parent, src.parent.parent]):
            notes.append(f"{src}: a folder on its path is a link")
            continue
        note = copy_regular(src, target, limit)
        if note is not None:
            notes.append(f"{src.parent.name}/{note}")
    return notes


def run_one(sc: Scenario, source: Path, scratch: Path, dest: Path, launcher: Any | None) -> dict[str, Any]:
    """Fresh workspace copy -> inputs -> one launch per segment -> collect."""
    t0 = time.time()
    workspace = scratch / "workspace"
    shutil.copytree(source, workspace, symlinks=True)
    files = write_inputs(make_inputs(sc), scratch / "inputs")
    out_dir = scratch / "outputs"
    log_path = scratch / "job.log"
    launches = []
    for index, (start, stop) in enumerate(sc.segments):
        args = overrides(sc, files, out_dir, stop, start)
        with log_path.open("a", encoding="utf-8") as fh:
            fh.write(f"=== launch {index}: steps {start} -> {stop}\n")
        run = run_launch(sc, workspace, args, log_path, scratch / "observe" / f"seg{index}", launcher)
        launches.append({"segment": index, "returncode": run.returncode, "timed_out": run.timed_out,
                         "started": run.started, "ended": run.ended})
        if run.returncode != 0:
            break
    t1 = time.time()
    notes = collect(sc, out_dir / sc.name, scratch / "observe", dest, len(launches))
    copy_tail(log_path, dest / "job.log", LOG_LIMIT)
    return {"launcher": "warm" if launcher is not None else "cold", "launches": launches,
            "run_s": round(t1 - t0, 3), "notes": notes}


def run_scenario(raw: dict[str, Any], source: Path, root: Path, out_dir: Path, launcher: Any | None) -> None:
    """One scenario, its artifacts and ``timings.json``, whatever happens."""
    started = time.time()
    name = str(raw.get("name", "unnamed"))
    record: dict[str, Any] = {}
    dest = out_dir / name
    try:
        sc = Scenario.from_request(raw)
        shutil.rmtree(dest, ignore_errors=True)
        dest.mkdir(parents=True)
        scratch = root / sc.name
        scratch.mkdir()
        try:
            record |= run_one(sc, source, scratch, dest, launcher)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    except Exception as err:  # noqa: BLE001 - recorded for the judge, then the next scenario
        traceback.print_exc()
        record["kit_error"] = f"{type(err).__name__}: {err}"[:500]
        if NAME_RE.match(name):
            dest.mkdir(parents=True, exist_ok=True)
    record["total_s"] = round(time.time() - started, 3)
    if NAME_RE.match(name) and dest.is_dir():
        (dest / "timings.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({"scenario": name, "launches": record.get("launches"), "notes": record.get("notes"),
                      "kit_error": record.get("kit_error")}), flush=True)


def main(argv: list[str] | None = None) -> None:
    """Run every requested scenario; exit 0 once each has had its turn."""
    args = parse_args(argv)
    requests = read_requests(args.scenarios)
    source = Path.cwd().resolve()
    args.out_dir.mkdir(parents=True, exist_ok=True)
    backend = str(requests[0].get("backend", "gloo")) if requests else "gloo"
    with tempfile.TemporaryDirectory(prefix="resume-run-") as tmp:
        root = Path(tmp)
        launcher: Any | None = None
        try:
            launcher = WarmLauncher(PRELOAD, launch_env(backend), root / "launcher.log")
        except (RuntimeError, OSError, ValueError):
            traceback.print_exc()
        try:
            for raw in requests:
                run_scenario(raw, source, root, args.out_dir, launcher)
        finally:
            if launcher is not None:
                launcher.close()
            copy_tail(root / "launcher.log", args.out_dir / "launcher.log", LAUNCHER_LOG_LIMIT)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
