"""TrainFail/ZeroBoundaryMicrobatch-v0's judge against hand-made observations (no training run).

The judge's checks (ZeRO partition layout, the grader's starting point, SGD replay, the saved
model, the global-batch gradient, well-formed observer records) are attacked one at a time: an
observation of correct training built from the judge's own oracle passes, and each tampering
fails with that check's reason. Runs in the case runtime's python (torch lives there, not in the
gym's environment).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from gym_trainfail.paths import SOURCE_ROOT
from gym_trainfail.runtimes import Runtime

CASE_DIR = SOURCE_ROOT / "envs" / "zero1_boundary_microbatch"

SCRIPT = """
import json, os, sys
from pathlib import Path
sys.path[:0] = [GRADER, GRADER + "/kit", HARNESSLIB]
import torch
from fixtures import make_inputs
from observe import ArtifactError, Observation, StepRecord, read_rank
from oracle import flatten_state, reference_gradient, unflatten
from scenario import Scenario
from verdict import judge

sc = Scenario(name="t", kind="failure", devices=2, backend="gloo", seed=5, steps=4, micro_batch=4, accumulation=4)
inputs = make_inputs(sc)
n = sc.parameter_count
pad = (-n) % (2 * sc.devices)
size = (n + pad) // sc.devices

def split(flat):
    full = torch.cat([flat, torch.zeros(pad)])
    return [full[r * size:(r + 1) * size].clone() for r in range(sc.devices)]

def honest(start=None, scale=1.0, local=0.0):
    theta = flatten_state(sc, inputs.init).to(torch.bfloat16).float() if start is None else start
    params, grads = [[] for _ in range(sc.devices)], [[] for _ in range(sc.devices)]
    for k in range(sc.steps):
        g = (scale * reference_gradient(sc, inputs, k, theta)).float()
        gp = split(g)
        gp[1] += local  # a rank-local term on rank 1's partition
        pp = split(theta)
        for r in range(sc.devices):
            params[r].append(pp[r]); grads[r].append(gp[r])
        theta = theta.clone().add_(torch.cat(gp)[:n], alpha=-sc.lr)
    finals = split(theta)
    state = {name: t.clone() for (name, _), t in zip(sc.shapes, unflatten(sc, theta))}
    metrics = [StepRecord(step=k, step_time_s=0.1, wall_time=1.0) for k in range(sc.steps)]
    return Observation(metrics=metrics, final_state=state, params=params, grads=grads, finals=finals)

out = {}
def verdict(obs):
    v = judge(sc, inputs, obs)
    return [v.status, v.reason]

out["honest"] = verdict(honest())
out["local"] = verdict(honest(local=1e-2))
out["scaled"] = verdict(honest(scale=1.05))
obs = honest(); obs.params[0][2][7] += 1e-5
out["replay"] = verdict(obs)
out["init"] = verdict(honest(start=flatten_state(sc, inputs.init).float()))
obs = honest(); obs.final_state["net.4.bias"] += 1e-4
out["saved"] = verdict(obs)
obs = honest()
for r in range(sc.devices):
    obs.params[r] = [torch.cat([t, torch.zeros(8)]) for t in obs.params[r]]
    obs.grads[r] = [torch.cat([t, torch.zeros(8)]) for t in obs.grads[r]]
    obs.finals[r] = torch.cat([obs.finals[r], torch.zeros(8)])
out["layout"] = verdict(obs)
obs = honest(); obs.grads[0][1][0] = float("nan")
out["nan"] = verdict(obs)

tmp = Path(TMP)
class Payload:
    def __reduce__(self):
        return (os.system, ("touch " + str(tmp / "pwned"),))
good = honest()
torch.save({"format": 1, "rank": 0, "params": Payload()}, tmp / "rank0.pt")
def record(rank, params, grads, final):
    return {"format": 1, "rank": rank, "params": params, "grads": grads, "final": final}
torch.save(record(0, good.params[1], good.grads[1], good.finals[1]), tmp / "rank1.pt")
torch.save(record(2, good.params[0][:3], good.grads[0], good.finals[0]), tmp / "rank2.pt")
torch.save(record(3, [t.double() for t in good.params[0]], good.grads[0], good.finals[0]), tmp / "rank3.pt")
for rank in range(4):
    try:
        read_rank(tmp / f"rank{rank}.pt", sc, rank)
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
    assert got["local"][0] == "fail" and "away from the gradient of the mean loss" in got["local"][1]
    assert got["scaled"][0] == "fail" and "away from the gradient of the mean loss" in got["scaled"][1]
    assert got["replay"][0] == "fail" and "did not apply its own recorded gradient" in got["replay"][1]
    assert got["init"][0] == "fail" and "initial weights" in got["init"][1]
    assert got["saved"][0] == "fail" and "final/model.pt is not the weights" in got["saved"][1]
    assert got["layout"][0] == "fail" and "not ZeRO partitions" in got["layout"][1]
    assert got["nan"][0] == "fail"
    assert "not loadable with weights_only" in got["record0"]
    assert got["record1"] == "rank1.pt: not an observer record of rank 1"
    assert got["record2"] == "rank2.pt: does not hold 4 steps"
    assert got["record3"] == "rank3.pt step 0 weights is not a flat float32 tensor"
    assert got["pwned"] is False
