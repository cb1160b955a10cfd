"""Judge phase of TrainFail/ZeroBoundaryMicrobatch-v0 (trusted: no revision code runs here).

    python /grader/judge.py --scenarios /io/scenarios.json --artifacts /artifacts \
        --run /io/run.json --out-dir /io/outcomes [--oracle /oracle]

For each scenario it regenerates the grader-owned initial weights and data itself
(``kit/fixtures.py``; nothing is read back from the run), reads the run's README-documented
outputs and the observer's records from ``ARTIFACTS/<scenario>/`` as adversarial data
(``observe.py``), recomputes every step's global-batch gradient in float64 (``oracle.py``) and
writes ``OUT/<scenario>.json`` (``verdict.py``): ``pass``/``fail`` with a reason, or ``retry``
for a bare gloo exit abort before the outputs were complete. The protocol's scaffolding is the
harness library's ``judgekit.py``.

Leak canary (must never appear where the agent or the run phase can look):
TRAINFAIL-CANARY-77ac0c5f9070435502672614e7496618
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
# judge modules, the kit's pure helpers, then the gym's harness library (mounted at /harnesslib
# in grading sandboxes; $TRAINFAIL_HARNESSLIB or the clone this case sits in elsewhere)
CLONE = [str(HERE.parents[2] / "gym_trainfail" / "harnesslib")] if len(HERE.parents) > 2 else []
sys.path[:0] = [str(HERE), str(HERE / "kit"), os.environ.get("TRAINFAIL_HARNESSLIB", "/harnesslib"), *CLONE]

import judgekit  # noqa: E402
import torch  # noqa: E402
from fixtures import make_inputs  # noqa: E402
from observe import Observation, observe  # noqa: E402
from scenario import Scenario, read_requests  # noqa: E402
from verdict import judge  # noqa: E402


def compare(sc: Scenario, obs: Observation) -> judgekit.Verdict:
    """The observation against the judge's own float64 reference from its own inputs."""
    return judge(sc, make_inputs(sc), obs)


KIT = judgekit.JudgeKit("ZeroBoundaryMicrobatch", Scenario.from_request, observe, compare)

if __name__ == "__main__":
    torch.set_num_threads(1)  # one reduction order for the reference, run after run
    judgekit.main(KIT, read_requests)
