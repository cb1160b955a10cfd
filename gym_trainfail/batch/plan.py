"""The batch plan: every episode of cases × arms × agents × trials, written before anything runs.

A plan is identified by its *spec* (cases, arms, agents, trials, sandbox, agent options).
Re-running the same command on the same run directory reuses the plan on disk. The same batch
over more cases (every other argument equal) grows the plan: the new cases' episodes are added
and nothing already played is replayed, so a case added to the library joins a leaderboard. Any
other spec for an existing run directory is refused, so two batches never mix in one directory.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from gym_trainfail.agent import agent_names
from gym_trainfail.arms import ARMS
from gym_trainfail.batch.layout import RunLayout
from gym_trainfail.cases import DEFAULT_PROFILE, CaseSpec, load_case, supersedes
from gym_trainfail.errors import TrainFailError, UnknownCaseError
from gym_trainfail.files import write_json
from gym_trainfail.registry import default_registry, get_case, resolve_case

#: Attempts an episode gets before an infrastructure failure is final.
DEFAULT_MAX_ATTEMPTS = 3
PLAN_VERSION = 1


@dataclass(frozen=True)
class PlannedEpisode:
    """One episode to play: which case, arm, agent and trial, and what it asks of a node."""

    id: str
    case: str
    case_root: str
    arm: str
    agent: str
    trial: int
    seed: int
    devices: int
    profile: str = DEFAULT_PROFILE

    def case_spec(self) -> CaseSpec:
        """The case at the planned profile, by registered id, else from its folder (cases that
        are not registered)."""
        try:
            case = get_case(self.case)
        except UnknownCaseError:
            if not Path(self.case_root, "case.toml").is_file():
                raise
            case = load_case(Path(self.case_root))
        return case.with_profile(self.profile)


@dataclass(frozen=True)
class BatchSpec:
    """What a batch is: the arguments that decide its episodes."""

    cases: tuple[str, ...]
    arms: tuple[str, ...]
    agents: tuple[str, ...]
    trials: int
    sandbox: str = "auto"
    agent_options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    profile: str = DEFAULT_PROFILE

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["agent_options"] = {k: dict(v) for k, v in self.agent_options.items()}
        return data


@dataclass(frozen=True)
class BatchPlan:
    """A spec and its episodes, in the order they are dispatched."""

    spec: BatchSpec
    episodes: tuple[PlannedEpisode, ...]
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    created: float = 0.0

    def episode(self, episode_id: str) -> PlannedEpisode:
        """Look an episode up by id."""
        for episode in self.episodes:
            if episode.id == episode_id:
                return episode
        raise TrainFailError(f"the plan has no episode {episode_id!r}")

    def to_json(self) -> dict[str, Any]:
        return {
            "version": PLAN_VERSION,
            "created": self.created,
            "max_attempts": self.max_attempts,
            "spec": self.spec.to_json(),
            "episodes": [asdict(e) for e in self.episodes],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BatchPlan:
        spec = data["spec"]
        return cls(
            spec=BatchSpec(
                cases=tuple(spec["cases"]),
                arms=tuple(spec["arms"]),
                agents=tuple(spec["agents"]),
                trials=int(spec["trials"]),
                sandbox=spec.get("sandbox", "auto"),
                agent_options=spec.get("agent_options") or {},
                profile=spec.get("profile", DEFAULT_PROFILE),
            ),
            episodes=tuple(PlannedEpisode(**e) for e in data["episodes"]),
            max_attempts=int(data.get("max_attempts", DEFAULT_MAX_ATTEMPTS)),
            created=float(data.get("created", 0.0)),
        )


def resolve_cases(selectors: Sequence[str]) -> list[CaseSpec]:
    """``all`` (every registered case), registered ids, or case folders, in the order given."""
    if not selectors:
        raise TrainFailError("a batch needs at least one case (an id, a case folder, or 'all')")
    cases: list[CaseSpec] = []
    for selector in selectors:
        found = list(default_registry()) if selector == "all" else [resolve_case(selector)]
        cases.extend(c for c in found if c.id not in {k.id for k in cases})
    return cases


def make_plan(
    cases: Sequence[CaseSpec],
    arms: Sequence[str],
    agents: Sequence[str],
    trials: int,
    *,
    sandbox: str = "auto",
    agent_options: Mapping[str, Mapping[str, Any]] | None = None,
    max_attempts: int = DEFAULT_MAX_ATTEMPTS,
) -> BatchPlan:
    """Every (case, arm, agent, trial) combination, with checked names."""
    _check_names(arms, agents, trials, max_attempts)
    options = dict(agent_options or {})
    stray = sorted(set(options) - set(agents))
    if stray:
        raise TrainFailError(f"agent options given for {stray}, which are not in the batch's agents {list(agents)}")
    spec = BatchSpec(
        cases=tuple(c.id for c in cases),
        arms=tuple(arms),
        agents=tuple(agents),
        trials=trials,
        sandbox=sandbox,
        agent_options=options,
        profile=_one_profile(cases),
    )
    episodes = [
        PlannedEpisode(
            id=episode_id(case, arm, agent, trial),
            case=case.id,
            case_root=str(case.root),
            arm=arm,
            agent=agent,
            trial=trial,
            seed=trial,
            devices=case.topology.devices_per_job,
            profile=case.profile,
        )
        for trial in range(1, trials + 1)
        for case in cases
        for arm in arms
        for agent in agents
    ]
    return BatchPlan(spec=spec, episodes=tuple(episodes), max_attempts=max_attempts, created=time.time())


def _one_profile(cases: Sequence[CaseSpec]) -> str:
    profiles = sorted({c.profile for c in cases})
    if len(profiles) > 1:
        raise TrainFailError(f"a batch runs its cases at one profile, not {profiles}; run one batch per profile")
    return profiles[0] if profiles else DEFAULT_PROFILE


def episode_id(case: CaseSpec, arm: str, agent: str, trial: int) -> str:
    """A file-name-safe id, e.g. ``DDPTokenAverage-v0.control.reference.t1``."""
    return f"{case.id.split('/')[-1]}.{arm}.{agent}.t{trial}"


def _check_names(arms: Sequence[str], agents: Sequence[str], trials: int, max_attempts: int) -> None:
    unknown_arms = [a for a in arms if a not in ARMS]
    if not arms or unknown_arms:
        raise TrainFailError(f"unknown arm(s) {unknown_arms or 'none given'}; expected some of {sorted(ARMS)}")
    installed = agent_names()
    unknown_agents = [a for a in agents if a not in installed]
    if not agents or unknown_agents:
        raise TrainFailError(
            f"unknown agent(s) {unknown_agents or 'none given'}; installed agents: {', '.join(installed) or 'none'}"
        )
    for name, values in (("arms", arms), ("agents", agents)):
        if len(set(values)) != len(values):
            raise TrainFailError(f"{name} are repeated: {list(values)}")
    if trials < 1:
        raise TrainFailError(f"trials must be at least 1, got {trials}")
    if max_attempts < 1:
        raise TrainFailError(f"max attempts must be at least 1, got {max_attempts}")


def write_plan(layout: RunLayout, plan: BatchPlan) -> BatchPlan:
    """Write ``plan`` to the run directory, or return the plan already there when it has the
    same spec (cases in any order), or the plan grown by ``plan``'s further cases or later case
    versions (:func:`_grown`).
    Any other spec is refused: one run directory holds one batch."""
    if layout.plan.exists():
        existing = load_plan(layout)
        grown = _grown(existing, plan)
        if grown is not None:
            write_json(layout.plan, grown.to_json())
            return grown
        if set(existing.spec.cases) != set(plan.spec.cases) or not _same_but_cases(existing.spec, plan.spec):
            raise TrainFailError(
                f"{layout.root} already holds a different batch ({_describe(existing.spec)}); "
                f"re-run it with the same arguments to resume, or give a new --out for {_describe(plan.spec)}"
            )
        if existing.max_attempts != plan.max_attempts:
            existing = BatchPlan(existing.spec, existing.episodes, plan.max_attempts, existing.created)
            write_json(layout.plan, existing.to_json())
        return existing
    write_json(layout.plan, plan.to_json())
    return plan


def _same_but_cases(old: BatchSpec, new: BatchSpec) -> bool:
    """Whether ``new`` names the same batch as ``old`` in every argument but its cases."""
    return replace(new, cases=old.cases).to_json() == old.to_json()


def _grown(existing: BatchPlan, plan: BatchPlan) -> BatchPlan | None:
    """``existing`` with the episodes of ``plan``'s further cases appended, when ``plan`` is the
    same batch over more cases (every other argument equal): a case added to the library joins a
    leaderboard without replaying the rest. A case of ``existing`` whose later version ``plan``
    names (``Name-v0`` -> ``Name-v1``: a registered version is frozen, so a changed grader comes
    under a new id) is superseded: its episodes leave the plan (their files stay in the run
    directory, unread) and the new version's are played. None when ``plan`` adds no case or
    differs otherwise."""
    old, new = existing.spec, plan.spec
    superseded = {c for c in old.cases if c not in new.cases and any(supersedes(n, c) for n in new.cases)}
    kept = [c for c in old.cases if c not in superseded]
    added = [c for c in new.cases if c not in old.cases]
    if not added or not set(kept) <= set(new.cases) or not _same_but_cases(old, new):
        return None
    episodes = tuple(e for e in existing.episodes if e.case not in superseded)
    episodes += tuple(e for e in plan.episodes if e.case in added)
    return BatchPlan(replace(old, cases=(*kept, *added)), episodes, plan.max_attempts, existing.created)


def load_plan(layout: RunLayout) -> BatchPlan:
    """The plan in a run directory."""
    try:
        data = json.loads(layout.plan.read_text())
    except FileNotFoundError:
        raise TrainFailError(f"{layout.root} is not a batch run directory (no {layout.plan.name})") from None
    except json.JSONDecodeError as exc:
        raise TrainFailError(f"{layout.plan} is not valid JSON: {exc}") from None
    return BatchPlan.from_json(data)


def _describe(spec: BatchSpec) -> str:
    return (
        f"cases {list(spec.cases)}, arms {list(spec.arms)}, agents {list(spec.agents)}, "
        f"{spec.trials} trial(s), sandbox {spec.sandbox}, profile {spec.profile}"
    )
