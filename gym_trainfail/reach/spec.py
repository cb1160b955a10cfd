"""A case's private TrainCheck reach spec: ``grader/diagnosis/traincheck/reach.toml``.

It lives beside the diagnosis rubric because, like the rubric, it measures how an agent could
get to the failure and never decides a verdict: the grader hash and the admission record's case
digest leave ``grader/diagnosis/`` out, so editing a reach spec voids no receipt or admission.

It says how TrainCheck's documented workflow is run on the case's own pipeline: which entry
script is instrumented, which model variable is tracked, and the launch command of each of the
three runs (a *trusted* run in the configuration the workspace offers as behaving, the
*failing* configuration, and a second *healthy* run that counts false alarms). Variants change
flags (relation types, selective collection, more steps) and each gets its own result.

Schema (every key is checked; a broken spec is refused with the file and key named)::

    entry = "sft/train.py"            # the entry script, relative to the workspace
    models_to_track = ["model"]       # --models-to-track (the variable the model is assigned to;
                                      # [] traces API calls only)
    tracker = "subclass"              # --model-tracker-style: proxy | subclass | sampler
    modules = ["torch"]               # -t (modules whose APIs are traced)
    setup = "python scripts/x.py"     # optional: run once in the workspace before collecting
    files = ["equal_data.py"]         # optional: files beside the spec, copied to .reach/
    mechanism_terms = ["cross_entropy"]   # optional: tensors/APIs the mechanism names
    infer_args = []                   # optional: extra traincheck-infer arguments
    timeout_s = 900                   # optional: per collection, inference or check

    [run.trusted]                     # also run.failing and run.healthy
    devices = 1
    command = "torchrun --standalone --nproc_per_node 1 {entry} --config c.yaml"
    stop_after_s = 60                 # optional: a run that never finishes (a hang) is stopped
                                      # after this long and the trace it wrote by then is kept

    [[variant]]                       # optional; "default" is always run first
    name = "consistency-only"
    note = "why this variant"
    infer_args = ["--enable-relation", "ConsistencyRelation"]
    collect_args = []                 # extra traincheck-collect arguments (all runs)
    selective = false                 # collect failing/healthy with --invariants (selective)
    run = { failing = { command = "…" } }   # per-run command or devices overrides

``{entry}`` in a command stands for the instrumented copy of the entry script (the workflow
writes it); commands run from the workspace root with ``PYTHONPATH`` set to it.
"""

from __future__ import annotations

import difflib
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NoReturn

from gym_trainfail.errors import CaseDefinitionError
from gym_trainfail.hashing import bytes_digest

#: Where a case keeps its reach spec, under ``grader/`` (inside the diagnosis folder).
SPEC_DIR = "diagnosis/traincheck"
SPEC_FILE = "reach.toml"
ROLES = ("trusted", "failing", "healthy")
TRACKERS = ("proxy", "subclass", "sampler")
MAX_TIMEOUT_S = 3600
MAX_DEVICES = 16
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,39}$")
#: Module and variable names given to TrainCheck on its command line.
IDENT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]{0,99}$")
#: Relative paths inside the workspace or the spec folder (no ``..``, no absolute paths).
REL_PATH_RE = re.compile(r"^(?!/)(?!.*(?:^|/)\.\.(?:/|$))[A-Za-z0-9_./-]{1,200}$")
#: Extra TrainCheck arguments: flags and plain words only (they become argv entries, never shell).
ARG_RE = re.compile(r"^[A-Za-z0-9_.=:/-]{1,100}$")

KEYS: Mapping[str, frozenset[str]] = {
    "": frozenset(
        {
            "entry",
            "models_to_track",
            "tracker",
            "modules",
            "setup",
            "files",
            "mechanism_terms",
            "infer_args",
            "timeout_s",
            "run",
            "variant",
        }
    ),  # fmt: skip
    "run": frozenset(ROLES),
    "role": frozenset({"devices", "command", "stop_after_s"}),
    "variant": frozenset({"name", "note", "infer_args", "collect_args", "selective", "run"}),
}


@dataclass(frozen=True)
class RunSpec:
    """One traced run: how many devices it leases and its launch command; ``stop_after_s`` for a run
    that never finishes by itself (a hang): it is stopped then, and the trace it wrote is kept."""

    devices: int
    command: str
    stop_after_s: int | None = None

    def launch(self, entry: str) -> str:
        """The command with ``{entry}`` replaced by the instrumented copy's path."""
        return self.command.replace("{entry}", entry)


@dataclass(frozen=True)
class Variant:
    """One way of running the workflow; ``default`` is the spec's own settings."""

    name: str
    note: str = ""
    infer_args: tuple[str, ...] = ()
    collect_args: tuple[str, ...] = ()
    selective: bool = False
    runs: Mapping[str, RunSpec] = field(default_factory=dict)

    def flags(self) -> dict[str, Any]:
        """What this variant changes, for the record."""
        return {
            "infer_args": list(self.infer_args),
            "collect_args": list(self.collect_args),
            "selective": self.selective,
        }


@dataclass(frozen=True)
class ReachSpec:
    """A parsed, validated reach spec."""

    path: Path
    entry: str
    models_to_track: tuple[str, ...]
    tracker: str
    modules: tuple[str, ...]
    runs: Mapping[str, RunSpec]
    setup: str = ""
    files: tuple[str, ...] = ()
    mechanism_terms: tuple[str, ...] = ()
    infer_args: tuple[str, ...] = ()
    timeout_s: int = 900
    variants: tuple[Variant, ...] = ()

    @property
    def folder(self) -> Path:
        return self.path.parent

    #: Digest of the spec and the files it copies into the workspace, taken when it was loaded
    #: (a measurement is keyed by what it ran, even if the files change meanwhile).
    content_digest: str = ""

    def digest(self) -> str:
        """Digest of the spec and the files it copies into the workspace, as loaded."""
        return self.content_digest

    def variant(self, name: str) -> Variant:
        """The variant called ``name``; unknown names list the known ones."""
        for variant in self.variants:
            if variant.name == name:
                return variant
        raise CaseDefinitionError(f"{self.path}: no variant {name!r}; known: {[v.name for v in self.variants]}")

    def runs_of(self, variant: Variant) -> dict[str, RunSpec]:
        """Every role's run for ``variant`` (its overrides laid over the spec's)."""
        return {role: variant.runs.get(role, self.runs[role]) for role in ROLES}

    def infer_args_of(self, variant: Variant) -> tuple[str, ...]:
        return (*self.infer_args, *variant.infer_args)


def spec_path(grader_dir: Path) -> Path:
    """Where a case's reach spec lives."""
    return grader_dir / SPEC_DIR / SPEC_FILE


def load_spec(path: Path) -> ReachSpec:
    """Parse and validate ``path``; raises :class:`CaseDefinitionError` that names what to fix."""
    try:
        with path.open("rb") as handle:
            data = tomllib.load(handle)
    except FileNotFoundError:
        raise CaseDefinitionError(
            f"{path}: no TrainCheck reach spec; write one (schema: gym_trainfail/reach/spec.py) to measure reach"
        ) from None
    except tomllib.TOMLDecodeError as exc:
        raise CaseDefinitionError(f"{path}: not valid TOML: {exc}") from None
    return _Check(path).spec(data)


class _Check:
    def __init__(self, path: Path) -> None:
        self.path = path

    def fail(self, where: str, message: str) -> NoReturn:
        raise CaseDefinitionError(f"{self.path}: {where}: {message}")

    def keys(self, node: Mapping[str, Any], allowed: frozenset[str], where: str) -> None:
        for key in node:
            if key not in allowed:
                near = difflib.get_close_matches(key, sorted(allowed), n=1, cutoff=0.6)
                hint = f"did you mean {near[0]!r}? " if near else ""
                self.fail(f"{where}{key}", f"unknown key; {hint}valid keys here: {', '.join(sorted(allowed))}")

    def string(self, node: Mapping[str, Any], key: str, where: str, *, default: str | None = None) -> str:
        value = node.get(key, default)
        if not isinstance(value, str) or (default is None and not value.strip()):
            self.fail(f"{where}{key}", f"expected a non-empty string, found {value!r}")
        if len(value) > 4000:
            self.fail(f"{where}{key}", "longer than 4000 characters")
        return value

    def words(self, node: Mapping[str, Any], key: str, where: str, pattern: re.Pattern[str]) -> tuple[str, ...]:
        value = node.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            self.fail(f"{where}{key}", "expected a list of strings")
        for item in value:
            if not pattern.match(item):
                self.fail(f"{where}{key}", f"{item!r} does not match {pattern.pattern}")
        return tuple(value)

    def integer(self, node: Mapping[str, Any], key: str, where: str, low: int, high: int, default: int) -> int:
        value = node.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            self.fail(f"{where}{key}", f"expected an integer from {low} to {high}, found {value!r}")
        return value

    def run(self, node: Any, where: str, base: RunSpec | None = None) -> RunSpec:
        if not isinstance(node, Mapping):
            self.fail(where.rstrip("."), "expected a table with devices and command")
        self.keys(node, KEYS["role"], where)
        stop = base.stop_after_s if base is not None else None
        if "stop_after_s" in node:
            stop = self.integer(node, "stop_after_s", where, 1, MAX_TIMEOUT_S, 1)
        if base is None:
            command = self.string(node, "command", where)
            devices = self.integer(node, "devices", where, 1, MAX_DEVICES, 1)
            if "{entry}" not in command:
                self.fail(f"{where}command", "must contain {entry} (the instrumented entry script)")
            return RunSpec(devices, command, stop)
        command = self.string(node, "command", where, default=base.command) if "command" in node else base.command
        if "{entry}" not in command:
            self.fail(f"{where}command", "must contain {entry} (the instrumented entry script)")
        return RunSpec(self.integer(node, "devices", where, 1, MAX_DEVICES, base.devices), command, stop)

    def spec(self, data: Mapping[str, Any]) -> ReachSpec:
        self.keys(data, KEYS[""], "")
        entry = self.string(data, "entry", "")
        if not REL_PATH_RE.match(entry) or not entry.endswith(".py"):
            self.fail("entry", f"expected a relative path to a .py file in the workspace, found {entry!r}")
        tracker = data.get("tracker", "subclass")
        if tracker not in TRACKERS:
            self.fail("tracker", f"expected one of {', '.join(TRACKERS)}, found {tracker!r}")
        runs_node = data.get("run")
        if not isinstance(runs_node, Mapping):
            self.fail("run", f"missing: a table per run ({', '.join(ROLES)})")
        self.keys(runs_node, KEYS["run"], "run.")
        runs = {}
        for role in ROLES:
            if role not in runs_node:
                self.fail(f"run.{role}", "missing (every spec has a trusted, a failing and a healthy run)")
            runs[role] = self.run(runs_node[role], f"run.{role}.")
        files = self.words(data, "files", "", REL_PATH_RE)
        for name in files:
            if not (self.path.parent / name).is_file():
                self.fail("files", f"{name!r} is not a file in {self.path.parent}")
        if "models_to_track" not in data:
            self.fail("models_to_track", "missing: the model variables to track, or [] to trace API calls only")
        models = self.words(data, "models_to_track", "", IDENT_RE)
        spec = ReachSpec(
            path=self.path,
            entry=entry,
            models_to_track=models,
            tracker=str(tracker),
            modules=self.words(data, "modules", "", IDENT_RE) or ("torch",),
            runs=runs,
            setup=self.string(data, "setup", "", default="") if "setup" in data else "",
            files=files,
            mechanism_terms=self.words(data, "mechanism_terms", "", IDENT_RE),
            infer_args=self.words(data, "infer_args", "", ARG_RE),
            timeout_s=self.integer(data, "timeout_s", "", 10, MAX_TIMEOUT_S, 900),
        )
        variants = [Variant("default", "the spec's own settings: full collection, every relation type")]
        nodes = data.get("variant", [])
        if not isinstance(nodes, list):
            self.fail("variant", "expected an array of tables ([[variant]])")
        for i, node in enumerate(nodes):
            variants.append(self.variant(node, f"variant[{i}].", spec))
        names = [v.name for v in variants]
        if len(set(names)) != len(names):
            self.fail("variant", f"names must be unique (and not 'default'): {names}")
        parts = [self.path.read_bytes(), *((self.path.parent / name).read_bytes() for name in files)]
        return replace(spec, variants=tuple(variants), content_digest=bytes_digest(b"\0".join(parts)))

    def variant(self, node: Any, where: str, spec: ReachSpec) -> Variant:
        if not isinstance(node, Mapping):
            self.fail(where.rstrip("."), "expected a table")
        self.keys(node, KEYS["variant"], where)
        name = self.string(node, "name", where)
        if not NAME_RE.match(name):
            self.fail(f"{where}name", f"expected lower-case letters, digits and dashes, found {name!r}")
        selective = node.get("selective", False)
        if not isinstance(selective, bool):
            self.fail(f"{where}selective", f"expected true or false, found {selective!r}")
        runs_node = node.get("run", {})
        if not isinstance(runs_node, Mapping):
            self.fail(f"{where}run", "expected a table of run overrides")
        self.keys(runs_node, KEYS["run"], f"{where}run.")
        runs = {role: self.run(sub, f"{where}run.{role}.", spec.runs[role]) for role, sub in runs_node.items()}
        return Variant(
            name=name,
            note=self.string(node, "note", where, default=""),
            infer_args=self.words(node, "infer_args", where, ARG_RE),
            collect_args=self.words(node, "collect_args", where, ARG_RE),
            selective=selective,
            runs=runs,
        )
