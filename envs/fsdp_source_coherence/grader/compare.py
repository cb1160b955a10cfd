"""Probe records, their consistency with the pipeline's saved weights, and comparison with the
single-source oracles.

A record is validated field by field as it is loaded (types, shapes, sizes, digest format):
a run's records come from the revision's processes and may say anything. What the judge can
recompute, it does: the whole-model digests from the per-entry digests, and the digests of the
final parameters from the weights the pipeline saved. So a record that claims a state the
pipeline did not produce disagrees with its product, and one that is consistent can at best
reproduce correct training.
"""
from __future__ import annotations

import hashlib
import math
import re
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeGuard

import torch

from artifacts import ArtifactError, finite_number, load_torch

sys.path.insert(0, str(Path(__file__).resolve().parent / "kit" / "observer"))
from trainfail_probe import value_digest

Tensors = dict[str, torch.Tensor]
Digests = dict[str, str]
STATE_FIELDS = ("init", "params", "buffers", "grads", "opt")
HEX64 = re.compile(r"^[0-9a-f]{64}$")
#: Entries per field: 76 parameters, 3 AdamW slots each, a few group hyper-parameters.
MAX_ENTRIES = 4096
MAX_NAME = 300
#: torch's CPU generator state is 5,056 bytes.
MAX_RNG_BYTES = 1 << 16
MAX_ROWS = 1 << 20
#: Checkpoint names Transformers 5.24 writes for model parameters (its GPT-NeoX conversion
#: mapping renames `lm_head.` to the original checkpoints' `embed_out.` on save).
SAVED_NAMES = {"embed_out.weight": "lm_head.weight"}


@dataclass(frozen=True)
class RankRecord:
    """What every rank records: its RNG state and digests of the model it gathered."""

    rank: int
    rng: torch.Tensor
    init_digest: str
    final_digest: str
    timing: dict[str, float]


@dataclass(frozen=True)
class RunRecord:
    """A run's (or an oracle's) records: every rank's, plus rank 0's full-state digests and
    initial-row fingerprints; `init`/`params` tensors only for a trusted oracle."""

    ranks: list[RankRecord]
    digests: dict[str, Digests]
    init_rows: Tensors
    init: Tensors | None = None
    params: Tensors | None = None

    @property
    def timing(self) -> dict[str, float]:
        return self.ranks[0].timing

    @property
    def replicas_equal(self) -> bool:
        """Whether every rank gathered the same model, before and after training."""
        return len({r.init_digest for r in self.ranks}) == 1 and len({r.final_digest for r in self.ranks}) == 1


# --- validation -------------------------------------------------------------------------------


def _is_tensor(value: Any) -> TypeGuard[torch.Tensor]:
    """A plain dense CPU tensor (no subclass, sparse or quantized layout)."""
    return type(value) in (torch.Tensor, torch.nn.Parameter) and value.layout == torch.strided \
        and not value.is_quantized and value.device.type == "cpu"


def _digest(value: Any, what: str) -> str:
    if not isinstance(value, str) or not HEX64.match(value):
        raise ArtifactError(f"{what} is not a sha256 digest")
    return value


def _timing(value: Any) -> dict[str, float]:
    """Numeric entries of a reported timing table (anything else is dropped)."""
    if not isinstance(value, dict):
        return {}
    numbers = ((k, finite_number(v)) for k, v in value.items() if isinstance(k, str))
    return {k: v for k, v in numbers if v is not None}


def _mapping(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict) or len(value) > MAX_ENTRIES:
        raise ArtifactError(f"{what} is not a table of at most {MAX_ENTRIES} entries")
    if not all(isinstance(k, str) and 0 < len(k) <= MAX_NAME for k in value):
        raise ArtifactError(f"{what} has a key that is not a name")
    return value


def _digests(value: Any, what: str) -> Digests:
    table = _mapping(value, what)
    if not all(isinstance(v, str) and HEX64.match(v) for v in table.values()):
        raise ArtifactError(f"{what} holds something other than sha256 digests")
    return dict(table)


def _tensors(value: Any, what: str) -> Tensors:
    table = _mapping(value, what)
    if not all(_is_tensor(v) for v in table.values()):
        raise ArtifactError(f"{what} holds something other than dense CPU tensors")
    return dict(table)


def _rows(value: Any, what: str) -> Tensors:
    table = _tensors(value, what)
    if not all(t.dtype == torch.int64 and t.dim() == 1 and t.numel() <= MAX_ROWS for t in table.values()):
        raise ArtifactError(f"{what} holds something other than int64 row fingerprints")
    return table


def _rank_record(raw: Any, rank: int, world: int) -> RankRecord:
    if not isinstance(raw, dict):
        raise ArtifactError(f"rank{rank}.pt holds a {type(raw).__name__}, not a record")
    if raw.get("rank") != rank or raw.get("world") != world:
        raise ArtifactError(f"rank{rank}.pt says rank {raw.get('rank')!r} of {raw.get('world')!r}")
    rng = raw.get("rng")
    if not (_is_tensor(rng) and rng.dtype == torch.uint8 and rng.dim() == 1 and rng.numel() <= MAX_RNG_BYTES):
        raise ArtifactError(f"rank{rank}.pt has no RNG state")
    init = _digest(raw.get("init_digest"), f"rank{rank}.pt init_digest")
    final = _digest(raw.get("final_digest"), f"rank{rank}.pt final_digest")
    return RankRecord(rank, rng, init, final, _timing(raw.get("timing")))


def load_record(folder: Path, world: int, limit: int, tensors: bool = False) -> RunRecord:
    """Every rank's record under `folder`, validated; ArtifactError names the first problem.
    `tensors`: also require rank 0's initial and final parameters (oracle records)."""
    raws = [load_torch(folder / f"rank{r}.pt", limit) for r in range(world)]
    ranks = [_rank_record(raw, r, world) for r, raw in enumerate(raws)]
    head = raws[0]
    table = _mapping(head.get("digests"), "rank0.pt digests")
    if set(table) != set(STATE_FIELDS):
        raise ArtifactError(f"rank0.pt digests cover {sorted(table)}, not {list(STATE_FIELDS)}")
    digests = {f: _digests(table[f], f"rank0.pt {f} digests") for f in STATE_FIELDS}
    init_rows = _rows(head.get("init_rows"), "rank0.pt init_rows")
    init = params = None
    if tensors:
        state = _mapping(head.get("state"), "rank0.pt state")
        init, params = _tensors(state.get("init"), "initial parameters"), _tensors(state.get("params"), "parameters")
    return RunRecord(ranks, digests, init_rows, init, params)


# --- consistency (run records against themselves and the saved weights) -------------------------


def combined_digest(entries: Digests) -> str:
    """The whole-model digest trainfail_probe.digest gives, from its per-entry digests."""
    h = hashlib.sha256()
    for name in sorted(entries):
        h.update(f"{name}|".encode())
        h.update(entries[name].encode())
    return h.hexdigest()


def _names(names: set[str], limit: int = 3) -> str:
    shown = sorted(names)[:limit]
    return ", ".join(shown) + (f" (+{len(names) - limit})" if len(names) > limit else "")


def model_names(saved: Tensors) -> Tensors:
    """Saved weights keyed by the model's parameter names (as the probe records them)."""
    renamed = {SAVED_NAMES.get(name, name): tensor for name, tensor in saved.items()}
    return renamed if len(renamed) == len(saved) else saved


def inconsistencies(run: RunRecord, weights: Tensors) -> list[str]:
    """Ways the run's records disagree with each other or with the pipeline's saved weights."""
    problems: list[str] = []
    if combined_digest(run.digests["init"]) != run.ranks[0].init_digest:
        problems.append("rank 0's initial-model digest does not match its per-tensor digests")
    if combined_digest(run.digests["params"]) != run.ranks[0].final_digest:
        problems.append("rank 0's final-model digest does not match its per-tensor digests")
    if set(run.init_rows) != set(run.digests["init"]):
        problems.append("the initial-row fingerprints cover other tensors than the initial digests")
    recorded = run.digests["params"]
    if missing := set(recorded) - set(weights):
        problems.append(f"saved weights lack recorded parameters: {_names(missing)}")
    if extra := set(weights) - set(recorded):
        problems.append(f"saved weights hold tensors the probe never saw: {_names(extra)}")
    differ = {n for n in set(recorded) & set(weights) if value_digest(weights[n]) != recorded[n]}
    if differ:
        problems.append(f"saved weights differ from the recorded final parameters in {len(differ)} tensors "
                        f"({_names(differ)})")
    return problems


# --- comparison with the oracles ---------------------------------------------------------------


def differing_fields(run: RunRecord, oracle: RunRecord) -> list[str]:
    """State fields (and per-rank RNG, per-rank model digests) in which `run` differs from `oracle`."""
    fields = [f for f in STATE_FIELDS if run.digests[f] != oracle.digests[f]]
    if len(run.ranks) != len(oracle.ranks) or not all(
        a.rng.shape == b.rng.shape and torch.equal(a.rng, b.rng) for a, b in zip(run.ranks, oracle.ranks, strict=True)
    ):
        fields.append("rng")
    if [(r.init_digest, r.final_digest) for r in run.ranks] != [(r.init_digest, r.final_digest) for r in oracle.ranks]:
        fields.append("replicas")
    return fields


def _rows_covered(rows: torch.Tensor, candidates: list[torch.Tensor]) -> bool:
    """Whether every row fingerprint equals the same row of some candidate."""
    usable = [c for c in candidates if c.shape == rows.shape]
    if not usable:
        return False
    covered = torch.zeros(rows.shape, dtype=torch.bool)
    for ref in usable:
        covered |= rows == ref
    return bool(covered.all())


def tensor_origin(name: str, run: RunRecord, oracles: dict[str, RunRecord]) -> str:
    """A source name (bitwise that source's tensor), 'mixed' (every row from some source),
    'neither', or 'absent'."""
    if name not in run.digests["init"]:
        return "absent"
    for source, oracle in oracles.items():
        if oracle.digests["init"].get(name) == run.digests["init"][name]:
            return source
    rows = run.init_rows.get(name)
    candidates = [o.init_rows[name] for o in oracles.values() if name in o.init_rows]
    return "mixed" if rows is not None and _rows_covered(rows, candidates) else "neither"


def provenance(run: RunRecord, oracles: dict[str, RunRecord]) -> dict[str, str]:
    """Origin of every tensor of the initial model (names of either side)."""
    names = set(run.digests["init"]).union(*(o.digests["init"] for o in oracles.values()))
    return {name: tensor_origin(name, run, oracles) for name in sorted(names)}


def provenance_counts(origins: dict[str, str]) -> dict[str, int]:
    """How many tensors came from each origin."""
    return dict(sorted(Counter(origins.values()).items()))


def max_abs_param_diff(run: Tensors, ref: Tensors) -> float:
    """max |run - ref| over all parameters; inf when names, shapes or dtypes differ."""
    if run.keys() != ref.keys() or any(run[n].shape != ref[n].shape or run[n].dtype != ref[n].dtype for n in run):
        return math.inf
    return max((float((run[n].double() - ref[n].double()).abs().max()) for n in run if run[n].numel()), default=0.0)
