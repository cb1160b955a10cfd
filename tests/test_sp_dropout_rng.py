"""TrainFail/SPDropoutRNG-v0's judge against hand-made records (no training run).

An honest record is built from the judge's own float64 step (independent masks per
tensor-parallel rank under sequence parallelism, one shared mask without it); each check is
then attacked one at a time: ranks sharing one mask (with weights consistent with it), masks
rewritten after the fact, a stale mask, a drop rate far from p, a replica nudged on one rank,
differing masks on replicated activations, and hostile record files. Runs in the case
runtime's python (torch lives there, not in the gym's environment).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from gym_trainfail.paths import SOURCE_ROOT
from gym_trainfail.runtimes import Runtime

CASE_DIR = SOURCE_ROOT / "envs" / "sp_dropout_rng"

SCRIPT = """
import json, os, sys
from pathlib import Path
sys.path[:0] = [GRADER, GRADER + "/kit", HARNESSLIB]
import torch
from observe import ArtifactError, RankRecord, StepRecord, read_rank
from reference import parameter_shapes, sgd_step, split_dim
from scenario import Scenario
from verdict import judge

def shard(state, rank, tp):
    out = {}
    for name, full in state.items():
        d = split_dim(name)
        out[name] = full.clone() if d is None else full.chunk(tp, d)[rank].clone()
    return out

def records(sc, draw, after=None):
    gen = torch.Generator().manual_seed(3)
    params = {n: 0.1 * torch.randn(s, generator=gen, dtype=torch.float64) for n, s in parameter_shapes(sc).items()}
    steps = []
    for k in range(sc.steps):
        masks = {name: draw(sc, gen, p) for name, p in sc.dropout_modules}
        steps.append((params, masks))
        params, _ = sgd_step(sc, params, masks, k)
    ranks = []
    for r in range(sc.tp):
        chunk = (lambda m: m.chunk(sc.tp, 0)[r].clone()) if sc.sequence_parallel else (lambda m: m.clone())
        ranks.append(RankRecord(r, [StepRecord(shard(p, r, sc.tp), [(n, chunk(m[n])) for n, _ in sc.dropout_modules])
                                    for p, m in steps], shard(params, r, sc.tp)))
    if after:
        after(ranks)
    return ranks

def independent(sc, gen, p):
    return torch.rand(sc.seq_length, sc.batch_size, sc.hidden_size, generator=gen) >= p

def shared(sc, gen, p):   # every rank's sequence chunk gets the same mask
    one = torch.rand(sc.seq_length // sc.tp, sc.batch_size, sc.hidden_size, generator=gen) >= p
    return one.repeat(sc.tp, 1, 1)

def rewritten(ranks):     # masks replaced after training, weights left as trained
    gen = torch.Generator().manual_seed(99)
    for rec in ranks:
        for step in rec.steps:
            step.masks = [(n, torch.rand(m.shape, generator=gen) >= 0.1) for n, m in step.masks]
def stale(ranks):
    for rec in ranks:
        rec.steps[1].masks[1] = (rec.steps[1].masks[1][0], rec.steps[0].masks[1][1].clone())
def never_drops(ranks):
    for rec in ranks:
        rec.steps[0].masks[2] = (rec.steps[0].masks[2][0], torch.ones_like(rec.steps[0].masks[2][1]))
def replica(ranks):
    ranks[1].steps[2].params["final_ln.bias"][0] += 1e-7
def renamed(ranks):
    for rec in ranks:
        rec.steps[0].masks[0] = ("input_dropout", rec.steps[0].masks[0][1])

sp = Scenario(name="t", kind="failure", devices=2, backend="gloo", steps=3)
off = Scenario(name="t", kind="healthy", devices=2, backend="gloo", steps=3, sequence_parallel=False)
out = {}
for label, sc, draw, after in [("honest", sp, independent, None), ("shared", sp, shared, None),
                               ("rewritten", sp, independent, rewritten), ("stale", sp, independent, stale),
                               ("never_drops", sp, independent, never_drops), ("replica", sp, independent, replica),
                               ("renamed", sp, independent, renamed), ("off_honest", off, independent, None)]:
    out[label] = list(judge(sc, records(sc, draw, after))[:2])

def off_differs(ranks):
    ranks[1].steps[0].masks[0] = (ranks[1].steps[0].masks[0][0], torch.roll(ranks[1].steps[0].masks[0][1], 1, 0))
out["off_differs"] = list(judge(off, records(off, independent, off_differs))[:2])

tmp = Path(TMP)
class Payload:
    def __reduce__(self):
        return (os.system, ("touch " + str(tmp / "pwned"),))
(tmp / "observe").mkdir()
torch.save({"format": 1, "rank": 0, "steps": Payload()}, tmp / "observe" / "rank0.pt")
torch.save({"format": 1, "rank": 0, "steps": [{}] * 3}, tmp / "observe" / "rank1.pt")
for rank in range(2):
    try:
        read_rank(tmp, sp, rank)
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
    assert got["off_honest"][0] == "pass", got["off_honest"]
    assert got["shared"][0] == "fail" and "agree on 1.000 of positions" in got["shared"][1]
    assert got["rewritten"][0] == "fail" and "with the masks this run recorded" in got["rewritten"][1]
    assert got["stale"][0] == "fail" and "drew the same mask at steps 0 and 1" in got["stale"][1]
    assert got["never_drops"][0] == "fail" and "dropped 0.000 of positions" in got["never_drops"][1]
    assert got["replica"][0] == "fail" and "replicated final_ln.bias differs between ranks 0 and 1" in got["replica"][1]
    assert got["renamed"][0] == "fail" and "the README's model runs" in got["renamed"][1]
    assert got["off_differs"][0] == "fail" and "on replicated activations" in got["off_differs"][1]
    assert got["record0"].startswith("rank0.pt: unreadable"), got["record0"]
    assert got["record1"] == "observe/rank1.pt: not an observer record of rank 1"
    assert got["pwned"] is False
