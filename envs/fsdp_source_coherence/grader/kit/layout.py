"""What the run phase hands the judge: scenario requests, artifact names and their limits.

Pure (standard library and `recipe.py` only): the run kit (`run.py`) and the trusted judge both
import it, so the two sides agree on names without sharing any other code. Nothing in here is
private.

Artifacts of scenario S, under `<out-dir>/S/` (all written by the run phase, so all
adversarial for the judge):

    probe/rank<r>.pt           the state probe's record of each rank
    final/model.safetensors    the pipeline's own product: its saved final weights
    job.log                    the last LOG_LIMIT_BYTES of the pipeline's log
    launch.json                how the launch ended (returncode, timed_out, started, ended)
    timings.json               seconds spent per stage (only used to split device time)
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import recipe

PROBE_DIR = "probe"
FINAL_DIR = "final"
WEIGHTS_FILE = "model.safetensors"
LOG_FILE = "job.log"
LAUNCH_FILE = "launch.json"
TIMINGS_FILE = "timings.json"

#: The most of the pipeline's log that is kept (its tail).
LOG_LIMIT_BYTES = 200_000
#: A probe record holds digests and per-row fingerprints, not tensors: about 1 MB.
RECORD_LIMIT_BYTES = 16 << 20
#: A trusted oracle record also holds the initial and final parameters (about 113 MB).
ORACLE_RECORD_LIMIT_BYTES = 256 << 20
#: The saved final weights: 14,067,712 float32 parameters are about 56 MB.
WEIGHTS_LIMIT_BYTES = 128 << 20
#: Small JSON files (launch.json, timings.json, scenario lists).
JSON_LIMIT_BYTES = 1 << 20

#: Scenario time when a request carries none (scenarios.toml gives every scenario 360 s).
DEFAULT_TIMEOUT_S = 360
#: Revisions of the base checkpoint a scenario can place in a cache (A = v1, B = v2).
SOURCE_NAMES = ("A", "B")
#: The optional `train` param: the training the run kit forces and the oracle follows, in place
#: of the defaults (recipe.STEPS, MICRO_BATCH_SIZE, SEQ_LEN); each a positive integer up to its bound.
TRAIN_LIMITS = {"steps": 1000, "micro_batch_size": 256, "seq_len": 2048}
#: torch 2.13 + gloo can abort in interpreter teardown after all work is done (FIELD-NOTES).
EXIT_ABORT_MARKERS = ("terminate called without an active exception", "SIGABRT", "Signal 6", "exited with code -6")


class RequestError(ValueError):
    """A scenario request that does not have the shape this case needs."""


@dataclass(frozen=True)
class Train:
    """The training a scenario runs: AdamW updates, per-rank micro-batch size, tokens per row.
    The defaults are the grader's own (kit/recipe.py); a profile may scale them."""

    steps: int = recipe.STEPS
    micro_batch_size: int = recipe.MICRO_BATCH_SIZE
    seq_len: int = recipe.SEQ_LEN


@dataclass(frozen=True)
class NodeCache:
    """A node-local cache that exists when the job starts: the revisions it holds and the one
    its refs/main points at."""

    snapshots: tuple[str, ...]
    main: str


@dataclass(frozen=True)
class Request:
    """One scenario as the host hands it over in /io/scenarios.json (params: scenarios.toml)."""

    name: str
    kind: str
    devices: int
    backend: str
    timeout_s: int
    mirror_main: str
    node_local: bool
    expect: str
    node_caches: dict[str, NodeCache] = field(default_factory=dict)
    train: Train = field(default_factory=Train)


def _source(value: Any, what: str) -> str:
    if value not in SOURCE_NAMES:
        raise RequestError(f"{what} must be one of {SOURCE_NAMES}, got {value!r}")
    return str(value)


def _node_cache(node: str, value: Any) -> NodeCache:
    """`"A"` (that revision only, main -> it) or `{snapshots = [...], main = "A"}`."""
    if not isinstance(node, str) or not node.startswith("node") or not node[4:].isdigit():
        raise RequestError(f"node cache names look like node0, got {node!r}")
    if isinstance(value, str):
        return NodeCache((_source(value, node),), value)
    if not isinstance(value, dict) or not isinstance(value.get("snapshots"), list):
        raise RequestError(f"node cache {node}: expected a revision or {{snapshots, main}}, got {value!r}")
    snapshots = tuple(_source(s, f"{node}.snapshots") for s in value["snapshots"])
    main = _source(value.get("main"), f"{node}.main")
    if main not in snapshots:
        raise RequestError(f"node cache {node}: main {main} is not among its snapshots {snapshots}")
    return NodeCache(snapshots, main)


def parse_train(value: Any, what: str = "train") -> Train:
    """`{steps, micro_batch_size, seq_len}`, any subset; the rest keep the grader's defaults."""
    if value is None:
        return Train()
    if not isinstance(value, dict):
        raise RequestError(f"{what} must be a table of {sorted(TRAIN_LIMITS)}, got {value!r}")
    if unknown := sorted(set(value) - set(TRAIN_LIMITS), key=str):
        raise RequestError(f"{what}: unknown key {unknown[0]!r}; valid keys: {', '.join(TRAIN_LIMITS)}")
    for key, number in value.items():
        if type(number) is not int or not 1 <= number <= TRAIN_LIMITS[key]:
            raise RequestError(f"{what}.{key} must be an integer from 1 to {TRAIN_LIMITS[key]}, got {number!r}")
    return Train(**value)


def parse_request(raw: Any) -> Request:
    """A validated scenario request (raises RequestError)."""
    if not isinstance(raw, dict) or not isinstance(raw.get("params"), dict):
        raise RequestError(f"a scenario request is an object with params, got {type(raw).__name__}")
    params = raw["params"]
    name, devices = raw.get("name"), raw.get("devices")
    if not isinstance(name, str) or not name or "/" in name or name.startswith("."):
        raise RequestError(f"bad scenario name {name!r}")
    if not isinstance(devices, int) or devices < 1:
        raise RequestError(f"{name}: devices must be a positive integer, got {devices!r}")
    expect = params.get("expect")
    if expect != "any":
        expect = _source(expect, f"{name}.expect")
    caches = params.get("node_caches", {})
    if not isinstance(caches, dict):
        raise RequestError(f"{name}: node_caches must be a table")
    timeout = raw.get("timeout_s", DEFAULT_TIMEOUT_S)
    return Request(
        name=name,
        kind=str(raw.get("kind", "")),
        devices=devices,
        backend=str(raw.get("backend", "gloo")),
        timeout_s=int(timeout) if isinstance(timeout, (int, float)) and timeout > 0 else DEFAULT_TIMEOUT_S,
        mirror_main=_source(params.get("mirror_main"), f"{name}.mirror_main"),
        node_local=bool(params.get("node_local")),
        expect=expect,
        node_caches={node: _node_cache(node, value) for node, value in caches.items()},
        train=parse_train(params.get("train"), f"{name}.train"),
    )


def load_requests(path: Path) -> list[Request]:
    """Every request of a scenarios file (the host's, so a malformed one is an error)."""
    raw = json.loads(path.read_text())
    if not isinstance(raw, list) or not raw:
        raise RequestError(f"{path}: expected a non-empty list of scenario requests")
    return [parse_request(r) for r in raw]
