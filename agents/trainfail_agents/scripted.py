"""Scripted agents: ``noop`` (a baseline that changes nothing), ``reference``, ``study`` and
``study-traincheck`` (the study agent using TrainCheck in the ``traincheck`` arm).

``reference`` is privileged: it reads the case's private reference repair on the host and
applies it through the env's ordinary tools (read, write, run a job, submit), so an episode
it plays exercises the same paths a model's would. ``study`` is privileged the same way and
behaves like the agents of the study this gym extends: it reads the culprit source, states a
hypothesis, runs a probe job that shows the symptom, confirms the mechanism, submits a
plausible wrong repair, then the right one — from the case's private rubric
(``grader/diagnosis/rubric.toml``, its ``[study]`` table). It reports estimated token usage per
action (what it read and wrote, as a conversation would grow), so every cost column holds
values. They exist for qualification, demos, tests and the scripted leaderboard, never for
leaderboards of real agents.
"""

from __future__ import annotations

import filecmp
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any, cast

from gym_trainfail.env import TrainFailEnv
from gym_trainfail.errors import TrainFailError
from gym_trainfail.files import apply_patch
from gym_trainfail.hashing import walk_tree
from gym_trainfail.reach.results import SUMMARY_FILE, ResultError, culprit_terms, naming, parse_summary, term_pattern
from gym_trainfail.reach.spec import ReachSpec, load_spec, spec_path
from gym_trainfail.revisions import ALWAYS_EXCLUDED


def _act(env: TrainFailEnv, tool: str, **arguments: Any) -> tuple[str, float, bool]:
    observation, reward, terminated, truncated, _ = env.step(json.dumps({"tool": tool, "arguments": arguments}))
    return observation, float(reward), terminated or truncated


#: Characters per token of the study agent's usage estimate (as the fake endpoint counts).
CHARS_PER_TOKEN = 4


class NoopAgent:
    """Looks around, submits the workspace unchanged and finishes."""

    name = "noop"

    def play(self, env: TrainFailEnv, observation: str, info: dict[str, Any]) -> float:
        for tool, args in (
            ("list_files", {}),
            ("submit", {}),
            ("finish", {"summary": "no changes"}),
        ):
            _, reward, done = _act(env, tool, **args)
            if done:
                return reward
        return 0.0


class ReferenceAgent:
    """Applies the case's private reference repair through the env's tools."""

    name = "reference"

    def __init__(self, check: bool = True) -> None:
        self.check = check

    def play(self, env: TrainFailEnv, observation: str, info: dict[str, Any]) -> float:
        case = cast(TrainFailEnv, env.unwrapped).case
        steps: list[tuple[str, dict[str, Any]]] = [("list_files", {})]
        for path, content in patched_files(case.workspace_dir, case.reference_patch).items():
            steps.append(("read_file", {"path": path}))
            if content is None:
                steps.append(("shell", {"command": f"rm -f -- '{path}'"}))
            else:
                steps.append(("write_file", {"path": path, "content": content}))
        if self.check and case.check_command:
            steps.append(
                (
                    "run_job",
                    {"command": case.check_command, "devices": case.topology.devices_per_job},
                )
            )
        steps += [("submit", {}), ("finish", {"summary": "applied the reference repair"})]
        for tool, args in steps:
            _, reward, done = _act(env, tool, **args)
            if done:
                return reward
        return 0.0


class StudyAgent:
    """Reads, hypothesises, probes, confirms, submits a wrong repair, then the right one."""

    name = "study"

    def play(self, env: TrainFailEnv, observation: str, info: dict[str, Any]) -> float:
        inner = cast(TrainFailEnv, env.unwrapped)
        return self._study(inner, _Talk(inner, observation), explore=True)

    def _study(self, inner: TrainFailEnv, talk: _Talk, *, explore: bool, probe: bool = True) -> float:
        """The study's plan: explore (list, read the README and the culprits), state the
        hypothesis, probe (unless ``probe`` is off: the diagnosis came from elsewhere), then the
        wrong repair and the right one."""
        case = inner.case
        rubric = case.rubric
        if rubric is None or rubric.study is None:
            raise TrainFailError(f"the study agent needs a [study] table in {case.id}'s grader/diagnosis/rubric.toml")
        study = rubric.study
        devices = case.topology.devices_per_job
        wrong = patched_files(case.workspace_dir, case.wrong_repairs[study.wrong_repair])
        right = patched_files(case.workspace_dir, case.reference_patch)
        pristine = {rel: _text(case.workspace_dir / rel) for rel in wrong if rel not in right}
        plan: list[tuple[str, dict[str, Any]] | str] = []
        if explore:
            plan += [("list_files", {}), ("read_file", {"path": "README.md"})]
        plan += [("read_file", {"path": c.path}) for c in rubric.culprits]
        plan += [study.hypothesis]
        if probe:
            plan += [("write_file", {"path": study.probe_path, "content": study.probe.read_text(encoding="utf-8")}),
                     ("run_job", {"command": study.probe_command, "devices": devices}),
                     study.confirmation,
                     ("shell", {"command": f"rm -f -- '{study.probe_path}'"})]  # fmt: skip
        plan += _writes(wrong) + [("submit", {})]
        plan += _writes({**pristine, **right})
        if case.check_command:
            plan.append(("run_job", {"command": case.check_command, "devices": devices}))
        plan += [("submit", {}), ("finish", {"summary": study.confirmation})]
        for item in plan:
            if isinstance(item, str):
                talk.say(item)
                continue
            _, reward, done = talk.act(*item)
            if done:
                return reward
        return 0.0


class _Talk:
    """The study agent's turns: each action or statement is one model turn whose estimated usage
    (the conversation so far in, the action out) is reported before it takes effect."""

    def __init__(self, env: TrainFailEnv, observation: str) -> None:
        self.env = env
        self.context = len(observation)

    def _turn(self, output: str) -> None:
        self.env.record_usage(self.context // CHARS_PER_TOKEN, max(1, len(output) // CHARS_PER_TOKEN), estimated=True)
        self.context += len(output)

    def say(self, text: str) -> None:
        self._turn(text)
        self.env.record_message(text)

    def act(self, tool: str, arguments: dict[str, Any]) -> tuple[str, float, bool]:
        action = json.dumps({"tool": tool, "arguments": arguments})
        self._turn(action)
        observation, reward, done = _act(self.env, tool, **arguments)
        self.context += len(observation)
        return observation, reward, done


def _writes(files: dict[str, str | None]) -> list[tuple[str, dict[str, Any]] | str]:
    return [
        ("write_file", {"path": rel, "content": content}) if content is not None
        else ("shell", {"command": f"rm -f -- '{rel}'"})
        for rel, content in files.items()
    ]  # fmt: skip


def _text(path: Path) -> str | None:
    return path.read_text(encoding="utf-8") if path.is_file() else None


def patched_files(workspace: Path, patch: Path) -> dict[str, str | None]:
    """Files ``patch`` changes in ``workspace``: path -> new text (``None`` when deleted)."""
    with tempfile.TemporaryDirectory(prefix="trainfail-reference-") as scratch:
        repaired = Path(scratch) / "workspace"
        shutil.copytree(workspace, repaired, symlinks=True)
        apply_patch(repaired, patch)
        before = {rel for rel, _, _ in walk_tree(workspace, exclude=ALWAYS_EXCLUDED)}
        after = {rel for rel, _, _ in walk_tree(repaired, exclude=ALWAYS_EXCLUDED)}
        changed: dict[str, str | None] = {}
        for rel in sorted(after):
            if rel not in before or not filecmp.cmp(workspace / rel, repaired / rel, shallow=False):
                changed[rel] = (repaired / rel).read_text(encoding="utf-8")
        for rel in sorted(before - after):
            changed[rel] = None
        return changed


class StudyTraincheckAgent(StudyAgent):
    """The study agent that, in the ``traincheck`` arm, uses TrainCheck as its manual says.

    It reads the manual, prepares a collection (the entry script without its ``__future__``
    line, a launcher per run), collects a trusted run, infers invariants, collects the failing
    run, checks it and reads ``violations_summary.json``. When a violated invariant names the
    culprit (the rubric's culprit files or symbols, or the tensors/APIs the case's reach spec
    names) it goes straight to the repair there; otherwise it falls back to the study's own
    probe. It cleans TrainCheck's files out of the workspace before it submits. What to run is
    the case's private reach spec (``grader/diagnosis/traincheck/reach.toml``, see
    :mod:`gym_trainfail.reach.spec`): the agent is privileged like ``study``. In the control
    arm, or on a case without a reach spec, it is the study agent.

    Options: ``workflow`` = ``full`` (default) or ``collect`` (stop after the trusted collection,
    for quick tests); ``repair`` = false ends the episode after the workflow, without edits.
    """

    name = "study-traincheck"
    MANUAL = "/opt/trainfail/TRAINCHECK.md"

    def __init__(self, workflow: str = "full", repair: bool = True) -> None:
        if workflow not in ("full", "collect"):
            raise TrainFailError(f"study-traincheck: workflow must be 'full' or 'collect', got {workflow!r}")
        self.workflow = workflow
        self.repair = repair

    def play(self, env: TrainFailEnv, observation: str, info: dict[str, Any]) -> float:
        inner = cast(TrainFailEnv, env.unwrapped)
        spec_file = spec_path(inner.case.grader_dir)
        if inner.arm.blocks_traincheck or not spec_file.is_file():
            return super().play(env, observation, info)
        spec = load_spec(spec_file)
        talk = _Talk(inner, observation)
        for item in self._explore(spec):
            if _step(talk, item)[1]:
                return 0.0
        pointed = self._traincheck(inner, talk, spec)
        if pointed is None:  # the episode ended (budget) during the workflow
            return 0.0
        # the manual's clean-up: copies, launchers, traces and the tools' logs in the working folder
        cleanup = f"rm -rf -- {TC_DIR} '{_tc_entry(spec)}' '{_instrumented(spec)}' traincheck_*.log"
        observation_, done = _step(talk, ("shell", {"command": cleanup}))
        if done:
            return 0.0
        if not self.repair:
            _, reward, _ = talk.act("finish", {"summary": "TrainCheck workflow only"})
            return reward
        return self._study(inner, talk, explore=False, probe=not pointed)

    def _explore(self, spec: ReachSpec) -> list[tuple[str, dict[str, Any]] | str]:
        return [
            ("list_files", {}),
            ("read_file", {"path": "README.md"}),
            ("shell", {"command": f"cat {self.MANUAL}"}),
            "The manual describes collect, infer and check. I'll collect a run in a configuration that "
            "should behave as a reference, infer invariants from it, collect the configuration under "
            "suspicion and check it against them.",
        ]

    def _traincheck(self, inner: TrainFailEnv, talk: _Talk, spec: ReachSpec) -> bool | None:
        """Run the workflow through the env's tools; whether a violation names the culprit
        (``None`` when the episode ended meanwhile)."""
        entry, tc_entry = spec.entry, _tc_entry(spec)
        package = ".".join(Path(spec.entry).parent.parts)
        runs = spec.runs
        prepare: list[tuple[str, dict[str, Any]] | str] = [
            ("write_file", {"path": f"{TC_DIR}/{name}", "content": (spec.folder / name).read_text(encoding="utf-8")})
            for name in spec.files
        ]
        prepare.append(
            (
                "shell",
                {
                    "command": f"sed '/^from __future__ import/d' {entry} > {tc_entry} && "
                    f'sed -i \'0,/^"""/s//__doc__ = """/\' {tc_entry} && '
                    f"sed -i 's/^from \\.\\([A-Za-z_]\\)/from {package}.\\1/; "
                    f"s/^from \\. import/from {package} import/' {tc_entry}"
                },
            )
        )
        if spec.setup:
            prepare.append(("shell", {"command": spec.setup.replace(".reach/", f"{TC_DIR}/"), "timeout_s": 600}))
        for role in ("trusted", "failing"):
            launch = runs[role].launch(str(tc_entry)).replace(".reach/", f"{TC_DIR}/")
            content = f"cd /workspace\nexport PYTHONPATH=/workspace\n{launch}\n"
            prepare.append(("write_file", {"path": f"{TC_DIR}/launch-{role}.sh", "content": content}))
        for item in prepare:
            if _step(talk, item)[1]:
                return None
        tracking = (f"--model-tracker-style {spec.tracker} --models-to-track {' '.join(spec.models_to_track)} "
                    if spec.models_to_track else "")  # fmt: skip
        collect = (f"traincheck-collect -p {tc_entry} -s {TC_DIR}/launch-{{role}}.sh {tracking}"
                   f"-t {' '.join(spec.modules)} --output-dir /workspace/{TC_DIR}/{{role}}")  # fmt: skip
        job = {"command": collect.format(role="trusted"), "devices": runs["trusted"].devices, "timeout_s": 1800}
        if _step(talk, ("run_job", job))[1]:
            return None
        if self.workflow == "collect":
            return False
        plan: list[tuple[str, dict[str, Any]]] = [
            ("shell", {"command": f"TQDM_DISABLE=1 traincheck-infer -f /workspace/{TC_DIR}/trusted "
                                  f"-o /workspace/{TC_DIR}/invariants.json", "timeout_s": 1800}),
            ("run_job", {"command": collect.format(role="failing"), "devices": runs["failing"].devices,
                         "timeout_s": 1800}),
            ("shell", {"command": f"traincheck-check -f /workspace/{TC_DIR}/failing -i /workspace/{TC_DIR}/"
                                  f"invariants.json -o /workspace/{TC_DIR}/check", "timeout_s": 1800}),
        ]  # fmt: skip
        for item in plan:
            if _step(talk, item)[1]:
                return None
        summary, done = _step(talk, ("shell", {"command": f"head -c 20000 {TC_DIR}/check/failing/{SUMMARY_FILE}"}))
        if done:
            return None
        hits = self._culprit_hits(inner, spec, summary)
        if hits:
            talk.say(f"TrainCheck flags invariants that name {', '.join(sorted(hits))}: that is where I'll look.")
        else:
            talk.say("TrainCheck's violations do not point at a specific place in this pipeline; the invariants "
                     "it breaks are about call order and arguments that differ with the configuration. "
                     "I'll diagnose with my own probe.")  # fmt: skip
        return bool(hits)

    @staticmethod
    def _culprit_hits(inner: TrainFailEnv, spec: ReachSpec, observation: str) -> set[str]:
        """Culprit terms named by a violation in the summary the agent just read."""
        start = observation.find("{")
        try:
            data = json.loads(observation[start:]) if start >= 0 else None
            result = parse_summary(data) if isinstance(data, dict) else None
        except (ValueError, ResultError):
            return set()
        rubric = inner.case.rubric
        if result is None or rubric is None:
            return set()
        terms = culprit_terms([c.path for c in rubric.culprits], [s for c in rubric.culprits for s in c.symbols],
                              spec.mechanism_terms)  # fmt: skip
        return {hit["term"] for hit in naming(result.violations, term_pattern(terms))}


#: The agent's TrainCheck folder in the workspace.
TC_DIR = "tc"


def _tc_entry(spec: ReachSpec) -> Path:
    entry = Path(spec.entry)
    return entry.with_name(f"tc_{entry.name}")


def _instrumented(spec: ReachSpec) -> Path:
    entry = Path(spec.entry)
    return entry.with_name(f"_traincheck_tc_{entry.name}")


def _step(talk: _Talk, item: tuple[str, dict[str, Any]] | str) -> tuple[str, bool]:
    """One planned turn: a statement, or an action (its observation and whether the episode ended)."""
    if isinstance(item, str):
        talk.say(item)
        return "", False
    observation, _, done = talk.act(*item)
    return observation, done
