"""Judge building blocks: comparing what a run produced with the judge's own reference.

* states: :func:`structure_problem` (names and shapes), :func:`max_abs_diff` (worst entry and
  where; NaN counts as infinitely far), :func:`replica_spread` (how far copies that should be
  identical drifted apart across ranks), :func:`trajectory` (the worst step of a recorded
  trajectory against a reference one);
* logged numbers: :func:`max_rel_error`, :func:`max_abs_error` (a missing or non-finite value is
  infinitely wrong), :func:`rel_l2`;
* the verdict: ordered :class:`Check` s, the first failing one becomes the reason
  (:func:`verdict`), with every measured quantity in the outcome's metrics and, for each
  toleranced check, its tolerance beside it, so that ``trainfail qualify`` tables show the
  margin on both sides (the healthy worst and the failing best of each figure);
* optimizers written out for float64 references (:func:`sgd_step`: ``torch.optim.SGD``'s update,
  whose first real ``step`` imports ``torch._dynamo`` for seconds).

Needs torch (the case runtime has it).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

if __package__:  # imported as part of the package
    from .judgekit import Verdict
else:  # imported from /harnesslib by a case's judge
    from judgekit import Verdict  # type: ignore[no-redef,import-not-found,unused-ignore]

State = Mapping[str, torch.Tensor]


def structure_problem(got: State, shapes: Mapping[str, Sequence[int]], what: str) -> str | None:
    """Why ``got`` cannot be a state with exactly these names and shapes, or None."""
    if set(got) != set(shapes):
        missing, extra = sorted(set(shapes) - set(got))[:3], sorted(set(got) - set(shapes))[:3]
        return f"{what}: names differ from the model's: missing={missing} extra={extra}"
    for name, shape in shapes.items():
        if tuple(got[name].shape) != tuple(shape):
            return f"{what}: {name} has shape {tuple(got[name].shape)}, expected {tuple(shape)}"
    return None


def shapes_of(state: State) -> dict[str, tuple[int, ...]]:
    """Each tensor's shape."""
    return {name: tuple(value.shape) for name, value in state.items()}


def tensor_diff(a: torch.Tensor, b: torch.Tensor) -> float:
    """Max |a - b| in float64 (inf when shapes differ or any entry is NaN)."""
    if a.shape != b.shape:
        return math.inf
    if a.numel() == 0:
        return 0.0
    diff = float((a.to(torch.float64) - b.to(torch.float64)).abs().max().item())
    return diff if diff == diff else math.inf


def max_abs_diff(got: State, want: State, names: Iterable[str] | None = None) -> tuple[float, str]:
    """The largest |got - want| over ``names`` (every name of ``want`` by default) and where; a
    name ``got`` lacks is infinitely far."""
    worst, where = 0.0, ""
    for name in names if names is not None else want:
        diff = tensor_diff(got[name], want[name]) if name in got else math.inf
        if not diff <= worst:
            worst, where = diff, name
    return worst, where


def replica_spread(states: Sequence[State], names: Iterable[str] | None = None) -> tuple[float, str]:
    """How far the copies of each parameter held by every rank drifted from rank 0's (over
    ``names``, every name of rank 0's state by default), and where."""
    worst, where = 0.0, ""
    if not states:
        return worst, where
    for name in list(names) if names is not None else list(states[0]):
        for other in states[1:]:
            diff = tensor_diff(other[name], states[0][name]) if name in other else math.inf
            if not diff <= worst:
                worst, where = diff, name
    return worst, where


@dataclass(frozen=True)
class Worst:
    """The worst point of a comparison over steps: its size, step and name (step -1: none)."""

    value: float = 0.0
    step: int = -1
    name: str = ""

    @property
    def where(self) -> str:
        return f"{self.name} at step {self.step}" if self.step >= 0 else "nowhere"


def trajectory(observed: Sequence[State], reference: Sequence[State], names: Iterable[str] | None = None) -> Worst:
    """The largest difference between a recorded trajectory and a reference, step by step (a
    trajectory of another length is infinitely far)."""
    if len(observed) != len(reference):
        return Worst(math.inf, 0, f"{len(observed)} recorded steps for {len(reference)}")
    worst = Worst()
    chosen = list(names) if names is not None else None
    for step, (got, want) in enumerate(zip(observed, reference, strict=True)):
        diff, name = max_abs_diff(got, want, chosen)
        if not diff <= worst.value:
            worst = Worst(diff, step, name)
    return worst


def max_abs_error(got: Sequence[float | None], want: Sequence[float]) -> tuple[float, int]:
    """Largest |got - want| over paired values and its index (inf where one is missing)."""
    worst, at = 0.0, -1
    if len(got) != len(want):
        return math.inf, 0
    for index, (value, expected) in enumerate(zip(got, want, strict=True)):
        err = math.inf if value is None or not math.isfinite(value) else abs(value - expected)
        if not err <= worst:
            worst, at = err, index
    return worst, at


def first_exceeding(got: Sequence[float | None], want: Sequence[float], tolerance: float) -> int:
    """The first index where |got - want| exceeds ``tolerance`` (a missing value always does),
    or -1: where a logged series first leaves its reference."""
    for index, (value, expected) in enumerate(zip(got, want, strict=False)):
        if value is None or not abs(value - expected) <= tolerance:
            return index
    return -1 if len(got) == len(want) else min(len(got), len(want))


def max_rel_error(got: Sequence[float | None], want: Sequence[float], floor: float = 1e-12) -> tuple[float, int]:
    """Largest |got - want| / max(|want|, floor) and its index (inf where one is missing)."""
    worst, at = 0.0, -1
    if len(got) != len(want):
        return math.inf, 0
    for index, (value, expected) in enumerate(zip(got, want, strict=True)):
        if value is None or not math.isfinite(value):
            err = math.inf
        else:
            err = abs(value - expected) / max(abs(expected), floor)
        if not err <= worst:
            worst, at = err, index
    return worst, at


def rel_l2(got: torch.Tensor, want: torch.Tensor, floor: float = 1e-30) -> float:
    """||got - want|| / ||want|| in float64 (inf for NaN or a shape mismatch)."""
    if got.shape != want.shape:
        return math.inf
    a, b = got.to(torch.float64), want.to(torch.float64)
    value = float(((a - b).norm() / max(float(b.norm()), floor)).item())
    return value if value == value else math.inf


@dataclass(frozen=True)
class Check:
    """One condition of a verdict: its reason when it fails, and the figure behind it."""

    failed: bool
    reason: str

    @classmethod
    def within(cls, name: str, value: float, tolerance: float, reason: str) -> Check:
        """``value <= tolerance`` (NaN fails); ``reason`` says what was found."""
        return cls(not value <= tolerance, f"{reason} ({name} {value:.3e}, tolerance {tolerance:g})")


def verdict(checks: Iterable[Check], metrics: dict[str, Any], passed: str) -> Verdict:
    """``fail`` with the first failing check's reason, else ``pass`` with ``passed``."""
    for check in checks:
        if check.failed:
            return Verdict("fail", check.reason, metrics)
    return Verdict("pass", passed, metrics)


@torch.no_grad()
def sgd_step(
    params: Sequence[torch.Tensor],
    buffers: list[torch.Tensor | None],
    lr: float,
    *,
    momentum: float = 0.0,
    weight_decay: float = 0.0,
) -> None:
    """``torch.optim.SGD(lr, momentum, weight_decay)`` (no dampening, not Nesterov) written out,
    over parameters whose ``.grad`` is set; ``buffers`` holds the momentum buffers (``None``
    before the first step) and is updated in place."""
    for index, param in enumerate(params):
        grad = param.grad
        assert grad is not None, "every parameter of a reference step has a gradient"
        if weight_decay:
            grad = grad.add(param, alpha=weight_decay)
        if momentum:
            buffer = buffers[index]
            if buffer is None:
                buffer = grad.detach().clone()
            else:
                buffer.mul_(momentum).add_(grad)
            buffers[index] = buffer
            grad = buffer
        param.add_(grad, alpha=-lr)


# -- tensor-parallel layouts -------------------------------------------------------------------

#: Where a parameter is split across tensor-parallel ranks: its dimension, or ``None`` when every
#: rank holds a full copy (a case writes this from its workspace README's layout table).
SplitDim = Callable[[str], "int | None"]


def gather_shards(states: Sequence[State], split_dim: SplitDim) -> dict[str, torch.Tensor]:
    """The full (one-rank) state from every tensor-parallel rank's state, in rank order: a
    tensor ``split_dim`` gives a dimension for is the ranks' pieces concatenated along it, any
    other is rank 0's copy (check that the copies agree with :func:`replica_spread`). The names
    are rank 0's; a rank missing a split name, or pieces that do not concatenate, raise
    ``ValueError`` (check names and shapes first with :func:`shard_problem`)."""
    full: dict[str, torch.Tensor] = {}
    for name, first in states[0].items():
        dim = split_dim(name)
        if dim is None:
            full[name] = first
            continue
        try:
            full[name] = torch.cat([state[name] for state in states], dim)
        except (KeyError, RuntimeError, IndexError) as err:
            raise ValueError(f"{name}: the ranks' pieces do not join along dim {dim} ({type(err).__name__})") from None
    return full


def shard_shapes(shapes: Mapping[str, Sequence[int]], ranks: int, split_dim: SplitDim) -> dict[str, tuple[int, ...]]:
    """The shape each of ``ranks`` equal pieces has: a split dimension divided by ``ranks``
    (``ValueError`` when it does not divide), every other dimension whole."""
    out: dict[str, tuple[int, ...]] = {}
    for name, shape in shapes.items():
        piece = list(shape)
        dim = split_dim(name)
        if dim is not None:
            if piece[dim] % ranks:
                raise ValueError(f"{name}: dim {dim} of {tuple(shape)} does not split into {ranks} equal pieces")
            piece[dim] //= ranks
        out[name] = tuple(piece)
    return out


def shard_problem(states: Sequence[State], shapes: Mapping[str, Sequence[int]], split_dim: SplitDim,
                  what: str) -> str | None:  # fmt: skip
    """Why the per-rank ``states`` cannot be pieces of a model with these full ``shapes`` under
    the layout ``split_dim`` (each rank ``what`` + its index in the reason), or None."""
    pieces = shard_shapes(shapes, len(states), split_dim)
    for rank, state in enumerate(states):
        problem = structure_problem(state, pieces, f"{what} {rank}")
        if problem is not None:
            return problem
    return None
