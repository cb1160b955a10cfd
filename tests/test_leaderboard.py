"""Leaderboards: numbers recomputed from the episode ledgers, the paired comparison, the files,
and the HTML page rendered by a real headless browser."""

from __future__ import annotations

import csv
import json
import shutil
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gym_trainfail.batch import (
    LocalRunner,
    RunLayout,
    adjudicate_batch,
    grade_batch,
    make_plan,
    resolve_cases,
    run_episodes,
    write_plan,
)
from gym_trainfail.batch.status import Attempt, EpisodeStatus, write_status
from gym_trainfail.grading import Receipt, write_json
from gym_trainfail.leaderboard import load_batch, paired_rows, render_leaderboard, summary_rows
from gym_trainfail.leaderboard.svg import Point, pareto_front
from gym_trainfail.ledger import read_events, summarize
from gym_trainfail.revisions import RevisionLog
from gym_trainfail.runtimes import Runtime
from tests.conftest import ECHO_CASE


@pytest.fixture(scope="module")
def echo_batch(tmp_path_factory: pytest.TempPathFactory, runtime: Runtime, bwrap_usable: None) -> RunLayout:
    """A graded, adjudicated echo batch: reference and noop, 2 trials each."""
    layout = RunLayout(tmp_path_factory.mktemp("leaderboard") / "run")
    plan = write_plan(layout, make_plan(resolve_cases([str(ECHO_CASE)]), ["control"], ["reference", "noop"], 2,
                                        sandbox="bwrap"))  # fmt: skip
    run_episodes(layout, plan, LocalRunner(layout, 2))
    grade_batch(layout, plan)
    adjudicate_batch(layout, plan)
    return layout


@pytest.fixture(scope="module")
def rendered(echo_batch: RunLayout) -> Path:
    out = echo_batch.root.parent / "board"
    render_leaderboard(echo_batch.root, out, title="Echo leaderboard")
    return out


def test_leaderboard_numbers_match_the_episode_ledgers(echo_batch: RunLayout, rendered: Path) -> None:
    episodes = {r["episode"]: r for r in map(json.loads, (rendered / "episodes.jsonl").read_text().splitlines())}
    assert len(episodes) == 4
    for episode, row in episodes.items():
        run_dir = echo_batch.episode(episode)
        events = read_events(run_dir / "ledger.jsonl")
        log = RevisionLog(run_dir)
        verdicts = []
        for number in log.numbers():
            _, tree = log.load(number)
            receipt = Receipt.from_json(json.loads(echo_batch.receipt(row["case"], tree.digest).read_text()))
            submit = next(e for e in events if e["event"] == "submit" and e["revision"] == number)
            verdicts.append((number, receipt.status, summarize(events, until=submit["t"])))
        first = next((v for v in verdicts if v[1] == "pass"), None)
        assert row["solved"] is (first is not None)
        assert row["final_pass"] is (verdicts[-1][1] == "pass")
        whole = summarize(events)
        assert row["episode_adjusted_s"] == pytest.approx(whole.adjusted_seconds)
        assert row["episode_solver_dev_s"] == pytest.approx(whole.solver_device_seconds)
        if first is not None:
            cost = first[2]
            assert row["first_valid_revision"] == first[0]
            assert row["first_valid_raw_s"] == pytest.approx(cost.raw_seconds)
            assert row["first_valid_adjusted_s"] == pytest.approx(cost.adjusted_seconds)
            assert row["first_valid_tokens"] == cost.total_tokens
            assert row["first_valid_solver_dev_s"] == pytest.approx(cost.solver_device_seconds)
    summary = {(r["agent"]): r for r in map(json.loads, (rendered / "summary.jsonl").read_text().splitlines())}
    reference = [r for r in episodes.values() if r["agent"] == "reference"]
    assert summary["reference"]["pass_rate"] == 1.0 and summary["noop"]["pass_rate"] == 0.0
    spread = summary["reference"]["first_valid_adjusted_s"]
    assert spread["mean"] == pytest.approx(statistics.fmean(r["first_valid_adjusted_s"] for r in reference))
    assert spread["max"] == pytest.approx(max(r["first_valid_adjusted_s"] for r in reference))


def test_csv_and_jsonl_hold_the_same_rows(rendered: Path) -> None:
    with (rendered / "summary.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    jsonl = [json.loads(line) for line in (rendered / "summary.jsonl").read_text().splitlines()]
    assert [r["agent"] for r in rows] == [r["agent"] for r in jsonl] == ["reference", "noop"]
    assert float(rows[0]["first_valid_adjusted_s_mean"]) == pytest.approx(jsonl[0]["first_valid_adjusted_s"]["mean"])
    totals = json.loads((rendered / "totals.json").read_text())
    assert (totals["episodes"], totals["revisions"], totals["unique_trees"]) == (4, 4, 2)
    markdown = (rendered / "README.md").read_text()
    assert markdown.startswith("# Echo leaderboard\n")
    assert "| Echo-v0 | control | reference | 2 | 100% of 2 | 100% of 2 |" in markdown


def test_the_page_renders_in_a_headless_browser(rendered: Path, tmp_path: Path) -> None:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    assert chromium, "Debian chromium must be installed (scripts/bootstrap-system.sh installs it)"
    flags = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--no-first-run",
             f"--user-data-dir={tmp_path / 'profile'}"]  # fmt: skip
    page = (rendered / "index.html").as_uri()
    dom = subprocess.run([*flags, "--dump-dom", page], capture_output=True, text=True, timeout=120, check=True).stdout
    assert "<h1>Echo leaderboard</h1>" in dom
    assert dom.count("<svg") == 3 and "Cost vs. success (Pareto front joined)" in dom
    assert "<td>Echo-v0.control.reference.t1</td>" in dom
    assert "<th>pass rate</th>" in dom and "<td>100% of 2</td>" in dom
    shot = tmp_path / "page.png"
    subprocess.run([*flags, "--window-size=1280,2000", f"--screenshot={shot}", page], capture_output=True,
                   timeout=120, check=True)  # fmt: skip
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000


def test_the_cli_renders_a_leaderboard(echo_batch: RunLayout, tmp_path: Path) -> None:
    out = tmp_path / "cli-board"
    result = subprocess.run(
        [sys.executable, "-m", "gym_trainfail.cli", "leaderboard", str(echo_batch.root), "--out", str(out), "--json"],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    files = {Path(p).name for p in json.loads(result.stdout)["files"]}
    assert {"index.html", "README.md", "episodes.csv", "summary.jsonl", "pareto.svg"} <= files


# -- a synthetic two-arm batch for the paired comparison --------------------------------------


def _adjudication(
    episode: str, arm: str, agent: str, trial: int, passed: bool, seconds: float, uses: int
) -> dict[str, Any]:
    first = {"revision": 1, "raw_seconds": seconds + 1, "adjusted_seconds": seconds, "total_tokens": int(seconds * 10),
             "solver_device_seconds": seconds / 2} if passed else None  # fmt: skip
    usage = {"count": uses, "by_kind": {}, "first_at_seconds": 3.0 if uses else None, "first_step": None}
    none = {"count": 0, "by_kind": {}, "first_at_seconds": None, "first_step": None}
    return {
        "episode": episode, "case": "TrainFailTest/Echo-v0", "arm": arm, "agent": agent, "trial": trial,
        "attempts": 1, "infra_failures": 0, "graded": True, "solved": passed, "final_pass": passed,
        "final_status": "pass" if passed else "fail", "revisions": [{}], "first_valid": first,
        "summary": {"raw_seconds": seconds + 5, "adjusted_seconds": seconds + 4, "total_tokens": 100,
                    "solver_device_seconds": seconds},
        "grading": {"grader_device_seconds": 1.0}, "tools": {"traincheck": usage, "blocked": none, "mention": none},
        "overhead": {"overhead_seconds": 2.0}, "agent_error": None,
    }  # fmt: skip


def test_paired_comparison_pairs_trials_across_arms(tmp_path: Path) -> None:
    layout = RunLayout(tmp_path / "run")
    plan = write_plan(layout, make_plan(resolve_cases([str(ECHO_CASE)]), ["control", "traincheck"], ["noop"], 2))
    outcomes = {("control", 1): (True, 10.0, 0), ("control", 2): (False, 0.0, 0),
                ("traincheck", 1): (True, 6.0, 2), ("traincheck", 2): (True, 8.0, 1)}  # fmt: skip
    for planned in plan.episodes:
        passed, seconds, uses = outcomes[(planned.arm, planned.trial)]
        write_status(layout, EpisodeStatus(planned.id, (Attempt(1, "done", 0.0, 1.0),)))
        write_json(layout.adjudication(planned.id),
                   _adjudication(planned.id, planned.arm, "noop", planned.trial, passed, seconds, uses))  # fmt: skip
    batch = load_batch(layout.root)
    [pair] = paired_rows(batch)
    assert pair["pairs"] == 2 and pair["both_solved"] == 1
    assert (pair["control_pass_rate"], pair["treatment_pass_rate"], pair["delta_pass_rate"]) == (0.5, 1.0, 0.5)
    assert (pair["only_treatment_passed"], pair["only_control_passed"]) == (1, 0)
    assert pair["delta_first_valid_adjusted_s"]["mean"] == pytest.approx(-4.0)
    assert pair["delta_first_valid_tokens"]["mean"] == pytest.approx(-40.0)
    assert pair["treatment_used_traincheck"] == 2
    rows = {r["arm"]: r for r in summary_rows(batch)}
    assert rows["traincheck"]["first_valid_adjusted_s"] == {"n": 2, "mean": 7.0, "sd": pytest.approx(2**0.5),
                                                           "min": 6.0, "max": 8.0}  # fmt: skip
    assert rows["traincheck"]["traincheck_used"] == 2
    written = {p.name for p in render_leaderboard(layout.root, tmp_path / "board")}
    assert "paired.csv" in written
    assert (
        "| Echo-v0 | noop | 2 | 50% of 2 | 100% of 2 | +50 pp | 1 | 0 |"
        in (tmp_path / "board" / "README.md").read_text()
    )


def test_pareto_front_keeps_only_undominated_points() -> None:
    points = [Point("cheap-bad", 1, 0.2, "a"), Point("dear-good", 10, 0.9, "a"), Point("dominated", 12, 0.5, "b"),
              Point("middle", 5, 0.6, "b")]  # fmt: skip
    assert [p.label for p in pareto_front(points)] == ["cheap-bad", "middle", "dear-good"]


def test_gave_up_episodes_are_left_out_of_rates(tmp_path: Path) -> None:
    layout = RunLayout(tmp_path / "run")
    plan = write_plan(layout, make_plan(resolve_cases([str(ECHO_CASE)]), ["control"], ["noop"], 2))
    first, second = plan.episodes
    write_status(layout, EpisodeStatus(first.id, (Attempt(1, "done", 0.0, 1.0),)))
    write_json(layout.adjudication(first.id), _adjudication(first.id, "control", "noop", 1, True, 5.0, 0))
    failures = tuple(Attempt(n, "infra", 0.0, 1.0, reason="worker killed by SIGKILL") for n in (1, 2, 3))
    write_status(layout, EpisodeStatus(second.id, failures))
    batch = load_batch(layout.root)
    [row] = summary_rows(batch)
    assert (row["episodes"], row["gave_up"], row["pass_rate"]) == (1, 1, 1.0)
    assert batch.gave_up[0]["reason"] == "worker killed by SIGKILL"
