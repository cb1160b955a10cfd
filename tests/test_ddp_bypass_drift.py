"""TrainFail/DDPBypassDrift-v0's judge against hand-made observations (no training run).

The judge's checks (the grader's starting point, replicas identical at every step, the
global-batch gradient, SGD replay, the saved model, well-formed observer records) are attacked
one at a time: an observation of correct training built from the judge's own oracle passes, and
each tampering fails with that check's reason. Runs in the case runtime's python (torch lives
there, not in the gym's environment).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from gym_trainfail.paths import SOURCE_ROOT
from gym_trainfail.runtimes import Runtime

CASE_DIR = SOURCE_ROOT / "envs" / "ddp_bypass_drift"

SCRIPT = """
import json, os, sys
from pathlib import Path
sys.path[:0] = [GRADER, GRADER + "/kit", HARNESSLIB]
import torch
from fixtures import make_inputs
from observe import ArtifactError, Observation, RankRecord, StepRecord, read_record
from oracle import spec_gradient
from scenario import Scenario
from verdict import judge

sc = Scenario(name="t", kind="failure", devices=2, backend="gloo", seed=5, steps=5)
inputs = make_inputs(sc)

def honest(start, local=0.0):
    # correct data-parallel SGD in float32; `local` adds a rank-dependent term to every gradient
    ranks = []
    for r in range(sc.world):
        p = {k: v.clone() for k, v in start.items()}
        params, grads = [], []
        for k in range(sc.steps):
            _, g = spec_gradient(sc, inputs, p, k)
            g = {n: (t.float() + local * r * torch.ones_like(t.float())) for n, t in g.items()}
            params.append({n: t.clone() for n, t in p.items()})
            grads.append(g)
            p = {n: t.add(g[n], alpha=-sc.lr) for n, t in p.items()}
        ranks.append(RankRecord(params=params, grads=grads, final=p))
    return ranks

def observation(ranks):
    metrics = [StepRecord(step=k, loss=1.0, step_time_s=0.1, wall_time=1.0) for k in range(sc.steps)]
    return Observation(metrics=metrics, saved={k: v.clone() for k, v in ranks[0].final.items()}, ranks=ranks)

out = {}
def verdict(obs):
    v = judge(sc, inputs, obs)
    return [v.status, v.reason]

out["honest"] = verdict(observation(honest(inputs.init)))
out["local"] = verdict(observation(honest(inputs.init, local=1e-3)))
obs = observation(honest(inputs.init)); obs.ranks[1].params[3]["norm.bias"][0] += 1e-7
out["nudge"] = verdict(obs)
obs = observation(honest(inputs.init))
for rec in obs.ranks:
    rec.grads[2]["proj_in.bias"].mul_(1.01)
out["grad_off"] = verdict(obs)
obs = observation(honest(inputs.init))
for rec in obs.ranks:
    rec.final["head.bias"] += 1e-3
obs = Observation(metrics=obs.metrics, saved={k: v.clone() for k, v in obs.ranks[0].final.items()}, ranks=obs.ranks)
out["replay"] = verdict(obs)
out["init"] = verdict(observation(honest({k: v + 1e-3 for k, v in inputs.init.items()})))
obs = observation(honest(inputs.init)); obs.saved["head.bias"] += 1e-3
out["saved"] = verdict(obs)
obs = observation(honest(inputs.init)); del obs.ranks[0].params[2]["proj_in.weight"]
out["missing"] = verdict(obs)

tmp = Path(TMP)
class Payload:
    def __reduce__(self):
        return (os.system, ("touch " + str(tmp / "pwned"),))
torch.save({"format": 1, "rank": 0, "world": 2, "params": Payload()}, tmp / "rank0.pt")
torch.save({"format": 1, "rank": 0, "world": 2, "params": [{}] * 5, "grads": [{}] * 5, "final": {}}, tmp / "rank1.pt")
torch.save({"format": 1, "rank": 2, "world": 2, "params": [{}] * 4, "grads": [{}] * 5, "final": {}}, tmp / "rank2.pt")
for rank in range(3):
    try:
        read_record(tmp / f"rank{rank}.pt", rank, 2, 5, 1 << 20)
        out[f"record{rank}"] = "accepted"
    except ArtifactError as err:
        out[f"record{rank}"] = str(err)
out["pwned"] = (tmp / "pwned").exists()
print(json.dumps(out))
"""


def test_judge_rejects_each_tampering(runtime: Runtime, tmp_path: Path) -> None:
    script = SCRIPT.replace("GRADER", repr(str(CASE_DIR / "grader")), 2).replace("TMP", repr(str(tmp_path)), 1)
    script = script.replace("HARNESSLIB", repr(str(SOURCE_ROOT / "gym_trainfail" / "harnesslib")), 1)
    done = subprocess.run(
        [str(runtime.bin_dir / "python"), "-c", script],
        capture_output=True,
        text=True,
        timeout=300,
        env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["honest"][0] == "pass", got["honest"]
    assert got["local"][0] == "fail" and "differs across data-parallel ranks" in got["local"][1]
    assert got["nudge"][0] == "fail" and "norm.bias (rank 1 vs rank 0) at the start of step 3" in got["nudge"][1]
    assert got["grad_off"][0] == "fail" and "proj_in.bias on rank 0 at step 2" in got["grad_off"][1]
    assert got["replay"][0] == "fail" and "head.bias on rank 0 after step 4" in got["replay"][1]
    assert got["init"][0] == "fail" and "initial weights" in got["init"][1]
    assert got["saved"][0] == "fail" and "saved checkpoint" in got["saved"][1]
    assert got["missing"][0] == "fail" and "records unusable" in got["missing"][1]
    assert "refused by torch.load(weights_only=True)" in got["record0"]
    assert got["record1"] == "rank1.pt: not a format-1 observer record of rank 1 of 2"
    assert "4 recorded parameter states, expected 5" in got["record2"]
    assert got["pwned"] is False
