"""TrainFail/TPClipGradNorm-v1's judge against hand-made observations (no training run).

An observation built from the judge's own one-rank reference (pieces cut by the README's
layout, the reference's norms and losses logged) passes; each check is then attacked on its
own: a replica that differs by one ulp, a model off the reference, a logged norm that leaves
out a rank's shards (or is missing while clipping is on), a loss off, a rank's piece of the
wrong shape, a scenario that would not clip; and the artifact readers refuse a checkpoint that
runs code when unpickled. The reference itself follows the README's rules (rows that wrap
around the file, ``clip_grad_norm_`` over the full model). Runs in the case runtime's python.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gym_trainfail.paths import SOURCE_ROOT
from gym_trainfail.runtimes import Runtime
from tests.test_case_sdk import _run_in_runtime

CASE_DIR = SOURCE_ROOT / "envs" / "tp_clip_grad_norm"

SCRIPT = """
import json, os, sys
from pathlib import Path
sys.path[:0] = [GRADER, GRADER + "/kit", HARNESSLIB]
import torch
from fixtures import make_inputs, write_inputs
from judge import Observation, judge, observe
from oracle import reference_run
from readers import ArtifactError, Step
from scenario import Scenario, split_dim

def piece(name, full, rank, tp):
    dim = split_dim(name)
    return full.clone() if dim is None else full.chunk(tp, dim)[rank].clone()

def scenario(**params):
    return Scenario.from_request({"name": "t", "kind": "failure", "devices": params.get("tp", 2), "params": params})

def observation(sc, ref, norms=None, losses=None, tamper=None):
    ranks = [{k: piece(k, v, r, sc.tp) for k, v in ref.params.items()} for r in range(sc.tp)]
    if tamper:
        tamper(ranks)
    norms = ref.norms if norms is None else norms
    losses = ref.losses if losses is None else losses
    return Observation([Step(k, {"loss": losses[k], "grad_norm": norms[k]}, 0.1, 1.0) for k in range(sc.steps)], ranks)

sc = scenario(tp=2, seed=3, steps=5, rows=150, batch_size=64)
ref = reference_run(sc, make_inputs(sc))
out = {"rows": [sc.batch_rows(k)[:2] + sc.batch_rows(k)[-1:] for k in (1, 2)]}

def ulp(ranks):
    ranks[1]["final_ln.bias"][0] = torch.nextafter(ranks[1]["final_ln.bias"][0], torch.tensor(9.0))
def off(ranks):
    for r in ranks:
        r["blocks.1.mlp.fc2.weight"] += 1e-4
def wrong_piece(ranks):
    ranks[1]["blocks.0.mlp.fc1.bias"] = torch.zeros(128)

out["honest"] = judge(sc, ref, observation(sc, ref)).status
for label, tamper in [("ulp", ulp), ("off", off), ("wrong_piece", wrong_piece)]:
    v = judge(sc, ref, observation(sc, ref, tamper=tamper))
    out[label] = [v.status, v.reason]
short = [n * 0.866 for n in ref.norms]    # a norm that leaves rank 1's shards out
out["norm"] = judge(sc, ref, observation(sc, ref, norms=short)).reason
out["norm_missing"] = judge(sc, ref, observation(sc, ref, norms=[None] * sc.steps)).reason
out["loss"] = judge(sc, ref, observation(sc, ref, losses=[x * 1.001 for x in ref.losses])).reason
unclipped = scenario(tp=2, seed=3, steps=5, max_norm=0.0)  # clipping off: the logged norm is still judged
ref0 = reference_run(unclipped, make_inputs(unclipped))
out["unclipped_honest"] = judge(unclipped, ref0, observation(unclipped, ref0)).status
short0 = [n * 0.866 for n in ref0.norms]
out["unclipped_norm"] = judge(unclipped, ref0, observation(unclipped, ref0, norms=short0)).reason
lazy = scenario(tp=2, seed=3, steps=5, max_norm=1000.0)
out["guard"] = judge(lazy, reference_run(lazy, make_inputs(lazy)), observation(sc, ref)).reason

# the reference is torch's own clip over the whole model, step by step
inputs = make_inputs(sc)
p = {k: v.clone().requires_grad_(True) for k, v in inputs.init.items()}
from oracle import predict
rows = torch.tensor(sc.batch_rows(0))
torch.nn.functional.mse_loss(predict(p, inputs.x[rows], sc.num_layers), inputs.y[rows]).backward()
out["norm0"] = abs(float(torch.nn.utils.get_total_norm([q.grad for q in p.values()])) - ref.norms[0])

# the artifacts: a checkpoint that runs code when loaded
tmp = Path(TMP)
class Payload:
    def __reduce__(self):
        return (os.system, ("touch " + str(tmp / "pwned"),))
folder = tmp / "t"
(folder / "checkpoints" / "final").mkdir(parents=True)
(folder / "metrics.jsonl").write_text("".join(json.dumps({"step": k, "loss": 1.0}) + "\\n" for k in range(5)))
torch.save({"module": {"x": Payload()}}, folder / "checkpoints" / "final" / "mp_rank_00_model_states.pt")
try:
    observe(sc, folder)
except ArtifactError as err:
    out["pickle"] = str(err)
out["pwned"] = (tmp / "pwned").exists()
files = write_inputs(sc, tmp / "inputs")
out["written_rows"] = torch.load(files.data, weights_only=True)["x"].shape[0]
print(json.dumps(out))
"""


def test_judge_rejects_each_tampering(runtime: Runtime, tmp_path: Path) -> None:
    script = SCRIPT.replace("GRADER", repr(str(CASE_DIR / "grader")), 2).replace("TMP", repr(str(tmp_path)), 1)
    script = script.replace("HARNESSLIB", repr(str(SOURCE_ROOT / "gym_trainfail" / "harnesslib")), 1)
    got: dict[str, Any] = _run_in_runtime(runtime, script, tmp_path)
    assert got["rows"] == [[64, 65, 127], [128, 129, 41]]  # 150 rows: batch 2 wraps in its middle
    assert got["written_rows"] == 150
    assert got["honest"] == "pass"
    assert got["ulp"][0] == "fail" and "replicated parameter final_ln.bias differs" in got["ulp"][1]
    assert got["off"][0] == "fail" and "at blocks.1.mlp.fc2.weight" in got["off"][1]
    assert got["wrong_piece"][0] == "fail" and "checkpoint of rank 1" in got["wrong_piece"][1]
    assert "blocks.0.mlp.fc1.bias has shape (128,), expected (64,)" in got["wrong_piece"][1]
    assert got["norm"].startswith("logged grad_norm is not the global norm of the full model's gradient: step 0")
    assert "max rel err 1.340e-01" in got["norm"]
    assert got["norm_missing"].startswith("logged grad_norm is not the global norm") and "None" in got["norm_missing"]
    assert got["loss"].startswith("logged loss differs from the TP=1 reference")
    assert got["unclipped_honest"] == "pass"
    assert "logged grad_norm is not the global norm" in got["unclipped_norm"]  # clipping off: still the README's norm
    assert got["guard"].startswith("scenario guard: the reference clips 0 of 5 steps")
    assert got["norm0"] < 1e-6
    assert "refused by torch.load(weights_only=True)" in got["pickle"] and got["pwned"] is False
