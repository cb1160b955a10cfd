"""The grader: plans a revision's launch units, runs them in two phases, keeps receipts.

A revision's code is hostile: it was written by the agent under evaluation. So each launch unit
(one scenario, or the scenarios of one device count) is graded in two fresh sandboxes that never
meet (:mod:`.phases`): a run phase beside the case's run kit, then a judge phase whose outcomes
are the only verdicts the host reads. A scenario the judge left without a verdict (no outcome,
``retry``, malformed) is graded again on its own, a bounded number of times, and then recorded as
``error`` (unknown, never pass). Every revision is graded in the ``control`` runtime, whatever arm
produced it. Receipts are keyed by (revision tree hash, grader hash); the grader hash covers the
case's grader files, the runtime, the profile and the harness library. A receipt holding an error
is never cached.

Options that never change a verdict: ``parallel_scenarios`` runs that many units at once (each in
its own sandboxes, sharing the device pool); scenario groups share one warm launch; single runs
(and several revisions' runs, :meth:`Grader.grade_many`) share one judge; oracles
(``grader.oracle_command``, :mod:`.oracles`) are computed once per (case version, scenario,
topology) in a sandbox that holds no revision.
"""

from __future__ import annotations

import contextlib
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from gym_trainfail.cases import DEFAULT_PROFILE, CaseSpec, Scenario
from gym_trainfail.devices import DevicePool, Lease
from gym_trainfail.errors import GradingError
from gym_trainfail.files import read_json_object, write_json
from gym_trainfail.grading.oracles import FixtureCache, OracleCache
from gym_trainfail.grading.phases import (
    ORACLE_MOUNT,
    PhaseRun,
    Phases,
    RunStage,
    harnesslib_digest,
    run_facts,
    shared_facts,
)
from gym_trainfail.grading.receipts import (
    MAX_REASON,
    Receipt,
    ScenarioOutcome,
    from_outcome,
    host_verdict,
    no_verdict,
    not_runnable_here,
    reported_total_s,
)
from gym_trainfail.hashing import TreeRefusedError, bytes_digest, tree_digest
from gym_trainfail.paths import receipts_dir
from gym_trainfail.revisions import ALWAYS_EXCLUDED, RevisionLog
from gym_trainfail.runtimes import Runtime, find_runtime
from gym_trainfail.sandbox import Mount, resolve_backend

#: The runtime graders run in, for revisions from every arm.
GRADING_ARM = "control"
#: How often a scenario whose harness answered ``retry`` is run again before it is an error.
DEFAULT_RETRIES = 2

ProgressHook = Callable[[str, ScenarioOutcome | None], None]


@dataclass(frozen=True)
class Job:
    """One revision's scenario to run alone and judge beside others: ``key`` names it in the
    answer (unique among the jobs), ``source`` is the revision's tree."""

    key: str
    source: Path
    scenario: Scenario


@dataclass(frozen=True)
class UnitResult:
    """One two-phase grading of a launch unit: the judge's outcome per scenario (``None``
    where it wrote none), each scenario's share of the device- and queue-seconds, and what
    the host saw of both phases."""

    outcomes: dict[str, dict[str, Any] | None]
    shares: dict[str, tuple[float, float]]
    run: PhaseRun | None
    judge: PhaseRun | None
    host_reason: str = ""


class Grader:
    """Grades revisions of one case with one runtime."""

    def __init__(
        self,
        case: CaseSpec,
        *,
        sandbox: str = "auto",
        pool: DevicePool | None = None,
        runtime: Runtime | None = None,
        retries: int = DEFAULT_RETRIES,
        cache: bool = True,
        parallel_scenarios: int = 1,
        oracle_cache: bool = True,
        group_scenarios: bool = True,
    ) -> None:
        if parallel_scenarios < 1:
            raise GradingError(f"parallel_scenarios must be at least 1, got {parallel_scenarios}")
        self.case = case
        self.sandbox = sandbox
        self.runtime = runtime or find_runtime(GRADING_ARM)
        self.pool = pool or DevicePool(backend=resolve_backend(sandbox))
        self.retries = retries
        self.cache = cache
        self.parallel_scenarios = parallel_scenarios
        self.group_scenarios = group_scenarios
        # The profile is part of the grader's version: a tree graded at one scale has no receipt at another.
        scale = "" if case.profile == DEFAULT_PROFILE else f":profile={case.profile}"
        version = f"{case.grader_hash()}{scale}:{self.runtime.digest}:{harnesslib_digest()}"
        self.grader_hash = bytes_digest(version.encode())
        self.phases = Phases(case, self.runtime, sandbox, self.pool)
        command = case.oracle_command
        self.oracles = (
            OracleCache(self.phases, self.grader_hash, command, retries=retries, persistent=oracle_cache)
            if command
            else None
        )
        if case.fixtures_command:
            fixtures = FixtureCache(
                self.phases, self.grader_hash, case.fixtures_command, retries=retries, persistent=oracle_cache
            )
            self.phases.fixtures = fixtures.ensure

    def receipt_path(self, tree: str) -> Path:
        slug = self.case.id.replace("/", "__")
        return receipts_dir() / slug / f"{tree}-{self.grader_hash[:16]}.json"

    def cached(self, tree: str, *, partial_ok: bool = False) -> Receipt | None:
        """A stored receipt for this tree under this grader version, if any (a partial one
        only when ``partial_ok``)."""
        path = self.receipt_path(tree)
        if not self.cache or not path.exists():
            return None
        data = read_json_object(path)
        if data is None:
            return None
        try:
            receipt = Receipt.from_json(data)
        except (KeyError, TypeError):
            return None
        if receipt.grader_hash != self.grader_hash or not receipt.cacheable:
            return None
        return receipt if partial_ok or not receipt.partial else None

    def grade_dir(
        self,
        source: Path,
        *,
        tree: str | None = None,
        scenarios: Iterable[Scenario] | None = None,
        progress: ProgressHook | None = None,
        stop_at_first_fail: bool = False,
    ) -> Receipt:
        """Grade the workspace tree in ``source`` (its tree hash computed if not given).

        ``stop_at_first_fail`` (when only a reward is needed): launch units run in the order
        most likely to fail first, and grading stops after the first unit with a failing
        scenario; the receipt says it is ``partial``. A later full grade completes a stored
        partial receipt, grading only the scenarios it lacks.

        A tree no walk will take (nested deeper than the bound, see
        :data:`~gym_trainfail.hashing.MAX_TREE_DEPTH`) gets a receipt whose every scenario is
        ``error`` with the reason, never an exception: one hostile tree must not end a grading
        stage.
        """
        selected = tuple(scenarios) if scenarios is not None else self.case.scenarios
        try:
            tree = tree or tree_digest(source, exclude=(*ALWAYS_EXCLUDED, *self.case.workspace_exclude))
            return self._grade_tree(source, tree, selected, progress, stop_at_first_fail)
        except TreeRefusedError as exc:
            return self.refused(tree or "", selected, f"the revision's tree cannot be graded: {exc}")

    def grade_revision(
        self, log: RevisionLog, number: int, tree: str, *, progress: ProgressHook | None = None
    ) -> Receipt:
        """Grade revision ``number`` of an episode's ``log`` (whose tree hash is ``tree``) from a
        scratch checkout. A revision that cannot be restored (a damaged record, a tree no walk
        takes) gets an error receipt, never an exception: one episode must not end the grading of
        a run or a batch."""
        try:
            with tempfile.TemporaryDirectory(prefix="trainfail-revision-") as scratch:
                workspace = Path(scratch) / "workspace"
                log.checkout(number, workspace)
                return self.grade_dir(workspace, tree=tree, progress=progress)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            reason = f"revision {number} could not be restored for grading: {exc}"
            return self.refused(tree, self.case.scenarios, reason)

    def refused(self, tree: str, scenarios: Sequence[Scenario], reason: str) -> Receipt:
        """A receipt for a tree that could not be graded at all: every scenario ``error`` (unknown,
        never pass, never cached) with ``reason``."""
        now = time.time()
        outcomes = tuple(host_verdict(s, "error", reason[:MAX_REASON]) for s in scenarios)
        return Receipt(self.case.id, tree, self.grader_hash, outcomes, created=now, duration_s=0.0)

    def _grade_tree(
        self,
        source: Path,
        tree: str,
        selected: tuple[Scenario, ...],
        progress: ProgressHook | None,
        stop_at_first_fail: bool,
    ) -> Receipt:
        full = selected == self.case.scenarios
        known: tuple[ScenarioOutcome, ...] = ()
        if full and (hit := self.cached(tree, partial_ok=True)) is not None:
            if not hit.partial or stop_at_first_fail:
                if progress:
                    progress("cached", None)
                return hit
            known = hit.outcomes
        started = time.time()
        done = {o.scenario for o in known}
        todo = [s for s in selected if s.name not in done]
        graded = self._run_all(source, todo, progress, stop_at_first_fail=stop_at_first_fail)
        by_name = {o.scenario: o for o in (*known, *graded)}
        receipt = Receipt(
            case_id=self.case.id,
            tree=tree,
            grader_hash=self.grader_hash,
            outcomes=tuple(by_name[s.name] for s in selected if s.name in by_name),
            created=started,
            duration_s=time.time() - started + sum(o.duration_s for o in known),
            partial=len(by_name) < len(selected),
        )
        if full and receipt.cacheable:
            write_json(self.receipt_path(tree), receipt.to_json())
        return receipt

    def _run_all(
        self,
        source: Path,
        scenarios: Sequence[Scenario],
        progress: ProgressHook | None,
        *,
        stop_at_first_fail: bool = False,
    ) -> list[ScenarioOutcome]:
        """Every launch unit, ``parallel_scenarios`` at a time, outcomes in scenario order (with
        ``stop_at_first_fail``: one unit at a time, likeliest failures first, until one fails)."""

        def one(unit: tuple[Scenario, ...]) -> list[ScenarioOutcome]:
            if progress:
                for scenario in unit:
                    progress(scenario.name, None)
            outcomes = self.grade_unit(source, unit)
            if progress:
                for outcome in outcomes:
                    progress(outcome.scenario, outcome)
            return outcomes

        if not self.group_scenarios and not stop_at_first_fail and self.parallel_scenarios == 1 and len(scenarios) > 1:
            return self.grade_singles(source, scenarios, progress)
        units = self.partition(scenarios)
        if stop_at_first_fail:
            results = []
            for unit in sorted(units, key=lambda u: -sum(s.kind == "failure" for s in u)):
                results.append(one(unit))
                if any(o.status == "fail" for o in results[-1]):
                    break
            graded = {o.scenario: o for outcomes in results for o in outcomes}
            return [graded[s.name] for s in scenarios if s.name in graded]
        if self.parallel_scenarios == 1 or len(units) < 2:
            results = [one(u) for u in units]
        else:
            with ThreadPoolExecutor(self.parallel_scenarios, thread_name_prefix="scenario") as pool:
                results = list(pool.map(one, units))
        by_name = {o.scenario: o for outcomes in results for o in outcomes}
        return [by_name[s.name] for s in scenarios]

    def partition(self, scenarios: Sequence[Scenario]) -> list[tuple[Scenario, ...]]:
        """Launch units: one per device count (scenario groups), or one per scenario; a scenario
        marked ``alone`` is always a unit of its own."""
        if not self.group_scenarios:
            return [(s,) for s in scenarios]
        groups: dict[int, list[Scenario]] = {}
        alone: list[tuple[Scenario, ...]] = []
        for scenario in scenarios:
            if scenario.alone:
                alone.append((scenario,))
            else:
                groups.setdefault(scenario.devices, []).append(scenario)
        return [*(tuple(g) for g in groups.values()), *alone]

    def grade_unit(self, source: Path, unit: Sequence[Scenario]) -> list[ScenarioOutcome]:
        """Grade ``unit`` (scenarios needing the same number of devices) in one run sandbox and
        one judge sandbox; a scenario left without a verdict is graded again on its own."""
        started = time.monotonic()
        if unit and unit[0].devices > self.pool.size:
            # Not a verdict on the revision: this node cannot run the scenario at all.
            return [not_runnable_here(s, self.pool.size, self.pool.describe()) for s in unit]
        oracle_mounts: dict[str, Mount] = {}
        oracle_cost: dict[str, tuple[float, float]] = {}
        runnable: list[Scenario] = []
        outcomes: dict[str, ScenarioOutcome] = {}
        for scenario in unit:
            if self.oracles is None:
                runnable.append(scenario)
                continue
            oracle, device_s, queue_s = self.oracles.ensure(scenario)
            oracle_cost[scenario.name] = (device_s, queue_s)
            if oracle is None:
                outcomes[scenario.name] = no_verdict(
                    scenario, "the oracle run gave no reference", device_s, queue_s, started
                )
            else:
                oracle_mounts[scenario.name] = Mount(oracle, f"{ORACLE_MOUNT}/{scenario.name}")
                runnable.append(scenario)
        attempts = 0
        spent: dict[str, tuple[float, float]] = {s.name: oracle_cost.get(s.name, (0.0, 0.0)) for s in runnable}
        pending = runnable
        last: UnitResult | None = None
        while pending:
            attempts += 1
            mounts = tuple(oracle_mounts[s.name] for s in pending if s.name in oracle_mounts)
            last = self.two_phase(source, pending, mounts)
            for scenario in pending:
                device_s, queue_s = last.shares[scenario.name]
                spent[scenario.name] = (spent[scenario.name][0] + device_s, spent[scenario.name][1] + queue_s)
            judged, unjudged = self._sort(pending, last)
            for found in judged:
                device_s, queue_s = spent[found.scenario]
                outcomes[found.scenario] = replace(
                    found,
                    attempts=attempts,
                    device_seconds=device_s,
                    queue_wait_s=queue_s,
                    grouped=len(pending) > 1,
                    duration_s=_duration(found, len(pending), time.monotonic() - started),
                )
            if len(pending) > 1:
                for scenario in unjudged:  # never let one scenario decide another's verdict
                    alone = self.grade_unit(source, (scenario,))[0]
                    device_s, queue_s = spent[scenario.name]
                    outcomes[scenario.name] = replace(
                        alone,
                        attempts=alone.attempts + attempts,
                        device_seconds=alone.device_seconds + device_s,
                        queue_wait_s=alone.queue_wait_s + queue_s,
                    )
                pending = []
            elif unjudged and attempts > self.retries:
                scenario = unjudged[0]
                device_s, queue_s = spent[scenario.name]
                outcomes[scenario.name] = replace(
                    no_verdict(scenario, _why_unjudged(scenario, last), device_s, queue_s, started),
                    attempts=attempts,
                )
                pending = []
            else:
                pending = unjudged
        return [outcomes[s.name] for s in unit]

    def _sort(self, pending: Sequence[Scenario], result: UnitResult) -> tuple[list[ScenarioOutcome], list[Scenario]]:
        """Split the unit's scenarios into judged ones (their outcomes) and ones to grade again."""
        judged: list[ScenarioOutcome] = []
        again: list[Scenario] = []
        run = result.run.result if result.run is not None else None
        # A group whose run did not end cleanly (killed, crashed, out of time): whichever of its
        # scenarios broke it decided the others' fates too, so only their passes stand and the
        # rest are graded again alone. (A scenario that hangs does not break its group: the run
        # kit stops it at its deadline and the judge fails it with "no progress after N s"; alone,
        # the host's clock stops it and ``host_reason`` says so.)
        run_broke = run is None or run.timed_out or run.exit_code != 0
        for scenario in pending:
            if result.host_reason:
                judged.append(host_verdict(scenario, "fail", result.host_reason))
                continue
            data = result.outcomes.get(scenario.name)
            found = from_outcome(scenario, data) if data is not None else None
            if found is not None and run_broke and len(pending) > 1 and found.status != "pass":
                found = None
            if found is None or found.status == "error":
                again.append(scenario)
            else:
                judged.append(found)
        return judged, again

    def scenario_request(self, scenario: Scenario) -> dict[str, Any]:
        """How a phase sees one scenario (``/io/scenarios.json`` holds a list of these)."""
        return self.phases.request(scenario)

    def two_phase(self, source: Path, unit: Sequence[Scenario], oracle_mounts: tuple[Mount, ...]) -> UnitResult:
        """Run phase over a copy of ``source`` (hostile) while the unit's devices are held, then
        the judge phase (trusted; it needs no devices, so a neighbour's launch can have them)."""
        with contextlib.ExitStack() as stack:
            root = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="trainfail-grade-")))
            with self.pool.lease(unit[0].devices) as lease:
                stage = self.phases.run_stage(stack, root, source, unit, lease)
            judge, outcomes = None, dict.fromkeys((s.name for s in unit), None)
            if not stage.host_reason:
                facts = run_facts(stage.run, stage.check, len(unit))
                judge, outcomes = self.phases.judge_stage(root, unit, stage.out, facts, oracle_mounts)
        return UnitResult(outcomes, _shares(unit, outcomes, lease), stage.run, judge, stage.host_reason)

    def grade_singles(
        self, source: Path, scenarios: Sequence[Scenario], progress: ProgressHook | None = None
    ) -> list[ScenarioOutcome]:
        """Each scenario of ``source`` in a run sandbox of its own, judged together
        (:meth:`judge_runs`); the scenarios that could not be (``alone``, too wide for this node,
        without an oracle, left unjudged) are graded by :meth:`grade_unit`, with its retries."""
        jobs = [Job(s.name, source, s) for s in scenarios]
        outcomes = self.judge_runs(jobs, progress)
        for scenario in scenarios:
            if scenario.name in outcomes:
                if progress:
                    progress(scenario.name, outcomes[scenario.name])
            else:
                outcomes[scenario.name] = self._run_all(source, [scenario], progress)[0]
        return [outcomes[s.name] for s in scenarios]

    def grade_many(self, jobs: Sequence[Job], *, parallel: int = 1) -> dict[str, ScenarioOutcome]:
        """Several revisions' scenarios (``Job.source`` each; keys unique), each run in a sandbox of
        its own, ``parallel`` run phases at a time, and judged by one judge phase
        (:meth:`judge_runs`): what qualification does with a case's hinted wrong repairs and
        forgeries. A job the shared judge left without a verdict is graded again alone (with the
        retries of :meth:`grade_unit`), so no revision's artifacts decide another's verdict."""
        outcomes = self.judge_runs(jobs, None, parallel=parallel)
        for job in jobs:
            if job.key not in outcomes:
                outcomes[job.key] = self.grade_unit(job.source, (job.scenario,))[0]
        return outcomes

    def judge_runs(
        self, jobs: Sequence[Job], progress: ProgressHook | None, *, parallel: int = 1
    ) -> dict[str, ScenarioOutcome]:
        """Each job's run phase in a sandbox of its own (its own launch, devices, workspace and
        output folder), then one judge phase for every job whose run ended cleanly (exit 0, in time,
        within the artifact limit): the judge's start-up (Python, torch, the case's libraries) is
        paid once. Each clean run's artifacts reach that judge under a name of their own (the
        scenario's, or ``j<N>`` when several revisions share the judge), with its oracle mounted
        under the same name; the host's facts for that judge are those of clean runs, as a group's
        would be. A run that did not end cleanly is judged on its own, with its own facts. Jobs
        that cannot be graded this way (``alone``: their judges read the host-timed duration of
        their runs; too wide for this node; no oracle) and jobs left without a verdict are absent
        from the answer."""
        keys = [job.key for job in jobs]
        if len(set(keys)) != len(keys):
            raise GradingError(f"job keys must be unique, got {keys}")
        eligible = [job for job in jobs if not job.scenario.alone and job.scenario.devices <= self.pool.size]
        shared_sources = len({job.source for job in eligible}) > 1
        oracles: dict[str, Path] = {}
        if self.oracles is not None:
            for job in eligible:
                oracle, _, _ = self.oracles.ensure(job.scenario)
                if oracle is not None:
                    oracles[job.key] = oracle
            eligible = [job for job in eligible if job.key in oracles]
        names = {job.key: f"j{i}" if shared_sources else job.scenario.name for i, job in enumerate(eligible)}
        outcomes: dict[str, ScenarioOutcome] = {}
        with tempfile.TemporaryDirectory(prefix="trainfail-singles-") as scratch:
            root = Path(scratch)

            def run(index: int, job: Job) -> RunStage:
                if progress:
                    progress(job.key, None)
                (root / f"unit{index}").mkdir()
                return self.phases.kept_run(root / f"unit{index}", job.source, job.scenario)

            if parallel > 1 and len(eligible) > 1:
                with ThreadPoolExecutor(min(parallel, len(eligible)), thread_name_prefix="grade-run") as pool:
                    stages = list(pool.map(run, range(len(eligible)), eligible))
            else:
                stages = [run(index, job) for index, job in enumerate(eligible)]
            clean: list[tuple[Job, RunStage]] = []
            for index, (job, stage) in enumerate(zip(eligible, stages, strict=True)):
                if stage.clean:
                    clean.append((job, stage))
                    continue
                found = self._judge_unclean(root / f"unit{index}", job, stage, oracles.get(job.key))
                if found is not None:
                    outcomes[job.key] = found
            if clean:
                artifacts = root / "artifacts"
                artifacts.mkdir()
                for job, stage in clean:
                    if (stage.out / job.scenario.name).is_dir():
                        (stage.out / job.scenario.name).rename(artifacts / names[job.key])
                facts = shared_facts([stage for _, stage in clean])
                mounts = tuple(
                    Mount(oracles[job.key], f"{ORACLE_MOUNT}/{names[job.key]}")
                    for job, _ in clean
                    if job.key in oracles
                )
                unit = [job.scenario for job, _ in clean]
                judged_names = [names[job.key] for job, _ in clean]
                shared, written = self.phases.judge_stage(root, unit, artifacts, facts, mounts, judged_names)
                for job, stage in clean:
                    data = written.get(names[job.key])
                    found = from_outcome(job.scenario, data) if data is not None else None
                    if found is not None and found.status != "error":
                        outcomes[job.key] = _with_costs(found, stage, shared.duration_s / len(clean))
        return outcomes

    def _judge_unclean(self, root: Path, job: Job, stage: RunStage, oracle: Path | None) -> ScenarioOutcome | None:
        """A run that did not end cleanly, judged on its own with its own facts (``None``: no verdict)."""
        judge: PhaseRun | None = None
        written: dict[str, dict[str, Any] | None] = {job.scenario.name: None}
        if not stage.host_reason:
            facts = run_facts(stage.run, stage.check, 1)
            mount = (Mount(oracle, f"{ORACLE_MOUNT}/{job.scenario.name}"),) if oracle is not None else ()
            judge, written = self.phases.judge_stage(root, (job.scenario,), stage.out, facts, mount)
        shares = {job.scenario.name: (stage.device_s, stage.queue_s)}
        judged, _ = self._sort((job.scenario,), UnitResult(written, shares, stage.run, judge, stage.host_reason))
        return _with_costs(judged[0], stage, judge.duration_s if judge else 0.0) if judged else None


def _with_costs(found: ScenarioOutcome, stage: RunStage, judge_s: float) -> ScenarioOutcome:
    """A single run's outcome with the devices its run held and its share of the judge's time."""
    return replace(
        found,
        device_seconds=stage.device_s,
        queue_wait_s=stage.queue_s,
        duration_s=stage.run.duration_s + judge_s,
    )


def _shares(
    unit: Sequence[Scenario], outcomes: dict[str, dict[str, Any] | None], lease: Lease
) -> dict[str, tuple[float, float]]:
    """Each scenario's share of the unit's device- and queue-seconds, by the ``total_s`` its
    outcome reports (an even split when any is missing or implausible)."""
    weights = {s.name: reported_total_s(outcomes.get(s.name)) for s in unit}
    if not all(weights.values()):
        weights = dict.fromkeys(weights, 1.0)
    total = sum(weights.values())
    return {name: (lease.device_seconds * w / total, lease.queue_wait_s * w / total) for name, w in weights.items()}


def _duration(outcome: ScenarioOutcome, unit_size: int, elapsed: float) -> float:
    """A scenario's duration: its own ``total_s`` in a group, the unit's wall time alone."""
    if unit_size > 1:
        return min(float(outcome.timings.get("total_s", 0.0)), elapsed)
    return elapsed


def _why_unjudged(scenario: Scenario, result: UnitResult | None) -> str:
    """The reason recorded for a scenario that never got a verdict."""
    if result is None:
        return "not graded"
    data = result.outcomes.get(scenario.name)
    if data is not None:
        return from_outcome(scenario, data).reason
    judge = result.judge
    if judge is None:
        return "the judge did not run"
    tail = (judge.result.stderr or judge.result.stdout).strip().splitlines()[-4:]
    how = "timed out" if judge.result.timed_out else f"exit {judge.result.exit_code}"
    return f"the judge wrote no outcome ({how}): " + " | ".join(tail)[-400:]
