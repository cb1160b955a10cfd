"""TrainFail/TPReplicaClipDrift-v0's judge against hand-made observations (no training run).

The judge's checks (replicas identical at every step and in the saved model, the fp32 masters on
the TP=1 trajectory, well-formed observer records) are attacked one at a time: an observation
built from the judge's own reference passes, and each tampering fails with the check's reason.
Runs in the case runtime's python (torch lives there, not in the gym's environment).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from gym_trainfail.paths import SOURCE_ROOT
from gym_trainfail.runtimes import Runtime

CASE_DIR = SOURCE_ROOT / "envs" / "tp_replica_clip_drift"

SCRIPT = """
import io, json, os, sys
from pathlib import Path
sys.path[:0] = [GRADER, GRADER + "/kit", HARNESSLIB]
import torch
from fixtures import make_inputs
from observe import ArtifactError, Observation, StepRecord, read_record
from oracle import reference_run
from scenario import Scenario
from verdict import judge

def shard(name, full, rank, tp):
    dim = {"mlp.fc1.weight": 0, "mlp.fc1.bias": 0, "mlp.fc2.weight": 1}
    for suffix, d in dim.items():
        if name.endswith(suffix):
            return full.chunk(tp, d)[rank].clone()
    return full.clone()

def observation(ref, sc, tamper=None):
    records = [[{k: shard(k, v, r, sc.tp) for k, v in state.items()} for state in ref.states] for r in range(sc.tp)]
    final = [{k: shard(k, v.to(torch.bfloat16).float(), r, sc.tp) for k, v in ref.final.items()} for r in range(sc.tp)]
    if tamper:
        tamper(records, final)
    metrics = [StepRecord(step=k, loss=1.0, grad_norm=1.0, step_time_s=0.1, wall_time=1.0) for k in range(sc.steps)]
    return Observation(metrics=metrics, rank_states=final, rank_records=records)

sc = Scenario(name="t", kind="failure", devices=2, backend="gloo", tp=2, seed=5, steps=6)
ref = reference_run(sc, make_inputs(sc))
out = {}

def nudge(records, final):   # one replicated LayerNorm weight, one step, rank 1, by 1e-6
    records[1][3]["blocks.0.ln.weight"][0] += 1e-6
def saved(records, final):   # the saved replicas disagree
    final[1]["final_ln.bias"][1] += 2.0 ** -7
def drift(records, final):   # a split shard leaves the trajectory on every rank alike
    for r in records:
        r[4]["blocks.1.mlp.fc1.weight"] += 3e-3
def synced_but_off(records, final):   # replicas agree but all moved (no clipping of them)
    for r in records:
        r[5]["head.bias"] += 1e-2
def missing(records, final):
    del records[0][2]["input_proj.weight"]
def final_off(records, final):
    for f in final:
        f["head.weight"] += 5e-2

for label, tamper in [("honest", None), ("nudge", nudge), ("saved", saved), ("drift", drift),
                      ("synced_but_off", synced_but_off), ("missing", missing), ("final_off", final_off)]:
    v = judge(sc, ref, observation(ref, sc, tamper))
    out[label] = [v.status, v.reason]

# partial records (native scale): split matrices only at the first and last step
sparse = Scenario(name="t", kind="failure", devices=2, backend="gloo", tp=2, seed=5, steps=6, full_record_every=1000)
def thin(records, final):
    for r in records:
        for k in range(1, 5):
            r[k] = {n: t for n, t in r[k].items() if "fc1" not in n and "fc2.weight" not in n}
out["sparse_honest"] = judge(sparse, ref, observation(ref, sparse, thin)).status
out["sparse_full_where_thin"] = judge(sparse, ref, observation(ref, sparse)).reason

# record files: a pickle that runs code, another rank's record, a short record
tmp = Path(TMP)
class Payload:
    def __reduce__(self):
        return (os.system, ("touch " + str(tmp / "pwned"),))
torch.save({"format": 1, "rank": 0, "states": Payload()}, tmp / "rank0.pt")
torch.save({"format": 1, "rank": 0, "states": [{}] * 6}, tmp / "rank1.pt")
torch.save({"format": 1, "rank": 2, "states": [{}] * 5}, tmp / "rank2.pt")
for rank in range(3):
    try:
        read_record(tmp / f"rank{rank}.pt", rank, 6, 1 << 20)
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
    assert got["nudge"][0] == "fail" and "blocks.0.ln.weight at the start of step 3" in got["nudge"][1]
    assert got["saved"][0] == "fail" and "saved checkpoint" in got["saved"][1]
    assert got["drift"][0] == "fail" and "leave the TP=1 reference trajectory" in got["drift"][1]
    assert got["synced_but_off"][0] == "fail" and "head.bias at the start of step 5" in got["synced_but_off"][1]
    assert got["missing"][0] == "fail" and "observer record unusable" in got["missing"][1]
    assert got["final_off"][0] == "fail" and "after the last step" in got["final_off"][1]
    assert got["sparse_honest"] == "pass"
    assert "observer record unusable" in got["sparse_full_where_thin"]
    assert "refused by torch.load(weights_only=True)" in got["record0"]
    assert got["record1"] == "rank1.pt: not a format-1 observer record of rank 1"
    assert "5 recorded step states, expected 6" in got["record2"]
    assert got["pwned"] is False
