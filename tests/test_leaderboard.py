"""Leaderboards: numbers recomputed from the episode ledgers, the paired comparison (bootstrap
intervals, McNemar, small-n warnings), the rubric milestone tables, the files, and the HTML page
rendered by a real headless browser."""

from __future__ import annotations

import csv
import importlib
import json
import re
import shutil
import statistics
import subprocess
import sys
from collections.abc import Callable, Mapping
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
from gym_trainfail.errors import MissingExtraError, TrainFailError
from gym_trainfail.files import write_json
from gym_trainfail.grading import Receipt
from gym_trainfail.leaderboard import fmt, load_batch, milestone_rows, paired_rows, render_leaderboard, summary_rows
from gym_trainfail.leaderboard.board import load_board
from gym_trainfail.leaderboard.colours import PAIRS, Palette
from gym_trainfail.leaderboard.milestone_columns import ENGAGEMENT_LEVELS, MILESTONES, judge_label
from gym_trainfail.leaderboard.plots import Bar, BarChart, Panel, Point, Series, milestone_chart, pareto_front
from gym_trainfail.leaderboard.stats import SMALL_N, bootstrap_ci, mcnemar_exact, small_n_warning
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


def test_the_page_holds_the_figures_and_the_compact_table(rendered: Path) -> None:
    page = (rendered / "index.html").read_text()
    assert "<h1>Echo leaderboard</h1>" in page and "<script src" not in page and "http" not in page.split("<svg")[0]
    for name in ("pass-rate", "first-valid-time", "cost-success", "milestones"):
        assert (rendered / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f'<figure id="{name}">' in page and f'<a href="{name}.svg">SVG</a>' in page
    assert not (rendered / "traincheck-activated.svg").exists()  # one arm: no TrainCheck split to draw
    assert page.count("<svg") == 4 and '<td class="num" data-sort="1.0">100%' in page
    assert '<details id="full-table"><summary>All 16 columns</summary>' in page


def test_the_cli_renders_a_leaderboard(echo_batch: RunLayout, tmp_path: Path) -> None:
    out = tmp_path / "cli-board"
    result = subprocess.run(
        [sys.executable, "-m", "gym_trainfail.cli", "leaderboard", str(echo_batch.root), "--out", str(out), "--json"],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    files = {Path(p).name for p in json.loads(result.stdout)["files"]}
    assert {"index.html", "README.md", "episodes.csv", "summary.jsonl", "cost-success.svg", "cost-success.png"} <= files


# -- a synthetic two-arm batch for the paired comparison --------------------------------------


def _adjudication(
    episode: str, arm: str, agent: str, trial: int, passed: bool, seconds: float, uses: int, **extra: Any
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
        "overhead": {"overhead_seconds": 2.0}, "agent_error": None, **extra,
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
    written = {p.name for p in render_leaderboard(layout.root, tmp_path / "board", figures=False)}
    assert "paired.csv" in written and not any(name.endswith((".svg", ".png")) for name in written)
    assert (
        "| Echo-v0 | noop | 2 | 50% of 2 | 100% of 2 | +50 pp | 1 | 0 |"
        in (tmp_path / "board" / "README.md").read_text()
    )


def test_pareto_front_keeps_only_undominated_points() -> None:
    def point(agent: str, x: float, y: float) -> Point:
        return Point(agent, "control", x, y, x, x, y, y, 2)

    points = [point("cheap-bad", 1, 0.2), point("dear-good", 10, 0.9), point("dominated", 12, 0.5),
              point("middle", 5, 0.6), point("tied", 5, 0.6)]  # fmt: skip
    assert [p.agent for p in pareto_front(points)] == ["cheap-bad", "middle", "tied", "dear-good"]


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


# -- statistics -------------------------------------------------------------------------------


def test_bootstrap_interval_is_deterministic_and_brackets_the_mean() -> None:
    values = [1.0, 2.0, 3.0, 10.0, -4.0, 7.0]
    interval = bootstrap_ci(values)
    assert interval is not None and interval == bootstrap_ci(values)
    low, high = interval
    assert min(values) <= low < statistics.fmean(values) < high <= max(values)
    half_low, half_high = bootstrap_ci(values, confidence=0.5) or (0.0, 0.0)
    assert low < half_low < half_high < high  # a lower confidence gives a narrower interval
    assert bootstrap_ci([]) is None and bootstrap_ci([4.5]) == (4.5, 4.5)


def test_bootstrap_interval_of_equal_values_has_zero_width() -> None:
    assert bootstrap_ci([3.0] * 6) == pytest.approx((3.0, 3.0))


def test_mcnemar_exact_p_values() -> None:
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(5, 0) == pytest.approx(0.0625, abs=1e-12) == mcnemar_exact(0, 5)
    assert mcnemar_exact(10, 2) == pytest.approx(2 * (1 + 12 + 66) / 2**12, abs=1e-12)
    assert mcnemar_exact(10, 2) == pytest.approx(0.0386, abs=1e-4)
    assert mcnemar_exact(3, 3) == 1.0 and mcnemar_exact(1, 0) == 1.0


def test_small_n_warning_below_five_pairs() -> None:
    assert small_n_warning(SMALL_N) is None
    assert small_n_warning(2) == (
        "only 2 pair(s): too few for a causal efficiency ratio or a reliable difference (at least 5 needed)"
    )


# -- rubric milestones ------------------------------------------------------------------------


def _milestone(seconds: float) -> dict[str, Any]:
    return {"raw_s": seconds + 1, "adjusted_s": seconds, "turn": 1, "step": 1, "tokens_low": int(seconds * 10),
            "tokens_high": int(seconds * 10) + 5, "solver_device_seconds": seconds / 4, "excerpt": "…"}  # fmt: skip


def _diagnosis(times: Mapping[str, float], rank: int | None = None, jobs: int = 1) -> dict[str, Any]:
    """A diagnosis reaching the milestones in ``times`` (adjusted seconds); engagement of ``rank``."""
    engagement = None if rank is None else {"level": ENGAGEMENT_LEVELS[rank], "rank": rank, "evidence": {}}
    return {
        "judge": "rubric", "rubric": "0" * 64,
        "milestones": {name: _milestone(times[name]) if name in times else None for name in MILESTONES},
        "engagement": engagement,
        "validation": {"jobs": jobs, "device_seconds": 2.0 * jobs, "distinct_commands": jobs, "ranks": [2],
                       "steps": None},
    }  # fmt: skip


def _two_arm_batch(root: Path, trials: int, make: Callable[[str, str, int], dict[str, Any]]) -> RunLayout:
    """A synthetic control/TrainCheck batch of agent ``noop``; ``make(episode, arm, trial)`` adjudicates."""
    layout = RunLayout(root / "run")
    plan = write_plan(layout, make_plan(resolve_cases([str(ECHO_CASE)]), ["control", "traincheck"], ["noop"], trials))
    for planned in plan.episodes:
        write_status(layout, EpisodeStatus(planned.id, (Attempt(1, "done", 0.0, 1.0),)))
        write_json(layout.adjudication(planned.id), make(planned.id, planned.arm, planned.trial))
    return layout


def _row(rows: list[dict[str, Any]], milestone: str, measure: str) -> dict[str, Any]:
    return next(r for r in rows if (r["milestone"], r["measure"]) == (milestone, measure))


def test_milestone_table_from_synthetic_adjudications(tmp_path: Path) -> None:
    # control reaches the pre-run hypothesis at 10 s and 20 s (not in trial 3); TrainCheck at 4, 6, 8 s,
    # with TrainCheck activated (rank ≥ 3) in trials 1 and 2 only
    pre_run = {("control", 1): 10.0, ("control", 2): 20.0, ("traincheck", 1): 4.0, ("traincheck", 2): 6.0,
               ("traincheck", 3): 8.0}  # fmt: skip
    ranks = {1: 3, 2: 4, 3: 1}

    def make(episode: str, arm: str, trial: int) -> dict[str, Any]:
        times = {"first_valid_submission": 30.0 + trial}
        if (arm, trial) in pre_run:
            times["pre_run_hypothesis"] = pre_run[(arm, trial)]
        diagnosis = _diagnosis(times, ranks[trial] if arm == "traincheck" else None, jobs=trial)
        return _adjudication(episode, arm, "noop", trial, True, 30.0 + trial, 1, diagnosis=diagnosis)

    layout = _two_arm_batch(tmp_path, 3, make)
    batch = load_batch(layout.root)
    episode = next(r for r in batch.episodes if (r["arm"], r["trial"]) == ("traincheck", 2))
    assert episode["m_pre_run_hypothesis_adjusted_s"] == 6.0 and episode["m_pre_run_hypothesis_raw_s"] == 7.0
    assert (episode["m_first_valid_submission_tokens_low"], episode["m_first_valid_submission_tokens_high"]) == (
        320, 325)  # fmt: skip
    assert (episode["engagement_level"], episode["traincheck_activated"], episode["validation_jobs"]) == (
        "acted", True, 2)  # fmt: skip
    assert episode["m_source_supported_diagnosis_adjusted_s"] is None

    rows = milestone_rows(batch)
    pre = _row(rows, "pre_run_hypothesis", "adjusted_s")
    assert pre["control"] == {"n": 2, "mean": 15.0, "sd": pytest.approx(50**0.5), "min": 10.0, "max": 20.0, "of": 3,
                              "ci_low": 10.0, "ci_high": 20.0}  # fmt: skip
    assert (pre["traincheck"]["n"], pre["traincheck"]["mean"], pre["traincheck"]["of"]) == (3, 6.0, 3)
    assert (pre["traincheck_activated"]["mean"], pre["traincheck_activated"]["min"],
            pre["traincheck_activated"]["max"], pre["traincheck_activated"]["of"]) == (5.0, 4.0, 6.0, 2)  # fmt: skip
    assert (pre["traincheck_not_activated"]["n"], pre["traincheck_not_activated"]["mean"]) == (1, 8.0)
    assert _row(rows, "source_supported_diagnosis", "raw_s")["control"]["n"] == 0
    tokens = _row(rows, "first_valid_submission", "tokens_high")["control"]
    assert (tokens["mean"], tokens["min"], tokens["max"]) == (325.0, 315.0, 335.0)
    device = _row(rows, "first_valid_submission", "solver_dev_s")["traincheck"]
    assert device["mean"] == pytest.approx(32.0 / 4)

    summary = {r["arm"]: r for r in summary_rows(batch)}
    assert summary["traincheck"]["engagement"] == {"none": 0, "manual": 1, "prepared": 0, "activated": 1, "acted": 1}
    assert summary["traincheck"]["traincheck_activated"] == 2 and summary["control"]["traincheck_activated"] == 0
    assert summary["control"]["validation_jobs"]["mean"] == 2.0

    [pair] = paired_rows(batch)
    assert pair["delta_m_pre_run_hypothesis_adjusted_s"]["n"] == 2  # trial 3: the control never got there
    assert pair["delta_m_pre_run_hypothesis_adjusted_s"]["mean"] == pytest.approx(-10.0)  # 4−10, 6−20
    interval = pair["ci_delta_m_pre_run_hypothesis_adjusted_s"]
    assert -14.0 <= interval["low"] < -10.0 < interval["high"] <= -6.0
    assert pair["treatment_activated_traincheck"] == 2

    render_leaderboard(layout.root, tmp_path / "board", figures=False)  # tables only: figures are tested below
    readme = (tmp_path / "board" / "README.md").read_text()
    assert "| milestone | measure | control | traincheck | traincheck (activated) | traincheck (not activated) |" in (
        readme)  # fmt: skip
    assert ("| pre-run hypothesis | adjusted s | 15 ± 7.1 [10–20] (2/3 reached) | 6.0 ± 2.0 [4.0–8.0] "
            "(3/3 reached) | 5.0 ± 1.4 [4.0–6.0] (2/2 reached) | 8.0 (1/1 reached) |") in readme  # fmt: skip
    assert "| source-supported diagnosis | raw s | — (0/3 reached) |" in readme
    assert ("| through first valid submission | tokens | low 320 ± 10 [310–330]; high 325 ± 10 [315–335] (3/3 reached) "
            "|") in readme  # fmt: skip
    assert "330–335 (1/1 reached) |" in readme  # one episode: its token range
    assert "| manual 1 · activated 1 · acted 1 | 2.0 ± 1.0 [1.0–3.0] |" in readme
    milestones_csv = list(csv.DictReader((tmp_path / "board" / "milestones.csv").open()))
    assert len(milestones_csv) == len(rows) and float(milestones_csv[1]["control_mean"]) == 15.0


def test_rubricless_diagnosis_times_only_the_device_request_and_submission(tmp_path: Path) -> None:
    def make(episode: str, arm: str, trial: int) -> dict[str, Any]:
        diagnosis = {**_diagnosis({"first_valid_submission": 12.0}), "judge": None, "rubric": None}
        return _adjudication(episode, arm, "noop", trial, True, 12.0, 0, diagnosis=diagnosis)

    rows = milestone_rows(load_batch(_two_arm_batch(tmp_path, 1, make).root))
    assert _row(rows, "pre_run_hypothesis", "adjusted_s")["control"]["of"] == 0
    assert _row(rows, "first_valid_submission", "adjusted_s")["control"] == {
        "n": 1, "mean": 12.0, "sd": 0.0, "min": 12.0, "max": 12.0, "of": 1, "ci_low": 12.0,
        "ci_high": 12.0}  # fmt: skip


def test_episodes_without_a_diagnosis_render_dashes(tmp_path: Path) -> None:
    def make(episode: str, arm: str, trial: int) -> dict[str, Any]:
        row = _adjudication(episode, arm, "noop", trial, True, 5.0, 0)
        return {**row, "diagnosis": None} if arm == "traincheck" else row  # absent in control, null in TrainCheck

    layout = _two_arm_batch(tmp_path, 1, make)
    batch = load_batch(layout.root)
    assert all(r["m_pre_run_hypothesis_adjusted_s"] is None and r["traincheck_activated"] is None
               for r in batch.episodes)  # fmt: skip
    assert all(r[group]["of"] == 0 for r in milestone_rows(batch) for group in ("control", "traincheck"))
    render_leaderboard(layout.root, tmp_path / "board", figures=False)  # tables only: figures are tested below
    readme = (tmp_path / "board" / "README.md").read_text()
    assert "| pre-run hypothesis | raw s | — | — | — | — |" in readme
    assert "| through first valid submission | tokens | — | — | — | — |" in readme
    assert "| Echo-v0 | noop | first valid submission | 0 | — | — |" in readme


@pytest.mark.parametrize("trials", [2, 6])
def test_small_n_warning_under_the_paired_table(tmp_path: Path, trials: int) -> None:
    # TrainCheck passes every trial, the control only trial 1: trials − 1 discordant pairs
    def make(episode: str, arm: str, trial: int) -> dict[str, Any]:
        passed = arm == "traincheck" or trial == 1
        return _adjudication(episode, arm, "noop", trial, passed, 10.0 if arm == "control" else 6.0, 1)

    layout = _two_arm_batch(tmp_path, trials, make)
    [pair] = paired_rows(load_batch(layout.root))
    assert pair["mcnemar_p"] == pytest.approx(mcnemar_exact(trials - 1, 0))
    assert pair["ci_delta_first_valid_adjusted_s"] == {"low": -4.0, "high": -4.0}
    render_leaderboard(layout.root, tmp_path / "board", figures=False)  # tables only: figures are tested below
    readme = (tmp_path / "board" / "README.md").read_text()
    page = (tmp_path / "board" / "index.html").read_text()
    warning = f"only {trials} pair(s): too few for a causal efficiency ratio"
    if trials < SMALL_N:
        assert pair["warning"] and pair["warning"].startswith(warning)
        assert f"**Warning:** Echo-v0 · noop: {warning}" in readme
        assert f'<p class="warning">Warning: Echo-v0 · noop: {warning}' in page
    else:
        assert pair["warning"] is None and "causal efficiency" not in readme + page and "too few pairs" not in page
        assert "| 5 | 0 | 0.0625 | -4.0 | [-4.0, -4.0] |" in readme


def test_milestone_chart_draws_means_with_bootstrap_intervals(tmp_path: Path) -> None:
    def make(episode: str, arm: str, trial: int) -> dict[str, Any]:
        seconds = {"control": 10.0, "traincheck": 4.0}[arm] * trial
        diagnosis = _diagnosis({"pre_run_hypothesis": seconds})
        return _adjudication(episode, arm, "noop", trial, True, 5.0, 0, diagnosis=diagnosis)

    rows = milestone_rows(load_batch(_two_arm_batch(tmp_path, 2, make).root))
    case = rows[0]["case"]
    [panel] = milestone_chart(rows, [case], ["noop"], ["control", "traincheck"]).panels
    control, treatment = panel.series
    assert (control.group, treatment.group, panel.title) == ("control", "traincheck", "Echo-v0")
    assert control.bars[0] == Bar(15.0, 10.0, 20.0) and treatment.bars[0] == Bar(6.0, 4.0, 8.0)
    assert control.bars[1:] == (Bar(None),) * (len(MILESTONES) - 1)  # nothing else reached: no bar


def test_palette_fixes_a_colour_per_agent_and_arm() -> None:
    palette = Palette(["study", "noop"], ["traincheck", "control"])  # arms in either order: same shades
    study, noop = PAIRS[0], PAIRS[1]
    assert palette.style("study", "control").face == study[0] and palette.style("study", "traincheck").face == study[1]
    assert palette.style("noop", "control").face == noop[0]
    activated = palette.style("study", "traincheck_activated")
    not_activated = palette.style("study", "traincheck_not_activated")
    assert activated.face == not_activated.face == study[1] and activated.hatch != not_activated.hatch
    assert palette.style("study", "control").marker != palette.style("study", "traincheck").marker
    with pytest.raises(ValueError, match="agent 'reference' is not one of"):
        palette.style("reference", "control")


# -- figures, the page and re-rendering a rendered leaderboard --------------------------------


def _activated_batch(root: Path) -> RunLayout:
    """Two trials per arm; TrainCheck activated in the TrainCheck arm's first trial only."""

    def make(episode: str, arm: str, trial: int) -> dict[str, Any]:
        seconds = {"control": 10.0, "traincheck": 4.0}[arm] * trial
        rank = (3 if trial == 1 else 0) if arm == "traincheck" else None
        diagnosis = _diagnosis({"pre_run_hypothesis": seconds, "first_valid_submission": seconds + 1}, rank)
        return _adjudication(episode, arm, "noop", trial, trial == 1, seconds + 1, 1, diagnosis=diagnosis)

    return _two_arm_batch(root, 2, make)


@pytest.fixture(scope="module")
def activated_board(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path]]:
    """The activated batch rendered (once for the module; tests that change it work on a copy)."""
    root = tmp_path_factory.mktemp("activated")
    board = root / "board"
    return board, render_leaderboard(_activated_batch(root).root, board, title="Board")


def test_a_rendered_leaderboard_re_renders_to_the_same_bytes(
    activated_board: tuple[Path, list[Path]], tmp_path: Path
) -> None:
    first, written = activated_board
    names = sorted(p.name for p in written)
    assert {"traincheck-activated.svg", "traincheck-activated.png", "cost-success.png", "batch.json"} <= set(names)
    again = tmp_path / "again"
    assert sorted(p.name for p in render_leaderboard(first, again)) == names  # the title comes back too
    for name in names:
        assert (first / name).read_bytes() == (again / name).read_bytes(), name
    svg = (first / "milestones.svg").read_text()
    assert "<dc:date>" not in svg and "Matplotlib v" not in svg and svg.count("<text") > 10  # text stays text
    assert "case_root" not in (first / "batch.json").read_text() and load_board(first).title == "Board"
    page = (first / "index.html").read_text()
    ids = re.findall(r'\bid="([^"]+)"', page)
    assert len(ids) == len(set(ids))  # every figure's ids prefixed: unique in the page
    for name in ("pass-rate", "first-valid-time", "cost-success", "milestones", "traincheck-activated"):
        assert PAIRS[0][0] in (first / f"{name}.svg").read_text()  # noop · control: one colour everywhere
        assert PAIRS[0][1] in (first / f"{name}.svg").read_text()  # noop · traincheck


@pytest.mark.parametrize(
    ("file", "tamper", "problem"),
    [
        ("batch.json", lambda d: {**d, "version": 2}, "version 2, this code reads 1"),
        ("batch.json", lambda d: {**d, "spec": {**d["spec"], "agent_options": {}}}, "unexpected or missing keys"),
        ("batch.json", lambda d: {**d, "episodes": [{**d["episodes"][0], "trial": True}]}, "trial must be int"),
        ("episodes.jsonl", lambda r: {**r, "episode": "Echo-v0.control.noop.t9"}, "is not in batch.json's plan"),
        ("episodes.jsonl", lambda r: {**r, "agent": "study"}, "outside the plan's spec"),
        ("episodes.jsonl", lambda r: {k: v for k, v in r.items() if k != "validation_jobs"}, "older gym-trainfail"),
        ("totals.json", lambda d: {**d, "grader_device_seconds": "lots"}, "must be a number"),
    ],
)
def test_a_tampered_leaderboard_is_refused(
    activated_board: tuple[Path, list[Path]], tmp_path: Path, file: str,
    tamper: Callable[[dict[str, Any]], dict[str, Any]], problem: str,
) -> None:  # fmt: skip
    board = tmp_path / "board"
    shutil.copytree(activated_board[0], board)
    path = board / file
    if file.endswith(".jsonl"):
        rows = [tamper(json.loads(line)) for line in path.read_text().splitlines()]
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    else:
        path.write_text(json.dumps(tamper(json.loads(path.read_text()))))
    with pytest.raises(TrainFailError, match=re.escape(problem)) as caught:
        render_leaderboard(board, tmp_path / "again")
    assert "render the leaderboard from the batch's run directory instead" in str(caught.value)


def test_rows_from_before_the_judge_column_say_the_judge_is_not_recorded() -> None:
    assert judge_label([{"diagnosed": True}, {"diagnosed": False}]) == "judge not recorded"
    assert judge_label([{"judge": None}]) == "no judge (no rubric)"


def test_the_compact_table_carries_intervals_sort_keys_and_small_n_marks(
    activated_board: tuple[Path, list[Path]],
) -> None:
    board = activated_board[0]
    readme = (board / "README.md").read_text()
    # control: trial 1 passed at 11 s, trial 2 failed; two graded episodes (< 5): marked
    assert "| Echo-v0 | control | noop | 2 | 50% [0–100] ⚠ | 11 ⚠ | 110 | 5.5 | — |" in readme
    assert "| Echo-v0 | traincheck | noop | 2 | 50% [0–100] ⚠ | 5.0 ⚠ | 50 | 2.5 | none 1 · activated 1 |" in readme
    assert f"**Warning:** ⚠ small n: fewer than {SMALL_N} episodes" in readme
    page = (board / "index.html").read_text()
    row = page[page.index("<td>Echo-v0</td><td>control</td><td>noop</td>") :].split("</tr>")[0]
    assert '<td class="num" data-sort="2.0">2</td>' in row
    assert '<td class="num" data-sort="0.5">50% [0–100] <span class="small-n" title="only 2 episode(s)' in row
    assert row.endswith("<td>—</td>")  # no engagement in the control arm: a dash, sorted last
    assert "<script>" in page and "table.sortable" in page


def test_figures_without_matplotlib_name_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if it were not installed
    monkeypatch.delitem(sys.modules, "gym_trainfail.leaderboard.figures", raising=False)
    with pytest.raises(MissingExtraError, match=re.escape("pip install 'gym-trainfail[leaderboard]'")):
        importlib.import_module("gym_trainfail.leaderboard.figures")


def test_ranges_and_intervals_with_negative_bounds_read_unambiguously() -> None:
    assert fmt.spread({"n": 2, "mean": -2.3, "sd": 5.9, "min": -6.5, "max": -1.9}) == "-2.3 ± 5.9 [-6.5 to -1.9]"
    assert fmt.spread({"n": 2, "mean": 15.0, "sd": 7.07, "min": 10.0, "max": 20.0}) == "15 ± 7.1 [10–20]"
    assert fmt.mean_interval(-2.0, {"low": -4.0, "high": 1.0}) == "-2.0 [-4.0 to 1.0]"
    assert fmt.share_interval(0.5, {"low": 0.0, "high": 1.0}) == "50% [0–100]"
    assert fmt.share_interval(1.0, {"low": 1.0, "high": 1.0}) == "100%" and fmt.share_interval(None, None) == "—"


def test_a_name_with_dollar_signs_is_drawn_as_text(tmp_path: Path) -> None:
    from gym_trainfail.leaderboard import figures  # the optional extra, as render imports it

    name = "agent$\\q$"  # as TeX this would not even parse
    panel = Panel("cost $5", ("A$1",), (Series(name, "control", (Bar(1.0, 0.5, 1.5),)),))
    chart = BarChart("dollars", "seconds", (panel,), "none")
    svg, png = figures.write(tmp_path, "dollars", lambda: figures.bar_chart(chart, Palette([name], ["control"])))
    text = svg.read_text()
    assert f"{name} · control" in text and "cost $5" in text and png.stat().st_size > 1000
