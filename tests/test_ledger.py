"""Ledger durability and the derived accounting."""

from __future__ import annotations

from pathlib import Path

import pytest

from gym_trainfail.ledger import Ledger, read_events, summarize


def test_events_are_on_disk_after_each_append(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "ledger.jsonl")
    ledger.append("reset", t=100.0, case="X")
    assert [e["event"] for e in read_events(tmp_path / "ledger.jsonl")] == ["reset"]
    ledger.append("step", t=101.0, index=1, tool="shell", start=100.5, end=101.0)
    assert len(read_events(tmp_path / "ledger.jsonl")) == 2
    ledger.close()


def test_torn_last_line_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "ledger.jsonl"
    path.write_text('{"event": "reset", "t": 1.0}\n{"event": "st')
    assert read_events(path) == [{"event": "reset", "t": 1.0}]


def _episode() -> list[dict]:
    return [
        {"event": "reset", "t": 0.0},
        {"event": "tokens", "t": 1.0, "input": 1000, "output": 200, "cached_input": 800},
        {
            "event": "device",
            "t": 30.0,
            "role": "solver",
            "devices": 2,
            "queued_at": 5.0,
            "started_at": 15.0,
            "released_at": 30.0,
            "device_seconds": 30.0,
        },
        {"event": "suspension", "t": 50.0, "start": 40.0, "end": 50.0, "reason": "rate limit"},
        {"event": "submit", "t": 60.0, "revision": 1, "tree": "a"},
        {
            "event": "tokens",
            "t": 70.0,
            "input": 1500,
            "output": 100,
            "cached_input": 1200,
            "estimated": True,
        },
        {
            "event": "device",
            "t": 90.0,
            "role": "solver",
            "devices": 4,
            "queued_at": 80.0,
            "started_at": 80.0,
            "released_at": 90.0,
            "device_seconds": 40.0,
        },
        {
            "event": "device",
            "t": 95.0,
            "role": "grader",
            "devices": 2,
            "queued_at": 91.0,
            "started_at": 91.0,
            "released_at": 95.0,
            "device_seconds": 8.0,
        },
        {"event": "finish", "t": 100.0, "reason": "finish"},
    ]


def test_summary_of_whole_episode() -> None:
    s = summarize(_episode())
    assert s.raw_seconds == 100.0
    assert s.queue_wait_seconds == 10.0 and s.suspended_seconds == 10.0
    assert s.adjusted_seconds == 80.0
    assert (s.input_tokens, s.output_tokens, s.cached_input_tokens) == (2500, 300, 2000)
    assert s.total_tokens == 2800  # cached input is inside input: counted once
    assert s.tokens_estimated is True
    assert s.solver_device_seconds == 70.0 and s.grader_device_seconds == 8.0


def test_summary_up_to_first_valid_revision() -> None:
    s = summarize(_episode(), until=60.0)
    assert s.raw_seconds == 60.0 and s.adjusted_seconds == 40.0
    assert s.total_tokens == 1200 and s.tokens_estimated is False
    assert s.solver_device_seconds == 30.0 and s.submits == 1


@pytest.mark.parametrize("until", [20.0, 45.0])
def test_waits_are_clipped_to_the_window(until: float) -> None:
    s = summarize(_episode(), until=until)
    assert s.adjusted_seconds == pytest.approx(until - min(10.0, until - 5.0) - max(0.0, min(until, 50.0) - 40.0))
