"""Case definitions: a folder with ``case.toml``, ``workspace/`` and a private ``grader/``.

Loading validates everything a broken case could get wrong and raises
:class:`~gym_trainfail.errors.CaseDefinitionError` naming the file, the field and what to do.
"""

from __future__ import annotations

import difflib
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, NoReturn, cast

from gym_trainfail.diagnosis.rubric import DIAGNOSIS_DIR, Rubric, load_rubric
from gym_trainfail.errors import CaseDefinitionError, TrainFailError
from gym_trainfail.hashing import TOOL_LITTER, tree_digest

#: ``Namespace/Name-vN``, the Gymnasium id shape.
CASE_ID_RE = re.compile(r"^(?P<namespace>[A-Za-z][A-Za-z0-9_]*)/(?P<name>[A-Za-z][A-Za-z0-9_]*)-v(?P<version>\d+)$")


def supersedes(newer: str, older: str) -> bool:
    """Whether case id ``newer`` is a later version of the same case as ``older``
    (``TrainFail/Name-v1`` supersedes ``TrainFail/Name-v0``); ids that do not parse never do."""
    new, old = CASE_ID_RE.match(newer), CASE_ID_RE.match(older)
    if new is None or old is None:
        return False
    same = (new["namespace"], new["name"]) == (old["namespace"], old["name"])
    return same and int(new["version"]) > int(old["version"])


#: Words that would tell the agent there is something to find. Prompts must be neutral.
BUG_VOCABULARY = re.compile(
    r"\b(bugs?|buggy|fix\w*|broken|wrong\w*|incorrect\w*|errors?|erroneous|faults?|faulty|defect\w*|"
    r"mistakes?|regressions?|issues?|problems?|flaw\w*|fail\w*|glitch\w*|culprit)\b",
    re.IGNORECASE,
)

#: Every key ``case.toml`` may hold, by table (``None``: the table's own keys are free-form).
CASE_KEYS: dict[str, frozenset[str] | None] = {
    "": frozenset(
        {"id", "title", "summary", "provenance", "prompt", "topology", "grader", "budgets", "workspace", "profiles"}
    ),
    "provenance": frozenset({"sources", "reproduced", "simplified"}),
    "prompt": frozenset({"text"}),
    "topology": frozenset({"world_size", "tensor_parallel", "devices_per_job"}),
    "grader": frozenset(
        {
            "run_command",
            "judge_command",
            "kit",
            "oracle_command",
            "fixtures_command",
            "judge_timeout_s",
            "artifact_limit_mb",
            "command",
            "group_command",
        }
    ),  # fmt: skip
    "budgets": frozenset({"steps", "wall_seconds", "device_seconds", "tokens", "disk_mb"}),
    "workspace": frozenset({"exclude", "check_command"}),
    "profiles": None,
}
#: Every key a ``[[scenario]]`` table may hold (``params`` and ``profile`` are free-form).
SCENARIO_KEYS: dict[str, frozenset[str] | None] = {
    "": frozenset({"name", "kind", "devices", "timeout_s", "alone", "params", "profile"}),
    "params": None,
    "profile": None,
}

#: The scale a case runs at unless a profile is chosen: the one its scenarios are written for
#: (the CPU dev box). Other profiles are declared in ``case.toml`` ``[profiles.<name>]``.
DEFAULT_PROFILE = "default"
PROFILE_NAME_RE = re.compile(r"^[a-z][a-z0-9-]{0,31}$")
#: Every key a ``[profiles.<name>]`` table of ``case.toml`` may hold.
PROFILE_KEYS = frozenset({"summary", "accelerator", "check_command", "artifact_limit_mb"})
#: What a profile can ask the host for: ``cuda`` needs NVIDIA GPUs and the ``cuda`` runtime variant.
PROFILE_ACCELERATORS = ("cpu", "cuda")

ScenarioKind = Literal["healthy", "failure"]
SCENARIO_KINDS: tuple[ScenarioKind, ...] = ("healthy", "failure")
SCENARIOS_FILE = "scenarios.toml"
REFERENCE_PATCH = "reference.patch"
WRONG_REPAIRS_DIR = "wrong_repairs"
FORGERIES_DIR = "forgeries"


@dataclass(frozen=True)
class Scenario:
    """One frozen grading scenario (private to the grader)."""

    name: str
    kind: ScenarioKind
    devices: int
    timeout_s: float
    params: Mapping[str, Any] = field(default_factory=dict)
    #: Always a launch unit of its own, never in a scenario group: the host's measured duration of
    #: its run phase (``duration_s`` in the judge's ``/io/run.json``) is then this scenario's alone,
    #: for judges whose verdict depends on how long the revision's code took.
    alone: bool = False


@dataclass(frozen=True)
class Profile:
    """A scale the case can run at, e.g. ``native``: the real model width and training length on
    GPUs. Public (``case.toml``): its summary, what it needs and the team's check command at that
    scale. Private (``grader/scenarios.toml``): the scale parameters it sets in every scenario's
    ``params`` (``[profile.<name>.params]``) and in single scenarios (``[scenario.profile.<name>]``).
    A profile never changes a scenario's name, kind or device count, so a scenario means the
    same thing at every scale."""

    name: str
    summary: str
    accelerator: str = "cpu"
    check_command: str = ""
    #: What one run phase may leave under ``/out`` at this scale (``None``: the case's).
    artifact_limit_mb: int | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    scenario_params: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def apply(self, scenario: Scenario) -> Scenario:
        """The scenario at this profile's scale."""
        params = merge_params(scenario.params, self.params)
        return replace(scenario, params=merge_params(params, self.scenario_params.get(scenario.name, {})))

    def unsupported(self, *, gpus: int, variant: str) -> str:
        """Why a host with ``gpus`` leasable GPUs and runtimes of ``variant`` cannot run this
        profile ("" when it can)."""
        if self.accelerator != "cuda":
            return ""
        if not gpus:
            return f"profile {self.name!r} needs NVIDIA GPUs and this host's device pool has none"
        if variant != "cuda":
            return (
                f"profile {self.name!r} needs the cuda runtime variant, not {variant!r}: pass --accelerator "
                "cuda (or set TRAINFAIL_RUNTIME_VARIANT=cuda); `trainfail runtimes build --accelerator cuda` builds it"
            )
        return ""


def merge_params(base: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with ``overrides`` laid over it; tables merge key by key, anything else is replaced."""
    merged = dict(base)
    for key, value in overrides.items():
        old = merged.get(key)
        merged[key] = merge_params(old, value) if isinstance(old, Mapping) and isinstance(value, Mapping) else value
    return merged


@dataclass(frozen=True)
class Topology:
    """How the case's pipeline is laid out across devices."""

    world_size: int
    tensor_parallel: int
    devices_per_job: int


#: The disk budget of a case that names none (workspace and ``/tmp`` together).
DEFAULT_DISK_MB = 4096


@dataclass(frozen=True)
class Budgets:
    """Per-episode limits; exhausting any of them truncates the episode."""

    steps: int
    wall_seconds: float
    device_seconds: float
    tokens: int
    #: Host disk an episode may fill: its workspace and its ``/tmp`` together (enforced by the
    #: filesystem where the host allows it; see ``gym_trainfail.sandbox.disk``).
    disk_mb: int = DEFAULT_DISK_MB


@dataclass(frozen=True)
class CaseSpec:
    """A validated case, as loaded from its folder."""

    id: str
    root: Path
    title: str
    summary: str
    provenance: Mapping[str, Any]
    prompt: str
    topology: Topology
    #: The run phase (hostile: runs the revision), with ``--scenarios FILE --out-dir DIR``.
    run_command: tuple[str, ...]
    #: The judge phase (trusted: no revision code), writes one outcome per scenario.
    judge_command: tuple[str, ...]
    budgets: Budgets
    workspace_exclude: tuple[str, ...]
    scenarios: tuple[Scenario, ...]
    #: How the team checks a change (README's run command); scripted agents use it with run_job.
    check_command: str = ""
    #: Optional: computes a scenario's reference without any revision (cached per scenario).
    oracle_command: tuple[str, ...] = ()
    #: Optional: computes the run phase's public inputs from the run kit alone (cached per grader
    #: version, mounted read-only at ``/fixtures`` in every run phase).
    fixtures_command: tuple[str, ...] = ()
    #: The folder under ``grader/`` the run phase sees at ``/kit`` (visible to revision code).
    kit: str = "kit"
    #: The judge's time per scenario.
    judge_timeout_s: float = 120.0
    #: The most a run phase may leave under ``/out`` before its scenarios fail.
    artifact_limit_mb: int = 1024
    #: The private diagnosis rubric (``grader/diagnosis/rubric.toml``), if the case has one.
    rubric: Rubric | None = None
    #: The scales the case can run at besides the default (:meth:`with_profile`).
    profiles: Mapping[str, Profile] = field(default_factory=dict)
    #: The scale this spec is at; ``scenarios`` and ``check_command`` are that profile's.
    profile: str = DEFAULT_PROFILE

    @property
    def kit_dir(self) -> Path:
        """The run kit: grader files the run phase (and so the revision's code) can read."""
        return self.grader_dir / self.kit

    @property
    def artifact_limit_bytes(self) -> int:
        return self.artifact_limit_mb << 20

    @property
    def workspace_dir(self) -> Path:
        """The pristine workspace every episode starts from."""
        return self.root / "workspace"

    @property
    def grader_dir(self) -> Path:
        """Private grader files; mounted only into grading sandboxes."""
        return self.root / "grader"

    @property
    def reference_patch(self) -> Path:
        """The private reference repair."""
        return self.grader_dir / REFERENCE_PATCH

    @property
    def wrong_repairs(self) -> dict[str, Path]:
        """Plausible wrong repairs shipped with the case (name -> patch)."""
        folder = self.grader_dir / WRONG_REPAIRS_DIR
        if not folder.is_dir():
            return {}
        return {p.stem: p for p in sorted(folder.glob("*.patch"))}

    @property
    def forgeries(self) -> dict[str, Path]:
        """Hostile revisions shipped with the case (name -> patch): attempts to forge a grade."""
        folder = self.grader_dir / FORGERIES_DIR
        if not folder.is_dir():
            return {}
        return {p.stem: p for p in sorted(folder.glob("*.patch"))}

    @property
    def name(self) -> str:
        """The id without namespace and version (``DDPTokenAverage``)."""
        match = CASE_ID_RE.match(self.id)
        assert match is not None  # validated at load time
        return match["name"]

    def content_hash(self) -> str:
        """Digest of everything that defines the case's behaviour (case.toml, workspace, grader);
        the records the tools keep beside them (admission, TrainCheck reach) are not part of it."""
        return tree_digest(self.root, include=("case.toml", "workspace", "grader"), exclude=TOOL_LITTER)

    def grader_hash(self) -> str:
        """Digest of what decides a verdict: case.toml and the grader folder, less its diagnosis
        rubric (which measures how agents get there and never decides a verdict)."""
        return tree_digest(
            self.root, include=("case.toml", "grader"), exclude=(*TOOL_LITTER, f"grader/{DIAGNOSIS_DIR}")
        )

    def with_profile(self, name: str | None) -> CaseSpec:
        """This case at the scale of profile ``name`` (``None``: unchanged): every scenario's
        params with the profile's laid over them, and the profile's check command."""
        if name is None or name == self.profile:
            return self
        if self.profile != DEFAULT_PROFILE:
            raise TrainFailError(f"{self.id} is already at profile {self.profile!r}; choose a profile once")
        if name not in self.profiles:
            known = ", ".join([DEFAULT_PROFILE, *self.profiles])
            raise TrainFailError(f"case {self.id} has no profile {name!r}; it has: {known}")
        chosen = self.profiles[name]
        return replace(
            self,
            profile=name,
            scenarios=tuple(chosen.apply(s) for s in self.scenarios),
            check_command=chosen.check_command or self.check_command,
            artifact_limit_mb=chosen.artifact_limit_mb or self.artifact_limit_mb,
        )

    def scenario(self, name: str) -> Scenario:
        """Look a scenario up by name."""
        for scenario in self.scenarios:
            if scenario.name == name:
                return scenario
        known = ", ".join(s.name for s in self.scenarios)
        raise KeyError(f"case {self.id} has no scenario {name!r}; it has: {known}")


def load_case(root: Path) -> CaseSpec:
    """Load and validate the case in folder ``root``."""
    root = root.resolve()
    data = _read_toml(root / "case.toml")
    reader = _Reader(root / "case.toml", data)
    case_id = reader.string("id")
    if not CASE_ID_RE.match(case_id):
        reader.fail("id", f"expected 'Namespace/Name-vN' (e.g. 'TrainFail/MyCase-v0'), found {case_id!r}")
    prompt = reader.string("prompt.text").strip()
    vocabulary = sorted({m.group(0).lower() for m in BUG_VOCABULARY.finditer(prompt)})
    if vocabulary:
        reader.fail("prompt.text", f"prompts must be neutral; remove the words {vocabulary}")
    provenance = reader.table("provenance")
    sources = provenance.get("sources")
    if not isinstance(sources, list) or not sources or not all(isinstance(s, str) for s in sources):
        reader.fail("provenance.sources", "expected a non-empty list of links to the public issue/PR")
    for key in ("reproduced", "simplified"):
        if not isinstance(provenance.get(key), str) or not provenance[key].strip():
            reader.fail(f"provenance.{key}", "expected a non-empty string")
    reader.check_keys(CASE_KEYS)
    for old in ("command", "group_command"):
        if old in data.get("grader", {}):
            reader.fail(
                f"grader.{old}",
                "single-phase graders ran the revision with the harness's powers and are no longer accepted; "
                "split the harness into grader.run_command and grader.judge_command (docs/grader-protocol.md)",
            )
    run_command = reader.strings("grader.run_command")
    judge_command = reader.strings("grader.judge_command")
    for key, value, example in (
        ("grader.run_command", run_command, "['python', '/kit/run.py']"),
        ("grader.judge_command", judge_command, "['python', '/grader/judge.py']"),
    ):
        if not value:
            reader.fail(key, f"expected a command, e.g. {example}")
    kit = reader.string("grader.kit", default="kit")
    _check_folders(root)
    _check_kit(root, kit)
    scenarios_path = root / "grader" / SCENARIOS_FILE
    scenarios = load_scenarios(scenarios_path)
    profiles = load_profiles(reader, scenarios_path, scenarios)
    return CaseSpec(
        id=case_id,
        root=root,
        title=reader.string("title"),
        summary=reader.string("summary", default="").strip(),
        provenance=provenance,
        prompt=prompt,
        topology=Topology(
            world_size=reader.positive_int("topology.world_size"),
            tensor_parallel=reader.positive_int("topology.tensor_parallel", default=1),
            devices_per_job=reader.positive_int("topology.devices_per_job"),
        ),
        run_command=tuple(run_command),
        judge_command=tuple(judge_command),
        kit=kit,
        judge_timeout_s=float(reader.positive_int("grader.judge_timeout_s", default=120)),
        artifact_limit_mb=reader.positive_int("grader.artifact_limit_mb", default=1024),
        budgets=Budgets(
            steps=reader.positive_int("budgets.steps"),
            wall_seconds=float(reader.positive_int("budgets.wall_seconds")),
            device_seconds=float(reader.positive_int("budgets.device_seconds")),
            tokens=reader.positive_int("budgets.tokens"),
            disk_mb=reader.positive_int("budgets.disk_mb", default=DEFAULT_DISK_MB),
        ),
        workspace_exclude=tuple(reader.strings("workspace.exclude", default=[])),
        check_command=reader.string("workspace.check_command", default=""),
        oracle_command=tuple(reader.strings("grader.oracle_command", default=[])),
        fixtures_command=tuple(reader.strings("grader.fixtures_command", default=[])),
        scenarios=scenarios,
        rubric=load_rubric(root / "grader", root / "workspace"),
        profiles=profiles,
    )


def load_scenarios(path: Path) -> tuple[Scenario, ...]:
    """Load and validate ``grader/scenarios.toml``."""
    data = _read_toml(path)
    entries = data.get("scenario")
    if not isinstance(entries, list) or not entries:
        raise CaseDefinitionError(f"{path}: expected one or more [[scenario]] tables, found none")
    scenarios: list[Scenario] = []
    for index, entry in enumerate(entries):
        reader = _Reader(path, entry, prefix=f"scenario[{index}].")
        reader.check_keys(SCENARIO_KEYS)
        kind = reader.string("kind")
        if kind not in SCENARIO_KINDS:
            reader.fail("kind", f"expected one of {SCENARIO_KINDS}, found {kind!r}")
        params = entry.get("params", {})
        if not isinstance(params, dict):
            reader.fail("params", "expected a table")
        overrides = entry.get("profile", {})
        if not isinstance(overrides, dict) or not all(isinstance(v, dict) for v in overrides.values()):
            reader.fail("profile", "expected [scenario.profile.<name>] tables of params")
        scenarios.append(
            Scenario(
                name=reader.string("name"),
                kind=kind,
                devices=reader.positive_int("devices"),
                timeout_s=float(reader.positive_int("timeout_s")),
                params=params,
                alone=reader.boolean("alone", default=False),
            )
        )
    names = [s.name for s in scenarios]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise CaseDefinitionError(f"{path}: scenario names must be unique; repeated: {duplicates}")
    kinds = {s.kind for s in scenarios}
    if kinds != set(SCENARIO_KINDS):
        raise CaseDefinitionError(
            f"{path}: a case needs at least one healthy control and one failure scenario; found only {sorted(kinds)}"
        )
    return tuple(scenarios)


def load_profiles(case: _Reader, scenarios_path: Path, scenarios: tuple[Scenario, ...]) -> dict[str, Profile]:
    """The profiles ``case.toml`` declares, with the scale parameters ``grader/scenarios.toml``
    gives each; a profile one file names and the other does not is refused."""
    declared = case.data.get("profiles", {})
    if not isinstance(declared, dict):
        case.fail("profiles", "expected a table of [profiles.<name>] tables")
    data = _read_toml(scenarios_path)
    private = data.get("profile", {})
    if not isinstance(private, dict):
        raise CaseDefinitionError(f"{scenarios_path}: profile: expected [profile.<name>] tables")
    profiles: dict[str, Profile] = {}
    for name, table in declared.items():
        where = f"profiles.{name}"
        if name == DEFAULT_PROFILE or not PROFILE_NAME_RE.match(name):
            case.fail(where, f"a profile name is lowercase letters, digits and '-', and not {DEFAULT_PROFILE!r}")
        if not isinstance(table, dict):
            case.fail(where, "expected a table")
        unknown = sorted(set(table) - PROFILE_KEYS)
        if unknown:
            case.fail(f"{where}.{unknown[0]}", f"unknown key; valid keys here: {', '.join(sorted(PROFILE_KEYS))}")
        summary = case.string(f"{where}.summary").strip()
        if not summary:
            case.fail(f"{where}.summary", "say what the profile scales (model, sequence, updates)")
        accelerator = case.string(f"{where}.accelerator", default="cpu")
        if accelerator not in PROFILE_ACCELERATORS:
            case.fail(f"{where}.accelerator", f"expected one of {PROFILE_ACCELERATORS}, found {accelerator!r}")
        limit = case.positive_int(f"{where}.artifact_limit_mb") if "artifact_limit_mb" in table else None
        params, per_scenario = _profile_params(scenarios_path, private.get(name, {}), data, name, scenarios)
        if not params and not per_scenario:
            raise CaseDefinitionError(
                f"{scenarios_path}: profile {name!r} (declared in case.toml) changes no scenario; give it "
                f"[profile.{name}.params] or [scenario.profile.{name}] tables"
            )
        profiles[name] = Profile(
            name=name,
            summary=summary,
            accelerator=accelerator,
            check_command=case.string(f"{where}.check_command", default=""),
            artifact_limit_mb=limit,
            params=params,
            scenario_params=per_scenario,
        )
    named = set(private) | {p for entry in data.get("scenario", []) for p in entry.get("profile", {})}
    undeclared = sorted(named - set(profiles))
    if undeclared:
        raise CaseDefinitionError(
            f"{scenarios_path}: profile {undeclared[0]!r} is not declared in case.toml; add [profiles.{undeclared[0]}] "
            "there (summary, accelerator) or remove its tables here"
        )
    return profiles


def _profile_params(
    path: Path, table: Any, data: Mapping[str, Any], name: str, scenarios: tuple[Scenario, ...]
) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    if not isinstance(table, dict) or set(table) - {"params"} or not isinstance(table.get("params", {}), dict):
        raise CaseDefinitionError(f"{path}: profile.{name}: expected one table, [profile.{name}.params]")
    per_scenario: dict[str, dict[str, Any]] = {}
    for scenario, entry in zip(scenarios, data.get("scenario", []), strict=True):
        value = entry.get("profile", {}).get(name)
        if value is None:
            continue
        if not isinstance(value, dict):
            raise CaseDefinitionError(f"{path}: scenario {scenario.name!r}: profile.{name}: expected a table of params")
        per_scenario[scenario.name] = value
    return dict(table.get("params", {})), per_scenario


def _check_folders(root: Path) -> None:
    workspace = root / "workspace"
    if not workspace.is_dir() or not any(workspace.iterdir()):
        raise CaseDefinitionError(f"{root}: expected a non-empty workspace/ folder (what the agent sees)")
    grader = root / "grader"
    for required in (SCENARIOS_FILE, REFERENCE_PATCH):
        if not (grader / required).is_file():
            raise CaseDefinitionError(f"{root}: expected grader/{required}; see docs/case-authoring.md")


def _check_kit(root: Path, kit: str) -> None:
    folder = (root / "grader" / kit).resolve()
    grader = (root / "grader").resolve()
    if grader not in folder.parents or not folder.is_dir():
        raise CaseDefinitionError(
            f"{root}: grader.kit {kit!r} must name a folder inside grader/ (the run phase's files, mounted at /kit)"
        )


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except FileNotFoundError:
        raise CaseDefinitionError(f"{path}: file not found; see docs/case-authoring.md") from None
    except tomllib.TOMLDecodeError as exc:
        raise CaseDefinitionError(f"{path}: not valid TOML: {exc}") from None


class _Reader:
    """Typed access to dotted keys of a TOML table, failing with the file and key named."""

    _MISSING = object()

    def __init__(self, path: Path, data: Mapping[str, Any], prefix: str = "") -> None:
        self.path, self.data, self.prefix = path, data, prefix

    def fail(self, key: str, message: str) -> NoReturn:
        raise CaseDefinitionError(f"{self.path}: {self.prefix}{key}: {message}")

    def check_keys(self, schema: Mapping[str, frozenset[str] | None]) -> None:
        """Refuse any key the schema does not know, naming the nearest valid one: a misspelt
        optional key would otherwise silently switch a feature off."""
        for table, allowed in schema.items():
            node = self.data if not table else self.data.get(table, {})
            if allowed is None or not isinstance(node, Mapping):
                continue
            for key in node:
                if key in allowed:
                    continue
                where = f"{table}.{key}" if table else key
                near = difflib.get_close_matches(key, sorted(allowed), n=1, cutoff=0.6)
                hint = f"did you mean {near[0]!r}? " if near else ""
                self.fail(where, f"unknown key; {hint}valid keys here: {', '.join(sorted(allowed))}")

    def _get(self, key: str, default: object) -> Any:
        node: Any = self.data
        for part in key.split("."):
            if not isinstance(node, Mapping) or part not in node:
                if default is self._MISSING:
                    self.fail(key, "missing")
                return default
            node = node[part]
        return node

    def string(self, key: str, default: object = _MISSING) -> str:
        value = self._get(key, default)
        if not isinstance(value, str):
            self.fail(key, f"expected a string, found {type(value).__name__}")
        return value

    def strings(self, key: str, default: object = _MISSING) -> list[str]:
        value = self._get(key, default)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            self.fail(key, "expected a list of strings")
        return cast(list[str], value)

    def boolean(self, key: str, default: object = _MISSING) -> bool:
        value = self._get(key, default)
        if not isinstance(value, bool):
            self.fail(key, f"expected true or false, found {value!r}")
        return value

    def positive_int(self, key: str, default: object = _MISSING) -> int:
        value = self._get(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            self.fail(key, f"expected a positive integer, found {value!r}")
        return value

    def table(self, key: str) -> dict[str, Any]:
        value = self._get(key, self._MISSING)
        if not isinstance(value, dict):
            self.fail(key, "expected a table")
        return cast(dict[str, Any], value)
