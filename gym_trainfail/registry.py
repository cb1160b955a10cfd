"""The case registry: in-tree cases and cases from other packages, by id.

Third-party packages register cases through the entry-point group ``gym_trainfail.cases``.
An entry point loads to a folder path (``str`` or ``Path``), a list of them, or a callable
returning either. Every case is validated when it is registered; a broken one is refused with
the reason, and the others still load.

Importing the package registers every case's *id* with Gymnasium from its ``case.toml`` alone
(:func:`register_ids`): a case's rubric is megabytes of TOML and thousands of regular expressions, so
validating all of them at import cost every process (each CLI call, batch worker or spawned helper)
seconds for cases it never uses. :func:`get_case` then validates only the case asked for; the full
:func:`default_registry` (every case validated, the refused ones with their reasons) is built on first use.
"""

from __future__ import annotations

import difflib
import functools
import logging
import tomllib
from collections.abc import Iterable, Iterator
from importlib.metadata import entry_points
from pathlib import Path

import gymnasium

from gym_trainfail.cases import CASE_ID_RE, CaseSpec, load_case
from gym_trainfail.errors import CaseDefinitionError, UnknownCaseError
from gym_trainfail.paths import builtin_cases_dir

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "gym_trainfail.cases"
ENV_ENTRY_POINT = "gym_trainfail.env:TrainFailEnv"


class Registry:
    """Cases by id. ``refused`` keeps the cases that failed validation, with the reason."""

    def __init__(self) -> None:
        self._cases: dict[str, CaseSpec] = {}
        self.refused: dict[str, str] = {}

    def register(self, folder: Path) -> CaseSpec:
        """Validate the case in ``folder`` and register it (also as a Gymnasium id)."""
        case = load_case(folder)
        existing = self._cases.get(case.id)
        if existing is not None and existing.root != case.root:
            raise CaseDefinitionError(
                f"{folder}: id {case.id} is already registered from {existing.root}; "
                "a registered version is frozen, give changed behaviour a new -vN"
            )
        self._cases[case.id] = case
        _register_with_gymnasium(case.id)
        return case

    def register_quietly(self, folder: Path) -> CaseSpec | None:
        """Register ``folder``; on a definition error, record it in :attr:`refused` and log it."""
        try:
            return self.register(folder)
        except CaseDefinitionError as exc:
            self.refused[str(folder)] = str(exc)
            log.warning("case refused: %s", exc)
            return None

    def get(self, case_id: str) -> CaseSpec:
        """The case registered as ``case_id``; unknown ids get the near names suggested."""
        try:
            return self._cases[case_id]
        except KeyError:
            pass
        close = difflib.get_close_matches(case_id, list(self._cases), n=3, cutoff=0.5)
        hint = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        known = ", ".join(sorted(self._cases)) or "none"
        raise UnknownCaseError(f"no case registered as {case_id!r}.{hint} Registered: {known}.")

    def ids(self) -> list[str]:
        """Registered ids, sorted."""
        return sorted(self._cases)

    def __iter__(self) -> Iterator[CaseSpec]:
        return iter(self._cases[i] for i in self.ids())

    def __len__(self) -> int:
        return len(self._cases)

    def discover(self) -> None:
        """Register the in-tree cases and every ``gym_trainfail.cases`` entry point."""
        for folder in _discovered_folders(self.refused):
            self.register_quietly(folder)


def _discovered_folders(refused: dict[str, str]) -> list[Path]:
    """The in-tree case folders, then every ``gym_trainfail.cases`` entry point's; a plugin that fails to
    load is recorded in ``refused`` (and logged) and the others are kept."""
    folders = case_folders(builtin_cases_dir())
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            folders.extend(_folders_from_entry_point(ep.load()))
        except Exception as exc:  # a broken plugin must not take the in-tree cases down
            refused[f"entry point {ep.name}"] = f"{ep.value}: {type(exc).__name__}: {exc}"
            log.warning("case entry point %s refused: %s", ep.name, exc)
    return folders


def case_folders(parent: Path) -> list[Path]:
    """Sub-folders of ``parent`` that hold a ``case.toml``."""
    if not parent.is_dir():
        return []
    return sorted(p for p in parent.iterdir() if (p / "case.toml").is_file())


def _folders_from_entry_point(value: object) -> list[Path]:
    if callable(value):
        value = value()
    if isinstance(value, str | Path):
        value = [value]
    if not isinstance(value, Iterable):
        raise CaseDefinitionError(f"expected a folder path or a list of them, found {type(value).__name__}")
    folders = []
    for item in value:
        if not isinstance(item, str | Path):
            raise CaseDefinitionError(f"expected a folder path, found {item!r}")
        path = Path(item)
        folders.extend(case_folders(path) if not (path / "case.toml").is_file() else [path])
    return folders


def _register_with_gymnasium(case_id: str) -> None:
    if case_id in gymnasium.registry:
        return
    gymnasium.register(id=case_id, entry_point=ENV_ENTRY_POINT, kwargs={"case_id": case_id})


@functools.cache
def default_registry() -> Registry:
    """The process-wide registry, discovered on first use (tests build their own)."""
    registry = Registry()
    registry.discover()
    return registry


@functools.cache
def _declared_folders() -> dict[str, tuple[Path, ...]]:
    """The discovered folders by the id their ``case.toml`` declares, read without validating the case; a
    folder whose ``case.toml`` cannot be read or names no valid id is left to the full registry to refuse."""
    found: dict[str, tuple[Path, ...]] = {}
    for folder in _discovered_folders({}):
        try:
            case_id = tomllib.loads((folder / "case.toml").read_text(encoding="utf-8")).get("id")
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            continue
        if isinstance(case_id, str) and CASE_ID_RE.match(case_id):
            found[case_id] = (*found.get(case_id, ()), folder)
    return found


def register_ids() -> None:
    """Register every discovered case's id with Gymnasium (what importing the package does); a case is
    validated when it is made (:func:`get_case`)."""
    for case_id in _declared_folders():
        _register_with_gymnasium(case_id)


@functools.cache
def _load_declared(folder: Path) -> CaseSpec:
    return load_case(folder)


def get_case(case_id: str) -> CaseSpec:
    """The registered case ``case_id``. Until the full registry is built, an id that exactly one discovered
    folder declares loads and validates that case alone (a broken one raises its
    :class:`~gym_trainfail.errors.CaseDefinitionError`); any other id goes through
    ``default_registry().get(case_id)`` (unknown ids get the near names suggested)."""
    if default_registry.cache_info().currsize == 0:
        folders = _declared_folders().get(case_id, ())
        if len(folders) == 1:
            return _load_declared(folders[0])
    return default_registry().get(case_id)


def resolve_case(id_or_folder: str) -> CaseSpec:
    """A registered case by id, or the case in a folder (for authors working on a new one)."""
    folder = Path(id_or_folder)
    if (folder / "case.toml").is_file():
        return load_case(folder)
    return get_case(id_or_folder)
