"""TrainFail/MoEExpertGradScale-v1's judge against hand-made observations (no training run).

The judge's checks (the scenario's expert layout trained and observed, copies identical across
ranks, expert and dense parameters and losses on the float64 single-process reference,
well-formed files) are attacked one at a time on 4 ranks with expert parallelism 2 (two
expert-data-parallel groups of two): an observation built from the judge's own reference passes,
and each tampering fails with the check's reason. The reference itself is attacked with the
failure's mechanisms: expert updates ep times too large (the shipped divisor) and twice too large
(a divisor right only where world = ep or ep = 1) must fail. Runs in the case runtime's python
(torch lives there, not in the gym's environment).
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest

from gym_trainfail.paths import SOURCE_ROOT
from gym_trainfail.runtimes import Runtime

CASE_DIR = SOURCE_ROOT / "envs" / "moe_expert_grad_scale"

SCRIPT = """
import json, os, sys
from pathlib import Path
sys.path[:0] = [GRADER, GRADER + "/kit", HARNESSLIB]
import torch
from artifacts import ArtifactError
from fixtures import make_inputs
from judge import Held, Observation, held, judge, layout, observe
from oracle import reference_run
from readers import Step
from scenario import Scenario

sc = Scenario(name="t", kind="failure", devices=4, world=4, ep=2, zero_stage=1, seed=5, steps=3, rows=160,
              num_experts=8)
inputs = make_inputs(sc)
ref = reference_run(sc, inputs)

def observation(tamper=None):
    ranks = [Held({k: v.clone() for k, v in ref.dense.items()},
                  {g: {k: v.clone() for k, v in ref.experts[g].items()} for g in sc.expert_ids(r)})
             for r in range(sc.world)]
    layouts = [(sc.world, sc.steps, [(sc.ep, sc.local_experts, sc.ep)]) for _ in range(sc.world)]
    metrics = [Step(k, {"loss": ref.losses[k]}, 0.1, 1.0 + k) for k in range(sc.steps)]
    obs = Observation(metrics, ranks, layouts)
    if tamper:
        tamper(obs)
    return obs

def scaled_update(factor):   # every expert step `factor` times the reference's
    def tamper(obs):
        for state in obs.ranks:
            for g, params in state.experts.items():
                for k, v in params.items():
                    start = inputs.init["experts"][g][k].double()
                    params[k] = start + factor * (v - start)
    return tamper
def replica_off(obs):       # rank 2 holds experts 0-3 like rank 0, but one value differs
    obs.ranks[2].experts[0]["0.bias"][0] += 1e-6
def dense_off(obs):
    for state in obs.ranks:
        state.dense["head.bias"] += 3e-4
def loss_off(obs):
    obs.metrics[2] = Step(2, {"loss": ref.losses[2] + 5e-4}, 0.1, 3.0)
def loss_missing(obs):
    obs.metrics[1] = Step(1, {"loss": None}, 0.1, 2.0)
def wrong_experts(obs):     # rank 1 saves rank 0's experts
    obs.ranks[1] = obs.ranks[0]
def no_ep(obs):             # expert parallelism switched off, layout saved as configured
    obs.layouts[:] = [(sc.world, sc.steps, [(1, sc.num_experts, 1)]) for _ in range(sc.world)]
def few_forwards(obs):
    obs.layouts[3] = (sc.world, sc.steps - 1, [(sc.ep, sc.local_experts, sc.ep)])
def nan_expert(obs):
    for state in obs.ranks:
        for params in state.experts.values():
            params["2.weight"][0, 0] = float("nan")

out = {}
for label, tamper in [("honest", None), ("ep_times_update", scaled_update(sc.ep)), ("half_off", scaled_update(1.5)),
                      ("replica_off", replica_off), ("dense_off", dense_off), ("loss_off", loss_off),
                      ("loss_missing", loss_missing), ("wrong_experts", wrong_experts), ("no_ep", no_ep),
                      ("few_forwards", few_forwards), ("nan_expert", nan_expert)]:
    v = judge(sc, ref, inputs.init, observation(tamper))
    out[label] = [v.status, v.reason]

# the README's batches wrap around a 160-row file: the reference reads rows modulo the file
out["wraps"] = sc.steps * sc.global_batch > sc.rows and inputs.x.shape[0] == sc.rows

# files: a checkpoint pickle that runs code, an expert id that is not an int, observer layouts
# that are not integers, a whole scenario folder with one observer record missing
tmp = Path(TMP)
class Payload:
    def __reduce__(self):
        return (os.system, ("touch " + str(tmp / "pwned"),))
torch.save({"dense": Payload(), "experts": {}}, tmp / "rank0.pt")
torch.save({"dense": {k: v.float() for k, v in ref.dense.items()},
            "experts": {"0": {k: v.float() for k, v in ref.experts[0].items()}}}, tmp / "rank1.pt")
for rank in range(2):
    try:
        held(tmp / f"rank{rank}.pt", sc, rank)
        out[f"state{rank}"] = "accepted"
    except ArtifactError as err:
        out[f"state{rank}"] = str(err)
for key, record in [("layout_str", {"rank": 1, "world": 4, "forwards": 3, "layers": [["2", 4, 2]]}),
                    ("layout_bool", {"rank": 1, "world": 4, "forwards": 3, "layers": [[True, 4, 2]]}),
                    ("layout_long", {"rank": 1, "world": 4, "forwards": 3, "layers": [[2, 4, 2]] * 17})]:
    try:
        layout(record)
        out[key] = "accepted"
    except ArtifactError as err:
        out[key] = str(err)
folder = tmp / "scenario"
(folder / "checkpoints" / "final").mkdir(parents=True)
(folder / "observe").mkdir()
(folder / "metrics.jsonl").write_text("".join(json.dumps({"step": k, "loss": ref.losses[k]}) + "\\n"
                                              for k in range(sc.steps)))
for r, state in enumerate(observation().ranks):
    torch.save({"dense": state.dense, "experts": state.experts}, folder / "checkpoints" / "final" / f"rank{r}.pt")
    if r < 3:
        record = {"format": 1, "rank": r, "world": 4, "forwards": 3, "layers": [[2, 4, 2]]}
        torch.save(record, folder / "observe" / f"rank{r}.pt")
try:
    observe(sc, folder)
    out["record_missing"] = "accepted"
except ArtifactError as err:
    out["record_missing"] = str(err)
torch.save({"format": 1, "rank": 3, "world": 4, "forwards": 3, "layers": [[2, 4, 2]]}, folder / "observe" / "rank3.pt")
out["whole_folder"] = [judge(sc, ref, inputs.init, observe(sc, folder)).status]
out["pwned"] = (tmp / "pwned").exists()
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def got(runtime: Runtime, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The script's results: every test here reads the same hand-made observations, judged once."""
    tmp_path = tmp_path_factory.mktemp("moe_expert_grad_scale")
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
    def verdict(label: str) -> tuple[str, str]:
        status, reason = got[label]
        return str(status), str(reason)

    assert verdict("honest")[0] == "pass", got["honest"]
    for label in ("ep_times_update", "half_off"):
        assert verdict(label)[0] == "fail" and "expert parameters differ" in verdict(label)[1], got[label]
    assert "copies of expert 0 0.bias (ranks [0, 2]) differ" in verdict("replica_off")[1]
    assert verdict("dense_off")[0] == "fail" and "dense parameters differ" in verdict("dense_off")[1]
    assert verdict("loss_off")[0] == "fail" and "worst at step 2" in verdict("loss_off")[1]
    assert verdict("loss_missing")[0] == "fail" and "max |d loss| inf" in verdict("loss_missing")[1]
    assert verdict("wrong_experts")[0] == "fail" and "rank 1 saved experts [0, 1, 2, 3]" in verdict("wrong_experts")[1]
    assert verdict("no_ep")[0] == "fail" and "expert parallelism must stay" in verdict("no_ep")[1]
    assert verdict("few_forwards")[0] == "fail" and "2 MoE forwards" in verdict("few_forwards")[1]
    assert verdict("nan_expert")[0] == "fail" and "inf" in verdict("nan_expert")[1]
    assert got["wraps"] is True


def test_artifacts_are_read_as_adversarial_data(got: dict[str, Any]) -> None:
    assert "refused by torch.load(weights_only=True)" in str(got["state0"]), got["state0"]
    assert "is not an integer" in str(got["state1"])
    for key in ("layout_str", "layout_bool", "layout_long"):
        assert "the layers are not [ep_size, local, group] integers" in str(got[key]), got[key]
    assert got["record_missing"] == "rank3.pt: No such file or directory", got["record_missing"]
    assert got["whole_folder"] == ["pass"], "a folder written in the README's layouts reads back and passes"
    assert got["pwned"] is False
