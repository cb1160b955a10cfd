"""TrainFail/TPReplicaClipDrift-v1's judge against hand-made observations (no training run).

Each check of the judge (replicas identical at every step and in the saved model, the fp32
masters on the TP=1 trajectory, the saved model at the reference's last step, records and
checkpoints in the README layout, the scenario guard) is attacked one at a time: an
observation built from the judge's own reference passes, and each tampering fails with that
check's reason. Runs in the case runtime's python (torch lives there, not in the gym's
environment).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gym_trainfail.paths import SOURCE_ROOT
from gym_trainfail.runtimes import Runtime
from tests.test_case_sdk import _run_in_runtime

CASE_DIR = SOURCE_ROOT / "envs" / "tp_replica_clip_drift"

SCRIPT = """
import json, os, sys
from pathlib import Path
sys.path[:0] = [GRADER, GRADER + "/kit", HARNESSLIB]
import torch
from fixtures import build
from judge import Observation, judge, observe
from oracle import train
from readers import ArtifactError, Step
from scenario import Scenario, partition_dim

def piece(name, full, rank, tp):
    dim = partition_dim(name)
    return full.clone() if dim is None else full.chunk(tp, dim)[rank].clone()

def observation(sc, ref, tamper=None, thin=False):
    records = [[{k: piece(k, v, r, sc.tp) for k, v in state.items()
                 if not thin or sc.records_full(step) or partition_dim(k) is None}
                for step, state in enumerate(ref.starts)] for r in range(sc.tp)]
    last = {k: v.to(torch.bfloat16).float() for k, v in ref.final.items()} if sc.bf16 else ref.final
    saved = [{k: piece(k, v, r, sc.tp) for k, v in last.items()} for r in range(sc.tp)]
    if tamper:
        tamper(records, saved)
    metrics = [Step(k, {"loss": 1.0, "grad_norm": 1.0}, 0.1, 1.0) for k in range(sc.steps)]
    return Observation(metrics, saved, records)

def scenario(**params):
    return Scenario.from_request({"name": "t", "kind": "failure", "devices": params.get("tp", 2), "params": params})

sc = scenario(tp=2, seed=5, steps=6)
ref = train(sc, *build(sc))
out = {}

def nudge(records, saved):   # one replicated LayerNorm weight, one step, rank 1, by 1e-6
    records[1][3]["blocks.0.ln.weight"][0] += 1e-6
def saved_apart(records, saved):   # the saved replicas disagree
    saved[1]["final_ln.bias"][1] += 2.0 ** -7
def drift(records, saved):   # a partitioned shard leaves the trajectory on every rank alike
    for r in records:
        r[4]["blocks.1.mlp.fc1.weight"] += 3e-3
def synced_but_off(records, saved):   # replicas agree but all moved (nobody clipped them)
    for r in records:
        r[5]["head.bias"] += 1e-2
def missing(records, saved):
    del records[0][2]["input_proj.weight"]
def wrong_piece(records, saved):   # rank 0 saved a full fc2 weight instead of its partition
    saved[0]["blocks.0.mlp.fc2.weight"] = torch.zeros(32, 128)
def final_off(records, saved):
    for s in saved:
        s["head.weight"] += 5e-2

for label, tamper in [("honest", None), ("nudge", nudge), ("saved", saved_apart), ("drift", drift),
                      ("synced_but_off", synced_but_off), ("missing", missing), ("wrong_piece", wrong_piece),
                      ("final_off", final_off)]:
    v = judge(sc, ref, observation(sc, ref, tamper))
    out[label] = [v.status, v.reason]

# fp32 runs: exact to 1e-5, so a bf16-rounded model is far off
fp32 = scenario(tp=2, seed=5, steps=6, bf16=False, master_atol=1e-5, final_atol=1e-5)
ref32 = train(fp32, *build(fp32))
out["fp32_honest"] = judge(fp32, ref32, observation(fp32, ref32)).status
def rounded(records, saved):
    for s in saved:
        for k in s:
            s[k] = s[k].to(torch.bfloat16).float()
out["fp32_rounded"] = judge(fp32, ref32, observation(fp32, ref32, rounded)).reason

# partial records (native scale): partitioned matrices only at the first and last step
sparse = scenario(tp=2, seed=5, steps=6, full_record_every=1000)
out["sparse_honest"] = judge(sparse, ref, observation(sparse, ref, thin=True)).status
out["sparse_full_where_thin"] = judge(sparse, ref, observation(sparse, ref)).reason

# the guard: a threshold the reference never reaches cannot ask the question
lazy = scenario(tp=2, seed=5, steps=6, max_norm=1000.0)
out["guard"] = judge(lazy, train(lazy, *build(lazy)), observation(lazy, train(lazy, *build(lazy)))).reason

# the artifacts: a record that runs code when unpickled, another rank's record, a short record
tmp = Path(TMP)
class Payload:
    def __reduce__(self):
        return (os.system, ("touch " + str(tmp / "pwned"),))
for label, records in [("pickle", {0: {"format": 1, "rank": 0, "world": 2, "states": Payload()}}),
                       ("other_rank", {0: {"format": 1, "rank": 1, "world": 2, "states": []}}),
                       ("short", {0: {"format": 1, "rank": 0, "world": 2, "states": [{}] * 5},
                                  1: {"format": 1, "rank": 1, "world": 2, "states": [{}] * 5}})]:
    folder = tmp / label
    (folder / "observe").mkdir(parents=True)
    (folder / "checkpoints" / "final").mkdir(parents=True)
    (folder / "metrics.jsonl").write_text("".join(json.dumps({"step": k, "loss": 1.0}) + "\\n" for k in range(6)))
    for rank in range(2):
        torch.save({"module": {k: piece(k, v, rank, 2) for k, v in ref.final.items()}},
                   folder / "checkpoints" / "final" / f"mp_rank_{rank:02d}_model_states.pt")
        torch.save(records.get(rank, records[0]), folder / "observe" / f"rank{rank}.pt")
    try:
        observe(sc, folder)
        out[label] = "accepted"
    except ArtifactError as err:
        out[label] = str(err)
out["pwned"] = (tmp / "pwned").exists()
print(json.dumps(out))
"""


def test_judge_rejects_each_tampering(runtime: Runtime, tmp_path: Path) -> None:
    script = SCRIPT.replace("GRADER", repr(str(CASE_DIR / "grader")), 2).replace("TMP", repr(str(tmp_path)), 1)
    script = script.replace("HARNESSLIB", repr(str(SOURCE_ROOT / "gym_trainfail" / "harnesslib")), 1)
    got: dict[str, Any] = _run_in_runtime(runtime, script, tmp_path)
    assert got["honest"][0] == "pass", got["honest"]
    assert got["nudge"][0] == "fail" and "blocks.0.ln.weight at the start of step 3" in got["nudge"][1]
    assert "(first seen at the start of step 3)" in got["nudge"][1]
    assert got["saved"][0] == "fail" and "in the saved checkpoint" in got["saved"][1]
    assert got["drift"][0] == "fail" and "leave the TP=1 reference trajectory" in got["drift"][1]
    assert "blocks.1.mlp.fc1.weight at the start of step 4" in got["drift"][1]
    assert got["synced_but_off"][0] == "fail" and "head.bias at the start of step 5" in got["synced_but_off"][1]
    assert got["missing"][0] == "fail" and "step 2 record of rank 0" in got["missing"][1]
    assert got["wrong_piece"][0] == "fail" and "checkpoint of rank 0" in got["wrong_piece"][1]
    assert "expected (32, 64)" in got["wrong_piece"][1]
    assert got["final_off"][0] == "fail" and "after the last step at head.weight" in got["final_off"][1]
    assert got["fp32_honest"] == "pass"
    assert "after the last step" in got["fp32_rounded"] and "tolerance 1e-05" in got["fp32_rounded"]
    assert got["sparse_honest"] == "pass"
    assert "step 1 record of rank 0" in got["sparse_full_where_thin"]
    assert got["guard"].startswith("scenario guard: the reference clips 0 of 6 steps")
    assert "refused by torch.load(weights_only=True)" in got["pickle"]
    assert got["other_rank"] == "rank0.pt: not a format-1 observer record of rank 0"
    assert got["short"] == "rank 0 record: 5 recorded states, expected 6"
    assert got["pwned"] is False
