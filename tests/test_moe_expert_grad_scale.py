"""TrainFail/MoEExpertGradScale-v0's judge against hand-made observations (no training run).

The judge's checks (the scenario's expert layout trained and observed, copies identical across
ranks, expert and dense parameters and losses on the float64 single-process reference,
well-formed files) are attacked one at a time: an observation built from the judge's own
reference passes, and each tampering fails with the check's reason. The reference itself is
attacked with the failure's own mechanism: expert updates ep times too large must fail. Runs in
the case runtime's python (torch lives there, not in the gym's environment).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from gym_trainfail.paths import SOURCE_ROOT
from gym_trainfail.runtimes import Runtime

CASE_DIR = SOURCE_ROOT / "envs" / "moe_expert_grad_scale"

SCRIPT = """
import copy, json, os, sys
from pathlib import Path
sys.path[:0] = [GRADER, GRADER + "/kit", HARNESSLIB]
import torch
from artifacts import ArtifactError
from fixtures import make_inputs
from observe import Layout, Observation, RankState, StepRecord, read_layout, read_metrics, read_rank_state
from oracle import reference_run
from scenario import Scenario
from verdict import judge

sc = Scenario(name="t", kind="failure", devices=4, backend="gloo", world=4, ep=2, zero_stage=1, seed=5, steps=3)
inputs = make_inputs(sc)
ref = reference_run(sc, inputs)

def observation(tamper=None):
    ranks = [RankState({k: v.clone() for k, v in ref.dense.items()},
                       {g: {k: v.clone() for k, v in ref.experts[g].items()} for g in sc.expert_ids(r)})
             for r in range(sc.world)]
    layouts = [Layout(sc.world, sc.steps, [(sc.ep, sc.local_experts, sc.ep)]) for _ in range(sc.world)]
    metrics = [StepRecord(k, ref.losses[k], 0.1, 1.0 + k) for k in range(sc.steps)]
    obs = Observation(metrics, ranks, layouts)
    if tamper:
        tamper(obs)
    return obs

def ep_times_update(obs):   # the failure itself: every expert step ep times the reference's
    for state in obs.ranks:
        for g, params in state.experts.items():
            for k, v in params.items():
                start = inputs.init["experts"][g][k].double()
                params[k] = start + sc.ep * (v - start)
def replica_off(obs):       # rank 2 holds expert 0 like rank 0, but a different value
    obs.ranks[2].experts[0]["0.bias"][0] += 1e-6
def dense_off(obs):
    for state in obs.ranks:
        state.dense["head.bias"] += 3e-4
def loss_off(obs):
    obs.metrics[2] = StepRecord(2, ref.losses[2] + 5e-4, 0.1, 3.0)
def wrong_experts(obs):     # rank 1 saves rank 0's experts
    obs.ranks[1] = obs.ranks[0]
def no_ep(obs):             # expert parallelism switched off, layout saved as configured
    obs.layouts[:] = [Layout(sc.world, sc.steps, [(1, sc.num_experts, 1)]) for _ in range(sc.world)]
def few_forwards(obs):
    obs.layouts[3] = Layout(sc.world, sc.steps - 1, [(sc.ep, sc.local_experts, sc.ep)])
def nan_expert(obs):
    for state in obs.ranks:
        for params in state.experts.values():
            params["2.weight"][0, 0] = float("nan")

out = {}
for label, tamper in [("honest", None), ("ep_times_update", ep_times_update), ("replica_off", replica_off),
                      ("dense_off", dense_off), ("loss_off", loss_off), ("wrong_experts", wrong_experts),
                      ("no_ep", no_ep), ("few_forwards", few_forwards), ("nan_expert", nan_expert)]:
    status, reason, metrics = judge(sc, ref, inputs.init, observation(tamper))
    out[label] = [status, reason]

# files: a checkpoint pickle that runs code, an expert id that is not an int, metrics out of order,
# an observer record of another format
tmp = Path(TMP)
class Payload:
    def __reduce__(self):
        return (os.system, ("touch " + str(tmp / "pwned"),))
torch.save({"dense": Payload(), "experts": {}}, tmp / "rank0.pt")
torch.save({"dense": {k: v.float() for k, v in ref.dense.items()},
            "experts": {"0": {k: v.float() for k, v in ref.experts[0].items()}}}, tmp / "rank1.pt")
for rank in range(2):
    try:
        read_rank_state(tmp / f"rank{rank}.pt", 1 << 20, rank)
        out[f"state{rank}"] = "accepted"
    except ArtifactError as err:
        out[f"state{rank}"] = str(err)
(tmp / "metrics.jsonl").write_text('{"step": 0, "loss": 1}\\n{"step": 2, "loss": 1}\\n')
(tmp / "obs.json").write_text(json.dumps({"format": 2, "world": 4, "forwards": 3, "layers": []}))
for key, call in [("metrics", lambda: read_metrics(tmp / "metrics.jsonl", 2)),
                  ("layout", lambda: read_layout(tmp / "obs.json"))]:
    try:
        call()
        out[key] = "accepted"
    except ArtifactError as err:
        out[key] = str(err)
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
    assert got["ep_times_update"][0] == "fail" and "expert parameters differ" in got["ep_times_update"][1]
    assert got["replica_off"][0] == "fail" and "expert 0 0.bias (ranks 0 and 2)" in got["replica_off"][1]
    assert got["dense_off"][0] == "fail" and "dense parameters differ" in got["dense_off"][1]
    assert got["loss_off"][0] == "fail" and "from step 2" in got["loss_off"][1]
    assert got["wrong_experts"][0] == "fail" and "rank 1 saved experts [0, 1]" in got["wrong_experts"][1]
    assert got["no_ep"][0] == "fail" and "expert parallelism must stay" in got["no_ep"][1]
    assert got["few_forwards"][0] == "fail" and "2 MoE forwards" in got["few_forwards"][1]
    assert got["nan_expert"][0] == "fail" and "inf" in got["nan_expert"][1]
    assert "unreadable" in got["state0"]
    assert "is not an integer" in got["state1"]
    assert "not the record of step 1" in got["metrics"]
    assert "not a layout record of format 1" in got["layout"]
    assert got["pwned"] is False
