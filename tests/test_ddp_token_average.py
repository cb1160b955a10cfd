"""TrainFail/DDPTokenAverage-v1's judge against hand-made artifacts (no training run).

Records built from the judge's own oracle and optimizer replay (an epoch whose last window is cut
short, and a clipped scenario) pass; each tampering fails with its check's reason: replicas that
drift, rank gradients that differ, a row that is not a scenario record, a window missing a
micro-batch, every gradient 10 % off but chained consistently (the oracle check), the true
gradient reported beside parameters that moved otherwise (the chain), a saved model other than the
recorded one, an unclipped gradient where the scenario clips, a record that runs code when
unpickled, a parameter missing from the saved model, and records of the wrong rank. Runs in the
case runtime's python (torch and Transformers live there).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from gym_trainfail.paths import SOURCE_ROOT
from gym_trainfail.runtimes import Runtime

GRADER = SOURCE_ROOT / "envs" / "ddp_token_average" / "grader"
HARNESSLIB = SOURCE_ROOT / "gym_trainfail" / "harnesslib"

SCRIPT = r"""
import json, os, sys
from pathlib import Path
sys.path[:0] = [GRADER, GRADER + "/kit", HARNESSLIB]
import torch
import judgekit
from safetensors.torch import save_file
from judge import KIT
from oracle import Chain, Oracle
from scenario import Scenario
from sftdata import generate

root = Path(TMP)
RUN = {"exit_code": 0, "timed_out": False, "oom_killed": False, "output_tail": ""}
out = {}

def scenario(**params):
    base = {"world_size": 2, "grad_accum": 2, "per_device_batch_size": 2, "steps": 3, "records": 20,
            "max_grad_norm": 0.0, "recipe": "bimodal", "data_seed": 5}
    return Scenario.from_request({"name": "t", "kind": "failure", "devices": 2, "params": {**base, **params}})

def honest(sc, scale=1.0, clip=True, noise=0.0):
    # noise: the parameters move by other gradients than the (true) ones recorded
    # three updates of the oracle's gradient, the parameters chained by the Trainer's optimizer
    torch.manual_seed(0)  # the same initial parameters on every call
    oracle, records = Oracle(sc), generate(sc)
    params = {n: p.detach().float().clone() for n, p in oracle.model.named_parameters()}
    chain, ranks, taken = Chain(sc, oracle), [{"params": [], "grads": [], "rows": []} for _ in range(2)], 0
    for k in range(sc.steps):
        batch = [records[(taken + i) % len(records)] for i in range(sc.rows(k))]  # epochs wrap around
        taken += sc.rows(k)
        flat, _ = oracle.gradient(params, batch, sc.max_grad_norm if clip else 0.0)
        grads, moved, at = {}, {}, 0
        for name, shape in oracle.shapes.items():
            size = int(torch.tensor(shape).prod())
            grad = flat[at:at + size].reshape(shape) * scale
            grads[name] = grad.float()
            moved[name] = (grad + noise * grad.abs().mean() * torch.randn(shape, dtype=grad.dtype)).float()
            at += size
        for r, rank in enumerate(ranks):
            mine = batch[r::2]
            width = max(len(x.input_ids) for x in mine)
            rows = torch.tensor([list(x.input_ids) + [0] * (width - len(x.input_ids)) for x in mine])
            rank["params"].append({n: v.clone() for n, v in params.items()})
            rank["grads"].append({n: v.clone() for n, v in grads.items()})
            rank["rows"].append([rows])
        params = chain.step(params, moved)
    for rank in ranks:
        rank["final"] = {n: v.clone() for n, v in params.items()}
    return ranks

def write(label, sc, ranks, saved=None, raw=None):
    folder = root / label / "t"
    (folder / "records").mkdir(parents=True)
    for r, rank in enumerate(ranks):
        record = raw if raw is not None and r == 1 else {"format": 1, "rank": r, "world": 2, **rank}
        torch.save(record, folder / "records" / f"rank{r}.pt")
    model = dict(saved if saved is not None else ranks[0]["final"])
    model["embed_out.weight"] = model.pop("lm_head.weight")  # the checkpoint's name for it
    save_file({n: v.contiguous() for n, v in model.items()}, str(folder / "model.safetensors"))
    (folder / "timings.json").write_text(json.dumps({"returncode": 0}))
    (folder / "job.log").write_text("done\n")
    verdict, _ = judgekit.judge_scenario(KIT, sc, root / label, RUN)
    out[label] = [verdict.status, verdict.reason]

sc = scenario()
out["windows"] = [sc.rows(k) for k in range(3)]
base = honest(sc)
def fresh():
    return [{k: ([dict(s) for s in v] if k in ("params", "grads") else (dict(v) if k == "final" else list(v)))
             for k, v in rank.items()} for rank in base]
write("honest", sc, fresh())
drift = fresh(); drift[1]["params"][1] = {n: v + 1e-6 for n, v in drift[1]["params"][1].items()}
write("drift", sc, drift)
spread = fresh(); spread[1]["grads"][0] = {n: v * 1.01 for n, v in spread[1]["grads"][0].items()}
write("spread", sc, spread)
foreign = fresh(); foreign[0]["rows"][2] = [torch.tensor([[1, 4, 9, 9, 9, 3, 9, 2]])]
write("foreign", sc, foreign)
short = fresh(); short[1]["rows"][1] = [short[1]["rows"][1][0][:1]]
write("short", sc, short)
write("scaled", sc, honest(sc, scale=1.1))
write("swapped", sc, honest(sc, noise=1.0))  # AdamW would hide a uniform scale: noise moves it
write("saved", sc, fresh(), saved={n: v * 1.0001 for n, v in base[0]["final"].items()})
missing = dict(base[0]["final"]); missing.pop("gpt_neox.embed_in.weight")
write("missing", sc, fresh(), saved=missing)
class Payload:
    def __reduce__(self):
        return (os.system, ("touch " + str(root / "pwned"),))
write("pickled", sc, fresh(), raw={"format": 1, "rank": 1, "world": 2, "params": Payload()})
write("other_rank", sc, fresh(), raw={"format": 1, "rank": 0, "world": 2, **base[1]})
clipped = scenario(max_grad_norm=0.2, records=16)
write("clipped", clipped, honest(clipped))
write("unclipped", clipped, honest(clipped, clip=False))
out["pwned"] = (root / "pwned").exists()
print(json.dumps(out))
"""


def test_judge_rejects_each_tampering(runtime: Runtime, tmp_path: Path) -> None:
    script = f"GRADER, HARNESSLIB, TMP = {str(GRADER)!r}, {str(HARNESSLIB)!r}, {str(tmp_path)!r}\n" + SCRIPT
    env = {"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([str(runtime.bin_dir / "python"), "-"], input=script, capture_output=True, text=True,
                          timeout=600, env=env)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["windows"] == [8, 8, 4], "5 micro-batches per rank: windows of 2, 2 and 1"
    assert got["honest"][0] == "pass", got["honest"]
    assert got["clipped"][0] == "pass", got["clipped"]
    assert got["drift"][0] == "fail" and "ranks hold different parameters" in got["drift"][1]
    assert got["spread"][0] == "fail" and "ranks hold different gradients" in got["spread"][1]
    assert got["foreign"][0] == "fail" and "update 3 consumed 3 rows (1 not scenario records" in got["foreign"][1]
    assert got["short"][0] == "fail" and "update 2 consumed 5 rows" in got["short"][1]
    assert got["short"][1].endswith("expected 8: batch x ranks x the window's 2 micro-batches")
    assert got["scaled"][0] == "fail" and "the gradient is not that of the mean" in got["scaled"][1]
    assert got["swapped"][0] == "fail" and "update 1: the parameters after it are not one step" in got["swapped"][1]
    assert got["saved"][0] == "fail" and "the saved model (model.safetensors) is not" in got["saved"][1]
    assert got["missing"][0] == "fail" and "missing=['gpt_neox.embed_in.weight']" in got["missing"][1]
    assert got["unclipped"][0] == "fail" and "clipped to global norm 0.2" in got["unclipped"][1]
    assert got["pickled"][0] == "fail" and "refused by torch.load(weights_only=True)" in got["pickled"][1]
    assert got["other_rank"][0] == "fail" and "not a format-1 observer record of rank 1" in got["other_rank"][1]
    assert got["pwned"] is False
