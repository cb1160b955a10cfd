"""Judge phase of TrainFail/MoEExpertGradScale-v0 (trusted: no revision code runs here).

    python /grader/judge.py --scenarios /io/scenarios.json --artifacts /artifacts \
        --run /io/run.json --out-dir /io/outcomes [--oracle /oracle]

The protocol's scaffolding (run records, unfinished runs, outcome files) is the harness
library's ``judgekit``; this file is the case's part. For each scenario it regenerates the
grader-owned initial weights and data itself (``kit/fixtures.py``; nothing is read back from
the run), trains the float64 single-process reference (``oracle.py``), reads the run's
README-documented outputs and the layout observer's records as adversarial data
(``observe.py``) and requires them to match (``verdict.py``).

Leak canary (must never appear where the agent or the run phase can look):
TRAINFAIL-CANARY-5396806231a99afeaf03db4bbcb78d7d
"""
from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE / "kit")]  # judge modules, then the kit's pure helpers

import pipeline  # noqa: E402,F401 - puts the harness library on sys.path

import judgekit  # noqa: E402
import torch  # noqa: E402
from fixtures import make_inputs  # noqa: E402
from observe import Observation, observe  # noqa: E402
from oracle import reference_run  # noqa: E402
from scenario import Scenario, read_requests  # noqa: E402
from verdict import judge  # noqa: E402


def compare(sc: Scenario, obs: Observation) -> judgekit.Verdict:
    """The case's checks against the reference trained from the judge's own inputs."""
    inputs = make_inputs(sc)
    status, reason, metrics = judge(sc, reference_run(sc, inputs), inputs.init, obs)
    return judgekit.Verdict(status, reason, metrics)


KIT = judgekit.JudgeKit(name="MoEExpertGradScale", scenario=Scenario.from_request,
                        observe=lambda sc, folder: observe(folder, sc), compare=compare)

if __name__ == "__main__":
    torch.set_num_threads(1)  # one reduction order for the reference, run after run
    judgekit.main(KIT, read_requests)
