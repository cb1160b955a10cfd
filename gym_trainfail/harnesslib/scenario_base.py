"""A case's scenario type: the frozen request, parsed once, read by both phases.

A case's params (topology, training settings, inputs, tolerances) each have a default: the
defaults are the base scenario, and a scenario's ``[scenario.params]`` table
(``grader/scenarios.toml``) overrides them by name. An unknown param is refused, so a misspelt
key never silently leaves a default in place, and so is a value of another type than its
default's. Nothing here is private: the run phase reads the same requests. Standard library only.

The base scenario is data: ``grader/kit/params.toml``, one key per param (its comment says what
it is), read by :func:`params_base`; the case's ``Scenario`` adds only what is computed (its
checks and derived quantities)::

    # grader/kit/params.toml
    processes = 2    # ranks the launcher starts
    lr = 0.05

    @dataclass(frozen=True)
    class Scenario(params_base(Path(__file__).with_name("params.toml"))):
        def validate(self) -> None:
            if self.processes != self.devices:
                raise ValueError(...)

(A subclass of :class:`ScenarioBase` that declares its fields as dataclass fields works the same.)
"""

from __future__ import annotations

import copy
import functools
import json
import tomllib
from dataclasses import dataclass, field, fields, make_dataclass
from pathlib import Path
from typing import Any, ClassVar, Self

if __package__:  # imported as part of the package
    from .protocol import NAME_RE
else:  # imported from /harnesslib by a case's kit or judge
    from protocol import NAME_RE  # type: ignore[no-redef,import-not-found,unused-ignore]

#: Request keys that are not params.
REQUEST_FIELDS = ("name", "kind", "devices", "backend")


@dataclass(frozen=True)
class ScenarioBase:
    """The request fields every scenario has; subclasses add the case's params (with defaults)."""

    #: The type of each param declared by :func:`params_base` (a request's value must fit it).
    PARAM_TYPES: ClassVar[dict[str, type]] = {}

    name: str
    kind: str
    devices: int
    #: ``gloo`` on CPU ranks, ``nccl`` when the grader was given GPUs.
    backend: str = "gloo"
    #: The most one launch of the pipeline may run before it is stopped.
    run_timeout_s: float = 540.0

    def __post_init__(self) -> None:
        if not NAME_RE.match(self.name):
            raise ValueError(f"scenario name {self.name!r} is not a plain file name")
        if self.devices < 1:
            raise ValueError(f"scenario {self.name!r} holds {self.devices} devices")
        self.validate()

    def validate(self) -> None:
        """Refuse a scenario that cannot ask its question (raise ``ValueError``); override."""

    @classmethod
    def from_request(cls, raw: dict[str, Any]) -> Self:
        """Build from ``{"name", "kind", "devices", "backend", "params": {...}}``."""
        params = raw.get("params", {})
        if not isinstance(params, dict):
            raise ValueError("scenario params must be a table")
        known = {f.name for f in fields(cls)} - set(REQUEST_FIELDS)
        unknown = sorted(set(params) - known)
        if unknown:
            raise ValueError(f"unknown scenario params {unknown}; {cls.__name__} has: {', '.join(sorted(known))}")
        for key, value in params.items():
            want = cls.PARAM_TYPES.get(key)
            if want is not None and not _fits(value, want):
                raise ValueError(f"scenario param {key} = {value!r}: expected {_ACCEPTED[want][1]}, as its default")
        return cls(
            name=str(raw["name"]),
            kind=str(raw["kind"]),
            devices=int(raw["devices"]),
            backend=str(raw.get("backend", "gloo")),
            **params,
        )

    @classmethod
    def from_json(cls, path: str | Path) -> Self:
        """Build from a file holding one request (``/io/scenario.json`` of an oracle run)."""
        return cls.from_request(json.loads(Path(path).read_text(encoding="utf-8")))


def size_limit(values: int, *, bytes_per_value: int = 8, floor: int = 16 << 20) -> int:
    """A bound on a file that holds ``values`` numbers: ``bytes_per_value`` each (float32 with room
    for the container's overhead by default), and never under ``floor``."""
    return max(floor, bytes_per_value * values)


#: What a value of each param type may be given as (a TOML array or JSON list for a tuple).
#: Per param type (its default's): the value types a scenario may give it, and how an error names it.
_ACCEPTED: dict[type, tuple[tuple[type, ...], str]] = {
    bool: ((bool,), "a boolean"),
    int: ((int,), "an integer"),
    float: ((int, float), "a number"),
    str: ((str,), "a string"),
    tuple: ((list, tuple), "an array"),
    dict: ((dict,), "a table"),
}


def _fits(value: Any, want: type) -> bool:
    """``value`` is one of the types ``want`` accepts (a boolean only where ``want`` is one: in
    Python a boolean is also an integer)."""
    return isinstance(value, _ACCEPTED[want][0]) and (want is bool or not isinstance(value, bool))


def _param_type(key: str, value: Any) -> type:
    for kind in (bool, int, float, str, dict):
        if isinstance(value, kind):
            return kind
    if isinstance(value, list):
        return tuple
    raise ValueError(f"param {key}: a TOML value of type {type(value).__name__} cannot be a scenario param")


def params_base(path: str | Path, name: str = "Params") -> type[ScenarioBase]:
    """A :class:`ScenarioBase` subclass whose params are the keys of the TOML file at ``path``,
    each defaulting to its value there (the base scenario) and typed by it: a boolean, integer,
    number (an integer is accepted), string, array (kept as a tuple) or table; ``run_timeout_s``
    changes the launch limit's default. Subclass the result with
    ``@dataclass(frozen=True)`` to add ``validate`` and derived properties."""
    path = Path(path)
    try:
        table = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as err:
        raise ValueError(f"{path}: cannot read the base scenario: {err}") from err
    specs: list[tuple[str, Any, Any]] = []
    types: dict[str, type] = {}
    for key, value in table.items():
        if key in REQUEST_FIELDS:
            raise ValueError(f"{path}: {key} is a request field, not a param")
        kind = _param_type(key, value)
        types[key] = kind
        if kind is dict:
            default = field(default_factory=functools.partial(copy.deepcopy, value))
        elif kind is tuple:
            default = field(default=tuple(value))
        else:
            default = field(default=value)
        specs.append((key, kind, default))
    namespace = {"__module__": __name__, "PARAM_TYPES": {**ScenarioBase.PARAM_TYPES, **types}}
    base: type[ScenarioBase] = make_dataclass(name, specs, bases=(ScenarioBase,), frozen=True, namespace=namespace)
    return base
