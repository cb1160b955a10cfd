"""The warm launcher harnesses use for scenario groups: torchrun's contract, from one warm server."""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import pytest

from gym_trainfail.harnesslib.warm_launch import WarmLauncher, launch_cold
from gym_trainfail.runtimes import Runtime

PROBE = """
import json, os, random, sys, time
from pathlib import Path
mode = sys.argv[1]
rank = int(os.environ["RANK"])
if mode == "fail" and rank == 1:
    sys.exit(3)
if mode in ("fail", "hang"):
    time.sleep(600)
keys = ["RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "SCENARIO"]
record = {k: os.environ.get(k) for k in keys}
record.update(argv=sys.argv[1:], cwd=os.getcwd(), path0=sys.path[0], random=random.random(),
              setup=os.environ.get("PROBE_SETUP"), main=__name__,
              grader_importable=any(p.endswith("harnesslib") for p in sys.path))
Path(f"rank{rank}.json").write_text(json.dumps(record))
import atexit, probe_setup
probe_setup.unclosed = open(f"unclosed{rank}.txt", "w")  # held by a module, never closed
probe_setup.unclosed.write("buffered")
atexit.register(lambda: Path(f"atexit{rank}.txt").write_text("ran"))
print(f"rank {rank} done", flush=True)
"""

SETUP = """
import os
def install():
    os.environ["PROBE_SETUP"] = "ran before " + os.environ["SCENARIO"]
"""

GLOO = """
import torch, torch.distributed as dist
dist.init_process_group("gloo")
value = torch.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(value)
print(f"rank {dist.get_rank()} of {dist.get_world_size()}: sum {value.item():g}", flush=True)
dist.destroy_process_group()
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "probe.py").write_text(PROBE)
    (tmp_path / "probe_setup.py").write_text(SETUP)
    (tmp_path / "gloo_job.py").write_text(GLOO)
    return tmp_path


def test_ranks_get_torchrun_environment_fresh_entropy_and_their_own_cwd(project: Path) -> None:
    env = {**os.environ, "SCENARIO": "first"}
    with WarmLauncher(["json", "random"], env, project / "server.log") as launcher:
        for scenario in ("first", "second"):
            for name in ("rank0.json", "rank1.json"):
                (project / name).unlink(missing_ok=True)
            reply = launcher.launch(
                "probe",
                ["ok", "--flag"],
                2,
                project,
                {**env, "SCENARIO": scenario},
                project / f"{scenario}.log",
                60,
                setup="probe_setup:install",
            )
            assert reply.returncode == 0 and not reply.timed_out
            ranks = [json.loads((project / f"rank{r}.json").read_text()) for r in (0, 1)]
            assert [r["RANK"] for r in ranks] == ["0", "1"] and {r["WORLD_SIZE"] for r in ranks} == {"2"}
            assert ranks[0]["MASTER_PORT"] == ranks[1]["MASTER_PORT"] and ranks[0]["MASTER_ADDR"] == "127.0.0.1"
            assert all(r["SCENARIO"] == scenario and r["setup"] == f"ran before {scenario}" for r in ranks)
            assert all(r["argv"] == ["ok", "--flag"] and r["main"] == "__main__" for r in ranks)
            assert all(r["cwd"] == str(project) and r["path0"] == str(project) for r in ranks)
            assert not any(r["grader_importable"] for r in ranks), "the launcher's folder must not be importable"
            assert ranks[0]["random"] != ranks[1]["random"], "each rank draws fresh entropy"
            assert (project / f"{scenario}.log").read_text().count("done") == 2
            # ranks end like an interpreter: atexit handlers run, unclosed files are flushed
            assert all((project / f"atexit{r}.txt").read_text() == "ran" for r in (0, 1))
            assert all((project / f"unclosed{r}.txt").read_text() == "buffered" for r in (0, 1))


def test_a_failing_rank_stops_the_others_and_a_hang_is_killed_at_the_timeout(project: Path) -> None:
    with WarmLauncher([], dict(os.environ), project / "server.log") as launcher:
        started = time.monotonic()
        failed = launcher.launch("probe", ["fail"], 2, project, dict(os.environ), project / "fail.log", 120)
        assert failed.returncode == 1 and not failed.timed_out
        assert time.monotonic() - started < 60, "rank 0 must be stopped when rank 1 fails, not waited for"
        assert "rank 1 exited with code 3" in (project / "fail.log").read_text()
        hung = launcher.launch("probe", ["hang"], 2, project, dict(os.environ), project / "hang.log", 2)
        assert hung.timed_out and hung.returncode is None
        # the server still serves after a timeout
        ok = launcher.launch("probe", ["ok"], 1, project, dict(os.environ), project / "ok.log", 60)
        assert ok.returncode == 0
    assert not _probe_processes(project), "no rank outlives the launcher"


def test_a_cold_launch_is_killed_with_its_whole_group_at_the_timeout(project: Path) -> None:
    marker = f"trainfail-cold-{os.getpid()}"
    argv = ["bash", "-c", f"echo begun; (exec -a {marker} sleep 300) & wait"]
    started = time.monotonic()
    hung = launch_cold(argv, project, dict(os.environ), project / "cold.log", 1)
    assert hung.timed_out and hung.returncode is None and time.monotonic() - started < 30
    assert (project / "cold.log").read_text() == "begun\n"
    time.sleep(0.3)
    assert not [p for p in Path("/proc").glob("[0-9]*") if marker.encode() in _cmdline(p)], "a child outlived it"
    done = launch_cold(["bash", "-c", "exit 7"], project, dict(os.environ), project / "done.log", 30)
    assert done.returncode == 7 and not done.timed_out and done.ended >= done.started


def test_real_gloo_ranks_forked_after_torch_was_imported(project: Path, runtime: Runtime) -> None:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    with WarmLauncher(["torch", "torch.distributed"], env, project / "server.log", str(runtime.python)) as launcher:
        for attempt in range(2):
            log = project / f"gloo{attempt}.log"
            reply = launcher.launch("gloo_job", [], 2, project, env, log, 120)
            assert reply.returncode == 0, log.read_text()
            # the two ranks share the log, so their lines may interleave
            assert sorted(re.findall(r"rank \d of \d: sum \d+", log.read_text())) == [
                "rank 0 of 2: sum 3",
                "rank 1 of 2: sum 3",
            ]


def _cmdline(proc: Path) -> bytes:
    try:
        return (proc / "cmdline").read_bytes()
    except OSError:
        return b""


def _probe_processes(project: Path) -> list[int]:
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmdline = (proc / "cmdline").read_bytes()
                cwd = os.readlink(proc / "cwd")
            except OSError:
                continue
            if b"warm_launch" in cmdline and cwd == str(project):
                found.append(int(proc.name))
    return found
