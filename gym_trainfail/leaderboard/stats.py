"""Small-sample statistics for the paired comparison (stdlib only): a percentile bootstrap
interval for a mean difference, the exact McNemar test for paired pass/fail outcomes, and the
warning shown when too few pairs support either.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Sequence

#: Fewer pairs than this and a comparison carries a warning.
SMALL_N = 5


def bootstrap_ci(
    values: Sequence[float], *, resamples: int = 10000, confidence: float = 0.95, seed: int = 0
) -> tuple[float, float] | None:
    """Percentile bootstrap interval of the mean of ``values`` (paired differences).

    Deterministic for a given ``seed``; ``None`` without values, ``(v, v)`` for one value.
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie strictly between 0 and 1, not {confidence}")
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, not {resamples}")
    data = [float(v) for v in values]
    if not data:
        return None
    if len(data) == 1:
        return data[0], data[0]
    rng = random.Random(seed)
    means = sorted(statistics.fmean(rng.choices(data, k=len(data))) for _ in range(resamples))
    tail = (1 - confidence) / 2
    return _percentile(means, tail), _percentile(means, 1 - tail)


def _percentile(ordered: Sequence[float], q: float) -> float:
    """Linear interpolation between the closest ranks of an ascending sequence."""
    position = q * (len(ordered) - 1)
    below = math.floor(position)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (ordered[above] - ordered[below]) * (position - below)


def mcnemar_exact(b: int, c: int) -> float:
    """Exact two-sided McNemar p-value on the discordant pairs.

    ``b``: pairs where only the treatment passed; ``c``: only the control. A binomial test of
    ``min(b, c)`` successes in ``b + c`` trials at p = ½; ``1.0`` without discordant pairs.
    """
    if b < 0 or c < 0:
        raise ValueError(f"discordant pair counts must be non-negative, not b={b}, c={c}")
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(b, c) + 1))
    return min(1.0, 2 * tail / (1 << n))


def small_n_warning(pairs: int) -> str | None:
    """The warning for a comparison of fewer than :data:`SMALL_N` pairs; ``None`` otherwise."""
    if pairs >= SMALL_N:
        return None
    return (
        f"only {pairs} pair(s): too few for a causal efficiency ratio or a reliable difference "
        f"(at least {SMALL_N} needed)"
    )
