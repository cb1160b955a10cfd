"""Judge phase of @CASE_ID@ (trusted: no revision code runs here).

    python /grader/judge.py --scenarios /io/scenarios.json --artifacts /artifacts \
        --run /io/run.json --out-dir /io/outcomes

Reads the run's ``metrics.json`` as adversarial data (bounded, a JSON object, a number) and
compares its ``global_mean`` with the judge's own: the mean over every sample of every rank,
regenerated here from the scenario's seed (nothing is read back from the run but the number).

@CANARY@
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(1, str(Path(__file__).resolve().parent / "kit"))

import judgekit  # noqa: E402 - the harness library
import torch  # noqa: E402
from artifacts import ArtifactError, number, read_json_object  # noqa: E402
from compare import Check, verdict  # noqa: E402
from scenario import Scenario  # noqa: E402


@dataclass(frozen=True)
class Observation:
    global_mean: float
    metrics: list[object] = field(default_factory=list)  # no per-step log in this pipeline


def observe(sc: Scenario, folder: Path) -> Observation:
    """The README's output, or ``ArtifactError`` (the kit turns it into a fail with the reason)."""
    value = number(read_json_object(folder / "metrics.json").get("global_mean"))
    if value is None:
        raise ArtifactError("metrics.json has no numeric global_mean")
    return Observation(value)


def reference(sc: Scenario) -> float:
    """The specification: the mean over every sample of every rank, in float64."""
    samples = [torch.rand(4 + 3 * r, generator=torch.Generator().manual_seed(sc.seed + r)) for r in range(sc.world_size)]
    return float(torch.cat(samples).double().mean())


def compare(sc: Scenario, obs: Observation) -> judgekit.Verdict:
    error = abs(obs.global_mean - reference(sc))
    return verdict([Check.within("abs error", error, sc.tolerance, "global_mean is not the mean of every sample")],
                   {"abs_error": error}, f"global_mean within {error:.1e} of the mean of every sample")


KIT = judgekit.JudgeKit("@NAME@", Scenario.from_request, observe, compare)

if __name__ == "__main__":
    judgekit.main(KIT)
