"""Case definitions: a folder with ``case.toml``, ``workspace/`` and a private ``grader/``.

Loading validates everything a broken case could get wrong and raises
:class:`~gym_trainfail.errors.CaseDefinitionError` naming the file, the field and what to do.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NoReturn, cast

from gym_trainfail.errors import CaseDefinitionError
from gym_trainfail.hashing import tree_digest

#: ``Namespace/Name-vN``, the Gymnasium id shape.
CASE_ID_RE = re.compile(r"^(?P<namespace>[A-Za-z][A-Za-z0-9_]*)/(?P<name>[A-Za-z][A-Za-z0-9_]*)-v(?P<version>\d+)$")

#: Words that would tell the agent there is something to find. Prompts must be neutral.
BUG_VOCABULARY = re.compile(
    r"\b(bugs?|buggy|fix\w*|broken|wrong\w*|incorrect\w*|errors?|erroneous|faults?|faulty|defect\w*|"
    r"mistakes?|regressions?|issues?|problems?|flaw\w*|fail\w*|glitch\w*|culprit)\b",
    re.IGNORECASE,
)

ScenarioKind = Literal["healthy", "failure"]
SCENARIO_KINDS: tuple[ScenarioKind, ...] = ("healthy", "failure")
SCENARIOS_FILE = "scenarios.toml"
REFERENCE_PATCH = "reference.patch"
WRONG_REPAIRS_DIR = "wrong_repairs"


@dataclass(frozen=True)
class Scenario:
    """One frozen grading scenario (private to the grader)."""

    name: str
    kind: ScenarioKind
    devices: int
    timeout_s: float
    params: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Topology:
    """How the case's pipeline is laid out across devices."""

    world_size: int
    tensor_parallel: int
    devices_per_job: int


@dataclass(frozen=True)
class Budgets:
    """Per-episode limits; exhausting any of them truncates the episode."""

    steps: int
    wall_seconds: float
    device_seconds: float
    tokens: int


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
    grader_command: tuple[str, ...]
    budgets: Budgets
    workspace_exclude: tuple[str, ...]
    scenarios: tuple[Scenario, ...]
    #: How the team checks a change (README's run command); scripted agents use it with run_job.
    check_command: str = ""
    #: Optional: computes a scenario's reference without any revision (cached per scenario).
    oracle_command: tuple[str, ...] = ()
    #: Optional: grades several scenarios of one topology in one sandbox and one launch.
    group_command: tuple[str, ...] = ()

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
    def name(self) -> str:
        """The id without namespace and version (``DDPTokenAverage``)."""
        match = CASE_ID_RE.match(self.id)
        assert match is not None  # validated at load time
        return match["name"]

    def content_hash(self) -> str:
        """Digest of everything that defines the case's behaviour (case.toml, workspace, grader)."""
        return tree_digest(self.root, exclude=("__pycache__", "*.pyc"))

    def grader_hash(self) -> str:
        """Digest of what decides a verdict: case.toml and the grader folder."""
        return tree_digest(self.root, include=("case.toml", "grader"), exclude=("__pycache__", "*.pyc"))

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
    command = reader.strings("grader.command")
    if not command:
        reader.fail(
            "grader.command",
            "expected the command that runs the harness, e.g. ['python', '/grader/harness.py']",
        )
    _check_folders(root)
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
        grader_command=tuple(command),
        budgets=Budgets(
            steps=reader.positive_int("budgets.steps"),
            wall_seconds=float(reader.positive_int("budgets.wall_seconds")),
            device_seconds=float(reader.positive_int("budgets.device_seconds")),
            tokens=reader.positive_int("budgets.tokens"),
        ),
        workspace_exclude=tuple(reader.strings("workspace.exclude", default=[])),
        check_command=reader.string("workspace.check_command", default=""),
        oracle_command=tuple(reader.strings("grader.oracle_command", default=[])),
        group_command=tuple(reader.strings("grader.group_command", default=[])),
        scenarios=load_scenarios(root / "grader" / SCENARIOS_FILE),
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
        kind = reader.string("kind")
        if kind not in SCENARIO_KINDS:
            reader.fail("kind", f"expected one of {SCENARIO_KINDS}, found {kind!r}")
        params = entry.get("params", {})
        if not isinstance(params, dict):
            reader.fail("params", "expected a table")
        scenarios.append(
            Scenario(
                name=reader.string("name"),
                kind=kind,
                devices=reader.positive_int("devices"),
                timeout_s=float(reader.positive_int("timeout_s")),
                params=params,
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


def _check_folders(root: Path) -> None:
    workspace = root / "workspace"
    if not workspace.is_dir() or not any(workspace.iterdir()):
        raise CaseDefinitionError(f"{root}: expected a non-empty workspace/ folder (what the agent sees)")
    grader = root / "grader"
    for required in (SCENARIOS_FILE, REFERENCE_PATCH):
        if not (grader / required).is_file():
            raise CaseDefinitionError(f"{root}: expected grader/{required}; see docs/case-authoring.md")


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
