"""The run-kit and judge scaffolding case graders share (``gym_trainfail/harnesslib``), attacked
with the inputs a hostile run phase can leave: links, oversized and malformed files, names
that are not plain, and kit steps that raise. No training run: the case-specific parts are
stand-ins, the scaffolding is the real module every case's ``run.py`` and ``judge.py`` use."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from gym_trainfail.harnesslib import judgekit, runkit
from gym_trainfail.harnesslib.artifacts import ArtifactError, check_zip, read_json_object
from gym_trainfail.harnesslib.protocol import NAME_RE, read_requests


def test_collect_keeps_regular_files_within_their_limits_only(tmp_path: Path) -> None:
    run, dest = tmp_path / "run", tmp_path / "dest"
    (run / "ckpt").mkdir(parents=True)
    (run / "metrics.jsonl").write_text("{}\n")
    (run / "big.pt").write_bytes(b"x" * 101)
    secret = tmp_path / "secret"
    secret.write_text("host file")
    (run / "link.pt").symlink_to(secret)
    (run / "linked").symlink_to(run / "ckpt")
    (run / "ckpt" / "final.pt").write_bytes(b"ok")
    wanted = [("metrics.jsonl", 10), ("big.pt", 100), ("link.pt", 100), ("linked/final.pt", 100), ("missing", 9)]
    notes = runkit.collect(run, dest, wanted)
    assert (dest / "metrics.jsonl").read_text() == "{}\n"
    assert sorted(p.name for p in dest.rglob("*")) == ["metrics.jsonl"]
    assert any("over the 100-byte limit" in n for n in notes)
    assert any(n.startswith("link.pt:") for n in notes), "a link is never followed"
    assert any("a folder on its path is a link" in n for n in notes)
    assert len(notes) == 4


@dataclass(frozen=True)
class Sc:
    name: str
    run_timeout_s: float = 30.0


def _kit(run_one: Any) -> runkit.RunKit:
    def scenario(raw: dict[str, Any]) -> Sc:
        if not NAME_RE.match(str(raw.get("name"))):
            raise ValueError("bad name")
        return Sc(str(raw["name"]))

    return runkit.RunKit("Test", scenario, run_one, [], lambda backend: {}, read_requests)


def test_a_failing_scenario_is_recorded_and_the_next_one_still_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def run_one(sc: Sc, source: Path, scratch: Path, dest: Path, launchers: runkit.Launchers) -> dict[str, Any]:
        if sc.name == "boom":
            raise RuntimeError("the revision broke the kit")
        (dest / "report.txt").write_text(sc.name)
        return {"returncode": 0}

    requests = tmp_path / "scenarios.json"
    requests.write_text(json.dumps([{"name": "boom"}, {"name": "fine"}, {"name": "../escape"}]))
    monkeypatch.chdir(tmp_path)
    runkit.main(_kit(run_one), ["--scenarios", str(requests), "--out-dir", str(tmp_path / "out")])
    boom = json.loads((tmp_path / "out" / "boom" / "timings.json").read_text())
    assert boom["kit_error"] == "RuntimeError: the revision broke the kit"
    assert json.loads((tmp_path / "out" / "fine" / "timings.json").read_text())["returncode"] == 0
    assert (tmp_path / "out" / "fine" / "report.txt").read_text() == "fine"
    folders = sorted(p.name for p in (tmp_path / "out").iterdir() if p.is_dir())
    assert not (tmp_path / "escape").exists() and folders == ["boom", "fine"]


def _judge(tmp_path: Path, observe: Any, compare: Any, names: list[str], run: dict[str, Any]) -> dict[str, Any]:
    (tmp_path / "io").mkdir(exist_ok=True)
    (tmp_path / "io" / "scenarios.json").write_text(json.dumps([{"name": n} for n in names]))
    (tmp_path / "io" / "run.json").write_text(json.dumps(run))
    kit = judgekit.JudgeKit("Test", lambda raw: Sc(str(raw["name"])), observe, compare)
    out = tmp_path / "outcomes"
    argv = ["--scenarios", str(tmp_path / "io" / "scenarios.json"), "--artifacts", str(tmp_path / "artifacts"),
            "--run", str(tmp_path / "io" / "run.json"), "--out-dir", str(out)]  # fmt: skip
    judgekit.main(kit, read_requests, argv)
    return {p.stem: json.loads(p.read_text()) for p in out.glob("*.json")}


@dataclass
class Obs:
    metrics: list[Any]


def test_every_plain_scenario_gets_a_strict_json_outcome_whatever_its_artifacts_hold(tmp_path: Path) -> None:
    folder = tmp_path / "artifacts"
    for name in ("ok", "gone", "aborted", "crash"):
        (folder / name).mkdir(parents=True)
    (folder / "aborted" / "job.log").write_text("step 3\nterminate called without an active exception\n")
    (folder / "gone" / "job.log").write_text("Traceback ...\nValueError: the revision's own error\n")
    (folder / "gone" / "timings.json").write_text(json.dumps({"returncode": 1, "notes": ["metrics.jsonl: missing"]}))

    def observe(sc: Sc, where: Path) -> Obs:
        if sc.name in ("gone", "aborted"):
            raise ArtifactError("metrics.jsonl: No such file or directory")
        if sc.name == "crash":
            raise KeyError("a judge bug")
        return Obs([])

    def compare(sc: Sc, obs: Obs) -> judgekit.Verdict:
        return judgekit.Verdict("pass", "", {"drift": float("nan")})

    outcomes = _judge(tmp_path, observe, compare, ["ok", "gone", "aborted", "crash", "../x"], {"exit_code": 0})
    assert sorted(outcomes) == ["aborted", "crash", "gone", "ok"], "a name that is not plain gets no outcome"
    assert outcomes["ok"]["status"] == "pass" and outcomes["ok"]["metrics"]["drift"] == "nan"
    assert outcomes["aborted"]["status"] == "retry", "only a bare gloo exit abort retries"
    assert outcomes["gone"]["status"] == "fail" and "ValueError: the revision's own error" in outcomes["gone"]["reason"]
    assert "metrics.jsonl: missing" in outcomes["gone"]["reason"]
    assert outcomes["crash"]["status"] == "fail" and outcomes["crash"]["reason"].startswith("judge error: KeyError")


def test_the_hosts_run_facts_decide_and_the_kits_claims_cannot_turn_a_fail_into_a_retry(tmp_path: Path) -> None:
    folder = tmp_path / "artifacts" / "late"
    folder.mkdir(parents=True)
    (folder / "job.log").write_text("terminate called without an active exception\n")
    (folder / "timings.json").write_text(json.dumps({"timed_out": False, "returncode": 0}))

    def observe(sc: Sc, where: Path) -> Obs:
        raise ArtifactError("no outputs")

    outcomes = _judge(tmp_path, observe, lambda sc, obs: None, ["late"], {"exit_code": None, "timed_out": True})
    assert outcomes["late"]["status"] == "fail" and "time limit" in outcomes["late"]["reason"]
    (tmp_path / "io" / "run.json").write_text("[not an object")
    assert judgekit.read_run(tmp_path / "io" / "run.json")["exit_code"] is None


def test_artifact_readers_refuse_links_bombs_and_non_objects(tmp_path: Path) -> None:
    import io
    import zipfile

    target = tmp_path / "t.json"
    target.write_text("{}")
    (tmp_path / "l.json").symlink_to(target)
    with pytest.raises(ArtifactError):
        read_json_object(tmp_path / "l.json")
    (tmp_path / "a.json").write_text("[1]")
    with pytest.raises(ArtifactError, match="not a JSON object"):
        read_json_object(tmp_path / "a.json")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("data.pkl", b"\0" * 1_000_000)
    with pytest.raises(ArtifactError, match="unpacks to 1000000 bytes"):
        check_zip(buffer.getvalue(), "model.pt", 1000)
    check_zip(buffer.getvalue(), "model.pt", 1_000_000)
