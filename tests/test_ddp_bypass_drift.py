"""TrainFail/DDPBypassDrift-v1's judge against hand-made observations (no training run).

The judge's checks (the grader's starting point, replicas identical at every step, the
global-batch gradient, SGD replay, the saved model, well-formed observer records) are attacked
one at a time: an observation of correct training built from the judge's own oracle passes, and
each tampering fails with that check's reason. A scenario whose global batches wrap around the
end of the file passes only with the wrapped rows (a repair that slices the file without
wrapping fails), and the observer records are read from disk as adversarial files. Runs in the
case runtime's python (torch lives there, not in the gym's environment).
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
GRADER, HARNESSLIB, TMP = sys.argv[1:4]
sys.path[:0] = [GRADER, GRADER + "/kit", HARNESSLIB]
import torch
from fixtures import make_windows
from judge import Observation, RankRecord, compare, observe
from oracle import objective_gradient
from readers import ArtifactError, Step
from scenario import Scenario

def scenario(**params):
    request = {"name": "t", "kind": "failure", "devices": 2, "params": {"seed": 5, "steps": 5, **params}}
    return Scenario.from_request(request)

def honest(sc, start=None, local=0.0, rows=None):
    # correct data-parallel SGD in float32; `local` adds a rank-dependent term to every gradient;
    # `rows` replaces the judge's dataset (a pipeline that read other rows)
    data = make_windows(sc)
    if rows is not None:
        data = type(data)(data.init, data.x[rows], data.x_view[rows], data.y[rows])
    ranks = []
    for r in range(sc.devices):
        p = {k: v.clone() for k, v in (data.init if start is None else start).items()}
        params, grads = [], []
        for k in range(sc.steps):
            g = objective_gradient(sc, data, p, k)
            g = {n: t.float() + local * r for n, t in g.items()}
            params.append({n: t.clone() for n, t in p.items()})
            grads.append(g)
            p = {n: t.add(g[n], alpha=-sc.lr) for n, t in p.items()}
        ranks.append(RankRecord(params=params, grads=grads, final=p))
    return ranks

def observation(sc, ranks):
    metrics = [Step(k, {"loss": 1.0}, 0.1, 1.0) for k in range(sc.steps)]
    return Observation(metrics=metrics, saved={k: v.clone() for k, v in ranks[0].final.items()}, ranks=ranks)

out = {}
def verdict(label, sc, obs):
    v = compare(sc, obs)
    out[label] = [v.status, v.reason]

sc = scenario()
init = make_windows(sc).init
verdict("honest", sc, observation(sc, honest(sc)))
verdict("local", sc, observation(sc, honest(sc, local=1e-3)))
obs = observation(sc, honest(sc)); obs.ranks[1].params[3]["norm.bias"][0] += 1e-7
verdict("nudge", sc, obs)
obs = observation(sc, honest(sc))
for rec in obs.ranks:
    rec.grads[2]["proj_in.bias"].mul_(1.01)
verdict("grad_off", sc, obs)
ranks = honest(sc)
for rec in ranks:
    rec.final["head.bias"] += 1e-3
verdict("replay", sc, observation(sc, ranks))
verdict("init", sc, observation(sc, honest(sc, start={k: v + 1e-3 for k, v in init.items()})))
obs = observation(sc, honest(sc)); obs.saved["head.bias"] += 1e-3
verdict("saved", sc, obs)
obs = observation(sc, honest(sc)); del obs.ranks[0].params[2]["proj_in.weight"]
verdict("missing", sc, obs)

# 5 steps of 64 rows over a 150-row file: steps 2 and 4 straddle its end
wrap = scenario(rows=150)
verdict("wrap_honest", wrap, observation(wrap, honest(wrap)))
sliced = torch.arange(5 * 64).clamp(max=149)  # the file read without wrapping (rows past the end lost)
verdict("wrap_sliced", wrap, observation(wrap, honest(wrap, rows=sliced)))
out["wrap_rows"] = [int(r) for r in ((torch.arange(64) + 2 * 64) % 150)[[0, 21, 22, 63]]]

# the artifacts on disk, as adversarial files
tmp = Path(TMP)
def folder(label, records, extra=None):
    root = tmp / label
    (root / "observe").mkdir(parents=True)
    (root / "checkpoints").mkdir()
    (root / "metrics.jsonl").write_text("".join(json.dumps({"step": k, "loss": 1.0}) + "\\n" for k in range(sc.steps)))
    torch.save(honest(sc)[0].final, root / "checkpoints" / "final.pt")
    for r, rec in enumerate(records):
        torch.save(rec, root / "observe" / f"rank{r}.pt")
    return root
good = [{"format": 1, "rank": r, "world": 2, "params": rec.params, "grads": rec.grads, "final": rec.final}
        for r, rec in enumerate(honest(sc))]
class Payload:
    def __reduce__(self):
        return (os.system, ("touch " + str(tmp / "pwned"),))
cases = {
    "disk_honest": good,
    "pickle": [{"format": 1, "rank": 0, "world": 2, "params": Payload()}, good[1]],
    "rank": [good[0], {**good[1], "rank": 0}],
    "count": [good[0], {**good[1], "params": good[1]["params"][:4]}],
    "world": [good[0], {**good[1], "world": 4}],
    "no_rank1": [good[0]],
}
for label, records in cases.items():
    try:
        seen = observe(sc, folder(label, records))
        out[label] = compare(sc, seen).status
    except ArtifactError as err:
        out[label] = str(err)
out["pwned"] = (tmp / "pwned").exists()
print(json.dumps(out))
"""


#: What the judge says about each attack: its status and a part of its reason (or a reader's error).
EXPECTED = {
    "honest": ("pass", ""),
    "local": ("fail", "differs across data-parallel ranks at the start of step 1"),
    "nudge": ("fail", "norm.bias differs across data-parallel ranks at the start of step 3"),
    "grad_off": ("fail", "at proj_in.bias on rank 0 at step 2"),
    "replay": ("fail", "at head.bias on rank 0 after step 4"),
    "init": ("fail", "initial weights"),
    "saved": ("fail", "saved checkpoint"),
    "missing": ("fail", "records unusable"),
    "wrap_honest": ("pass", ""),
    "wrap_sliced": ("fail", "not the global-batch gradient"),
}


def test_judge_rejects_each_tampering(runtime: Runtime, tmp_path: Path) -> None:
    (tmp_path / "attacks.py").write_text(SCRIPT)
    grader, harnesslib = CASE_DIR / "grader", SOURCE_ROOT / "gym_trainfail" / "harnesslib"
    argv = [str(runtime.bin_dir / "python"), str(tmp_path / "attacks.py"), str(grader), str(harnesslib), str(tmp_path)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, env={"OMP_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    for label, (status, reason) in EXPECTED.items():
        assert got[label][0] == status and reason in got[label][1], (label, got[label])
    assert got["wrap_rows"] == [128, 149, 0, 41], "step 2 reads the file's last 22 rows, then its first 42"
    assert got["disk_honest"] == "pass"
    assert "refused by torch.load(weights_only=True)" in got["pickle"]
    assert got["rank"] == "rank1.pt: not a format-1 observer record of rank 1"
    assert got["count"] == "rank1.pt params: 4 recorded states, expected 5"
    assert got["world"] == "rank1.pt: recorded in a job of 4 ranks, not 2"
    assert got["no_rank1"].startswith("rank1.pt: "), got["no_rank1"]
    assert got["pwned"] is False, "nothing in a record ran"
