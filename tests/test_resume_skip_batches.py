"""TrainFail/ResumeSkipBatches-v0's judge against hand-made artifacts (no training run).

An artifact folder built from the judge's own uninterrupted reference passes; each tampering
(two micro-batches swapped on one rank, a row that is not in the table, a truncated record, a
resumed launch that replays from step 0, a saved model slightly off, a pickle that runs code, a
linked checkpoint, an extra tensor, a missing record) fails with its check's reason. Runs in the
case runtime's python (torch lives there, not in the gym's environment).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from gym_trainfail.paths import SOURCE_ROOT
from gym_trainfail.runtimes import Runtime

CASE_DIR = SOURCE_ROOT / "envs" / "resume_skip_batches"

SCRIPT = """
import json, os, shutil, struct, sys
from pathlib import Path
sys.path[:0] = [GRADER, GRADER + "/kit"]
import torch
from fixtures import make_inputs
from judge import judge_scenario
from reference_run import expected_forwards_all, reference
from scenario import Scenario

sc = Scenario(name="t", kind="failure", devices=2, backend="gloo", accumulation=3, rows=200,
              micro_batch_size=4, max_steps=9, interrupts=(2, 5))
inputs = make_inputs(sc)
stops = [stop for _, stop in sc.segments]
ref = reference(sc, inputs, set(stops))
root = Path(TMP)

def record(path, forwards):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:
        for micro in forwards:
            x = torch.stack([inputs.features[i] if i < sc.rows else torch.full((sc.input_dim,), 0.123) for i in micro])
            fh.write(struct.pack("<ii", *x.shape))
            fh.write(x.numpy().astype("<f4").tobytes())

def build(label, tamper=None):
    folder = root / label
    order = {(s, r): expected_forwards_all(ref, sc, s, r) for s in range(len(sc.segments)) for r in range(2)}
    states = {k: {n: v.float().clone() for n, v in ref.states[k].items()} for k in stops}
    if tamper:
        tamper(order, states, folder)
    for (s, r), forwards in order.items():
        if forwards is not None:
            record(folder / "observe" / f"seg{s}" / f"rank{r}.bin", forwards)
    for k, state in states.items():
        path = folder / f"checkpoint-{k}" / "model.pt"
        if not path.exists() and not path.is_symlink():
            path.parent.mkdir(parents=True, exist_ok=True)
            torch.save(state, path)
    v = judge_scenario(sc, folder)
    return [v.status, v.reason]

def swap(order, states, folder):
    f = order[(1, 1)]; f[0], f[1] = f[1], f[0]
def foreign_row(order, states, folder):
    order[(2, 0)][-1] = order[(2, 0)][-1][:-1] + [10_000]
def replay(order, states, folder):
    order[(1, 0)] = order[(0, 0)] + order[(1, 0)]
def truncated(order, states, folder):
    record(folder / "observe" / "seg0" / "rank1.bin", order[(0, 1)])
    p = folder / "observe" / "seg0" / "rank1.bin"; p.write_bytes(p.read_bytes()[:-3])
    order[(0, 1)] = None
def off(order, states, folder):
    states[9]["fc1.weight"] *= 1.001
def pickled(order, states, folder):
    class Payload:
        def __reduce__(self):
            return (os.system, ("touch " + str(root / "pwned"),))
    p = folder / "checkpoint-5" / "model.pt"; p.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"fc1.weight": Payload()}, p)
def linked(order, states, folder):
    p = folder / "checkpoint-2" / "model.pt"; p.parent.mkdir(parents=True, exist_ok=True)
    torch.save(states[2], root / "elsewhere.pt"); p.symlink_to(root / "elsewhere.pt")
def extra(order, states, folder):
    states[9]["fc3.weight"] = torch.zeros(1)
def missing(order, states, folder):
    order[(2, 1)] = None
def in_flight(order, states, folder):   # one window in another order on both ranks (same gradient sum)
    for r in range(2):
        f = order[(1, r)]; f[2], f[0] = f[0], f[2]

out = {label: build(label, t) for label, t in [("honest", None), ("swap", swap), ("foreign", foreign_row),
       ("replay", replay), ("truncated", truncated), ("off", off), ("pickled", pickled),
       ("linked", linked), ("extra", extra), ("missing", missing), ("in_flight", in_flight)]}
out["pwned"] = (root / "pwned").exists()
print(json.dumps(out))
"""


def test_judge_rejects_each_tampering(runtime: Runtime, tmp_path: Path) -> None:
    script = SCRIPT.replace("GRADER", repr(str(CASE_DIR / "grader")), 2).replace("TMP", repr(str(tmp_path)), 1)
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
    assert got["swap"][0] == "fail" and "launch 1 (resumed from step 2), rank 1, micro-batch 0" in got["swap"][1]
    assert got["foreign"][0] == "fail" and "not in the table" in got["foreign"][1]
    assert got["replay"][0] == "fail" and "launch 1 (resumed from step 2), rank 0, micro-batch 0" in got["replay"][1]
    assert got["truncated"][0] == "fail" and "truncated forward" in got["truncated"][1]
    assert got["off"][0] == "fail" and "checkpoint-9 is" in got["off"][1] and "over 0.0001" in got["off"][1]
    assert got["pickled"][0] == "fail" and "checkpoint-5/model.pt: unreadable" in got["pickled"][1]
    assert got["linked"][0] == "fail" and "checkpoint-2/model.pt" in got["linked"][1]
    assert got["extra"][0] == "fail" and "expected ['fc1.bias'" in got["extra"][1]
    assert got["missing"][0] == "fail" and "seg2/rank1.bin" in got["missing"][1]
    assert got["in_flight"][0] == "fail" and "rank 0, micro-batch 0" in got["in_flight"][1]
    assert got["pwned"] is False
