"""TrainFail/ResumeSkipBatches-v1's judge against hand-made artifacts (no training run).

Artifacts built from the judge's own uninterrupted reference pass; each tampering fails with
its check's reason: two micro-batches swapped on one rank, a row that is not in the table, a
resumed launch that replays from step 0, one window's micro-batches in another order on both
ranks (the same gradient, another data order), a leftover micro-batch trained after an epoch's
end, a saved model slightly off, a pickle that runs code, a linked checkpoint, an extra tensor,
a missing record and a record of another rank. Also: the scenario type refuses interruption
points that do not rise, and the reference's epochs are whole windows of a rank's shard. Runs in
the case runtime's python (torch lives there, not in the gym's environment).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from gym_trainfail.paths import SOURCE_ROOT
from gym_trainfail.runtimes import Runtime

GRADER = SOURCE_ROOT / "envs" / "resume_skip_batches" / "grader"
HARNESSLIB = SOURCE_ROOT / "gym_trainfail" / "harnesslib"

SCRIPT = r"""
import json, os, sys
from pathlib import Path
sys.path[:0] = [GRADER, GRADER + "/kit", HARNESSLIB]
import torch
import judgekit
from fixtures import make_inputs
from judge import KIT
from scenario import Scenario
from torch.utils.data import DistributedSampler
from uninterrupted import uninterrupted, window_order

sc = Scenario.from_request({"name": "t", "kind": "failure", "devices": 2, "params": {
    "accumulation": 3, "rows": 200, "micro_batch_size": 4, "max_steps": 9, "interrupts": [2, 5]}})
inputs = make_inputs(sc)
stops = [stop for _, stop in sc.segments]
ref = uninterrupted(sc, inputs, set(stops))
root = Path(TMP)
RUN = {"exit_code": 0, "timed_out": False, "oom_killed": False, "output_tail": ""}
out = {}

def rows(micro):
    return torch.stack([inputs.features[i] if i < sc.rows else torch.full((sc.input_dim,), 0.123) for i in micro])

def build(label, tamper=None):
    folder = root / label / "t"
    order = {(s, r): ref.consumed(sc, s, r) for s in range(len(sc.segments)) for r in range(2)}
    states = {k: {n: v.float().clone() for n, v in ref.states[k].items()} for k in stops}
    ranks = {(s, r): r for s in range(len(sc.segments)) for r in range(2)}
    if tamper:
        tamper(order, states, ranks, folder)
    for (s, r), forwards in order.items():
        path = folder / "observe" / f"seg{s}" / f"rank{r}.pt"
        if forwards is not None and not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            torch.save({"format": 1, "rank": ranks[(s, r)], "world": 2, "forwards": [rows(m) for m in forwards]}, path)
    for k, state in states.items():
        path = folder / f"checkpoint-{k}" / "model.pt"
        if not path.exists() and not path.is_symlink():
            path.parent.mkdir(parents=True, exist_ok=True)
            torch.save(state, path)
    (folder / "timings.json").write_text(json.dumps({"returncode": 0}))
    (folder / "job.log").write_text("done\n")
    verdict, _ = judgekit.judge_scenario(KIT, sc, root / label, RUN)
    out[label] = [verdict.status, verdict.reason]

def swap(order, states, ranks, folder):
    f = order[(1, 1)]; f[0], f[1] = f[1], f[0]
def foreign(order, states, ranks, folder):
    order[(2, 0)][-1] = order[(2, 0)][-1][:-1] + [10_000]
def replay(order, states, ranks, folder):
    order[(1, 0)] = order[(0, 0)] + order[(1, 0)]
def in_window(order, states, ranks, folder):
    for r in range(2):
        f = order[(1, r)]; f[2], f[0] = f[0], f[2]
def leftover(order, states, ranks, folder):
    # rank 0's 25th micro-batch of epoch 0 (no window takes it), trained after step 8 ends the epoch
    sampler = DistributedSampler(range(sc.rows), num_replicas=2, rank=0, shuffle=True, seed=sc.shuffle_seed,
                                 drop_last=True)
    sampler.set_epoch(0)
    order[(2, 0)].insert(9, list(sampler)[96:100])
def off(order, states, ranks, folder):
    states[9]["fc1.weight"] *= 1.001
def pickled(order, states, ranks, folder):
    class Payload:
        def __reduce__(self):
            return (os.system, ("touch " + str(root / "pwned"),))
    p = folder / "checkpoint-5" / "model.pt"; p.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"fc1.weight": Payload()}, p)
def linked(order, states, ranks, folder):
    p = folder / "checkpoint-2" / "model.pt"; p.parent.mkdir(parents=True, exist_ok=True)
    torch.save(states[2], root / "elsewhere.pt"); p.symlink_to(root / "elsewhere.pt")
def extra(order, states, ranks, folder):
    states[9]["fc3.weight"] = torch.zeros(1)
def missing(order, states, ranks, folder):
    order[(2, 1)] = None
def other_rank(order, states, ranks, folder):
    ranks[(0, 1)] = 0

for label, tamper in [("honest", None), ("swap", swap), ("foreign", foreign), ("replay", replay),
                      ("in_window", in_window), ("leftover", leftover), ("off", off), ("pickled", pickled),
                      ("linked", linked), ("extra", extra), ("missing", missing), ("other_rank", other_rank)]:
    build(label, tamper)
out["pwned"] = (root / "pwned").exists()
try:
    Scenario.from_request({"name": "x", "kind": "failure", "devices": 2, "params": {"interrupts": [6, 6]}})
    out["refused"] = "accepted"
except ValueError as err:
    out["refused"] = str(err)
# 200 rows on 2 ranks: shards of 100 rows, 25 micro-batches of 4, 8 windows of 3, one left over
order = window_order(sc)
out["epoch"] = [sc.micro_batches_per_rank, sc.updates_per_epoch, order[8][0][0] == order[0][0][0]]
print(json.dumps(out))
"""


def test_judge_rejects_each_tampering(runtime: Runtime, tmp_path: Path) -> None:
    script = f"GRADER, HARNESSLIB, TMP = {str(GRADER)!r}, {str(HARNESSLIB)!r}, {str(tmp_path)!r}\n" + SCRIPT
    python = str(runtime.bin_dir / "python")
    done = subprocess.run([python, "-"], input=script, capture_output=True, text=True, timeout=300,
                          env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"})  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["honest"][0] == "pass", got["honest"]
    first = "launch 1 (resumed from step 2), rank {}, micro-batch 0 (step 3)"
    assert got["swap"][0] == "fail" and first.format(1) in got["swap"][1]
    assert got["foreign"][0] == "fail" and "a row that is not in the table" in got["foreign"][1]
    assert got["replay"][0] == "fail" and first.format(0) in got["replay"][1]
    assert got["in_window"][0] == "fail" and first.format(0) in got["in_window"][1]
    after_epoch = "launch 2 (resumed from step 5), rank 0, micro-batch 9 (step 9)"
    assert got["leftover"][0] == "fail" and after_epoch in got["leftover"][1]
    assert got["off"][0] == "fail" and "checkpoint-9 is not the uninterrupted run's model" in got["off"][1]
    assert "tolerance 0.0001" in got["off"][1]
    assert got["pickled"][0] == "fail" and "refused by torch.load(weights_only=True)" in got["pickled"][1]
    assert got["linked"][0] == "fail" and "model.pt: Too many levels of symbolic links" in got["linked"][1]
    assert got["extra"][0] == "fail" and "extra=['fc3.weight']" in got["extra"][1]
    assert got["missing"][0] == "fail" and "rank1.pt: No such file or directory" in got["missing"][1]
    assert got["other_rank"][0] == "fail" and "not a format-1 observer record of rank 1" in got["other_rank"][1]
    assert got["pwned"] is False
    assert "must rise strictly" in got["refused"]
    assert got["epoch"] == [25, 8, False], "an epoch is whole windows; the next one reshuffles"
