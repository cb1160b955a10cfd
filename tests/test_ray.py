"""Episodes as Ray tasks on a private local cluster (``ray.init(num_cpus=2)``, shut down after;
never ``ray stop``): the same run-directory layout as the local runner, a killed Ray worker
retried, then grading, adjudication and a leaderboard."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest

from gym_trainfail.batch import (
    RunLayout,
    adjudicate_batch,
    grade_batch,
    make_plan,
    resolve_cases,
    run_episodes,
    write_plan,
)
from gym_trainfail.batch.ray_runner import SCRATCH_PREFIX, RayRunner, load_ray, pack, unpack
from gym_trainfail.batch.status import read_status
from gym_trainfail.leaderboard import render_leaderboard
from gym_trainfail.runtimes import Runtime
from tests.batch_support import register_chaos_agent
from tests.conftest import ECHO_CASE


def test_pack_and_unpack_keep_an_episode_folder(tmp_path: Path) -> None:
    source = tmp_path / "episode"
    (source / "revisions").mkdir(parents=True)
    (source / "ledger.jsonl").write_text('{"event": "reset"}\n')
    (source / "revisions" / "1.json").write_text("{}")
    unpack(pack(source), tmp_path / "copy")
    assert sorted(p.relative_to(tmp_path / "copy").as_posix() for p in (tmp_path / "copy").rglob("*")) == [
        "ledger.jsonl",
        "revisions",
        "revisions/1.json",
    ]


def test_a_batch_runs_as_ray_tasks_and_survives_a_killed_worker(
    tmp_path: Path, runtime: Runtime, bwrap_usable: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAY_USAGE_STATS_ENABLED", "0")
    register_chaos_agent(tmp_path / "site", monkeypatch)
    ray = load_ray()
    assert not ray.is_initialized()
    layout = RunLayout(tmp_path / "run")
    options = {"chaos": {"marker_dir": str(tmp_path / "markers"), "mode": "kill"}}
    cases = resolve_cases([str(ECHO_CASE)])
    plan = write_plan(layout, make_plan(cases, ["control"], ["reference", "noop", "chaos"], 1, sandbox="bwrap",
                                        agent_options=options))  # fmt: skip
    runner = RayRunner(layout, "local", workers=2, sandbox="bwrap", agent_options=options)
    assert runner.slots == 2 and ray.cluster_resources()["CPU"] == 2
    counts = run_episodes(layout, plan, runner)
    assert not ray.is_initialized(), "the runner shuts down the private cluster it started"
    assert (counts.done, counts.failed, counts.gave_up) == (3, 1, 0)
    chaos = read_status(layout, "Echo-v0.control.chaos.t1")
    assert [(a.state, a.runner) for a in chaos.attempts] == [("infra", "ray"), ("done", "ray")]
    assert chaos.attempts[0].reason.startswith("Ray task failed")
    killed = (tmp_path / "markers" / "Echo-v0.control.chaos.t1.kill").read_text().split()[0]
    assert not list(Path(tempfile.gettempdir()).glob(f"{SCRATCH_PREFIX}{killed}-*")), "a dead task's scratch is reaped"
    for planned in plan.episodes:
        folder = layout.episode(planned.id)
        assert (folder / "ledger.jsonl").exists() and (folder / "revisions" / "1.json").exists()
        assert json.loads((folder / "episode.json").read_text())["case"] == "TrainFailTest/Echo-v0"
    report = grade_batch(layout, plan)
    assert (report.revisions, report.unique_trees) == (3, 2)
    verdicts = {a["agent"]: (a["solved"], a["infra_failures"]) for a in adjudicate_batch(layout, plan)}
    assert verdicts == {"reference": (True, 0), "noop": (False, 0), "chaos": (True, 1)}
    assert (render_leaderboard(layout.root, tmp_path / "board")[-1]).name == "index.html"
