"""Judge phase of TrainFail/SPDropoutRNG-v1 (trusted: no revision code runs here).

    python /grader/judge.py --scenarios /io/scenarios.json --artifacts /artifacts \
        --run /io/run.json --out-dir /io/outcomes [--oracle /oracle]

The protocol's scaffolding (run records, unfinished runs, outcome files) is the harness
library's ``judgekit``; this file is the case's part. For each scenario it reads every rank's
dropout masks and weights as adversarial data (``observe.py``) and requires them to be what the
README specifies (``verdict.py``): independent masks across tensor-parallel ranks inside the
sequence-parallel region, identical ones on replicated activations, fresh masks every step and
module, the right drop rate, and every update equal to the judge's own float64 step with the
recorded masks (``reference.py``), ending on the saved parameters.

Leak canary (must never appear where the agent or the run phase can look):
TRAINFAIL-CANARY-9b3f1c6e2a7d48e5b0c4f8a1d6e2937c
"""
from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE / "kit")]  # judge modules, then the kit's pure helpers

from harness import add_to_path  # noqa: E402

add_to_path()
import judgekit  # noqa: E402
import torch  # noqa: E402
from observe import Observation, observe  # noqa: E402
from scenario import Scenario, read_requests  # noqa: E402
from verdict import judge  # noqa: E402


def compare(sc: Scenario, obs: Observation) -> judgekit.Verdict:
    """The case's checks, as the harness library's verdict."""
    status, reason, metrics = judge(sc, obs.ranks)
    return judgekit.Verdict(status, reason, metrics)


KIT = judgekit.JudgeKit(name="SPDropoutRNG", scenario=Scenario.from_request, observe=lambda sc, folder: observe(folder, sc),
                        compare=compare)

if __name__ == "__main__":
    torch.set_num_threads(1)  # one reduction order for the float64 step, run after run
    judgekit.main(KIT, read_requests)
