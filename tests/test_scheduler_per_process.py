"""TrainFail/SchedulerPerProcess-v1's judge against hand-made observations (no training run).

The judge's checks (every logged learning rate on the schedule stepped once per update, the
saved model and every logged loss on the specification's float64 run, well-formed outputs) are
attacked one at a time: an observation built from the judge's own reference passes, a correct
alternative repair's schedule passes, and each tampering fails with the check's reason. Runs in
the case runtime's python (torch and transformers live there, not in the gym's environment).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from gym_trainfail.paths import SOURCE_ROOT
from gym_trainfail.runtimes import Runtime

CASE_DIR = SOURCE_ROOT / "envs" / "scheduler_per_process"

SCRIPT = """
import json, os, sys, warnings
from pathlib import Path
sys.path[:0] = [GRADER, GRADER + "/kit", HARNESSLIB]
warnings.simplefilter("ignore")
import torch
from transformers import get_scheduler
from fixtures import make_inputs
from judge import Observation, judge
from oracle import reference_run
from readers import ArtifactError, Step, read_jsonl, read_state
from scenario import Scenario

sc = Scenario(name="t", kind="failure", devices=2, backend="gloo", processes=2, seed=5,
              lr_scheduler_type="cosine", warmup_steps=3, batches_per_process=6, epochs=2)
ref = reference_run(sc, make_inputs(sc))

def stepped(every, warmup, total, sc=sc):   # lr per update with the schedule stepped `every` times per update
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=sc.lr)
    s = get_scheduler(sc.lr_scheduler_type, opt, num_warmup_steps=warmup, num_training_steps=total)
    out = []
    for _ in range(sc.total_updates):
        out.append(opt.param_groups[0]["lr"])
        for _ in range(every):
            s.step()
    return out

def observation(lrs=None, losses=None, state=None, epochs=None, ref=ref, sc=sc):
    lrs = list(ref.lrs) if lrs is None else lrs
    losses = list(ref.losses) if losses is None else losses
    epochs = [k // sc.updates_per_epoch for k in range(sc.total_updates)] if epochs is None else epochs
    state = {k: v.float().double() for k, v in ref.params.items()} if state is None else state
    metrics = [Step(k, {"epoch": float(epochs[k]), "lr": lrs[k], "loss": losses[k]}, 0.1, 1.0)
               for k in range(sc.total_updates)]
    return Observation(metrics=metrics, state=state)

out = {}
def verdict(label, obs, sc=sc, ref=ref):
    v = judge(sc, ref, obs)
    out[label] = [v.status, v.reason]

verdict("honest", observation())
# accelerate's own recipe: warmup and length scaled by P, stepped P times per update
verdict("scaled_alternative", observation(lrs=stepped(2, 2 * sc.warmup_steps, 2 * sc.total_updates)))
verdict("per_process", observation(lrs=stepped(2, sc.warmup_steps, sc.total_updates)))
nudged = list(ref.lrs); nudged[7] *= 1 + 1e-4
verdict("lr_nudge", observation(lrs=nudged))
verdict("lr_missing", observation(lrs=[None] + list(ref.lrs[1:])))
verdict("epochs_off", observation(epochs=[0] * sc.total_updates))
state = {k: v.clone() for k, v in ref.params.items()}; state["fc2.weight"][3, 4] += 3e-5
verdict("param_off", observation(state=state))
state = {k: v.clone() for k, v in ref.params.items()}; state["head.bias"][0] = float("nan")
verdict("param_nan", observation(state=state))
state = {k: v.clone() for k, v in ref.params.items()}; del state["fc1.bias"]
verdict("param_missing", observation(state=state))
losses = list(ref.losses); losses[-1] *= 1.001
verdict("loss_off", observation(losses=losses))

# A does not divide the batches: U = ceil(10 / 3) = 4 updates an epoch, the last of one batch
ragged = Scenario(name="r", kind="failure", devices=2, backend="gloo", processes=2, seed=5,
                  lr_scheduler_type="linear", warmup_steps=2, gradient_accumulation_steps=3,
                  per_device_batch_size=4, batches_per_process=10, epochs=2)
out["ragged_windows"] = [list(ragged.window(k)) for k in range(ragged.total_updates)]
rref = reference_run(ragged, make_inputs(ragged))
verdict("ragged_honest", observation(ref=rref, sc=ragged), sc=ragged, ref=rref)
floor = Scenario(**{**ragged.__dict__, "batches_per_process": 9})  # a schedule sized floor(10 / 3) * 2 = 6 updates
verdict("ragged_floor", observation(lrs=stepped(1, 2, floor.total_updates, sc=ragged) , ref=rref, sc=ragged),
        sc=ragged, ref=rref)

tmp = Path(TMP)
lines = [json.dumps({"update": k, "lr": 0.1, "loss": 1.0}) for k in range(4)]
(tmp / "swapped.jsonl").write_text("\\n".join([lines[1], lines[0], *lines[2:]]))
(tmp / "bool.jsonl").write_text(json.dumps({"update": True, "lr": 0.1}))
for name in ("swapped", "bool"):
    try:
        read_jsonl(tmp / f"{name}.jsonl", index="update", fields=("lr",), count=4)
        out[name] = "accepted"
    except ArtifactError as err:
        out[name] = str(err)
class Payload:
    def __reduce__(self):
        return (os.system, ("touch " + str(tmp / "pwned"),))
torch.save({"fc1.weight": Payload()}, tmp / "model.pt")
try:
    read_state(tmp / "model.pt", 1 << 20)
    out["pickle"] = "accepted"
except ArtifactError as err:
    out["pickle"] = str(err)
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
        env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["honest"][0] == "pass", got["honest"]
    assert got["scaled_alternative"][0] == "pass", got["scaled_alternative"]
    assert got["per_process"][0] == "fail" and "update 1 used" in got["per_process"][1]
    assert got["lr_nudge"][0] == "fail" and "update 7 used" in got["lr_nudge"][1]
    assert got["lr_missing"][0] == "fail" and "update 0 used None" in got["lr_missing"][1]
    assert got["epochs_off"][0] == "fail" and "numbers epochs" in got["epochs_off"][1]
    assert got["param_off"][0] == "fail" and "at fc2.weight" in got["param_off"][1]
    assert got["param_nan"][0] == "fail" and "at head.bias (max |dparam| inf" in got["param_nan"][1]
    assert got["param_missing"][0] == "fail" and "missing=['fc1.bias']" in got["param_missing"][1]
    assert got["loss_off"][0] == "fail" and "logged loss differs" in got["loss_off"][1]
    # 10 batches of 8 rows (2 processes x 4) in windows of 3, 3, 3 and 1 batches, twice
    assert got["ragged_windows"] == [[0, 24], [24, 48], [48, 72], [72, 80]] * 2
    assert got["ragged_honest"][0] == "pass", got["ragged_honest"]
    assert got["ragged_floor"][0] == "fail" and "logged learning rate leaves" in got["ragged_floor"][1]
    assert got["swapped"] == "swapped.jsonl covers 4 records, expected update 0..3 in order"
    assert got["bool"] == "bool.jsonl line 1: 'update' is not an integer"
    assert "refused by torch.load(weights_only=True)" in got["pickle"]
    assert got["pwned"] is False
