"""Judge phase of TrainFail/FSDPSourceCoherence-v2 (trusted: no revision code runs here).

    python /grader/judge.py --scenarios /io/scenarios.json --artifacts /artifacts \
        --run /io/run.json --out-dir /io/outcomes --oracle /oracle

Reads the probe's records and the pipeline's saved weights as adversarial data
(``coherence.py``) and the trusted single-source oracles (``oracle.py``, ``/oracle/<scenario>``).
A scenario passes iff the records agree with themselves and with the saved weights, and the
run's whole state after the last update (initial model, parameters, buffers, gradients, AdamW
state, every rank's RNG and model digests) is bitwise the oracle of the revision the scenario's
``model.revision`` names on the mirror (``Scenario.expected``). A missing oracle is not a
verdict (``retry``).

Leak canary (must never appear where the agent or the run phase can look):
TRAINFAIL-CANARY-7ef2958c6a8fcc776795aab5adbc7ee3
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

sys.path[1:1] = [str(Path(__file__).resolve().parent / "kit")]

import judgekit  # noqa: E402 - the harness library

sys.path.append(str(Path(judgekit.__file__).resolve().parent / "observers"))  # the probe's base class

import coherence  # noqa: E402
import torch  # noqa: E402
from coherence import Record  # noqa: E402
from compare import max_abs_diff  # noqa: E402
from readers import ArtifactError, read_rank_records, read_safetensors  # noqa: E402
from scenario import Scenario  # noqa: E402
from sources import LABELS  # noqa: E402

RECORD_LIMIT, ORACLE_LIMIT, WEIGHTS_LIMIT = 16 << 20, 256 << 20, 128 << 20


@dataclass(frozen=True)
class Observation:
    run: Record
    weights: dict[str, torch.Tensor]
    oracles: dict[str, Record] = field(default_factory=dict)
    oracle_problem: str = ""
    metrics: list[object] = field(default_factory=list)  # no per-step log: timings stay unsplit


def make_kit(inputs: judgekit.PhaseInputs) -> judgekit.JudgeKit:
    """The kit, reading each scenario's oracle from ``inputs``."""

    def observe(sc: Scenario, folder: Path) -> Observation:
        if folder.is_symlink() or any((folder / d).is_symlink() for d in ("probe", "final")):
            raise ArtifactError("the run left links where its outputs belong")
        run = coherence.parse_record(read_rank_records(folder / "probe", sc.devices, RECORD_LIMIT), sc.devices)
        weights = coherence.saved_names(read_safetensors(folder / "final" / "model.safetensors", WEIGHTS_LIMIT, None))
        oracles, problem = {}, ""
        root = inputs.oracle_dir(sc.name)
        try:
            if root is None:
                raise ArtifactError("the judge was given no oracle (--oracle)")
            for source in LABELS:
                raws = read_rank_records(root / source, sc.devices, ORACLE_LIMIT)
                oracles[source] = coherence.parse_record(raws, sc.devices, oracle=True)
        except ArtifactError as err:
            problem = str(err)
        return Observation(run, weights, oracles, problem)

    return judgekit.JudgeKit("FSDPSourceCoherence", Scenario.from_request, observe, compare)


def compare(sc: Scenario, obs: Observation) -> judgekit.Verdict:
    """Consistency with the saved weights, then bitwise equality with the expected source."""
    if obs.oracle_problem:
        return judgekit.Verdict("retry", f"no usable oracle (a grader fault, not a verdict): {obs.oracle_problem}")
    gaps = {s: max_abs_diff(obs.weights, o.params or {})[0] for s, o in obs.oracles.items()}
    diffs = {s: coherence.differing(obs.run, o) for s, o in obs.oracles.items()}
    want = sc.expected
    metrics = {"max_abs_param_vs_expected": gaps[want], "expected_source": want,
               "matched": ",".join(s for s, d in diffs.items() if not d) or "none",
               "initial_rows": coherence.row_origins(obs.run, obs.oracles),
               **{f"max_abs_param_vs_{s}": gap for s, gap in gaps.items()},
               **{f"fields_differing_{s}": d for s, d in diffs.items()}}  # fmt: skip
    if problems := coherence.inconsistencies(obs.run, obs.weights):
        return judgekit.Verdict("fail", "the probe's records disagree with the saved weights: " + "; ".join(problems),
                                metrics)  # fmt: skip
    if not diffs[want]:
        return judgekit.Verdict("pass", f"bitwise the single-source run of {want} ({LABELS[want]}), the revision "
                                f"{sc.revision!r} names on the mirror", metrics)  # fmt: skip
    other = next((s for s, d in diffs.items() if not d), None)
    if other is not None:
        why = f"the run is bitwise the single-source run of {other} ({LABELS[other]})"
    else:
        why = f"the run matches no single source (vs {want}: {', '.join(diffs[want])}); initial rows by source " \
              f"{metrics['initial_rows']}"  # fmt: skip
    return judgekit.Verdict("fail", f"{why}, but {sc.revision!r} names {want} ({LABELS[want]}) on the mirror", metrics)


if __name__ == "__main__":
    judgekit.main_with(make_kit)
