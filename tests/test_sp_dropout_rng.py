"""TrainFail/SPDropoutRNG-v1's judge against hand-made records (no training run).

An honest record is built from the judge's own float64 step (independent masks per
tensor-parallel rank under sequence parallelism, one shared mask without it); each check is
then attacked one at a time: ranks sharing one mask (with weights consistent with it), masks
rewritten after the fact, a stale mask, a drop rate far from p, a replica nudged on one rank,
differing masks on replicated activations, and hostile record files. Where the config asks for
bf16, the autocast record is attacked the same way: blocks run outside the autocast (the
swapped ``with`` operands), under fp16 or another device's autocast, a block left out of the
record, and malformed or oversized records. Runs in the case runtime's python (torch lives
there, not in the gym's environment). A slow test grades valid alternative repairs (nested
``with`` statements around an inlined ``torch.autocast``; an ``ExitStack``) end to end.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from gym_trainfail import get_case
from gym_trainfail.files import apply_patch
from gym_trainfail.grading import Grader
from gym_trainfail.paths import SOURCE_ROOT
from gym_trainfail.runtimes import Runtime

CASE_DIR = SOURCE_ROOT / "envs" / "sp_dropout_rng"

SCRIPT = """
import json, os, sys
from pathlib import Path
sys.path[:0] = [GRADER, GRADER + "/kit", HARNESSLIB]
import torch
from observe import ArtifactError, AutocastRecord, RankRecord, StepRecord, _autocast, read_rank
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

bf = Scenario(name="t", kind="failure", devices=2, backend="gloo", steps=3, bf16=True)

def calls(sc):  # the README model's module forwards in call order
    out = ["", "input_proj", "embed_dropout", "stack"]
    for i in range(sc.num_layers):
        out += [f"stack.layers.{i}"] + [f"stack.layers.{i}.{leaf}" for leaf in ("ln", "fc1", "fc2", "hidden_dropout")]
    return out + ["final_ln", "head"]

def with_autocast(state_of):
    def after(ranks):
        for rec in ranks:
            for step in rec.steps:
                step.autocast = AutocastRecord(tuple((n, state_of(n)) for n in calls(bf) if state_of(n) is not None))
    return after

inside = lambda n: n.count(".") > 2
for label, state_of in [
        ("bf16_honest", lambda n: "cpu:bfloat16" if inside(n) else "off"),
        ("bf16_whole_model", lambda n: "cpu:bfloat16"),
        ("bf16_swapped", lambda n: "off"),
        ("bf16_fp16", lambda n: "cpu:float16" if inside(n) else "off"),
        ("bf16_cuda_claim", lambda n: "cuda:bfloat16" if inside(n) else "off"),
        ("bf16_one_layer", lambda n: "cpu:bfloat16" if n.startswith("stack.layers.0.") else "off"),
        ("bf16_block_unlisted",
         lambda n: None if n == "stack.layers.1.fc2" else ("cpu:bfloat16" if inside(n) else "off"))]:
    out[label] = list(judge(bf, records(bf, independent, with_autocast(state_of)))[:2])
out["bf16_no_record"] = list(judge(bf, records(bf, independent, None))[:2])
out["bf16_shared_masks"] = list(judge(bf, records(bf, shared, with_autocast(lambda n: "cpu:bfloat16")))[:2])

good = [[n, "cpu:bfloat16"] for n in calls(bf)]
for label, raw in [("extra_key", {"modules": good, "entered": 1}), ("not_dict", good),
                   ("unknown_state", {"modules": [[n, "on"] for n in calls(bf)]}),
                   ("state_type", {"modules": [[n, True] for n in calls(bf)]}),
                   ("long_name", {"modules": good + [["x" * 201, "off"]]}),
                   ("oversized", {"modules": good * 300}), ("triple", {"modules": [[n, "off", 1] for n in calls(bf)]})]:
    try:
        _autocast(raw, "w")
        out[f"schema_{label}"] = "accepted"
    except ArtifactError as err:
        out[f"schema_{label}"] = str(err)

tmp = Path(TMP)
folder = tmp / "bf16"
(folder / "observe").mkdir(parents=True)
(folder / "final").mkdir()
honest = records(bf, independent)
for rec in honest:
    steps = [{"params": st.params, "masks": [[n, m] for n, m in st.masks]} for st in rec.steps]
    torch.save({"format": 1, "rank": rec.rank, "steps": steps}, folder / "observe" / f"rank{rec.rank}.pt")
    torch.save(rec.final, folder / "final" / f"tp_rank_{rec.rank:02d}.pt")
try:
    read_rank(folder, bf, 0)
    out["bf16_file_without_autocast"] = "accepted"
except ArtifactError as err:
    out["bf16_file_without_autocast"] = str(err)
out["fp32_file_without_autocast"] = read_rank(folder, sp, 0).steps[0].autocast is None

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


@pytest.fixture(scope="module")
def got(runtime: Runtime, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The script's results: every test here reads the same hand-made records, judged once."""
    tmp_path = tmp_path_factory.mktemp("sp_dropout_rng")
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
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_judge_rejects_each_tampering(got: dict[str, Any]) -> None:
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


def test_judge_requires_the_blocks_under_the_requested_autocast(got: dict[str, Any]) -> None:
    assert got["bf16_honest"][0] == "pass", got["bf16_honest"]
    assert "every block under bf16 autocast" in got["bf16_honest"][1]
    assert got["bf16_whole_model"][0] == "pass", got["bf16_whole_model"]
    off = "ran with autocast 'off'; model.bf16 asks for the blocks to run under torch.autocast('cpu'"
    assert got["bf16_swapped"] == ["fail", f"rank 0 step 0: stack.layers.0.ln {off}, dtype=torch.bfloat16)"]
    assert got["bf16_fp16"][0] == "fail" and "ran with autocast 'cpu:float16'" in got["bf16_fp16"][1]
    assert got["bf16_cuda_claim"][0] == "fail" and "ran with autocast 'cuda:bfloat16'" in got["bf16_cuda_claim"][1]
    assert (
        got["bf16_one_layer"][0] == "fail" and "stack.layers.1.ln ran with autocast 'off'" in got["bf16_one_layer"][1]
    )
    assert got["bf16_block_unlisted"][0] == "fail"
    assert "lists no forward of ['stack.layers.1.fc2']" in got["bf16_block_unlisted"][1]
    assert got["bf16_no_record"] == ["fail", "rank 0 step 0: no autocast record, though the config asks for bf16"]
    # The autocast check does not stand in for the mask checks: shared masks still fail first.
    assert got["bf16_shared_masks"][0] == "fail" and "agree on 1.000 of positions" in got["bf16_shared_masks"][1]


def test_autocast_records_have_a_closed_bounded_schema(got: dict[str, Any]) -> None:
    for label in ("extra_key", "not_dict"):
        assert "the autocast record must be {'modules'" in got[f"schema_{label}"], got[f"schema_{label}"]
    for label in ("unknown_state", "state_type", "long_name", "triple"):
        assert "each autocast entry must be [module name, one of" in got[f"schema_{label}"], got[f"schema_{label}"]
    assert "autocast modules must be a list of at most 4096" in got["schema_oversized"]
    assert got["bf16_file_without_autocast"].startswith("rank 0 step 0: the autocast record must be"), got
    assert got["fp32_file_without_autocast"] is True


#: A valid repair written another way than the reference: nested ``with`` statements around an
#: inlined ``torch.autocast`` (never calling ``Stack.precision_context``), and one through an
#: ``ExitStack``. The grader observes the library's autocast, so both must pass.
NESTED_INLINE = """\
--- a/seqmodel/model.py
+++ b/seqmodel/model.py
@@ -87,9 +87,8 @@
             rng_context = tensor_parallel.get_cuda_rng_tracker().fork()
         else:
             rng_context = contextlib.nullcontext()
-        precision_context = self.precision_context(x.device.type)
-
-        with rng_context and precision_context:
-            for layer in self.layers:
-                x = layer(x)
+        with rng_context:
+            with torch.autocast(device_type=x.device.type, dtype=torch.bfloat16, enabled=self.bf16):
+                for layer in self.layers:
+                    x = layer(x)
         return x
"""
EXIT_STACK = """\
--- a/seqmodel/model.py
+++ b/seqmodel/model.py
@@ -87,9 +87,9 @@
             rng_context = tensor_parallel.get_cuda_rng_tracker().fork()
         else:
             rng_context = contextlib.nullcontext()
-        precision_context = self.precision_context(x.device.type)
-
-        with rng_context and precision_context:
+        with contextlib.ExitStack() as stack:
+            stack.enter_context(rng_context)
+            stack.enter_context(self.precision_context(x.device.type))
             for layer in self.layers:
                 x = layer(x)
         return x
"""


@pytest.mark.slow
@pytest.mark.parametrize("patch", [NESTED_INLINE, EXIT_STACK], ids=["nested-inline", "exit-stack"])
def test_valid_alternative_repairs_pass(patch: str, runtime: Runtime, bwrap_usable: None, tmp_path: Path) -> None:
    case = get_case("TrainFail/SPDropoutRNG-v1")
    workspace = tmp_path / "ws"
    shutil.copytree(case.workspace_dir, workspace)
    (tmp_path / "alt.patch").write_text(patch)
    apply_patch(workspace, tmp_path / "alt.patch")
    selected = [s for s in case.scenarios if s.name in ("bf16-requested", "sp-off")]
    receipt = Grader(case, sandbox="bwrap", cache=False).grade_dir(workspace, scenarios=selected)
    statuses = {o.scenario: (o.status, o.reason) for o in receipt.outcomes}
    assert statuses["bf16-requested"][0] == "pass", statuses
    assert "every block under bf16 autocast" in statuses["bf16-requested"][1]
    assert statuses["sp-off"][0] == "pass", statuses


def test_shipped_wrong_repairs_include_the_operand_swap() -> None:
    shipped = {p.stem for p in (CASE_DIR / "grader" / "wrong_repairs").glob("*.patch")}
    assert {"swap-operands", "precision-context-dropped"} <= shipped
    swap = (CASE_DIR / "grader" / "wrong_repairs" / "swap-operands.patch").read_text()
    assert "+        with precision_context and rng_context:" in swap
    readme = (CASE_DIR / "grader" / "README.md").read_text()
    assert all(f"`wrong_repairs/{name}.patch`" in readme for name in shipped)
