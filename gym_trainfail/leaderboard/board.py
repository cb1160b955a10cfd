"""A rendered leaderboard read back as a batch, so newer code can re-render a committed
leaderboard without the run directory it came from (run directories are not committed).

Every table and figure is computed from the episode rows (``episodes.jsonl``), the give-ups
(``gave-up.jsonl``), the grading figures (``totals.json``) and the plan. The plan is kept as
``batch.json`` beside them, without host paths (case folders) or agent options (which may name
credentials), together with the page title. The files are checked against a closed schema with
size bounds: a folder that is not a leaderboard, or one that was edited, gets an error that says
to render from the run directory instead.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gym_trainfail.batch.plan import BatchPlan, BatchSpec, PlannedEpisode
from gym_trainfail.errors import TrainFailError
from gym_trainfail.leaderboard.table import Batch

BOARD_FILE = "batch.json"
BOARD_VERSION = 1
#: Bounds on what is read back: bytes per file, planned episodes, characters per name.
MAX_BYTES, MAX_EPISODES, MAX_NAME = 64 * 1024 * 1024, 100_000, 200
_SPEC_KEYS = {"cases": list, "arms": list, "agents": list, "trials": int, "sandbox": str, "profile": str}
_EPISODE_KEYS = {"id": str, "case": str, "arm": str, "agent": str, "trial": int, "seed": int, "devices": int,
                 "profile": str}  # fmt: skip
_ROW_KEYS = {"episode": str, "case": str, "arm": str, "agent": str, "trial": int, "graded": bool}
_GAVE_UP_KEYS = {"episode": str, "case": str, "arm": str, "agent": str, "trial": int, "reason": str}
_GRADING_KEYS = ("revisions", "unique_trees", "grader_device_seconds", "grader_device_seconds_without_dedup")


@dataclass(frozen=True)
class Board:
    """A leaderboard folder read back: its batch and the title it was rendered with."""

    batch: Batch
    title: str


def is_board(path: Path) -> bool:
    """Whether ``path`` is a rendered leaderboard that can be re-rendered (it has ``batch.json``)."""
    return (path / BOARD_FILE).is_file()


def board_record(batch: Batch, title: str) -> dict[str, Any]:
    """What ``batch.json`` holds: the plan without host paths, agent options or creation time."""
    spec = batch.plan.spec
    return {
        "version": BOARD_VERSION,
        "title": title,
        "spec": {
            "cases": list(spec.cases),
            "arms": list(spec.arms),
            "agents": list(spec.agents),
            "trials": spec.trials,
            "sandbox": spec.sandbox,
            "profile": spec.profile,
        },  # fmt: skip
        "max_attempts": batch.plan.max_attempts,
        "episodes": [{key: getattr(e, key) for key in _EPISODE_KEYS} for e in batch.plan.episodes],
    }


def write_board_record(out_dir: Path, batch: Batch, title: str) -> Path:
    """Write ``batch.json`` (keys sorted, so a re-render rewrites the same bytes)."""
    path = out_dir / BOARD_FILE
    path.write_text(json.dumps(board_record(batch, title), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return path


def load_board(board_dir: Path) -> Board:
    """The batch and title of a rendered leaderboard folder; :class:`TrainFailError` when the folder's
    files are missing or do not match what :func:`write_board_record` and the renderer write."""
    record = _mapping(_json(board_dir / BOARD_FILE), BOARD_FILE)
    _keys(record, {"version", "title", "spec", "max_attempts", "episodes"}, BOARD_FILE)
    if record["version"] != BOARD_VERSION:
        raise _error(board_dir / BOARD_FILE, f"version {record['version']!r}, this code reads {BOARD_VERSION}")
    spec = _typed(_mapping(record["spec"], "spec"), _SPEC_KEYS, "spec")
    names = {key: [_name(v, f"spec.{key}") for v in spec[key]] for key in ("cases", "arms", "agents")}
    planned = record["episodes"]
    if not isinstance(planned, list) or len(planned) > MAX_EPISODES:
        raise _error(board_dir / BOARD_FILE, f"episodes must be a list of at most {MAX_EPISODES}")
    episodes = tuple(PlannedEpisode(case_root="", **_typed(_mapping(e, "episode"), _EPISODE_KEYS, "episode"))
                     for e in planned)  # fmt: skip
    _integer(spec["trials"], "spec.trials")
    plan = BatchPlan(
        BatchSpec(tuple(names["cases"]), tuple(names["arms"]), tuple(names["agents"]), spec["trials"],
                  sandbox=spec["sandbox"], profile=spec["profile"]),
        episodes, max_attempts=_integer(record["max_attempts"], "max_attempts"),
    )  # fmt: skip
    _check_names(plan, [e.id for e in episodes], board_dir)
    planned_ids = {e.id for e in episodes}
    rows = _in_csv_order(_rows(board_dir / "episodes.jsonl", _ROW_KEYS, plan, planned_ids), board_dir / "episodes.csv")
    gave_up_file = board_dir / "gave-up.jsonl"
    gave_up = _rows(gave_up_file, _GAVE_UP_KEYS, plan, planned_ids) if gave_up_file.exists() else []
    seen = [r["episode"] for r in [*rows, *gave_up]]
    if len(seen) != len(set(seen)):
        raise _error(board_dir, "an episode appears twice in episodes.jsonl and gave-up.jsonl")
    totals = _mapping(_json(board_dir / "totals.json"), "totals.json")
    grading = {key: totals[key] for key in _GRADING_KEYS if totals.get(key) is not None}
    for key, value in grading.items():
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise _error(board_dir / "totals.json", f"{key} must be a number, not {value!r}")
    title = _name(record["title"], "title", limit=1000)
    return Board(Batch(board_dir, plan, tuple(rows), tuple(gave_up), grading), title)


def _json(path: Path) -> Any:
    try:
        if path.stat().st_size > MAX_BYTES:
            raise _error(path, f"larger than {MAX_BYTES} bytes")
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise _error(path, "missing") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _error(path, f"not JSON ({exc})") from None


def _rows(path: Path, keys: Mapping[str, type], plan: BatchPlan, planned: set[str]) -> list[dict[str, Any]]:
    if not path.is_file():
        raise _error(path, "missing")
    if path.stat().st_size > MAX_BYTES:
        raise _error(path, f"larger than {MAX_BYTES} bytes")
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        try:
            row = _mapping(json.loads(line), f"line {number}")
        except json.JSONDecodeError as exc:
            raise _error(path, f"line {number} is not JSON ({exc})") from None
        where = f"line {number}"
        _typed({k: row.get(k) for k in keys}, keys, where)
        if row["episode"] not in planned:
            raise _error(path, f"{where}: episode {row['episode']!r} is not in {BOARD_FILE}'s plan")
        spec = plan.spec
        if row["case"] not in spec.cases or row["arm"] not in spec.arms or row["agent"] not in spec.agents:
            raise _error(path, f"{where}: {row['case']} · {row['arm']} · {row['agent']} is outside the plan's spec")
        rows.append(dict(row))
    return rows


def _in_csv_order(rows: list[dict[str, Any]], csv_file: Path) -> list[dict[str, Any]]:
    """Rows with their keys in the order of the CSV's header (JSONL keys are sorted; the CSV keeps
    the columns' first-seen order, which a re-render must write again)."""
    if not csv_file.is_file() or csv_file.stat().st_size > MAX_BYTES:
        return rows
    with csv_file.open(newline="", encoding="utf-8") as handle:
        header = next(csv.reader(handle), [])
    return [{**{k: row[k] for k in header if k in row}, **row} for row in rows]


def _check_names(plan: BatchPlan, ids: Sequence[str], board_dir: Path) -> None:
    spec = plan.spec
    if len(ids) != len(set(ids)):
        raise _error(board_dir / BOARD_FILE, "an episode id is planned twice")
    for episode in plan.episodes:
        _name(episode.id, "episode id")
        if episode.case not in spec.cases or episode.arm not in spec.arms or episode.agent not in spec.agents:
            raise _error(board_dir / BOARD_FILE, f"planned episode {episode.id!r} is outside the spec")


def _mapping(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise TrainFailError(f"{where}: expected a JSON object, found {type(value).__name__}; {_ADVICE}")
    return value


def _keys(record: Mapping[str, Any], expected: set[str], where: str) -> None:
    if set(record) != expected:
        found = sorted(set(record) ^ expected)
        raise TrainFailError(f"{where}: unexpected or missing keys {found}; {_ADVICE}")


def _typed(record: Mapping[str, Any], keys: Mapping[str, type], where: str) -> dict[str, Any]:
    _keys(record, set(keys), where)
    for key, kind in keys.items():
        value = record[key]
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise TrainFailError(f"{where}: {key} must be {kind.__name__}, not {value!r:.80}; {_ADVICE}")
        if isinstance(value, str):
            _name(value, f"{where}.{key}")
    return dict(record)


def _integer(value: Any, where: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise TrainFailError(f"{where} must be a positive integer, not {value!r:.80}; {_ADVICE}")
    return value


def _name(value: Any, where: str, limit: int = MAX_NAME) -> str:
    if not isinstance(value, str) or len(value) > limit:
        raise TrainFailError(f"{where} must be a string of at most {limit} characters; {_ADVICE}")
    return value


_ADVICE = "render the leaderboard from the batch's run directory instead (trainfail leaderboard RUN_DIR)"


def _error(path: Path, problem: str) -> TrainFailError:
    return TrainFailError(f"{path}: {problem}; {_ADVICE}")
