"""Run phase of TrainFail/AdmissionBackwardOOM-v1: send each scenario's calls to the rank.

    python /kit/run.py --scenarios /io/scenarios.json --out-dir /out

Untrusted: the revision's code runs in the same sandbox, as the same user, so nothing here
is private and nothing here is a verdict. Working directory: the revision. For each scenario
it writes the scenario's calls (``fixtures.py``) to ``calls.json`` in a fresh copy of the
revision and runs the rank the way the workspace README documents
(``python -m packrl.serve --calls calls.json --out results.jsonl``). A group of scenarios is
served by one process (one ``--calls``/``--out`` pair per scenario, each on its own copy);
any scenario the group left without complete results is served again alone. It leaves under
``OUT/<scenario>/``: ``results.jsonl`` (copied if a regular file within the size limit),
``job.log`` (the last 200 KB of the output) and ``timings.json``.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

from fixtures import make_calls
from scenario import NAME_RE, Scenario, read_requests

LOG_LIMIT = 200_000
RESULTS_LIMIT = 4 << 20
#: the most one grouped serve process may take (a normal group takes seconds)
GROUP_TIMEOUT_S = 240.0


def copy_regular(src: Path, dest: Path, limit: int) -> str | None:
    """Copy ``src`` if it is a regular file (links not followed) of at most ``limit`` bytes."""
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


def tail(path: Path, limit: int) -> bytes:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                raise OSError("not a regular file")
            size = fh.seek(0, os.SEEK_END)
            fh.seek(max(0, size - limit))
            return fh.read(limit)
    except OSError as err:
        return f"(log unreadable: {err})\n".encode()


def serve(jobs: list[tuple[Path, Path, Path]], log_path: Path, timeout_s: float) -> dict[str, Any]:
    """One ``python -m packrl.serve`` over (workspace, calls, results) jobs, run from the first
    job's workspace copy."""
    command = [sys.executable, "-m", "packrl.serve"]
    for _, calls, results in jobs:
        command += ["--calls", str(calls), "--out", str(results)]
    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1"), "PYTHONUNBUFFERED": "1"}
    started = time.time()
    with log_path.open("ab") as log:
        proc = subprocess.Popen(command, cwd=jobs[0][0], stdout=log, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)
        try:
            code = proc.wait(timeout=timeout_s)
            timed_out = False
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            code = proc.wait()
            timed_out = True
    return {"returncode": code, "timed_out": timed_out, "started": started, "ended": time.time()}


def complete(results: Path, n_calls: int) -> bool:
    try:
        lines = [ln for ln in results.read_text(encoding="utf-8").splitlines() if ln.strip()]
    except (OSError, UnicodeDecodeError):
        return False
    return len(lines) >= n_calls


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="run AdmissionBackwardOOM scenarios (no verdicts)")
    parser.add_argument("--scenarios", type=Path, required=True)
    parser.add_argument("--out-dir", type=Path, required=True)
    args = parser.parse_args(argv)
    source = Path.cwd().resolve()
    args.out_dir.mkdir(parents=True, exist_ok=True)
    scenarios: list[tuple[Scenario, dict[str, Any]]] = []
    for raw in read_requests(args.scenarios):
        name = str(raw.get("name", ""))
        try:
            sc = Scenario.from_request(raw)
            scenarios.append((sc, make_calls(sc.params)))
        except Exception as err:  # noqa: BLE001 - recorded for the judge
            if NAME_RE.match(name):
                dest = args.out_dir / name
                dest.mkdir(parents=True, exist_ok=True)
                (dest / "timings.json").write_text(json.dumps({"kit_error": str(err)[:500]}), encoding="utf-8")
    with tempfile.TemporaryDirectory(prefix="admission-run-") as tmp:
        root = Path(tmp)
        jobs = {}
        t0 = time.time()
        for sc, spec in scenarios:
            workspace = root / sc.name / "workspace"
            shutil.copytree(source, workspace, symlinks=True)
            calls = workspace / "calls.json"
            calls.write_text(json.dumps(spec), encoding="utf-8")
            jobs[sc.name] = (workspace, calls, workspace / "results.jsonl")
        prepare_s = time.time() - t0
        records: dict[str, dict[str, Any]] = {}
        if len(scenarios) > 1:
            log = root / "group.log"
            timeout = min(GROUP_TIMEOUT_S, sum(sc.run_timeout_s for sc, _ in scenarios))
            try:
                ended = serve(list(jobs.values()), log, timeout)
            except OSError as err:
                ended = {"returncode": None, "timed_out": False, "kit_error": str(err)}
            group_log = tail(log, LOG_LIMIT)
            for sc, spec in scenarios:
                if complete(jobs[sc.name][2], len(spec["calls"])):
                    records[sc.name] = {**ended, "launcher": "group", "log": group_log}
        for sc, spec in scenarios:
            if sc.name in records:
                continue
            workspace, calls, results = jobs[sc.name]
            results.unlink(missing_ok=True)
            log = root / sc.name / "job.log"
            try:
                ended = serve([jobs[sc.name]], log, sc.run_timeout_s)
            except OSError as err:
                ended = {"returncode": None, "timed_out": False, "kit_error": str(err)}
            records[sc.name] = {**ended, "launcher": "alone", "log": tail(log, LOG_LIMIT)}
        for sc, _ in scenarios:
            dest = args.out_dir / sc.name
            shutil.rmtree(dest, ignore_errors=True)
            dest.mkdir(parents=True)
            record = records[sc.name]
            (dest / "job.log").write_bytes(record.pop("log"))
            note = copy_regular(jobs[sc.name][2], dest / "results.jsonl", RESULTS_LIMIT)
            record["notes"] = [note] if note else []
            record["prepare_s"] = round(prepare_s, 3)
            (dest / "timings.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
            print(json.dumps({"scenario": sc.name, "returncode": record.get("returncode"),
                              "launcher": record.get("launcher"), "notes": record["notes"]}), flush=True)


if __name__ == "__main__":
    try:
        main()
    except Exception:  # noqa: BLE001
        traceback.print_exc()
        sys.exit(1)
