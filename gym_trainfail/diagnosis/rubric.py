"""A case's private diagnosis rubric: ``grader/diagnosis/rubric.toml``.

The rubric says what a correct diagnosis of the case's failure states and where the failure
lives, so the gym can tell *when* an agent understood it (see :mod:`.milestones`). It is never
shown to the solver and never affects a verdict or a reward, so it is left out of the grader
hash: improving a rubric does not void receipts.

Schema (every key is checked; a broken rubric refuses the case at registration)::

    [mechanism]
    summary = "one paragraph: the mechanism, for LLM judges and readers"

    [[mechanism.concept]]          # every concept must be asserted somewhere in the statement
    name = "per-rank normalisation"
    any = ['regex', ...]           # case-insensitive regular expressions
    [[mechanism.concept.alternative]]  # optional: another way of asserting the same concept (one
    name = "uneven token counts"       # that entails it); any one alternative asserts the concept,
    any = ['regex', ...]               # and the evidence names the alternative that did

    [[mechanism.concept]]
    name = "so the replicas drift apart"
    required = false               # evidence only: an effect the other concepts entail; leaving it
    any = ['regex', ...]           # out is fine, denying it ("they do not drift") is not a diagnosis

    [[culprit]]                    # where the failure lives (files must exist in workspace/,
    path = "sft/losses.py"         # symbols must occur in them)
    symbols = ["token_mean_loss"]

    [[wrong]]                      # known wrong explanations: a statement that asserts one
    name = "RAM-efficient loading" # is not a correct diagnosis
    any = ['regex', ...]

    [symptom]                      # the private symptom detector (see :mod:`.symptoms`)
    description = "per-rank valid-token counts differ"
    scope = "job"                  # compare within one job, or across the episode's jobs
    [[symptom.pattern]]
    regex = '(?P<key>…)(?P<value>…)'  # named groups: value; key (or command_key); align
    command_key = 'regex over the job command with (?P<key>…)'   # optional
    rtol = 1e-6                    # numbers closer than this (relative) are the same

    [validation]                   # what the case's pipeline logs about the work a job did
    steps = ['regex with (?P<steps>\\d+)', ...]   # updates a job trained (largest match)

    [[fixture]]                    # author-written statements the judges are checked against
    expect = "correct"             # or "incorrect"
    label = "near miss: …"
    stance = "hypothesised"        # optional, with mechanism: asserted|hypothesised|withdrawn|attributed|denied
    mechanism = "right"            # optional, with stance: right|wrong (see check_stance)
    text = \"\"\"…\"\"\"

    [study]                        # the scripted study agent's lines (optional)
    probe = "probe.py"             # a file in grader/diagnosis/, written into the workspace at
    probe_path = "outputs/probe.py"    # probe_path and run with probe_command
    probe_command = "torchrun … outputs/probe.py"
    wrong_repair = "local-count"   # a grader/wrong_repairs/ patch it submits first
    hypothesis = "what it says after reading the source"
    confirmation = "what it says after the probe"
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from gym_trainfail.errors import CaseDefinitionError
from gym_trainfail.hashing import bytes_digest

#: The folder under ``grader/`` that holds the rubric (and the study agent's files).
DIAGNOSIS_DIR = "diagnosis"
RUBRIC_FILE = "rubric.toml"
#: Keys older rubrics had, and why they are gone.
RETIRED = {
    "passage_chars": "concepts are now matched across the whole statement (docs/diagnosis.md); remove the key",
}

KEYS: Mapping[str, frozenset[str]] = {
    "": frozenset({"mechanism", "culprit", "wrong", "symptom", "validation", "fixture", "study"}),
    "mechanism": frozenset({"summary", "concept"}),
    "concept": frozenset({"name", "any", "required", "alternative"}),
    "alternative": frozenset({"name", "any"}),
    "culprit": frozenset({"path", "symbols"}),
    "wrong": frozenset({"name", "any"}),
    "symptom": frozenset({"description", "scope", "pattern"}),
    "pattern": frozenset({"regex", "command_key", "rtol"}),
    "validation": frozenset({"steps"}),
    "fixture": frozenset({"expect", "label", "text", "stance", "mechanism"}),
    "study": frozenset(
        {"probe", "probe_path", "probe_command", "wrong_repair", "hypothesis", "confirmation"}
    ),  # fmt: skip
}


@dataclass(frozen=True)
class Concept:
    """One part of the mechanism, with its accepted phrasings (or a wrong explanation's).

    ``phrasings`` holds every phrasing that asserts the concept: its own and its alternatives'
    (``alternatives`` keeps each alternative's name and phrasings, so evidence can say which one
    asserted it)."""

    name: str
    phrasings: tuple[re.Pattern[str], ...]
    alternatives: tuple[Concept, ...] = ()

    def source(self, pattern: re.Pattern[str]) -> str:
        """The name of the alternative ``pattern`` belongs to (the concept's own name for its own)."""
        return next((a.name for a in self.alternatives if pattern in a.phrasings), self.name)


@dataclass(frozen=True)
class Culprit:
    """A source location the failure lives in."""

    path: str
    symbols: tuple[str, ...]


@dataclass(frozen=True)
class SymptomPattern:
    """How one kind of job output shows the symptom."""

    regex: re.Pattern[str]
    command_key: re.Pattern[str] | None
    rtol: float


@dataclass(frozen=True)
class Symptom:
    """The symptom detector: values that should agree across keys (ranks, TP sizes, sources)."""

    description: str
    scope: Literal["job", "episode"]
    patterns: tuple[SymptomPattern, ...]


@dataclass(frozen=True)
class Fixture:
    """An author-written statement and whether it is a correct diagnosis; where its author labels how it
    holds the mechanism (``stance``, ``mechanism``), also whether the pre-run-hypothesis reading must
    credit it (:attr:`hypothesis`)."""

    text: str
    correct: bool
    label: str
    stance: str | None = None
    mechanism: str | None = None

    @property
    def hypothesis(self) -> bool | None:
        """Whether the pre-run-hypothesis reading must credit the statement (``None``: not labelled)."""
        return expected_hypothesis(self.correct, self.stance, self.mechanism)


#: How a statement holds the mechanism (``docs/diagnosis.md``, "Stances").
STANCES = ("asserted", "hypothesised", "withdrawn", "attributed", "denied")
MECHANISMS = ("right", "wrong")


def expected_hypothesis(correct: bool, stance: str | None, mechanism: str | None) -> bool | None:
    """Whether a labelled statement must be credited by the pre-run-hypothesis reading: the right
    mechanism asserted or hypothesised. Without a stance label, a correct diagnosis must be (it is
    asserted) and nothing is said about the others."""
    if stance is None or mechanism is None:
        return True if correct else None
    return mechanism == "right" and stance in ("asserted", "hypothesised")


def check_stance(expect: object, stance: object, mechanism: object, withdrawn: object = None) -> str | None:
    """Why a statement's labels disagree (``None`` when they agree): ``stance`` and ``mechanism`` are given
    together or not at all; ``expect`` is "correct" exactly when the mechanism is right and asserted;
    ``withdrawn`` (when given) is true exactly when the stance is withdrawn."""
    if (stance is None) != (mechanism is None):
        return "stance and mechanism are labelled together: give both or neither"
    if stance is None:
        return None
    if stance not in STANCES:
        return f"stance: expected one of {', '.join(STANCES)}, found {stance!r}"
    if mechanism not in MECHANISMS:
        return f"mechanism: expected 'right' or 'wrong', found {mechanism!r}"
    correct = mechanism == "right" and stance == "asserted"
    if (expect == "correct") != correct:
        return (f"expect = {expect!r} disagrees with stance = {stance!r}, mechanism = {mechanism!r}: a statement is "
                "correct exactly when the mechanism is right and asserted")  # fmt: skip
    if withdrawn is not None and withdrawn is not (stance == "withdrawn"):
        return (f"withdrawn = {withdrawn!r} disagrees with stance = {stance!r}: withdrawn is true exactly for stance "
                "'withdrawn'")  # fmt: skip
    return None


@dataclass(frozen=True)
class Study:
    """What the scripted study agent writes, runs and says (private, like the rubric)."""

    probe: Path
    probe_path: str
    probe_command: str
    wrong_repair: str
    hypothesis: str
    confirmation: str


@dataclass(frozen=True)
class Rubric:
    """A validated diagnosis rubric."""

    path: Path
    digest: str
    summary: str
    concepts: tuple[Concept, ...]
    culprits: tuple[Culprit, ...]
    wrong: tuple[Concept, ...]
    symptom: Symptom | None
    steps_patterns: tuple[re.Pattern[str], ...]
    fixtures: tuple[Fixture, ...]
    study: Study | None
    #: Concepts reported as evidence but not required (``required = false``): effects the required
    #: concepts entail. A statement that denies one is not a diagnosis.
    entailed: tuple[Concept, ...] = ()


def rubric_path(grader_dir: Path) -> Path:
    return grader_dir / DIAGNOSIS_DIR / RUBRIC_FILE


def load_rubric(grader_dir: Path, workspace_dir: Path) -> Rubric | None:
    """The case's rubric, or ``None`` when it has none; a broken one raises
    :class:`~gym_trainfail.errors.CaseDefinitionError` naming the key and what to do."""
    path = rubric_path(grader_dir)
    if not path.exists():
        return None
    raw = path.read_bytes()
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise CaseDefinitionError(f"{path}: not valid TOML: {exc}") from None
    check = _Check(path)
    check.keys(data, "")
    mechanism = check.table(data, "mechanism")
    check.keys(mechanism, "mechanism")
    listed = check.tables(mechanism, "concept")
    every = [(check.concept(c, f"mechanism.concept[{i}]"), check.required(c, f"mechanism.concept[{i}]"))
             for i, c in enumerate(listed)]  # fmt: skip
    concepts = tuple(c for c, required in every if required)
    if not concepts:
        check.fail("mechanism.concept", "expected one or more required [[mechanism.concept]] tables")
    check.unique([c.name for c, _ in every] + [a.name for c, _ in every for a in c.alternatives])
    wrong = tuple(check.concept(w, f"wrong[{i}]") for i, w in enumerate(check.tables(data, "wrong", required=False)))
    culprits = tuple(
        check.culprit(c, f"culprit[{i}]", workspace_dir) for i, c in enumerate(check.tables(data, "culprit"))
    )
    fixtures = tuple(check.fixture(f, f"fixture[{i}]") for i, f in enumerate(check.tables(data, "fixture")))
    if {f.correct for f in fixtures} != {True, False}:
        check.fail("fixture", "expected at least one correct and one incorrect statement fixture")
    validation = data.get("validation", {})
    check.keys(validation, "validation")
    return Rubric(
        path=path,
        digest=bytes_digest(raw),
        summary=check.text(mechanism, "summary", "mechanism.summary"),
        concepts=concepts,
        culprits=culprits,
        wrong=wrong,
        symptom=check.symptom(data["symptom"]) if "symptom" in data else None,
        steps_patterns=tuple(check.steps(r) for r in check.strings(validation, "steps", "validation.steps", [])),
        fixtures=fixtures,
        study=check.study(data["study"], grader_dir) if "study" in data else None,
        entailed=tuple(c for c, required in every if not required),
    )  # fmt: skip


class _Check:
    """Typed access to the rubric's tables, failing with the file and key named."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def fail(self, key: str, message: str) -> Any:
        raise CaseDefinitionError(f"{self.path}: {key}: {message}")

    def keys(self, node: object, table: str) -> None:
        if not isinstance(node, Mapping):
            self.fail(table or "(top level)", "expected a table")
            return
        allowed = KEYS[table.rsplit(".", 1)[-1]]
        for key in node:
            if key in RETIRED and key not in allowed:
                self.fail(f"{table}.{key}".lstrip("."), f"no longer used: {RETIRED[key]}")
            if key not in allowed:
                self.fail(f"{table}.{key}".lstrip("."), f"unknown key; valid keys here: {', '.join(sorted(allowed))}")

    def table(self, node: Mapping[str, Any], key: str) -> Mapping[str, Any]:
        value = node.get(key)
        if not isinstance(value, Mapping):
            self.fail(key, "expected a table")
        return value  # type: ignore[return-value]

    def tables(self, node: Mapping[str, Any], key: str, *, required: bool = True) -> list[Mapping[str, Any]]:
        value = node.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, Mapping) for v in value):
            self.fail(key, f"expected [[{key}]] tables")
        if required and not value:
            self.fail(key, f"expected one or more [[{key}]] tables")
        return list(value)

    def text(self, node: Mapping[str, Any], key: str, where: str) -> str:
        value = node.get(key)
        if not isinstance(value, str) or not value.strip():
            self.fail(where, "expected a non-empty string")
        return str(value).strip()

    def strings(self, node: Mapping[str, Any], key: str, where: str, default: list[str] | None = None) -> list[str]:
        value = node.get(key, default)
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            self.fail(where, "expected a list of non-empty strings")
        return list(value)

    def regex(self, pattern: str, where: str) -> re.Pattern[str]:
        try:
            return re.compile(pattern, re.IGNORECASE)
        except re.error as exc:
            return self.fail(where, f"not a valid regular expression {pattern!r}: {exc}")  # type: ignore[no-any-return]

    def steps(self, pattern: str) -> re.Pattern[str]:
        regex = self.regex(pattern, "validation.steps")
        if "steps" not in regex.groupindex:
            self.fail("validation.steps", f"{pattern!r} needs a named group (?P<steps>\\d+)")
        return regex

    def concept(self, node: Mapping[str, Any], where: str) -> Concept:
        kind = "wrong" if where.startswith("wrong") else "alternative" if ".alternative" in where else "concept"
        self.keys(node, kind)
        phrasings = self.strings(node, "any", f"{where}.any")
        if not phrasings:
            self.fail(f"{where}.any", "expected at least one phrasing")
        name = self.text(node, "name", f"{where}.name")
        own = tuple(self.regex(p, f"{where}.any") for p in phrasings)
        listed = self.tables(node, "alternative", required=False) if kind == "concept" else []
        alternatives = tuple(self.concept(a, f"{where}.alternative[{i}]") for i, a in enumerate(listed))
        return Concept(name, own + tuple(p for a in alternatives for p in a.phrasings), alternatives)

    def required(self, node: Mapping[str, Any], where: str) -> bool:
        value = node.get("required", True)
        if not isinstance(value, bool):
            self.fail(f"{where}.required", f"expected true or false, found {value!r}")
        if value is False and "alternative" in node:
            self.fail(
                f"{where}.alternative",
                "a concept that is not required takes no alternatives; list its phrasings in any",
            )
        return bool(value)

    def unique(self, names: list[str]) -> None:
        seen = {n for n in names if names.count(n) > 1}
        if seen:
            self.fail(
                "mechanism.concept", f"names must be unique across concepts and alternatives; repeated: {sorted(seen)}"
            )

    def culprit(self, node: Mapping[str, Any], where: str, workspace: Path) -> Culprit:
        self.keys(node, "culprit")
        path = self.text(node, "path", f"{where}.path")
        source = (workspace / path).resolve()
        if workspace.resolve() not in source.parents or not source.is_file():
            self.fail(f"{where}.path", f"{path!r} is not a file of workspace/")
        symbols = self.strings(node, "symbols", f"{where}.symbols", [])
        content = source.read_text(encoding="utf-8", errors="replace")
        missing = [s for s in symbols if s not in content]
        if missing:
            self.fail(f"{where}.symbols", f"{missing} do not occur in {path}")
        return Culprit(path, tuple(symbols))

    def fixture(self, node: Mapping[str, Any], where: str) -> Fixture:
        self.keys(node, "fixture")
        expect = node.get("expect")
        if expect not in ("correct", "incorrect"):
            self.fail(f"{where}.expect", f"expected 'correct' or 'incorrect', found {expect!r}")
        label = node.get("label", "")
        if not isinstance(label, str):
            self.fail(f"{where}.label", "expected a string")
        stance, mechanism = node.get("stance"), node.get("mechanism")
        problem = check_stance(expect, stance, mechanism)
        if problem is not None:
            self.fail(where, problem)
        return Fixture(self.text(node, "text", f"{where}.text"), expect == "correct", str(label),
                       stance if isinstance(stance, str) else None,
                       mechanism if isinstance(mechanism, str) else None)  # fmt: skip

    def symptom(self, node: object) -> Symptom:
        self.keys(node, "symptom")
        assert isinstance(node, Mapping)
        scope = node.get("scope", "job")
        if scope not in ("job", "episode"):
            self.fail("symptom.scope", f"expected 'job' or 'episode', found {scope!r}")
        patterns = []
        for i, entry in enumerate(self.tables(node, "pattern")):
            where = f"symptom.pattern[{i}]"
            self.keys(entry, "pattern")
            regex = self.regex(self.text(entry, "regex", f"{where}.regex"), f"{where}.regex")
            command_key = entry.get("command_key")
            key_regex = self.regex(command_key, f"{where}.command_key") if isinstance(command_key, str) else None
            if "value" not in regex.groupindex:
                self.fail(f"{where}.regex", "needs a named group (?P<value>…)")
            if "key" not in regex.groupindex and (key_regex is None or "key" not in key_regex.groupindex):
                self.fail(where, "needs a (?P<key>…) group in regex, or a command_key regex with one")
            rtol = entry.get("rtol", 1e-6)
            if isinstance(rtol, bool) or not isinstance(rtol, (int, float)) or rtol < 0:
                self.fail(f"{where}.rtol", f"expected a non-negative number, found {rtol!r}")
            patterns.append(SymptomPattern(regex, key_regex, float(rtol)))
        return Symptom(self.text(node, "description", "symptom.description"), scope, tuple(patterns))

    def study(self, node: object, grader_dir: Path) -> Study:
        self.keys(node, "study")
        assert isinstance(node, Mapping)
        probe = grader_dir / DIAGNOSIS_DIR / self.text(node, "probe", "study.probe")
        if not probe.is_file():
            self.fail("study.probe", f"{probe} is not a file")
        wrong_repair = self.text(node, "wrong_repair", "study.wrong_repair")
        if not (grader_dir / "wrong_repairs" / f"{wrong_repair}.patch").is_file():
            self.fail("study.wrong_repair", f"no grader/wrong_repairs/{wrong_repair}.patch")
        return Study(
            probe=probe,
            probe_path=self.text(node, "probe_path", "study.probe_path"),
            probe_command=self.text(node, "probe_command", "study.probe_command"),
            wrong_repair=wrong_repair,
            hypothesis=self.text(node, "hypothesis", "study.hypothesis"),
            confirmation=self.text(node, "confirmation", "study.confirmation"),
        )
