"""Running TrainCheck's documented workflow on a case's own pipeline, in a sandbox like an agent's.

One sandbox over a scratch copy of the workspace, built from the ``traincheck`` arm's runtime with
its manual mounted where an agent finds it. Per variant: collect the trusted run, infer
invariants from it, collect the failing and the healthy run, and check both. Collections lease
devices from the node's pool like ``run_job`` (their device-seconds are counted the same way);
inference and checking are CPU commands like ``shell``. Traces and invariants are reused by
every variant that would produce the same ones. Times are measured on the host.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import shlex
import shutil
import stat
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from gym_trainfail.arms import get_arm
from gym_trainfail.cases import CaseSpec
from gym_trainfail.devices import DevicePool
from gym_trainfail.reach.results import (
    CheckResult,
    ResultError,
    count_invariants,
    culprit_terms,
    naming,
    read_summary,
    term_pattern,
)
from gym_trainfail.reach.spec import ReachSpec, RunSpec, Variant
from gym_trainfail.runtimes import Runtime, find_runtime
from gym_trainfail.sandbox import WORKSPACE, Limits, Mount, Sandbox, SandboxConfig, create_sandbox
from gym_trainfail.sandbox.base import ExecResult, GiB

#: The workflow's folder inside the scratch workspace (traces, invariants, check results).
REACH_DIR = ".reach"
#: Inference holds whole traces in memory (pandas/polars); checking less so.
INFER_LIMITS = Limits(memory_bytes=16 * GiB, pids=4096, output_bytes=24_000, tmp_bytes=GiB)
RUN_LIMITS = Limits(memory_bytes=8 * GiB, pids=4096, output_bytes=24_000, tmp_bytes=GiB)
#: A collection that fails is run once more (gloo's exit crash kills a few percent of multi-rank
#: runs after their work is done; see FIELD-NOTES), and the retry is part of the record.
COLLECT_ATTEMPTS = 2
FUTURE_RE = re.compile(r"^from __future__ import[^\n]*\n", re.MULTILINE)

Progress = Callable[[str], None]


class StepFailed(Exception):
    """A workflow command failed; the variant's result records why."""


@dataclass
class Step:
    """One command of the workflow as the host timed it."""

    name: str
    seconds: float
    device_seconds: float = 0.0
    exit_code: int | None = 0
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"step": self.name, "seconds": round(self.seconds, 1), "exit_code": self.exit_code}
        if self.device_seconds:
            data["device_seconds"] = round(self.device_seconds, 1)
        if self.note:
            data["note"] = self.note
        return data


@dataclass
class VariantResult:
    """What one variant of the workflow found."""

    variant: Variant
    invariants: int | None = None
    failing: CheckResult | None = None
    healthy: CheckResult | None = None
    culprit_hits: list[dict[str, str]] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    error: str = ""

    @property
    def seconds(self) -> float:
        return sum(s.seconds for s in self.steps)

    @property
    def device_seconds(self) -> float:
        return sum(s.device_seconds for s in self.steps)

    def failing_only(self) -> list[Any]:
        """Violations of the failing run that the healthy run does not show too."""
        if self.failing is None or self.healthy is None:
            return []
        seen = self.healthy.names
        return [v for v in self.failing.violations if (v.relation, v.name) not in seen]

    @property
    def detects(self) -> bool | None:
        """The failing run breaks an invariant the healthy run keeps (``None``: not measured)."""
        if self.error:
            return None
        return bool(self.failing_only())

    def to_json(self, runs: Mapping[str, RunSpec]) -> dict[str, Any]:
        only = self.failing_only()
        first = min((v.first_step for v in only if v.first_step is not None), default=None)
        return {
            "name": self.variant.name,
            "note": self.variant.note,
            "flags": self.variant.flags(),
            "runs": {
                role: {"devices": run.devices, "command": run.command}
                | ({"stop_after_s": run.stop_after_s} if run.stop_after_s is not None else {})
                for role, run in runs.items()
            },
            "error": self.error or None,
            "invariants": self.invariants,
            "failing": _check_json(self.failing),
            "healthy": _check_json(self.healthy),
            "detects": self.detects,
            "failing_only": len(only),
            "false_alarms": len(self.healthy.violations) if self.healthy is not None else None,
            "culprit_named": bool(self.culprit_hits) if not self.error else None,
            "culprit_hits": self.culprit_hits[:20],
            "first_violating_step": first,
            "failing_only_examples": [
                {"relation": v.relation, "invariant": v.name[:300], "first_step": v.first_step} for v in only[:10]
            ],
            "seconds": round(self.seconds, 1),
            "device_seconds": round(self.device_seconds, 1),
            "steps": [s.to_json() for s in self.steps],
        }


def _check_json(result: CheckResult | None) -> dict[str, Any] | None:
    if result is None:
        return None
    return {
        "violations": len(result.violations),
        "first_step": result.first_step,
        "by_relation": result.by_relation(),
    }


def _key(*parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:12]


class Workflow:
    """The reach workflow of one case in one sandbox; :meth:`run` measures every variant."""

    def __init__(
        self,
        case: CaseSpec,
        spec: ReachSpec,
        *,
        sandbox: str = "auto",
        pool: DevicePool | None = None,
        runtime: Runtime | None = None,
        work_dir: Path | None = None,
        progress: Progress | None = None,
    ) -> None:
        self.case, self.spec = case, spec
        self.backend = sandbox
        self.pool = pool or DevicePool(kind="cpu")
        self.runtime = runtime or find_runtime("traincheck")
        self.work_dir = work_dir
        self.progress = progress or (lambda _: None)
        self._traces: dict[str, str] = {}
        self._invariants: dict[str, tuple[str, int]] = {}
        self._checks: dict[str, CheckResult] = {}
        self.sandbox: Sandbox | None = None

    # -- set-up ----------------------------------------------------------------------------

    def _open(self, scratch: Path) -> Sandbox:
        workspace = scratch / "workspace"
        shutil.copytree(self.case.workspace_dir, workspace, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
        reach = workspace / REACH_DIR
        reach.mkdir()
        for name in self.spec.files:
            target = reach / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(self.spec.folder / name, target)
        entry = workspace / self.spec.entry
        if not entry.is_file():
            raise StepFailed(f"the reach spec's entry {self.spec.entry!r} is not a file in the workspace")
        package = ".".join(Path(self.spec.entry).parent.parts)
        source = instrumentable(entry.read_text(encoding="utf-8"), package)
        self.tc_entry.parent.mkdir(parents=True, exist_ok=True)
        (workspace / self.tc_entry).write_text(source, encoding="utf-8")
        arm = get_arm("traincheck")
        config = SandboxConfig(
            runtime=self.runtime,
            workspace=workspace,
            mounts=tuple(Mount(source, target) for source, target in arm.sandbox_files()),
            env={"TQDM_DISABLE": "1"},
            limits=RUN_LIMITS,
            label="reach",
        )
        return create_sandbox(self.backend, config)

    @property
    def tc_entry(self) -> Path:
        """The instrumentable copy of the entry script, relative to the workspace."""
        entry = Path(self.spec.entry)
        return entry.with_name(f"tc_{entry.name}")

    def _exec(self, command: str, timeout_s: float, devices: int = 0, limits: Limits | None = None) -> Step:
        assert self.sandbox is not None
        sandbox = self.sandbox
        if limits is not None:
            sandbox = create_sandbox(self.backend, replace(sandbox.config, limits=limits))
        started = time.monotonic()
        device_seconds = 0.0
        try:
            if devices:
                with self.pool.lease(devices) as lease:
                    result = sandbox.exec(["bash", "-c", command], timeout_s=timeout_s, devices=lease.devices)
                device_seconds = lease.device_seconds
            else:
                result = sandbox.exec(["bash", "-c", command], timeout_s=timeout_s)
        finally:
            if sandbox is not self.sandbox:
                sandbox.close()
        step = Step("", time.monotonic() - started, device_seconds, result.exit_code)
        if not result.ok:
            step.note = _failure(result, timeout_s)
        return step

    # -- the workflow ----------------------------------------------------------------------

    def run(self, variants: Sequence[Variant] | None = None) -> list[VariantResult]:
        """Measure ``variants`` (default: every variant of the spec), in order."""
        chosen = list(variants or self.spec.variants)
        results = []
        with tempfile.TemporaryDirectory(prefix="trainfail-reach-", dir=self.work_dir) as scratch:
            try:
                self.sandbox = self._open(Path(scratch))
            except StepFailed as exc:
                return [VariantResult(v, error=str(exc)) for v in chosen]
            try:
                setup = self._setup()
                for variant in chosen:
                    result = VariantResult(variant)
                    if setup is not None:
                        result.steps.append(setup)
                        setup = None  # counted once, with the first variant
                    self._variant(result)
                    results.append(result)
            finally:
                self.sandbox.close()
        return results

    def _setup(self) -> Step | None:
        if not self.spec.setup:
            return None
        self.progress("setup")
        step = self._exec(f"cd {WORKSPACE} && {self.spec.setup}", self.spec.timeout_s)
        step.name = "setup"
        if step.note:
            raise StepFailed(f"setup failed: {step.note}")
        return step

    def _variant(self, result: VariantResult) -> None:
        variant = result.variant
        runs = self.spec.runs_of(variant)
        try:
            trusted = self._collect("trusted", runs["trusted"], variant, None, result)
            invariants, count = self._infer(trusted, variant, result)
            result.invariants = count
            selective = invariants if variant.selective else None
            failing = self._collect("failing", runs["failing"], variant, selective, result)
            healthy = self._collect("healthy", runs["healthy"], variant, selective, result)
            self._check({"failing": failing, "healthy": healthy}, invariants, variant, result)
        except (StepFailed, ResultError) as exc:
            result.error = str(exc)
            return
        rubric = self.case.rubric
        paths = [c.path for c in rubric.culprits] if rubric else []
        symbols = [s for c in rubric.culprits for s in c.symbols] if rubric else []
        pattern = term_pattern(culprit_terms(paths, symbols, self.spec.mechanism_terms))
        result.culprit_hits = naming(result.failing_only(), pattern)

    def _collect(self, role: str, run: RunSpec, variant: Variant, invariants: str | None, result: VariantResult) -> str:
        key = _key(run.command, run.devices, run.stop_after_s, variant.collect_args, invariants)
        if key in self._traces:
            return self._traces[key]
        folder = f"{WORKSPACE}/{REACH_DIR}/traces/{role}-{key}"
        launcher = f"{REACH_DIR}/launch-{role}-{key}.sh"
        stopped = f"{REACH_DIR}/stopped-{role}-{key}"
        entry = str(self.tc_entry)
        assert self.sandbox is not None
        launch = run.launch(entry)
        if run.stop_after_s is not None:
            # a run that never finishes (a hang) is stopped at its deadline; the launcher, not the
            # collector, is stopped, so TrainCheck keeps what its workers flushed by then
            launch = (f"rm -f {stopped}\ntimeout -k 10 {run.stop_after_s} bash -c {shlex.quote(launch)}\ncode=$?\n"
                      f"[ $code -eq 124 ] && echo stopped > {stopped}\nexit $code")  # fmt: skip
        (self.sandbox.host_workspace / launcher).write_text(
            f"cd {WORKSPACE}\nexport PYTHONPATH={WORKSPACE}\n{launch}\n", encoding="utf-8"
        )
        argv = ["traincheck-collect", "-p", entry, "-s", launcher, "-t", *self.spec.modules,
                *variant.collect_args, "--output-dir", folder]  # fmt: skip
        if self.spec.models_to_track:
            argv += ["--model-tracker-style", self.spec.tracker, "--models-to-track", *self.spec.models_to_track]
        if invariants is not None:
            argv += ["--invariants", invariants]
        for attempt in range(COLLECT_ATTEMPTS):
            self.progress(f"{variant.name}: collect {role} ({run.devices} device{'s' if run.devices != 1 else ''})")
            # a fresh folder per attempt: a failed run's partial traces must not mix into the next
            command = f"cd {WORKSPACE} && rm -rf {shlex.quote(folder)} && {shlex.join(argv)}"
            step = self._exec(command, self.spec.timeout_s, devices=run.devices)
            step.name = f"collect {role}" + (f" (attempt {attempt + 1})" if attempt else "")
            host_folder = self.sandbox.host_workspace / folder.removeprefix(f"{WORKSPACE}/")
            megabytes = _folder_mb(self.sandbox.host_workspace, folder)
            hung = (run.stop_after_s is not None and _marked_stopped(self.sandbox.host_workspace / stopped)
                    and _has_traces(host_folder))  # fmt: skip
            if hung:
                # the hang the spec expects: the partial trace is the measurement, not a failure
                step.note = f"stopped after {run.stop_after_s} s without finishing (a hang); {megabytes:.1f} MB kept"
                result.steps.append(step)
                break
            if step.exit_code != 0:  # the pipeline's own last words say more than the collector's
                step.note += " | program output: " + _tail(host_folder / "program_output.txt")
            step.note = step.note or f"{megabytes:.1f} MB of traces"
            result.steps.append(step)
            if step.exit_code == 0:
                break
        if step.exit_code != 0 and not hung:
            raise StepFailed(f"collecting the {role} run failed: {step.note}")
        self._traces[key] = folder
        return folder

    def _infer(self, trusted: str, variant: Variant, result: VariantResult) -> tuple[str, int]:
        args = self.spec.infer_args_of(variant)
        key = _key(trusted, args)
        if key in self._invariants:
            return self._invariants[key]
        path = f"{WORKSPACE}/{REACH_DIR}/invariants-{key}.json"
        argv = ["traincheck-infer", "-f", trusted, "-o", path, *args]
        self.progress(f"{variant.name}: infer invariants")
        step = self._exec(f"cd {WORKSPACE} && {shlex.join(argv)}", self.spec.timeout_s, limits=INFER_LIMITS)
        step.name = "infer"
        result.steps.append(step)
        if step.exit_code != 0:
            raise StepFailed(f"inference failed: {step.note}")
        assert self.sandbox is not None
        count = count_invariants(self.sandbox.host_workspace / path.removeprefix(f"{WORKSPACE}/"))
        step.note = f"{count} invariants"
        self._invariants[key] = (path, count)
        return path, count

    def _check(self, traces: dict[str, str], invariants: str, variant: Variant, result: VariantResult) -> None:
        """Check the failing and the healthy trace against ``invariants`` in one checker run
        (one start-up instead of two); results already measured are reused."""
        keys = {role: _key(trace, invariants) for role, trace in traces.items()}
        todo = {role: traces[role] for role, key in keys.items() if key not in self._checks}
        if todo:
            out = f"{WORKSPACE}/{REACH_DIR}/checks/{_key(sorted(todo.values()), invariants)}"
            argv = ["traincheck-check", "-f", *todo.values(), "-i", invariants, "-o", out]
            roles = " and ".join(todo)
            self.progress(f"{variant.name}: check {roles}")
            step = self._exec(f"cd {WORKSPACE} && {shlex.join(argv)}", self.spec.timeout_s, limits=INFER_LIMITS)
            step.name = f"check {roles}"
            result.steps.append(step)
            if step.exit_code != 0:
                raise StepFailed(f"checking the {roles} run failed: {step.note}")
            assert self.sandbox is not None
            host_out = self.sandbox.host_workspace / out.removeprefix(f"{WORKSPACE}/")
            notes = []
            for role, trace in todo.items():
                # the checker writes one folder per trace, named after the trace folder
                checked = read_summary(host_out / Path(trace).name)
                self._checks[keys[role]] = checked
                notes.append(f"{role}: {len(checked.violations)} invariants violated")
            step.note = "; ".join(notes)
        result.failing = self._checks[keys["failing"]]
        result.healthy = self._checks[keys["healthy"]]


def instrumentable(source: str, package: str = "") -> str:
    """An entry script as TrainCheck can instrument it. TrainCheck inserts its set-up code above
    the first line, so a ``from __future__`` import would become a SyntaxError (it is dropped:
    annotations are then evaluated, which entry scripts of this kind survive), and the module
    docstring would stop being one (``__doc__`` becomes ``None``, and ``argparse`` descriptions
    built from it crash): it becomes an explicit ``__doc__ = ...`` assignment. The copy runs as a
    script, so relative imports become absolute ones in ``package`` (the entry's package)."""
    source = FUTURE_RE.sub("", source)
    if package:
        source = _absolute_imports(source, package)
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source  # collection will say what is wrong with it
    first = tree.body[0] if tree.body else None
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
        and first.col_offset == 0
    ):
        lines = source.splitlines(keepends=True)
        lines[first.lineno - 1] = "__doc__ = " + lines[first.lineno - 1]
        source = "".join(lines)
    return source


RELATIVE_IMPORT_RE = re.compile(r"^(\s*)from (\.+)([\w.]*) import ", re.MULTILINE)


def _absolute_imports(source: str, package: str) -> str:
    parts = package.split(".")

    def absolute(match: re.Match[str]) -> str:
        up = len(match.group(2)) - 1
        base = parts[: len(parts) - up] if up else parts
        target = ".".join([*base, match.group(3)] if match.group(3) else base)
        return f"{match.group(1)}from {target} import "

    return RELATIVE_IMPORT_RE.sub(absolute, source)


def _failure(result: ExecResult, timeout_s: float) -> str:
    if result.timed_out:
        return f"timed out after {timeout_s:.0f} s"
    tail = (result.stderr or result.stdout).strip().splitlines()[-3:]
    how = "out of memory" if result.oom_killed else f"exit code {result.exit_code}"
    return f"{how}: " + " | ".join(line[:300] for line in tail)


def _tail(path: Path, max_bytes: int = 4096) -> str:
    """The last lines of a file the sandbox wrote (bounded; no links, no special files)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError:
        return "(none)"
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            return "(not a regular file)"
        handle.seek(max(0, info.st_size - max_bytes))
        lines = handle.read(max_bytes).decode("utf-8", "replace").strip().splitlines()
    return " | ".join(line[:300] for line in lines[-3:])


def _marked_stopped(path: Path) -> bool:
    """Whether the launcher marked its run as stopped at its deadline (a plain file holding "stopped")."""
    return _tail(path, max_bytes=64) == "stopped"


def _has_traces(folder: Path) -> bool:
    """Whether ``folder`` holds a non-empty TrainCheck trace file (``trace_*.log``; no links)."""
    if not folder.is_dir() or folder.is_symlink():
        return False
    return any(p.is_file() and not p.is_symlink() and p.lstat().st_size > 0 for p in folder.glob("trace_*.log"))


def _folder_mb(workspace: Path, folder: str) -> float:
    root = workspace / folder.removeprefix(f"{WORKSPACE}/")
    total = 0
    if root.is_dir() and not root.is_symlink():
        for path in root.rglob("*"):
            if path.is_file() and not path.is_symlink():
                total += path.lstat().st_size
    return total / 1e6
