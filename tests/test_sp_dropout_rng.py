"""TrainFail/SPDropoutRNG-v2's judge against hand-made records (no training run).

An honest record is built from the judge's own float64 step with the masks the README's streams
give (each tensor-parallel rank's model-parallel stream, seeded ``train.seed + 2718 + tp_rank``,
under sequence parallelism; the default stream, shared by every rank, without it); each check
is then attacked one at a time: ranks sharing one mask (with weights consistent with it), masks
drawn per rank from another stream (the default stream re-seeded per rank: independent-looking
masks, consistent weights), masks rewritten after the fact to the stream's draws, a stale mask,
a drop rate far from p, a replica nudged on one rank, differing masks or default streams on
replicated activations, and hostile record files. Where the config asks for bf16, the autocast
record is attacked the same way: blocks run outside the autocast (the swapped ``with``
operands), under fp16 or another device's autocast, a block left out of the record, and
malformed or oversized records. Runs in the case runtime's python (torch lives there, not in the
gym's environment). A slow test grades valid alternative repairs (nested ``with`` statements
around an inlined ``torch.autocast``; an ``ExitStack``) end to end.
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
from judge import ArtifactError, Rank, Step, judge, observe, step_record
from reference import draws, model_parallel_state, parameter_shapes, sgd_step, split_dim
from scenario import Scenario

def shard(state, rank, tp):
    out = {}
    for name, full in state.items():
        d = split_dim(name)
        out[name] = full.clone() if d is None else full.chunk(tp, d)[rank].clone()
    return out

def state_of(seed):
    return torch.Generator().manual_seed(seed).get_state()

def stream(sc, ranks_seeds):   # per rank, per step, the masks drawn from a generator seeded so
    return [draws(state_of(seed), sc, sc.steps) for seed in ranks_seeds]

def readme(sc):                # the README's streams
    if sc.sequence_parallel:
        return [draws(model_parallel_state(sc, r), sc, sc.steps) for r in range(sc.tp)]
    return [[draws(state_of(1000 + k), sc, 1)[0] for k in range(sc.steps)]] * sc.tp

def records(sc, per_rank, after=None, trained_with=None):
    # per_rank[r][k][m]: rank r's mask of module m at step k; the weights follow `trained_with`
    # (default: the recorded masks)
    trained = trained_with or per_rank
    gen = torch.Generator().manual_seed(3)
    params = {n: 0.1 * torch.randn(s, generator=gen, dtype=torch.float64) for n, s in parameter_shapes(sc).items()}
    starts = []
    for k in range(sc.steps):
        full = {}
        for m, (name, _) in enumerate(sc.dropout_modules):
            chunks = [trained[r][k][m] for r in range(sc.tp)]
            full[name] = torch.cat(chunks, 0) if sc.sequence_parallel else chunks[0]
        starts.append(params)
        params, _ = sgd_step(sc, params, full, k)
    ranks = []
    for r in range(sc.tp):
        steps = [Step(shard(starts[k], r, sc.tp), state_of(1000 + k),
                      [(n, per_rank[r][k][m].clone()) for m, (n, _) in enumerate(sc.dropout_modules)])
                 for k in range(sc.steps)]
        ranks.append(Rank(r, steps, shard(params, r, sc.tp)))
    if after:
        after(ranks)
    return ranks

def shared(sc):            # every rank's sequence chunk gets rank 0's mask
    own = readme(sc)
    return [own[0]] * sc.tp

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

sp = Scenario(name="t", kind="failure", devices=2, steps=3)
sp4 = Scenario(name="t", kind="failure", devices=4, tp=4, steps=2, seq_length=24, hidden_size=40, ffn_hidden_size=80)
off = Scenario(name="t", kind="healthy", devices=2, steps=3, sequence_parallel=False)
out = {}
def verdict(label, sc, ranks):
    v = judge(sc, ranks)
    out[label] = [v.status, v.reason]

verdict("honest", sp, records(sp, readme(sp)))
verdict("honest_tp4", sp4, records(sp4, readme(sp4)))
verdict("shared", sp, records(sp, shared(sp)))
# the default stream re-seeded per rank after the model is built (the `and` kept): the embedding
# still draws from the model-parallel stream, the blocks from another stream of each rank's own
mixed = readme(sp)
other = stream(sp, [sp.seed + r for r in range(sp.tp)])
per_rank = [[[mixed[r][k][0]] + other[r][k][1:] for k in range(sp.steps)] for r in range(sp.tp)]
verdict("default_per_rank", sp, records(sp, per_rank))
# a constant per-rank stream that ignores train.seed
verdict("seedless", sp, records(sp, stream(sp, [97 + r for r in range(sp.tp)])))
# trained with shared-looking other masks, then the record's masks rewritten to the stream's
verdict("rewritten", sp, records(sp, readme(sp), trained_with=stream(sp, [5, 6])))
verdict("stale", sp, records(sp, readme(sp), stale))
verdict("never_drops", sp, records(sp, readme(sp), never_drops))
verdict("replica", sp, records(sp, readme(sp), replica))
verdict("renamed", sp, records(sp, readme(sp), renamed))
verdict("off_honest", off, records(off, readme(off)))
def off_differs(ranks):
    ranks[1].steps[0].masks[0] = (ranks[1].steps[0].masks[0][0], torch.roll(ranks[1].steps[0].masks[0][1], 1, 0))
verdict("off_differs", off, records(off, readme(off), off_differs))
def off_stream_differs(ranks):   # masks alike, but rank 1's default stream was elsewhere
    ranks[1].steps[1].rng = state_of(4242)
verdict("off_stream_differs", off, records(off, readme(off), off_stream_differs))
# replicated masks drawn from a stream other than the default one the step started with
verdict("off_other_stream", off, records(off, [[draws(state_of(7), off, off.steps)[k] for k in range(off.steps)]] * 2))

bf = Scenario(name="t", kind="failure", devices=2, steps=3, bf16=True)

def calls(sc):  # the README model's module forwards in call order
    out = ["", "input_proj", "embed_dropout", "stack"]
    for i in range(sc.num_layers):
        out += [f"stack.layers.{i}"] + [f"stack.layers.{i}.{leaf}" for leaf in ("ln", "fc1", "fc2", "hidden_dropout")]
    return out + ["final_ln", "head"]

def with_autocast(state_of_module):
    def after(ranks):
        for rec in ranks:
            for step in rec.steps:
                step.autocast = [(n, state_of_module(n)) for n in calls(bf) if state_of_module(n) is not None]
    return after

inside = lambda n: n.count(".") > 2
for label, state_of_module in [
        ("bf16_honest", lambda n: "cpu:bfloat16" if inside(n) else "off"),
        ("bf16_whole_model", lambda n: "cpu:bfloat16"),
        ("bf16_swapped", lambda n: "off"),
        ("bf16_fp16", lambda n: "cpu:float16" if inside(n) else "off"),
        ("bf16_cuda_claim", lambda n: "cuda:bfloat16" if inside(n) else "off"),
        ("bf16_one_layer", lambda n: "cpu:bfloat16" if n.startswith("stack.layers.0.") else "off"),
        ("bf16_block_unlisted",
         lambda n: None if n == "stack.layers.1.fc2" else ("cpu:bfloat16" if inside(n) else "off"))]:
    verdict(label, bf, records(bf, readme(bf), with_autocast(state_of_module)))
verdict("bf16_no_record", bf, records(bf, readme(bf)))
verdict("bf16_shared_masks", bf, records(bf, shared(bf), with_autocast(lambda n: "cpu:bfloat16")))

good = [[n, "cpu:bfloat16"] for n in calls(bf)]
honest_step = {"params": {"head.bias": torch.zeros(4)}, "rng": state_of(1), "masks": []}
for label, raw in [("extra_key", {"modules": good, "entered": 1}), ("not_dict", good),
                   ("unknown_state", {"modules": [[n, "on"] for n in calls(bf)]}),
                   ("state_type", {"modules": [[n, True] for n in calls(bf)]}),
                   ("long_name", {"modules": good + [["x" * 201, "off"]]}),
                   ("oversized", {"modules": good * 300}), ("triple", {"modules": [[n, "off", 1] for n in calls(bf)]})]:
    try:
        step_record(honest_step | {"autocast": raw}, bf, "w")
        out[f"schema_{label}"] = "accepted"
    except ArtifactError as err:
        out[f"schema_{label}"] = str(err)
for label, raw in [("rng_missing", {k: v for k, v in honest_step.items() if k != "rng"}),
                   ("rng_short", honest_step | {"rng": torch.zeros(10, dtype=torch.uint8)}),
                   ("mask_int", honest_step | {"masks": [["embed_dropout", torch.ones(2, dtype=torch.int64)]]})]:
    try:
        step_record(raw, sp, "w")
        out[label] = "accepted"
    except ArtifactError as err:
        out[label] = str(err)

tmp = Path(TMP)
def save(sc, ranks, folder):
    (folder / "observe").mkdir(parents=True)
    (folder / "final").mkdir()
    for rec in ranks:
        steps = [{"params": st.params, "rng": st.rng, "masks": [[n, m] for n, m in st.masks]} for st in rec.steps]
        torch.save({"format": 1, "rank": rec.rank, "world": sc.tp, "steps": steps},
                   folder / "observe" / f"rank{rec.rank}.pt")
        torch.save(rec.final, folder / "final" / f"tp_rank_{rec.rank:02d}.pt")
save(bf, records(bf, readme(bf)), tmp / "bf16")
try:
    observe(bf, tmp / "bf16")
    out["bf16_file_without_autocast"] = "accepted"
except ArtifactError as err:
    out["bf16_file_without_autocast"] = str(err)
out["fp32_file"] = judge(sp, observe(sp, tmp / "bf16").ranks).status

class Payload:
    def __reduce__(self):
        return (os.system, ("touch " + str(tmp / "pwned"),))
(tmp / "hostile" / "observe").mkdir(parents=True)
torch.save({"format": 1, "rank": 0, "steps": Payload()}, tmp / "hostile" / "observe" / "rank0.pt")
torch.save({"format": 1, "rank": 0, "steps": [{}] * 3}, tmp / "hostile" / "observe" / "rank1.pt")
try:
    observe(sp, tmp / "hostile")
    out["record0"] = "accepted"
except ArtifactError as err:
    out["record0"] = str(err)
torch.save({"format": 1, "rank": 0, "steps": [{}] * 3}, tmp / "hostile" / "observe" / "rank0.pt")
try:
    observe(sp, tmp / "hostile")
    out["record1"] = "accepted"
except ArtifactError as err:
    out["record1"] = str(err)
torch.save({"format": 1, "rank": 1, "steps": [{}] * 3}, tmp / "hostile" / "observe" / "rank1.pt")
try:
    observe(sp, tmp / "hostile")
    out["record_steps"] = "accepted"
except ArtifactError as err:
    out["record_steps"] = str(err)
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
    assert got["honest_tp4"][0] == "pass", got["honest_tp4"]
    assert got["off_honest"][0] == "pass", got["off_honest"]
    assert got["shared"][0] == "fail" and "agree on 1.000 of positions" in got["shared"][1]
    assert got["stale"][0] == "fail" and "drew the same mask at steps 0 and 1" in got["stale"][1]
    assert got["never_drops"][0] == "fail" and "dropped 0.000 of positions" in got["never_drops"][1]
    assert got["replica"][0] == "fail" and "replicated final_ln.bias differs between ranks 0 and 1" in got["replica"][1]
    assert got["renamed"][0] == "fail" and "the README's model runs" in got["renamed"][1]
    assert got["off_differs"][0] == "fail" and "on replicated activations" in got["off_differs"][1]
    assert got["record0"].startswith("rank0.pt: refused by torch.load(weights_only=True)"), got["record0"]
    assert got["record1"] == "rank1.pt: not a format-1 observer record of rank 1", got["record1"]
    assert got["record_steps"] == "rank 0 step 0: each mask must be [module name, bool tensor]", got["record_steps"]
    assert got["pwned"] is False


def test_judge_checks_the_stream_each_mask_is_drawn_from(got: dict[str, Any]) -> None:
    """Masks that look independent, fresh and consistent with the weights, but are not the draws
    of the stream the README names, fail; so do stream-correct masks the weights did not see."""
    stream = "is not the next draw of the model-parallel stream (seeded train.seed + 2718 + tp_rank)"
    assert got["default_per_rank"][0] == "fail", got["default_per_rank"]
    assert f"rank 0 step 0: stack.layers.0.hidden_dropout's mask {stream}" in got["default_per_rank"][1]
    assert got["seedless"][0] == "fail" and f"rank 0 step 0: embed_dropout's mask {stream}" in got["seedless"][1]
    assert got["rewritten"][0] == "fail" and "with the masks this run recorded" in got["rewritten"][1]
    assert got["off_stream_differs"] == [
        "fail",
        "rank 0: the default stream differs across ranks on replicated activations",
    ]
    assert got["off_other_stream"][0] == "fail"
    assert "is not the next draw of the default stream as the step started" in got["off_other_stream"][1]


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
    assert got["fp32_file"] == "pass", "the same files read without bf16 pass: only the autocast record is missing"
    assert "the default stream's state is not a 5056-byte CPU RNG state" in got["rng_missing"]
    assert "the default stream's state is not a 5056-byte CPU RNG state" in got["rng_short"]
    assert got["mask_int"] == "w: each mask must be [module name, bool tensor]"


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
    case = get_case("TrainFail/SPDropoutRNG-v2")
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
