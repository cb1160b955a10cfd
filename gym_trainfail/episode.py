"""Run one episode with an agent, and grade every revision of a finished episode.

A run directory holds everything about an episode: ``episode.json`` (what ran), the
``ledger.jsonl``, ``revisions/`` and ``objects/`` (the snapshots), ``result.json`` (the final
reward) and, after :func:`grade_run`, ``grades/`` (one receipt per revision and a summary with
the first valid repair and what it cost). Grading reads only these files, so it can be re-run
at any time without re-running the episode.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from gym_trainfail.agent import Agent, load_agent
from gym_trainfail.cases import CaseSpec, load_case
from gym_trainfail.diagnosis.judges import Judge
from gym_trainfail.diagnosis.milestones import diagnose
from gym_trainfail.env import TrainFailEnv
from gym_trainfail.errors import TrainFailError, UnknownCaseError
from gym_trainfail.files import write_json
from gym_trainfail.grading import FirstValid, Grader, Receipt, ScenarioOutcome, first_valid
from gym_trainfail.ledger import Summary, iter_kind, read_events, summarize
from gym_trainfail.registry import get_case
from gym_trainfail.revisions import RevisionLog


@dataclass(frozen=True)
class EpisodeResult:
    """What one episode produced."""

    run_dir: Path
    case: str
    arm: str
    agent: str
    reward: float
    reward_status: str
    final_revision: int | None
    summary: Summary


def run_episode(
    agent: Agent,
    *,
    case: CaseSpec,
    arm: str = "control",
    sandbox: str = "auto",
    run_dir: Path | None = None,
    seed: int = 0,
    grade_on_end: bool = True,
    agent_options: dict[str, Any] | None = None,
    resume: bool = False,
    env_options: dict[str, Any] | None = None,
) -> EpisodeResult:
    """Reset an env, let ``agent`` play it to the end, close it and report the result.

    With ``resume=True``, ``run_dir`` is an interrupted episode that is continued instead.
    ``agent_options`` are recorded in the episode (never put secrets in them) so a resumed
    episode gets the same agent.
    """
    if resume and run_dir is None:
        raise TrainFailError("resume needs the run directory of the interrupted episode")
    env = TrainFailEnv(
        case=case,
        arm=arm,
        sandbox=sandbox,
        run_dir=None if resume else run_dir,
        grade_on_end=grade_on_end,
        **(env_options or {}),
    )
    options: dict[str, Any] = {"agent": agent.name, "agent_options": agent_options or {}}
    if resume:
        options["resume"] = run_dir
    try:
        observation, info = env.reset(seed=seed, options=options)
        directory = env.run_dir
        assert directory is not None
        reward = agent.play(env, observation, info)
        status, final = env.reward_status, env.final_revision
    finally:
        env.close()
    events = read_events(directory / "ledger.jsonl")
    result = EpisodeResult(
        run_dir=directory,
        case=case.id,
        arm=arm,
        agent=agent.name,
        reward=reward,
        reward_status=status,
        final_revision=final,
        summary=summarize(events),
    )
    meta = json.loads((directory / "episode.json").read_text())
    meta.update(
        agent=agent.name,
        reward=reward,
        reward_status=status,
        final_revision=final,
        summary=result.summary.to_dict(),
    )
    write_json(directory / "episode.json", meta)
    return result


def resume_episode(run_dir: Path, *, sandbox: str | None = None, grade_on_end: bool = True) -> EpisodeResult:
    """Continue an interrupted episode with the agent (and options) it was started with."""
    try:
        meta = json.loads((run_dir / "episode.json").read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise TrainFailError(f"{run_dir} is not an episode run directory: {exc}") from None
    options = dict(meta.get("agent_options") or {})
    agent = load_agent(meta["agent"], **options)
    return run_episode(
        agent,
        case=episode_case(meta),
        arm=meta["arm"],
        sandbox=sandbox or meta.get("sandbox", "auto"),
        run_dir=run_dir,
        grade_on_end=grade_on_end,
        agent_options=options,
        resume=True,
    )


@dataclass(frozen=True)
class RevisionGrade:
    """One revision's verdict and what the episode had spent when it was submitted."""

    revision: int
    tree: str
    submitted_at: float
    status: str
    receipt: Receipt
    cost: Summary


@dataclass(frozen=True)
class RunGrades:
    """Every revision of an episode graded, and the first valid one."""

    run_dir: Path
    case: str
    revisions: tuple[RevisionGrade, ...]
    unique_trees: int
    grader_device_seconds: float
    grading_seconds: float
    #: Milestones, TrainCheck engagement and validation scope (:mod:`gym_trainfail.diagnosis`).
    diagnosis: dict[str, Any] | None = None

    @property
    def adjudication(self) -> FirstValid:
        """The first-valid rule applied to this episode's revisions."""
        return first_valid((r.revision, r.status) for r in self.revisions)

    @property
    def first_valid(self) -> RevisionGrade | None:
        number = self.adjudication.revision
        return next((r for r in self.revisions if r.revision == number), None)

    @property
    def final(self) -> RevisionGrade | None:
        return self.revisions[-1] if self.revisions else None

    def to_json(self) -> dict[str, Any]:
        first = self.first_valid
        return {
            "case": self.case,
            "run_dir": str(self.run_dir),
            "unique_trees": self.unique_trees,
            "grader_device_seconds": self.grader_device_seconds,
            "grading_seconds": self.grading_seconds,
            "first_valid_revision": first.revision if first else None,
            "first_valid_cost": first.cost.to_dict() if first else None,
            "first_valid_blocked_by": self.adjudication.blocked_by,
            "final_status": self.final.status if self.final else "no-revision",
            "diagnosis": self.diagnosis,
            "revisions": [
                {
                    "revision": r.revision,
                    "tree": r.tree,
                    "status": r.status,
                    "submitted_at": r.submitted_at,
                    "cost": r.cost.to_dict(),
                    "scenarios": {o.scenario: o.status for o in r.receipt.outcomes},
                }  # fmt: skip
                for r in self.revisions
            ],
        }


GradeProgress = Callable[[int, str, ScenarioOutcome | None], None]


def grade_run(
    run_dir: Path,
    *,
    sandbox: str = "auto",
    grader: Grader | None = None,
    progress: GradeProgress | None = None,
    judge: Judge | None = None,
    cache: bool = True,
) -> RunGrades:
    """Grade every revision of the episode in ``run_dir`` (each distinct tree once), then find
    its diagnosis milestones (statements judged by ``judge``, the rubric judge by default);
    ``cache=False`` grades every tree again, whatever receipts exist."""
    meta = json.loads((run_dir / "episode.json").read_text())
    case = episode_case(meta)
    grader = grader or Grader(case, sandbox=sandbox, cache=cache)
    events = read_events(run_dir / "ledger.jsonl")
    log = RevisionLog(run_dir)
    receipts: dict[str, Receipt] = {}
    started = time.time()
    grades = []
    for number in log.numbers():
        submitted_at, tree = log.load(number)
        if tree.digest not in receipts:
            hook = (lambda name, outcome, n=number: progress(n, name, outcome)) if progress else None
            receipts[tree.digest] = grader.grade_revision(log, number, tree.digest, progress=hook)
        receipt = receipts[tree.digest]
        submit = next((e for e in iter_kind(events, "submit") if e["revision"] == number), None)
        at = float(submit["t"]) if submit else submitted_at
        grades.append(RevisionGrade(number, tree.digest, at, receipt.status, receipt, summarize(events, until=at)))
        write_json(run_dir / "grades" / f"revision-{number}.json", receipt.to_json())
    result = RunGrades(
        run_dir=run_dir,
        case=case.id,
        revisions=tuple(grades),
        unique_trees=len(receipts),
        grader_device_seconds=sum(r.device_seconds for r in receipts.values()),
        grading_seconds=time.time() - started,
    )
    first = result.first_valid
    found = diagnose(run_dir, events, case.rubric, arm=str(meta.get("arm", "control")),
                     first_valid_at=first.submitted_at if first else None, judge=judge)  # fmt: skip
    result = replace(result, diagnosis=found)
    write_json(run_dir / "grades" / "summary.json", result.to_json())
    return result


def episode_case(meta: dict[str, Any]) -> CaseSpec:
    """The case an episode ran, at its profile: by registered id, else from the folder it was
    loaded from."""
    try:
        case = get_case(meta["case"])
    except UnknownCaseError:
        if not (meta.get("case_root") and Path(meta["case_root"], "case.toml").exists()):
            raise
        case = load_case(Path(meta["case_root"]))
    return case.with_profile(meta.get("profile"))
