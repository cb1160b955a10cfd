"""The ledger belongs to the host, and TrainCheck use is measured where the agent cannot switch it off.

* Whatever a sandboxed command writes to its audit channel (``$TRAINFAIL_AUDIT_FD``) is checked
  against a closed schema on the host: forged steps, tokens, device allocations, submits,
  suspensions and finishes are dropped and counted, and no summary, adjudication or resume reads
  them. Valid records become ``audit`` events, never another kind.
* The host watches its private copies of the arm's files (inotify): TrainCheck use in the
  treatment arm, and attempts in the control arm, are on record under ``python -S``, ``-I``,
  ``env -u TRAINFAIL_AUDIT_FD``, a computed module name, and a copy of the package made first.
"""

from __future__ import annotations

import json
import math
import subprocess
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from gym_trainfail.arms import audit_category
from gym_trainfail.batch.adjudicate import tool_usage
from gym_trainfail.batch.worker import _judge_finished
from gym_trainfail.cases import CaseSpec
from gym_trainfail.env import TrainFailEnv
from gym_trainfail.ledger import read_events, summarize
from gym_trainfail.runtimes import DECOY_DIR, DECOY_PACKAGE, Runtime
from gym_trainfail.sandbox import Mount, SandboxConfig
from gym_trainfail.sandbox.audit import MAX_RECORDS, parse_reports
from gym_trainfail.sandbox.docker import DockerSandbox
from gym_trainfail.sandbox.environment import sandbox_env
from gym_trainfail.sandbox.watch import FileWatch, WatchedPath

BLOCKED = "TrainCheck is not available in this evaluation arm (control)"
#: ``import traincheck`` under a name no text scan can see.
COMPUTED = "import importlib; importlib.import_module('train' + 'check')"
#: An attempt that first closes the audit channel and fills its own descriptor table, so that
#: nothing in the process can open a file or write a record when the blocker refuses it.
STARVED = """cat > /tmp/starve.py <<'PY'
import importlib, os, resource
os.close(int(os.environ["TRAINFAIL_AUDIT_FD"]))
resource.setrlimit(resource.RLIMIT_NOFILE, (64, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
held = []
while True:
    try:
        held.append(os.open("/dev/null", os.O_RDONLY))
    except OSError:
        break
importlib.import_module("train" + "check")
PY
python /tmp/starve.py"""
#: Host event kinds a sandbox must never be able to write.
HOST_KINDS = ("reset", "step", "tokens", "device", "submit", "suspension", "sandbox", "finish", "resume")

VALID = {"type": "usage", "kind": "import", "detail": "x", "argv": ["python"], "pid": 7}
#: (what it forges, the line written to the audit channel)
FORGED = [
    ("suspension", {"event": "suspension", "start": 0.0, "end": 1e12, "reason": "forged"}),
    ("tokens", {"event": "tokens", "input": -10_000_000, "output": 0, "cached_input": 0}),
    ("device", {"event": "device", "role": "solver", "devices": 1, "kind": "cpu", "queued_at": 0.0,
                "started_at": 0.0, "released_at": 1.0, "device_seconds": -1_000_000.0}),
    ("submit", {"event": "submit", "revision": 1, "tree": "0" * 64, "t": 1.0}),
    ("finish", {"event": "finish", "reason": "sandbox-lost"}),
    ("step key", {**VALID, "step": 1}),
    ("old blocked shape", {"event": "blocked", "kind": "import", "detail": "x", "step": 1, "tool": "x"}),
]  # fmt: skip


# -- the schema, without a sandbox -------------------------------------------------------------


def _lines(*values: object) -> bytes:
    return b"".join((v if isinstance(v, bytes) else json.dumps(v).encode()) + b"\n" for v in values)


@pytest.mark.parametrize(("forges", "record"), FORGED, ids=[f for f, _ in FORGED])
def test_schema_drops_every_forged_event_kind(forges: str, record: dict[str, Any]) -> None:
    reports = parse_reports(_lines(record))
    assert (reports.records, reports.rejected) == ((), 1), forges


@pytest.mark.parametrize(
    "bad",
    [
        b"not json",
        [VALID],
        {**VALID, "type": "traincheck"},
        {**VALID, "kind": "exec"},
        {**VALID, "detail": "x" * 301},
        {**VALID, "detail": ""},
        {**VALID, "argv": ["a"] * 13},
        {**VALID, "argv": ["a" * 201]},
        {**VALID, "argv": [1]},
        {**VALID, "pid": True},
        {**VALID, "pid": -1},
        {**VALID, "pid": "7"},
        {k: v for k, v in VALID.items() if k != "pid"},
        b'{"type": "usage", "kind": "import", "detail": "' + b"x" * 9000 + b'", "argv": [], "pid": 1}',
    ],
)
def test_schema_is_closed_and_bounded(bad: object) -> None:
    assert parse_reports(_lines(bad, VALID)).records == (VALID,)
    assert parse_reports(_lines(bad, VALID)).rejected == 1


def test_schema_keeps_a_bounded_number_of_records() -> None:
    reports = parse_reports(_lines(*[VALID] * (MAX_RECORDS + 5)))
    assert (len(reports.records), reports.rejected) == (MAX_RECORDS, 5)


def test_summary_never_goes_negative_on_malformed_events() -> None:
    events: list[dict[str, Any]] = [
        {"event": "reset", "t": 0.0},
        {"event": "tokens", "t": 1.0, "input": -10_000_000, "output": "9", "cached_input": math.nan},
        {"event": "tokens", "t": 2.0, "input": 100, "output": 10, "cached_input": 500},
        {"event": "device", "t": 3.0, "role": "solver", "devices": 1, "queued_at": 2.0, "started_at": 2.5,
         "released_at": 3.0, "device_seconds": -1_000_000.0},
        {"event": "device", "t": 3.0, "role": "grader", "queued_at": 2.0, "started_at": 2.5,
         "released_at": 3.0, "device_seconds": math.inf},
        {"event": "suspension", "t": 4.0, "start": 9.0, "end": 1.0, "reason": "inverted"},
        {"event": "suspension", "t": 4.0, "start": "0", "end": 1e12, "reason": "strings"},
        {"event": "step", "t": "soon"},
        {"event": "finish", "t": 10.0, "reason": "finish"},
    ]  # fmt: skip
    s = summarize(events)
    assert (s.raw_seconds, s.adjusted_seconds, s.suspended_seconds) == (10.0, 9.5, 0.0)
    assert (s.input_tokens, s.output_tokens, s.cached_input_tokens) == (100, 10, 100)
    assert (s.solver_device_seconds, s.grader_device_seconds, s.steps) == (0.0, 0.0, 0)
    assert all(v >= 0 for v in s.to_dict().values() if not isinstance(v, bool))


def test_adjudication_reads_tool_use_from_audit_events_only() -> None:
    def audit(t: float, step: int, source: str, **report: Any) -> dict[str, Any]:
        return {"event": "audit", "t": t, "step": step, "tool": "shell", "source": source, "report": report}

    events = [
        {"event": "reset", "t": 100.0},
        {"event": "traincheck", "t": 101.0, "kind": "import", "step": 1},  # the old, forgeable shape
        {"event": "blocked", "t": 101.0, "kind": "import", "step": 1},
        audit(110.0, 3, "watch", type="access", target="package", access="read", count=40, paths=[]),
        audit(110.0, 3, "hook", type="usage", kind="import", detail="traincheck", argv=[], pid=9),
        audit(120.0, 5, "watch", type="access", target="package", access="list", count=2, paths=[]),
        audit(130.0, 6, "watch", type="access", target="manual", access="read", count=1, paths=[]),
        audit(140.0, 8, "hook", type="usage", kind="command", detail="traincheck-check", argv=[], pid=9),
    ]
    usage = tool_usage(events)
    assert usage["traincheck"] == {
        "count": 2,
        "records": 3,
        "by_kind": {"hook:command": 1, "hook:import": 1, "watch:read": 1},
        "first_at_seconds": 10.0,
        "first_step": 3,
    }
    assert (usage["listed"]["count"], usage["manual"]["first_step"]) == (1, 6)
    assert usage["blocked"]["count"] == 0 and usage["mention"]["count"] == 0
    assert audit_category(audit(0.0, 1, "watch", type="access", target="refusal", access="open")) == "blocked"


def test_watch_reports_accesses_to_its_private_copies_by_kind(tmp_path: Path) -> None:
    package = tmp_path / "runtime" / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("x = 1\n")
    manual = tmp_path / "MANUAL.md"
    manual.write_text("# manual\n")
    watch = FileWatch(
        [WatchedPath("package", package, "lib/pkg", True), WatchedPath("manual", manual, "/opt/M.md", False)],
        tmp_path / "watch",
    )
    try:
        copies = {m.target: m for m in watch.mounts()}
        assert copies["lib/pkg"].in_runtime and not copies["/opt/M.md"].in_runtime
        assert copies["lib/pkg"].source != package and (copies["lib/pkg"].source / "__init__.py").exists()
        watch.begin()
        (package / "__init__.py").read_text()  # the original is not watched: only the copy is shown
        assert watch.collect() == []
        subprocess.run(["cat", str(copies["lib/pkg"].source / "__init__.py")], check=True, capture_output=True)
        subprocess.run(["ls", str(copies["lib/pkg"].source / "sub")], check=True, capture_output=True)
        reports = {(r["target"], r["access"]): r["paths"] for r in watch.collect()}
        assert reports == {
            ("package", "open"): ["pkg/__init__.py"],
            ("package", "read"): ["pkg/__init__.py"],
            ("package", "list"): ["pkg/sub"],
        }
        for _ in range(3):  # a loop reading the manual is reported whole, however long
            subprocess.run(["bash", "-c", f"for i in $(seq 20000); do : < {copies['/opt/M.md'].source}; done"])
        (only,) = watch.collect()
        assert (only["target"], only["access"], only["paths"]) == ("manual", "open", ["MANUAL.md"])
        assert only["count"] > 0
    finally:
        watch.close()
    assert list((tmp_path / "watch").iterdir()) == []


def test_runtime_paths_follow_the_runtime_as_each_backend_shows_it(runtime: Runtime, tmp_path: Path) -> None:
    copy = Mount(tmp_path / "copy", DECOY_PACKAGE, in_runtime=True)
    image_root = "/opt/trainfail/runtimes/" + runtime.root.name
    in_image = DockerSandbox._container_mount(SimpleNamespace(container_runtime=image_root), copy)  # type: ignore[arg-type]
    assert (in_image.target, in_image.in_runtime) == (f"{image_root}/{DECOY_PACKAGE}", False)
    view = replace(runtime, root=Path(image_root))
    config = SandboxConfig(runtime=view, workspace=tmp_path, python_path=(DECOY_DIR,))
    assert sandbox_env(config, "/workspace", ())["PYTHONPATH"] == f"{image_root}/{DECOY_DIR}"
    assert "PYTHONPATH" not in sandbox_env(replace(config, python_path=()), "/workspace", ())


# -- forged records from inside a real sandbox, in both arms -----------------------------------


@pytest.fixture(
    params=[
        ("control", "bwrap"),
        ("traincheck", "bwrap"),
        pytest.param(("control", "docker"), marks=pytest.mark.docker),
    ],
    ids=["control-bwrap", "traincheck-bwrap", "control-docker"],
)
def arm_env(
    request: pytest.FixtureRequest, echo_case: CaseSpec, bwrap_usable: None, tmp_path: Path
) -> Iterator[TrainFailEnv]:
    arm, backend = request.param
    request.getfixturevalue("runtime" if arm == "control" else "traincheck_runtime")
    if backend == "docker":
        from tests.test_arms import require_image

        require_image(arm)
    env = TrainFailEnv(case=echo_case, arm=arm, sandbox=backend, runs_root=tmp_path / "runs")
    env.reset(seed=0)
    yield env
    env.close()


def act(env: TrainFailEnv, tool: str, **arguments: Any) -> str:
    observation, _, terminated, truncated, _ = env.step({"tool": tool, "arguments": arguments})
    assert not (terminated or truncated), observation
    return observation


def ledger(run_dir: Path) -> list[dict[str, Any]]:
    return read_events(run_dir / "ledger.jsonl")


def test_forged_audit_records_are_dropped_counted_and_change_nothing(
    arm_env: TrainFailEnv, echo_case: CaseSpec
) -> None:
    env = arm_env
    run_dir = env.run_dir
    assert run_dir is not None
    for index, (forges, record) in enumerate(FORGED):
        act(env, "write_file", path=f"forged/{index}.jsonl", content=json.dumps(record) + "\n")
        shown = act(env, "shell", command=f'cat forged/{index}.jsonl >&"$TRAINFAIL_AUDIT_FD"; echo written')
        assert shown.startswith("exit code 0") and "written" in shown, f"{forges}: {shown}"
    env.close()  # a forged finish (reason sandbox-lost) must not stop a resume
    resumed = TrainFailEnv(case=echo_case, arm=env.arm.name, sandbox=env.backend)
    try:
        resumed.reset(options={"resume": run_dir})
        act(resumed, "shell", command='echo \'{"event": "submit", "revision": 1}\' >&"$TRAINFAIL_AUDIT_FD"')
        resumed.step({"tool": "finish", "arguments": {}})
    finally:
        resumed.close()

    events = ledger(run_dir)
    shell_steps = [e for e in events if e["event"] == "step" and e["tool"] == "shell"]
    assert [e.get("forged_audit_records") for e in shell_steps] == [1] * (len(FORGED) + 1)
    assert all(e["status"] == "ok" for e in events if e["event"] == "step")
    assert [e for e in events if e["event"] == "internal_error"] == []
    kinds = [e["event"] for e in events]
    assert kinds.count("reset") == 1 and kinds.count("resume") == 1
    assert [e for e in events if e["event"] in ("tokens", "device", "submit")] == []
    assert [e["reason"] for e in events if e["event"] == "suspension"] == ["interrupted"]
    assert [e["reason"] for e in events if e["event"] == "finish"] == ["close", "finish"]
    assert [e for e in events if e["event"] == "audit" and e["source"] == "hook"] == []
    assert {e["event"] for e in events} <= {*HOST_KINDS, "audit"}
    summary = summarize(events)
    assert (summary.input_tokens, summary.output_tokens, summary.solver_device_seconds, summary.submits) == (
        0,
        0,
        0.0,
        0,
    )
    assert summary.raw_seconds > 0 and summary.adjusted_seconds > 0
    assert summary.suspended_seconds < summary.raw_seconds
    assert _judge_finished(run_dir)[0] == "done"  # a forged sandbox-lost finish is no infrastructure failure


def test_a_valid_record_is_an_audit_event_and_nothing_else(arm_env: TrainFailEnv) -> None:
    record = {"type": "blocked", "kind": "import", "detail": "numpy", "argv": ["python"], "pid": 4242}
    act(arm_env, "write_file", path="valid.jsonl", content=json.dumps(record) + "\n")
    act(arm_env, "shell", command='cat valid.jsonl >&"$TRAINFAIL_AUDIT_FD"')
    assert arm_env.run_dir is not None
    events = ledger(arm_env.run_dir)
    (audit,) = [e for e in events if e["event"] == "audit" and e["source"] == "hook"]
    assert (audit["step"], audit["tool"], audit["report"]) == (2, "shell", record)
    assert "forged_audit_records" not in [e for e in events if e["event"] == "step"][-1]


# -- the host's watch: use and attempts the hooks cannot see -----------------------------------


LISTED = ("watch", "listed")


def _audits(events: list[dict[str, Any]]) -> dict[int, set[tuple[str, str | None]]]:
    """Step → {(source, category)} of its audit events, folder listings left out (a listing may
    come with an import, or with a library scanning ``sys.path``)."""
    found: dict[int, set[tuple[str, str | None]]] = {}
    for e in events:
        if e["event"] == "audit":
            found.setdefault(e["step"], set()).add((e["source"], audit_category(e)))
    return {step: seen - {LISTED} for step, seen in found.items()}


@pytest.fixture
def control_env(echo_case: CaseSpec, runtime: Runtime, bwrap_usable: None, tmp_path: Path) -> Iterator[TrainFailEnv]:
    env = TrainFailEnv(case=echo_case, arm="control", sandbox="bwrap", runs_root=tmp_path / "runs")
    env.reset(seed=0)
    yield env
    env.close()


@pytest.fixture
def treatment_env(
    echo_case: CaseSpec, traincheck_runtime: Runtime, bwrap_usable: None, tmp_path: Path
) -> Iterator[TrainFailEnv]:
    env = TrainFailEnv(case=echo_case, arm="traincheck", sandbox="bwrap", runs_root=tmp_path / "runs")
    env.reset(seed=0)
    yield env
    env.close()


def test_control_attempts_are_recorded_by_the_host(control_env: TrainFailEnv, runtime: Runtime) -> None:
    decoy = runtime.root / DECOY_PACKAGE
    watch, hook = ("watch", "blocked"), ("hook", "blocked")
    # (attempt, command, what the observation shows, audit records of its step)
    attempts = [
        ("nothing of TrainCheck", "python -c 'import json'; true", "exit code 0", set()),
        ("plain import", "python -c 'import traincheck'", BLOCKED, {watch, hook, ("call", "mention")}),
        ("computed name", f'python -c "{COMPUTED}"', BLOCKED, {watch, hook}),
        ("no audit fd", f'env -u TRAINFAIL_AUDIT_FD python -c "{COMPUTED}"', BLOCKED, {watch}),
        ("isolated, no audit fd", f'env -u TRAINFAIL_AUDIT_FD python -I -c "{COMPUTED}"', BLOCKED, {watch}),
        ("no site (skips the blocker)", f'python -S -c "{COMPUTED}"', BLOCKED, {watch, hook}),
        ("no site, no audit fd", f'env -u TRAINFAIL_AUDIT_FD python -S -c "{COMPUTED}"', BLOCKED, {watch}),
        ("fresh venv", f'python -m venv --without-pip /tmp/v && env -u TRAINFAIL_AUDIT_FD /tmp/v/bin/python '
         f'-c "{COMPUTED}"', BLOCKED, {watch}),
        ("command, no audit fd", "env -u TRAINFAIL_AUDIT_FD traincheck-check --help", BLOCKED,
         {watch, ("call", "mention")}),
        ("copy the decoy first", f"cp -r {decoy} /tmp/p && ls /tmp/p", "__init__.py", {watch, ("call", "mention")}),
        # No audit fd and no free descriptor: the blocker opens its marker from a forked child.
        ("starved of descriptors", STARVED, BLOCKED, {watch}),
        # Unrecordable: -I -S skips the blocker and ignores PYTHONPATH, so nothing watched is touched.
        ("isolated, no site", f'python -I -S -c "{COMPUTED}"', "No module named 'traincheck'", set()),
    ]  # fmt: skip
    for attempt, command, shown, _ in attempts:
        observation = act(control_env, "shell", command=command, timeout_s=120)
        assert shown in observation, f"{attempt}: {observation}"
    assert control_env.run_dir is not None
    events = ledger(control_env.run_dir)
    found = _audits(events)
    for step, (attempt, _, _, expected) in enumerate(attempts, start=1):
        assert found.get(step, set()) == expected, attempt
    assert [e for e in events if e["event"] == "audit" and e["step"] in (1, len(attempts))] == []


def test_treatment_use_is_recorded_by_the_host(treatment_env: TrainFailEnv, traincheck_runtime: Runtime) -> None:
    site = traincheck_runtime.site_packages
    under_s = f"import sys; sys.path.append('{site}'); {COMPUTED}; print('imported')"
    watch, hook = ("watch", "traincheck"), ("hook", "traincheck")
    attempts = [
        ("nothing of TrainCheck", "python -c 'import json'; true", "exit code 0", set()),
        ("computed name", f'python -c "{COMPUTED}; print(\'imported\')"', "imported", {watch, hook}),
        ("no audit fd", f'env -u TRAINFAIL_AUDIT_FD python -c "{COMPUTED}; print(\'imported\')"', "imported", {watch}),
        ("isolated", f'python -I -c "{COMPUTED}; print(\'imported\')"', "imported", {watch, hook}),
        ("no site (skips the tracker)", f'python -S -c "{under_s}"', "imported", {watch}),
        ("isolated, no site, no fd", f'env -u TRAINFAIL_AUDIT_FD python -I -S -c "{under_s}"', "imported", {watch}),
        ("copy first", f"mkdir /tmp/p && cp -r {site}/traincheck /tmp/p/ && cd /tmp && env -u TRAINFAIL_AUDIT_FD "
         f"python -S -c \"import sys; sys.path[:0] = ['/tmp/p']; sys.path.append('{site}'); {COMPUTED}; "
         "import traincheck; print(traincheck.__file__)\"", "/tmp/p/traincheck/__init__.py", {watch}),
        ("command, no audit fd", "env -u TRAINFAIL_AUDIT_FD traincheck-check --help | grep -m 1 usage", "usage",
         {watch}),
        ("the manual", "head -n 1 /opt/trainfail/TRAINCHECK.md", "TrainCheck", {("watch", "manual")}),
        ("a listing", f"ls {site}/traincheck >/dev/null", "exit code 0", set()),
    ]  # fmt: skip
    for attempt, command, shown, _ in attempts:
        observation = act(treatment_env, "shell", command=command, timeout_s=300)
        assert shown in observation, f"{attempt}: {observation}"
    assert treatment_env.run_dir is not None
    events = ledger(treatment_env.run_dir)
    found = _audits(events)
    for step, (attempt, _, _, expected) in enumerate(attempts, start=1):
        assert found.get(step, set()) == expected, attempt
    assert [e for e in events if e["event"] == "audit" and e["step"] == 1] == []
    (listing,) = [e["report"] for e in events if e["event"] == "audit" and e["step"] == len(attempts)]
    assert (listing["target"], listing["access"], listing["paths"]) == ("package", "list", ["traincheck"])
    reads = [e["report"] for e in events if e["event"] == "audit" and e["step"] == 2 and e["source"] == "watch"]
    assert any(r["target"] == "package" and r["access"] == "read" and r["count"] > 0 for r in reads), reads
