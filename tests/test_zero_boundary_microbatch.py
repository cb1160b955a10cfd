"""TrainFail/ZeroBoundaryMicrobatch-v1's judge against hand-made observations (no training run).

The judge's checks (ZeRO partition layout, the grader's starting point, SGD replay, the saved
model, the global-batch gradient, well-formed observer records) are attacked one at a time: an
observation of correct training built from the judge's own oracle passes, and each tampering
fails with that check's reason. The documented options the grader moves away from their shipped
values are each checked to change what the judge expects: an fp32 model starts from the
unrounded weights, a clipping threshold clips the reference (an unclipped update fails), and a
file shorter than the run wraps around (an update computed without wrapping fails). Runs in the
case runtime's python (torch lives there, not in the gym's environment).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from gym_trainfail.paths import SOURCE_ROOT
from gym_trainfail.runtimes import Runtime

CASE_DIR = SOURCE_ROOT / "envs" / "zero1_boundary_microbatch"

SCRIPT = """
import dataclasses, json, os, sys
from pathlib import Path
sys.path[:0] = [GRADER, GRADER + "/kit", HARNESSLIB]
import torch
from fixtures import make_inputs
from judge import Observation, compare, observe
from oracle import computed_weights, flatten_state, step_gradient
from readers import ArtifactError, Step
from scenario import Scenario

def scenario(**params):
    base = {"seed": 5, "steps": 4, "micro_batch": 4, "accumulation": 4}
    return Scenario.from_request({"name": "t", "kind": "failure", "devices": 2, "params": {**base, **params}})

def split(sc, flat):
    n = sc.parameter_count
    pad = (-n) % (2 * sc.devices)
    size = (n + pad) // sc.devices
    full = torch.cat([flat, torch.zeros(pad)])
    return [full[r * size:(r + 1) * size].clone() for r in range(sc.devices)]

def honest(sc, start=None, scale=1.0, local=0.0, expect=None):
    # correct ZeRO-1 training in fp32 masters; `expect` computes the applied gradient instead
    # of the judge's own reference (a pipeline computing something else)
    inputs = make_inputs(sc)
    theta = computed_weights(sc, flatten_state(sc, inputs.init)).float() if start is None else start
    params, grads = [[] for _ in range(sc.devices)], [[] for _ in range(sc.devices)]
    for k in range(sc.steps):
        g = (scale * (expect or step_gradient)(sc, inputs, k, theta)).float()
        gp = split(sc, g)
        gp[1] += local  # a rank-local term on rank 1's partition
        for r, (p, q) in enumerate(zip(split(sc, theta), gp)):
            params[r].append(p); grads[r].append(q)
        theta = theta.clone().add_(torch.cat(gp)[:sc.parameter_count], alpha=-sc.lr)
    names = [name for name, _ in sc.shapes]
    offsets, state = 0, {}
    for name, shape in sc.shapes:
        size = torch.Size(shape).numel()
        state[name] = theta[offsets:offsets + size].view(shape).clone()
        offsets += size
    metrics = [Step(k, {}, 0.1, 1.0) for k in range(sc.steps)]
    return Observation(metrics=metrics, saved=state, params=params, grads=grads, finals=split(sc, theta))

out = {}
def verdict(label, sc, obs):
    v = compare(sc, obs)
    out[label] = [v.status, v.reason]

sc = scenario()
verdict("honest", sc, honest(sc))
verdict("local", sc, honest(sc, local=1e-2))
verdict("scaled", sc, honest(sc, scale=1.05))
obs = honest(sc); obs.params[0][2][7] += 1e-5
verdict("replay", sc, obs)
verdict("init", sc, honest(sc, start=flatten_state(sc, make_inputs(sc).init).float()))
obs = honest(sc); obs.saved["net.4.bias"] += 1e-4
verdict("saved", sc, obs)
obs = honest(sc)
for r in range(sc.devices):
    obs.params[r] = [torch.cat([t, torch.zeros(8)]) for t in obs.params[r]]
    obs.grads[r] = [torch.cat([t, torch.zeros(8)]) for t in obs.grads[r]]
    obs.finals[r] = torch.cat([obs.finals[r], torch.zeros(8)])
verdict("layout", sc, obs)
obs = honest(sc); obs.grads[0][1][0] = float("nan")
verdict("nan", sc, obs)

# precision.bf16: false -- the optimizer holds the unrounded weights; bf16-rounded ones fail
fp32 = scenario(bf16=False, grad_rtol=1e-4)
verdict("fp32_honest", fp32, honest(fp32))
rounded = flatten_state(fp32, make_inputs(fp32).init).to(torch.bfloat16).float()
verdict("fp32_rounded_start", fp32, honest(fp32, start=rounded))
# gradient clipping engages: the clipped update passes, the unclipped one fails
clip = scenario(gradient_clipping=0.3)
unclipped = Scenario(**{**dataclasses.asdict(clip), "gradient_clipping": 0.0})
verdict("clip_honest", clip, honest(clip))
verdict("clip_ignored", clip, honest(clip, expect=lambda s, i, k, t: step_gradient(unclipped, i, k, t)))
out["clip_norms"] = [round(float(step_gradient(unclipped, make_inputs(clip), 0, computed_weights(
    clip, flatten_state(clip, make_inputs(clip).init))).norm()), 3)]
# a 40-row file under 32-row global batches: step 1 reads rows 32..39 then 0..23
wrap = scenario(rows=40)
flat_rows = Scenario(**{**dataclasses.asdict(wrap), "rows": 0})
def no_wrap(s, inputs, k, theta):  # the rows of a file read without wrapping (the last row repeated)
    rows = torch.arange(k * s.global_batch, (k + 1) * s.global_batch).clamp(max=39)
    inputs = type(inputs)(inputs.init, inputs.x[rows].repeat(s.steps, 1), inputs.y[rows].repeat(s.steps, 1))
    return step_gradient(flat_rows, inputs, 0, theta)
verdict("wrap_honest", wrap, honest(wrap))
verdict("wrap_sliced", wrap, honest(wrap, expect=no_wrap))

tmp = Path(TMP)
class Payload:
    def __reduce__(self):
        return (os.system, ("touch " + str(tmp / "pwned"),))
good = honest(sc)
def record(rank, params, grads, final):
    return {"format": 1, "rank": rank, "world": 2, "params": params, "grads": grads, "final": final}
def folder(label, records):
    root = tmp / label
    (root / "observe").mkdir(parents=True)
    (root / "final").mkdir()
    (root / "metrics.jsonl").write_text("".join(json.dumps({"step": k}) + "\\n" for k in range(sc.steps)))
    torch.save(good.saved, root / "final" / "model.pt")
    for r, rec in enumerate(records):
        torch.save(rec, root / "observe" / f"rank{r}.pt")
    return root
rank = [record(r, good.params[r], good.grads[r], good.finals[r]) for r in range(2)]
cases = {
    "disk_honest": rank,
    "pickle": [{"format": 1, "rank": 0, "params": Payload()}, rank[1]],
    "wrong_rank": [rank[0], {**rank[1], "rank": 0}],
    "short": [rank[0], {**rank[1], "params": good.params[1][:3]}],
    "float64": [rank[0], {**rank[1], "params": [t.double() for t in good.params[1]]}],
}
for label, records in cases.items():
    try:
        out[label] = compare(sc, observe(sc, folder(label, records))).status
    except ArtifactError as err:
        out[label] = str(err)
out["pwned"] = (tmp / "pwned").exists()
print(json.dumps(out))
"""


#: (attack, the judge's status, a part of its reason): every check and every option away from its
#: shipped value, attacked through the judge's own entry point.
VERDICTS = [
    ("honest", "pass", "every step applied the global-batch gradient"),
    ("local", "fail", "away from the gradient of the mean loss"),
    ("scaled", "fail", "away from the gradient of the mean loss"),
    ("replay", "fail", "did not apply its own recorded gradient"),
    ("init", "fail", "initial weights"),
    ("saved", "fail", "final/model.pt is not the weights"),
    ("layout", "fail", "not ZeRO partitions"),
    ("nan", "fail", "step 1 did not apply its own recorded gradient"),
    ("fp32_honest", "pass", ""),
    ("fp32_rounded_start", "fail", "initial weights"),
    ("clip_honest", "pass", ""),
    ("clip_ignored", "fail", "away from the gradient"),
    ("wrap_honest", "pass", ""),
    ("wrap_sliced", "fail", "away from the gradient"),
]
#: What reading hostile record files gives: the verdict of a good set, or the reader's error.
READS = {
    "disk_honest": "pass",
    "wrong_rank": "rank1.pt: not a format-1 observer record of rank 1",
    "short": "rank1.pt weights: does not hold 4 steps",
    "float64": "rank1.pt weights step 0 is not a flat float32 tensor",
}


def test_judge_rejects_each_tampering(runtime: Runtime, tmp_path: Path) -> None:
    paths = {"GRADER": CASE_DIR / "grader", "TMP": tmp_path, "HARNESSLIB": SOURCE_ROOT / "gym_trainfail" / "harnesslib"}
    script = SCRIPT
    for name, path in paths.items():
        script = script.replace(name, repr(str(path)))
    done = subprocess.run([str(runtime.bin_dir / "python"), "-"], input=script, capture_output=True, text=True,
                          timeout=300, env={"OMP_NUM_THREADS": "1"})  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    wrong = [
        (label, got[label]) for label, status, part in VERDICTS if got[label][0] != status or part not in got[label][1]
    ]
    assert not wrong, wrong
    assert {label: got[label] for label in READS} == READS
    assert got["clip_norms"][0] > 0.3, "the threshold engages in the clipping check"
    assert "refused by torch.load(weights_only=True)" in got["pickle"]
    assert got["pwned"] is False, "nothing in a record ran"
