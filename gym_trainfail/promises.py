"""A case's promise table: every dimension its workspace README promises the pipeline holds
across, split into value classes, each covered by scenarios (``grader/promises.toml``).

A README that says "any number of processes", "any accumulation, whether or not it divides the
batch count" or "resume at any step, any number of times" makes a promise; a grader that only
tries the shipped value lets a repair through that is right only there. The table names, for
each promise, the README words it rests on (found verbatim in the workspace), the shipped value,
and its *classes* ("divides / does not divide", "once / twice", "world = ep / world > ep"), each
with the scenarios that realise it. Qualification refuses a case whose table is missing, whose
README words are not in the workspace, a class of which no scenario covers, or a promise whose
only covered class is the shipped one; ``where`` lets it check that a scenario really is in the
class (its params hold those values). A promise only the GPU configuration can break (a tensor
left on the host, which gloo accepts and nccl refuses) is marked ``gpu`` and covered by the
scenarios of a ``cuda`` profile, which ``scripts/gpu-check.sh`` qualifies on a GPU host.

Schema (closed: an unknown key is refused with the nearest valid one)::

    [[promise]]
    name = "accumulation"                         # lowercase, digits, '-'
    dimension = "accumulation steps A, and whether A divides the batches per process"
    readme = "U = ceil(batches per process / A)"  # verbatim (whitespace, backticks and * ignored)
    shipped = "A = 2, which divides 32 batches"
    gpu = false                                   # optional
    [[promise.class]]
    name = "A divides the batches per process"
    shipped = true                                # the class the shipped configuration is in (at most one)
    scenarios = ["cosine-accum-2", "shipped-config"]
    where = { gradient_accumulation_steps = 2 }   # optional; dotted keys reach into nested params
    [[promise.class]]
    name = "A does not divide (a short last update)"
    scenarios = ["ragged-accum-3"]
"""

from __future__ import annotations

import difflib
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gym_trainfail.cases import DEFAULT_PROFILE, CaseSpec, Scenario
from gym_trainfail.hashing import walk_tree

PROMISES_FILE = "promises.toml"
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")
PROMISE_KEYS = frozenset({"name", "dimension", "readme", "shipped", "gpu", "class"})
CLASS_KEYS = frozenset({"name", "shipped", "scenarios", "where"})
#: Workspace files searched for a promise's README words: text a team documents its pipeline in.
DOC_SUFFIXES = (".md", ".rst", ".txt", ".yaml", ".yml", ".toml", ".json", ".cfg", ".ini")
MAX_DOC_BYTES = 1 << 20
MAX_TEXT = 600


@dataclass(frozen=True)
class PromiseClass:
    """One value class of a promise and the scenarios that cover it."""

    name: str
    scenarios: tuple[str, ...]
    shipped: bool = False
    where: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Promise:
    """One dimension the workspace README promises to hold across."""

    name: str
    dimension: str
    readme: str
    shipped: str
    classes: tuple[PromiseClass, ...]
    gpu: bool = False


class PromiseTableError(ValueError):
    """``grader/promises.toml`` is missing or malformed (the message says what to do)."""


def promises_path(case: CaseSpec) -> Path:
    return case.grader_dir / PROMISES_FILE


def load_promises(case: CaseSpec) -> tuple[Promise, ...]:
    """The case's promise table, validated for shape (coverage is :func:`promise_problems`'s)."""
    path = promises_path(case)
    if not path.is_file():
        raise PromiseTableError(
            f"{path}: missing; write the promise table: every dimension the workspace README promises to hold "
            "across (ranks and parallel sizes, accumulation, resumes, schedules, precisions, random streams, "
            "documented options), its value classes and the scenarios covering each (docs/case-authoring.md)"
        )
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise PromiseTableError(f"{path}: not valid TOML: {exc}") from None
    unknown = sorted(set(data) - {"promise"})
    if unknown:
        raise PromiseTableError(f"{path}: unknown top-level key {unknown[0]!r}; expected [[promise]] tables")
    entries = data.get("promise")
    if not isinstance(entries, list) or not entries:
        raise PromiseTableError(f"{path}: expected one or more [[promise]] tables")
    promises = tuple(_promise(path, i, entry) for i, entry in enumerate(entries))
    names = [p.name for p in promises]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise PromiseTableError(f"{path}: promise names must be unique; repeated: {repeated}")
    return promises


def _promise(path: Path, index: int, entry: Any) -> Promise:
    where = f"{path}: promise[{index}]"
    if not isinstance(entry, dict):
        raise PromiseTableError(f"{where}: expected a table")
    _closed(where, entry, PROMISE_KEYS)
    name = _name(where, entry.get("name"))
    where = f"{path}: promise {name!r}"
    classes = entry.get("class")
    if not isinstance(classes, list) or not classes:
        raise PromiseTableError(f"{where}: expected [[promise.class]] tables, one per value class")
    parsed = tuple(_class(where, i, c) for i, c in enumerate(classes))
    names = [c.name for c in parsed]
    if len(set(names)) != len(names):
        raise PromiseTableError(f"{where}: class names must be unique")
    gpu = entry.get("gpu", False)
    if not isinstance(gpu, bool):
        raise PromiseTableError(f"{where}: gpu: expected true or false")
    return Promise(
        name=name,
        dimension=_text(where, "dimension", entry.get("dimension")),
        readme=_text(where, "readme", entry.get("readme")),
        shipped=_text(where, "shipped", entry.get("shipped")),
        classes=parsed,
        gpu=gpu,
    )


def _class(where: str, index: int, entry: Any) -> PromiseClass:
    if not isinstance(entry, dict):
        raise PromiseTableError(f"{where}: class[{index}]: expected a table")
    _closed(f"{where}: class[{index}]", entry, CLASS_KEYS)
    name = _text(f"{where}: class[{index}]", "name", entry.get("name"))
    scenarios = entry.get("scenarios", [])
    if not isinstance(scenarios, list) or not all(isinstance(s, str) for s in scenarios):
        raise PromiseTableError(f"{where}: class {name!r}: scenarios: expected a list of scenario names")
    shipped = entry.get("shipped", False)
    if not isinstance(shipped, bool):
        raise PromiseTableError(f"{where}: class {name!r}: shipped: expected true or false")
    condition = entry.get("where")
    if condition is not None and (not isinstance(condition, dict) or not condition):
        raise PromiseTableError(f"{where}: class {name!r}: where: expected a table of scenario params")
    return PromiseClass(name=name, scenarios=tuple(scenarios), shipped=shipped, where=condition)


def _closed(where: str, entry: Mapping[str, Any], allowed: frozenset[str]) -> None:
    for key in entry:
        if key not in allowed:
            near = difflib.get_close_matches(key, sorted(allowed), n=1, cutoff=0.6)
            hint = f"did you mean {near[0]!r}? " if near else ""
            raise PromiseTableError(f"{where}: unknown key {key!r}; {hint}valid keys: {', '.join(sorted(allowed))}")


def _name(where: str, value: Any) -> str:
    if not isinstance(value, str) or not NAME_RE.match(value):
        raise PromiseTableError(f"{where}: name: expected lowercase letters, digits and '-', found {value!r}")
    return value


def _text(where: str, key: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_TEXT:
        raise PromiseTableError(f"{where}: {key}: expected a non-empty string of at most {MAX_TEXT} characters")
    return value.strip()


# -- coverage ------------------------------------------------------------------------------------


def _normalised(text: str) -> str:
    """Text as compared with a promise's README words: markup (backticks, asterisks) dropped,
    whitespace runs folded, case kept."""
    return " ".join(text.replace("`", "").replace("*", "").split())


def workspace_text(case: CaseSpec) -> str:
    """The workspace's documentation (README, configs, notes), normalised, one string."""
    parts = []
    for _, path, _ in walk_tree(case.workspace_dir):
        documentation = path.is_file() and not path.is_symlink() and path.suffix.lower() in DOC_SUFFIXES
        if documentation and path.stat().st_size <= MAX_DOC_BYTES:
            parts.append(_normalised(path.read_text(encoding="utf-8", errors="replace")))
    return "\n".join(parts)


def param_at(params: Mapping[str, Any], dotted: str) -> tuple[bool, Any]:
    """``(found, value)`` of a dotted key in a scenario's params."""
    node: Any = params
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return False, None
        node = node[part]
    return True, node


def cuda_profiles(case: CaseSpec) -> list[str]:
    """The case's profiles for GPU hosts (where ``gpu`` promises are covered)."""
    return [name for name, profile in case.profiles.items() if profile.accelerator == "cuda"]


def _scenarios_at(case: CaseSpec, profile: str) -> dict[str, Scenario]:
    """The case's scenarios as they run at ``profile`` (params resolved)."""
    if profile == case.profile:
        return {s.name: s for s in case.scenarios}
    base = case if case.profile == DEFAULT_PROFILE else None
    if base is None or profile not in case.profiles:
        return {}
    return {s.name: s for s in base.with_profile(profile).scenarios}


def promise_problems(case: CaseSpec, promises: Sequence[Promise]) -> list[str]:
    """Why the table does not cover the README: words not in the workspace, unknown scenarios,
    scenarios not in their class, uncovered classes, and promises covered only at the shipped
    value. Empty when every class is covered."""
    problems: list[str] = []
    text = workspace_text(case)
    gpu_profiles = cuda_profiles(case)
    for promise in promises:
        label = f"promise {promise.name!r}"
        if _normalised(promise.readme) not in text:
            problems.append(
                f"{label}: its README words {promise.readme[:120]!r} are not in the workspace; quote the README "
                "(or config) sentence that makes the promise"
            )
        if sum(c.shipped for c in promise.classes) > 1:
            problems.append(f"{label}: more than one class is marked shipped")
        if promise.gpu and not gpu_profiles:
            problems.append(
                f"{label} is GPU-only but the case declares no cuda profile to cover it; add one (case.toml "
                "[profiles.<name>] accelerator = 'cuda') or narrow the README"
            )
        profile = gpu_profiles[0] if promise.gpu and gpu_profiles else case.profile
        scenarios = _scenarios_at(case, profile)
        covered_off_shipped = False
        for cls in promise.classes:
            where = f"{label}, class {cls.name!r}"
            if not cls.scenarios:
                problems.append(f"{where}: uncovered; add a scenario in this class (or narrow the README)")
                continue
            missing = [s for s in cls.scenarios if s not in scenarios]
            if missing:
                problems.append(f"{where}: names scenarios the case does not have: {missing}")
                continue
            for name in cls.scenarios:
                problems.extend(_where_problems(where, scenarios[name], cls.where or {}))
            if not cls.shipped:
                covered_off_shipped = True
        if not covered_off_shipped:
            problems.append(
                f"{label}: covered only at its shipped value ({promise.shipped}); add a class away from it, with a "
                "scenario (a repair right only on the shipped configuration would pass)"
            )
    return problems


def _where_problems(where: str, scenario: Scenario, condition: Mapping[str, Any]) -> list[str]:
    problems = []
    for key, want in condition.items():
        found, value = param_at(scenario.params, key)
        if not found or value != want:
            shown = f"{value!r}" if found else "not set"
            problems.append(f"{where}: scenario {scenario.name!r} has {key} = {shown}, the class needs {want!r}")
    return problems


def check_promises(case: CaseSpec) -> tuple[tuple[Promise, ...], list[str]]:
    """The table and every problem with it (a missing or malformed table is one problem)."""
    try:
        promises = load_promises(case)
    except PromiseTableError as exc:
        return (), [str(exc)]
    return promises, promise_problems(case, promises)


# -- rendering -----------------------------------------------------------------------------------


def to_json(promises: Sequence[Promise]) -> list[dict[str, Any]]:
    """The table as an admission record keeps it."""
    return [
        {
            "name": p.name,
            "dimension": p.dimension,
            "readme": p.readme,
            "shipped": p.shipped,
            "gpu": p.gpu,
            "classes": [{"name": c.name, "shipped": c.shipped, "scenarios": list(c.scenarios)} for c in p.classes],
        }
        for p in promises
    ]


def markdown(promises: Sequence[Promise], case: CaseSpec | None = None) -> str:
    """The table as Markdown: one row per class."""
    gpu = ", ".join(cuda_profiles(case)) if case is not None else "cuda"
    rows = ["| promise | README says | class | scenarios |", "|---|---|---|---|"]
    for promise in promises:
        first = True
        for cls in promise.classes:
            head = f"`{promise.name}`" + (" (GPU only)" if promise.gpu else "") if first else ""
            says = promise.readme.replace("|", "\\|") if first else ""
            tag = " *(shipped)*" if cls.shipped else ""
            where = f" at profile {gpu}" if promise.gpu else ""
            cover = ", ".join(f"`{s}`" for s in cls.scenarios) + where if cls.scenarios else "**uncovered**"
            rows.append(f"| {head} | {says} | {cls.name}{tag} | {cover} |")
            first = False
    return "\n".join(rows)
