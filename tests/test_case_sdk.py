"""The case SDK in the harness library: scenario types, the pipeline launcher, the readers and
comparisons judges build on, and the in-rank observer base, each attacked where it guards.

The torch side (readers, compare, observers) runs in the case runtime's python, where graders
run it; the standard-library side runs here too.
"""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

from gym_trainfail.harnesslib import launch
from gym_trainfail.harnesslib.scenario_base import ScenarioBase, params_base, size_limit
from gym_trainfail.paths import SOURCE_ROOT
from gym_trainfail.runtimes import Runtime

HARNESSLIB = SOURCE_ROOT / "gym_trainfail" / "harnesslib"


@dataclass(frozen=True)
class ToyScenario(ScenarioBase):
    processes: int = 2
    lr: float = 0.1

    def validate(self) -> None:
        if self.processes != self.devices:
            raise ValueError(f"processes={self.processes} on {self.devices} devices")


def test_a_scenario_takes_its_params_by_name_and_refuses_unknown_ones() -> None:
    sc = ToyScenario.from_request({"name": "two", "kind": "failure", "devices": 2, "params": {"lr": 0.5}})
    assert (sc.processes, sc.lr, sc.backend, sc.run_timeout_s) == (2, 0.5, "gloo", 540.0)
    with pytest.raises(ValueError, match=r"unknown scenario params \['lrr'\]; ToyScenario has: lr, processes"):
        ToyScenario.from_request({"name": "x", "kind": "failure", "devices": 2, "params": {"lrr": 0.5}})
    with pytest.raises(ValueError, match="processes=2 on 1 devices"):
        ToyScenario.from_request({"name": "x", "kind": "failure", "devices": 1})
    with pytest.raises(ValueError, match="not a plain file name"):
        ToyScenario.from_request({"name": "../x", "kind": "failure", "devices": 2})
    with pytest.raises(ValueError, match="params must be a table"):
        ToyScenario.from_request({"name": "x", "kind": "failure", "devices": 2, "params": [1]})
    assert size_limit(10) == 16 << 20 and size_limit(10_000_000) == 80_000_000


BASE_SCENARIO = """
# the base scenario, as a case's kit/params.toml holds it
processes = 2
lr = 0.1
steps = 4
bf16 = true
schedule = "linear"
betas = [0.9, 0.95]
refs = {main = "B"}
run_timeout_s = 300.0
"""


def test_a_base_scenario_in_toml_types_every_param_and_refuses_what_does_not_fit(tmp_path: Path) -> None:
    (tmp_path / "params.toml").write_text(BASE_SCENARIO)

    @dataclass(frozen=True)
    class Scenario(params_base(tmp_path / "params.toml")):  # type: ignore[misc]
        def validate(self) -> None:
            if self.processes != self.devices:
                raise ValueError(f"processes={self.processes} on {self.devices} devices")

    sc = Scenario.from_request({"name": "a", "kind": "failure", "devices": 2, "params": {"lr": 1, "betas": [0.5, 0.6]}})
    assert (sc.lr, sc.steps, sc.bf16, sc.schedule, sc.run_timeout_s) == (1, 4, True, "linear", 300.0)
    assert Scenario(name="b", kind="healthy", devices=2).betas == (0.9, 0.95), "a TOML array is a tuple"
    one = Scenario(name="c", kind="healthy", devices=2)
    one.refs["main"] = "A"
    assert Scenario(name="d", kind="healthy", devices=2).refs == {"main": "B"}, "a table default is never shared"
    for params, message in [
        ({"lr": "0.1"}, "lr = '0.1': expected a number"),
        ({"lr": True}, "lr = True: expected a number"),
        ({"steps": 4.0}, "steps = 4.0: expected an integer"),
        ({"steps": True}, "steps = True: expected an integer"),
        ({"bf16": 1}, "bf16 = 1: expected a boolean"),
        ({"betas": 0.9}, "betas = 0.9: expected an array"),
        ({"refs": "B"}, "refs = 'B': expected a table"),
        ({"stepz": 4}, r"unknown scenario params \['stepz'\]"),
    ]:
        with pytest.raises(ValueError, match=message):
            Scenario.from_request({"name": "x", "kind": "failure", "devices": 2, "params": params})
    with pytest.raises(ValueError, match="processes=2 on 1 devices"):
        Scenario.from_request({"name": "x", "kind": "failure", "devices": 1})
    for bad, message in [("devices = 2", "devices is a request field"), ("when = 2026-12-04", "cannot be a scenario"),
                         ("lr = ", "cannot read the base scenario")]:  # fmt: skip
        (tmp_path / "bad.toml").write_text(bad + "\n")
        with pytest.raises(ValueError, match=message):
            params_base(tmp_path / "bad.toml")


def test_a_job_sees_what_a_users_torchrun_gives_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NPROC", "2")
    monkeypatch.setenv("TRAINFAIL_DEVICES", "2")
    monkeypatch.setenv("PYTHONPATH", "/harnesslib")
    monkeypatch.setenv("TRAINFAIL_OBSERVERS", "leftover:install")
    pipeline = launch.Pipeline(module="pkg.train", base_args=("--config", "c.yaml"), observers=("obs:install",),
                               observer_path=(Path("/kit/observe"),))  # fmt: skip
    quiet = pipeline.job_env("gloo")
    assert "NPROC" not in quiet and "TRAINFAIL_DEVICES" not in quiet, "the rank count comes from the process group"
    assert quiet["PYTHONPATH"].split(os.pathsep) == [str(launch.OBSERVERS_DIR), "/kit/observe"]
    assert "TRAINFAIL_OBSERVERS" not in quiet, "observers are inert unless the job is observed"
    observed = pipeline.job_env("nccl", {"TRAINFAIL_OBSERVE_DIR": "/out/x"})
    assert observed["TRAINFAIL_OBSERVERS"] == "obs:install" and observed["TRAINFAIL_BACKEND"] == "nccl"
    assert pipeline.command(4, ["a=1"])[-6:] == ["--nproc_per_node=4", "-m", "pkg.train", "--config", "c.yaml", "a=1"]
    overrides = launch.dotted({"train.lr": 0.5, "bf16": True, "path": Path("/x")})
    assert overrides == ["train.lr=0.5", "bf16=true", "path=/x"]


# What both runtime-side scripts start with: a label's call is refused with an ArtifactError, or "accepted".
REFUSED = r"""
tmp = Path(TMP)
out = {}

def refused(label, call):
    try:
        call()
        out[label] = "accepted"
    except ArtifactError as err:
        out[label] = str(err)
"""

TORCH_SIDE = (
    r"""
import json, math, os, sys
from pathlib import Path
import torch
sys.path[:0] = [HARNESSLIB]
from artifacts import ArtifactError
from readers import read_jsonl, read_state, read_rank_records, states, state_dict
from compare import (Check, first_exceeding, max_abs_diff, max_abs_error, max_rel_error, rel_l2, replica_spread,
                     sgd_step, structure_problem, trajectory, verdict)
"""
    + REFUSED
    + r"""
lines = [json.dumps({"step": k, "loss": 1.0 / (k + 1), "wall_time": 5.0}) for k in range(3)]
(tmp / "ok.jsonl").write_text("\n".join(lines))
steps = read_jsonl(tmp / "ok.jsonl", index="step", fields=("loss", "lr"), count=3)
out["jsonl"] = [[s.index, s["loss"], s["lr"], s.wall_time] for s in steps]
(tmp / "gap.jsonl").write_text("\n".join(json.dumps({"step": k}) for k in (0, 2)))
refused("gap", lambda: read_jsonl(tmp / "gap.jsonl", index="step", fields=(), count=2))
(tmp / "huge.jsonl").write_text("x" * 5000)
refused("huge", lambda: read_jsonl(tmp / "huge.jsonl", index="step", fields=(), count=1, limit=1000))
os.symlink(tmp / "ok.jsonl", tmp / "link.jsonl")
refused("link", lambda: read_jsonl(tmp / "link.jsonl", index="step", fields=(), count=3))
torch.save({"module": {"w": torch.ones(2, 3), "b": torch.zeros(3, dtype=torch.float64)}}, tmp / "state.pt")
got = read_state(tmp / "state.pt", 1 << 20, key="module")
out["state"] = {k: [list(v.shape), str(v.dtype)] for k, v in got.items()}
refused("no_key", lambda: read_state(tmp / "state.pt", 1 << 20, key="model"))
torch.save({"w": torch.ones(2, dtype=torch.int64)}, tmp / "ints.pt")
refused("ints", lambda: read_state(tmp / "ints.pt", 1 << 20))
torch.save({"w": torch.ones(4, 4).to_sparse()}, tmp / "sparse.pt")
refused("sparse", lambda: read_state(tmp / "sparse.pt", 1 << 20))
class Payload:
    def __reduce__(self):
        return (os.system, ("touch " + str(tmp / "pwned"),))
torch.save({"w": Payload()}, tmp / "pickle.pt")
refused("pickle", lambda: read_state(tmp / "pickle.pt", 1 << 20))
out["pwned"] = (tmp / "pwned").exists()
torch.save({"w": torch.zeros(1 << 20)}, tmp / "bomb.pt")
refused("bomb", lambda: read_state(tmp / "bomb.pt", 1 << 19))
records = tmp / "records"
records.mkdir()
torch.save({"format": 1, "rank": 0, "states": [{"w": torch.ones(2)}]}, records / "rank0.pt")
torch.save({"format": 1, "rank": 0, "states": [{"w": torch.ones(2)}]}, records / "rank1.pt")
refused("rank_swap", lambda: read_rank_records(records, 2, 1 << 20))
refused("steps_short", lambda: states([{"w": torch.ones(2)}], "rank 0 states", 2))
refused("not_dict", lambda: state_dict([torch.ones(2)], "x"))

a = {"w": torch.tensor([1.0, 2.0]), "b": torch.tensor([0.5])}
b = {"w": torch.tensor([1.0, 2.5]), "b": torch.tensor([float("nan")])}
out["diff"] = list(max_abs_diff(b, a, ["w"]))
out["diff_nan"] = list(max_abs_diff(b, a))
out["diff_missing"] = list(max_abs_diff({"w": a["w"]}, a))
out["spread"] = list(replica_spread([a, a, {"w": a["w"] + 1e-3, "b": a["b"]}]))
worst = trajectory([a, b], [a, a], ["w"])
out["trajectory"] = [worst.value, worst.step, worst.name]
out["trajectory_len"] = trajectory([a], [a, a]).value
out["abs"] = list(max_abs_error([1.0, None, 3.0], [1.0, 2.0, 3.0]))
out["rel"] = list(max_rel_error([1.1, 2.0], [1.0, 2.0]))
out["first"] = [first_exceeding([1.0, 1.5, 9.0], [1.0, 1.0, 1.0], 0.6), first_exceeding([1.0], [1.0], 0.1),
                first_exceeding([1.0], [1.0, 2.0], 0.1)]
out["rel_l2"] = [rel_l2(torch.tensor([3.0, 4.0]), torch.tensor([3.0, 4.0])), rel_l2(torch.ones(2), torch.ones(3))]
out["structure"] = [structure_problem(a, {"w": (2,), "b": (1,)}, "s"),
                    structure_problem(a, {"w": (3,), "b": (1,)}, "s"), structure_problem(a, {"w": (2,)}, "s")]
v = verdict([Check(False, "ok"), Check.within("err", float("nan"), 1e-3, "the loss is off"), Check(True, "later")],
            {"k": 1}, "passed")
out["verdict"] = [v.status, v.reason]
out["verdict_pass"] = verdict([Check(False, "x")], {}, "all good").reason
p = torch.nn.Parameter(torch.tensor([1.0, -2.0]))
q = torch.nn.Parameter(p.detach().clone())
opt = torch.optim.SGD([q], lr=0.1, momentum=0.9, weight_decay=0.01)
buffers = [None]
for grad in (torch.tensor([0.5, 0.25]), torch.tensor([-1.0, 2.0])):
    p.grad, q.grad = grad.clone(), grad.clone()
    sgd_step([p], buffers, 0.1, momentum=0.9, weight_decay=0.01)
    opt.step()
out["sgd_matches_torch"] = float((p - q).abs().max())
print(json.dumps(out))
"""
)


def _run_in_runtime(runtime: Runtime, script: str, cwd: Path, env: dict[str, str] | None = None) -> dict[str, object]:
    done = subprocess.run(
        [str(runtime.bin_dir / "python"), "-c", script],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
        env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin", **(env or {})},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_readers_refuse_what_the_protocol_forbids_and_comparisons_count_nan_as_far(
    runtime: Runtime, tmp_path: Path
) -> None:
    script = TORCH_SIDE.replace("HARNESSLIB", repr(str(HARNESSLIB)), 1).replace("TMP", repr(str(tmp_path)), 1)
    got = _run_in_runtime(runtime, script, tmp_path)
    assert got["jsonl"] == [[0, 1.0, None, 5.0], [1, 0.5, None, 5.0], [2, 1 / 3, None, 5.0]]
    assert got["gap"] == "gap.jsonl covers 2 records, expected step 0..1 in order"
    assert "over the 1000-byte limit" in str(got["huge"])
    assert got["link"] == "link.jsonl: Too many levels of symbolic links"
    assert got["state"] == {"w": [[2, 3], "torch.float32"], "b": [[3], "torch.float32"]}
    assert got["no_key"] == "state.pt: no 'model' state dict"
    assert "not a dense floating-point CPU tensor" in str(got["ints"])
    assert "not a dense floating-point CPU tensor" in str(got["sparse"])
    assert "refused by torch.load(weights_only=True)" in str(got["pickle"]) and got["pwned"] is False
    assert "over the" in str(got["bomb"]) or "unpacks to" in str(got["bomb"])
    assert got["rank_swap"] == "rank1.pt: not a format-1 observer record of rank 1"
    assert got["steps_short"] == "rank 0 states: 1 recorded states, expected 2"
    assert got["not_dict"] == "x is not a dict of tensors"
    assert got["diff"] == [0.5, "w"]
    assert got["diff_nan"][0] == float("inf") and got["diff_nan"][1] == "b"
    assert got["diff_missing"] == [float("inf"), "b"]
    assert got["spread"][1] == "w" and 0.9e-3 < got["spread"][0] < 1.1e-3
    assert got["trajectory"] == [0.5, 1, "w"] and got["trajectory_len"] == float("inf")
    assert got["abs"] == [float("inf"), 1]
    assert got["rel"][1] == 0 and abs(got["rel"][0] - 0.1) < 1e-9
    assert got["first"] == [2, -1, 1]
    assert got["rel_l2"] == [0.0, float("inf")]
    assert got["structure"][0] is None and "has shape (2,), expected (3,)" in got["structure"][1]
    assert "missing=[] extra=['b']" in got["structure"][2]
    assert got["verdict"][0] == "fail" and got["verdict"][1].startswith("the loss is off (err nan, tolerance 0.001)")
    assert got["verdict_pass"] == "all good"
    assert got["sgd_matches_torch"] == 0.0


TRAIN = r"""
import os, torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
dist.init_process_group("gloo")
torch.manual_seed(0)
model = DDP(torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1)))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
gen = torch.Generator().manual_seed(dist.get_rank())
for step in range(3):
    opt.zero_grad()
    model(torch.randn(5, 3, generator=gen)).pow(2).mean().backward()
    opt.step()
dist.barrier()
dist.destroy_process_group()
os._exit(0)
"""

OBSERVER = r"""
import torch
from rank_observer import RankObserver, cpu32

class Steps(RankObserver):
    def __init__(self, *args):
        super().__init__(*args)
        self.params, self.grads, self.roots = [], [], []
    def on_root_forward(self, module, args):
        self.roots.append(type(module).__name__)
    def on_step_pre(self, optimizer, step):
        named = self.named(optimizer)
        self.params.append({n: cpu32(p) for n, p in named})
        self.grads.append({n: cpu32(p.grad) for n, p in named})
    def on_step_post(self, optimizer, step):
        if step + 1 == self.steps:
            self.write({"params": self.params, "grads": self.grads, "roots": self.roots,
                        "final": {n: cpu32(p) for n, p in self.named(optimizer)}})

def install():
    observer = Steps.from_env()
    if observer is not None:
        observer.install()
"""


@pytest.mark.slow
def test_an_observer_records_named_steps_on_every_rank_of_a_real_ddp_job(
    runtime: Runtime, tmp_path: Path, bwrap_usable: None
) -> None:
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "observe").mkdir()
    (tmp_path / "observe" / "steps_observer.py").write_text(OBSERVER)
    pipeline = launch.Pipeline(module="train", observers=("steps_observer:install",),
                               observer_path=(tmp_path / "observe",))  # fmt: skip
    script = textwrap.dedent(f"""
        import json, os, sys
        sys.path[:0] = [{str(HARNESSLIB)!r}]
        from launch import Pipeline
        from pathlib import Path
        pipeline = Pipeline(module="train", observers=("steps_observer:install",),
                            observer_path=(Path({str(tmp_path / "observe")!r}),))
        out = {{}}
        for name, observe in (("observed", {{"TRAINFAIL_OBSERVE_DIR": {str(tmp_path / "records")!r},
                                               "TRAINFAIL_OBSERVE_STEPS": "2"}}), ("quiet", None)):
            result = pipeline.run(workspace=Path({str(tmp_path)!r}), args=[], nproc=2,
                                  log_path=Path({str(tmp_path)!r}) / f"{{name}}.log", timeout_s=240, observe=observe)
            out[name] = result.returncode
        print(json.dumps(out))
    """)
    assert pipeline.observers == ("steps_observer:install",)
    got = _run_in_runtime(runtime, script, tmp_path)
    assert got == {"observed": 0, "quiet": 0}, (tmp_path / "observed.log").read_text()[-2000:]
    check = textwrap.dedent(f"""
        import json, sys
        sys.path[:0] = [{str(HARNESSLIB)!r}]
        from pathlib import Path
        from readers import read_rank_records, states
        records = read_rank_records(Path({str(tmp_path / "records")!r}), 2, 1 << 20)
        params = [states(r["params"], "params", 2) for r in records]
        grads = [states(r["grads"], "grads", 2) for r in records]
        print(json.dumps({{
            "names": sorted(params[0][0]), "world": [r["world"] for r in records], "roots": records[0]["roots"],
            "grad_spread": max(float((grads[0][k][n] - grads[1][k][n]).abs().max())
                               for k in range(2) for n in grads[0][k]),
            "moved": float((params[0][1]["0.weight"] - params[0][0]["0.weight"]).abs().max()),
        }}))
    """)
    seen = _run_in_runtime(runtime, check, tmp_path)
    assert seen["names"] == ["0.bias", "0.weight", "2.bias", "2.weight"], "named as the model inside DDP names them"
    assert seen["world"] == [2, 2] and seen["roots"] == ["DistributedDataParallel"] * 2
    assert seen["grad_spread"] < 1e-6, "DDP averaged the gradients the observer saw at optimizer.step"
    assert seen["moved"] > 0
    assert not (tmp_path / "records" / "rank2.pt").exists()


AUTOCAST_SIDE = r"""
import contextlib, json, sys
import torch
sys.path[:0] = [OBSERVERS]
from autocast_probe import AutocastProbe
probe = AutocastProbe(record_only=("cpu",)).install()
seen = {"outside": probe.state()}
with torch.autocast("cpu", dtype=torch.bfloat16):
    seen["with"] = probe.state()
    # recorded, not applied: a CPU matmul stays float32
    seen["dtype"] = str((torch.ones(2, 2) @ torch.ones(2, 2)).dtype)
    with torch.autocast("cpu", enabled=False):
        seen["nested_off"] = probe.state()
    seen["back"] = probe.state()
with contextlib.ExitStack() as stack:
    stack.enter_context(torch.cpu.amp.autocast(dtype=torch.float16))
    seen["exit_stack_alias"] = probe.state()
try:
    with torch.amp.autocast("cpu", dtype=torch.bfloat16):
        raise KeyError("inside")
except KeyError:
    seen["after_raise"] = probe.state()
seen["left"] = len(probe.entered)
print(json.dumps(seen))
"""


def test_the_autocast_probe_sees_every_way_of_entering_an_autocast(runtime: Runtime, tmp_path: Path) -> None:
    script = AUTOCAST_SIDE.replace("OBSERVERS", repr(str(HARNESSLIB / "observers")), 1)
    got = _run_in_runtime(runtime, script, tmp_path)
    assert got["outside"] == "off" and got["with"] == "cpu:bfloat16"
    assert got["dtype"] == "torch.float32", "a record-only device type's autocast is not applied"
    assert got["nested_off"] == "off" and got["back"] == "cpu:bfloat16", "innermost wins, as autocasts nest"
    assert got["exit_stack_alias"] == "cpu:float16", "an alias entered through an ExitStack is the same class"
    assert got["after_raise"] == "off" and got["left"] == 0, "an exception leaves no autocast entered"


SAFETENSORS_SIDE = (
    r"""
import json, os, sys
from pathlib import Path
import torch
from safetensors.torch import save_file
sys.path[:0] = [HARNESSLIB]
from artifacts import ArtifactError
from readers import read_safetensors
"""
    + REFUSED
    + r"""
save_file({"w": torch.ones(2, 3), "h": torch.zeros(4, dtype=torch.bfloat16)}, str(tmp / "model.safetensors"))
kept = read_safetensors(tmp / "model.safetensors", 1 << 20, None)
out["kept"] = {k: [list(v.shape), str(v.dtype)] for k, v in sorted(kept.items())}
out["as32"] = sorted({str(v.dtype) for v in read_safetensors(tmp / "model.safetensors", 1 << 20).values()})
refused("small_limit", lambda: read_safetensors(tmp / "model.safetensors", 64))
os.symlink(tmp / "model.safetensors", tmp / "link.safetensors")
refused("link", lambda: read_safetensors(tmp / "link.safetensors", 1 << 20))
(tmp / "huge_header.safetensors").write_bytes((1 << 40).to_bytes(8, "little") + b"{}")
refused("huge_header", lambda: read_safetensors(tmp / "huge_header.safetensors", 1 << 20))
(tmp / "garbage.safetensors").write_bytes((8).to_bytes(8, "little") + b"not json")
refused("garbage", lambda: read_safetensors(tmp / "garbage.safetensors", 1 << 20))
save_file({"ids": torch.arange(3)}, str(tmp / "ints.safetensors"))
refused("ints", lambda: read_safetensors(tmp / "ints.safetensors", 1 << 20))
print(json.dumps(out))
"""
)


def test_safetensors_weights_are_read_bounded_and_typed(runtime: Runtime, tmp_path: Path) -> None:
    got = _run_in_runtime(runtime, f"HARNESSLIB = {str(HARNESSLIB)!r}\nTMP = {str(tmp_path)!r}\n" + SAFETENSORS_SIDE,
                          tmp_path)  # fmt: skip
    assert got["kept"] == {"h": [[4], "torch.bfloat16"], "w": [[2, 3], "torch.float32"]}, "dtype None keeps each"
    assert got["as32"] == ["torch.float32"]
    assert "over the 64-byte limit" in str(got["small_limit"])
    assert got["link"] != "accepted" and got["garbage"] != "accepted"
    assert "no valid safetensors header" in str(got["huge_header"])
    assert "not a dense floating-point CPU tensor" in str(got["ints"])


def test_a_judge_built_from_its_phase_inputs_sees_the_oracle_and_the_host_clock(tmp_path: Path) -> None:
    from gym_trainfail.harnesslib import judgekit

    seen: list[judgekit.PhaseInputs] = []

    @dataclass(frozen=True)
    class Obs:
        metrics: list[object]

    def make_kit(inputs: judgekit.PhaseInputs) -> judgekit.JudgeKit:
        seen.append(inputs)

        def compare(sc: ToyScenario, obs: Obs) -> judgekit.Verdict:
            where = inputs.oracle_dir(sc.name)
            return judgekit.Verdict("pass", f"oracle at {where}, unit {inputs.duration_s}s", {"n": 1.0})

        return judgekit.JudgeKit("Toy", ToyScenario.from_request, lambda sc, folder: Obs([]), compare)

    (tmp_path / "scenarios.json").write_text(json.dumps([{"name": "two", "kind": "healthy", "devices": 2}]))
    (tmp_path / "run.json").write_text(json.dumps({"duration_s": 12.5, "scenarios": 1, "timed_out": False}))
    (tmp_path / "artifacts" / "two").mkdir(parents=True)
    args = ["--scenarios", str(tmp_path / "scenarios.json"), "--artifacts", str(tmp_path / "artifacts"),
            "--run", str(tmp_path / "run.json"), "--out-dir", str(tmp_path / "out"), "--oracle", "/oracle"]  # fmt: skip
    judgekit.main_with(make_kit, argv=args)
    outcome = json.loads((tmp_path / "out" / "two.json").read_text())
    assert (outcome["status"], outcome["reason"]) == ("pass", "oracle at /oracle/two, unit 12.5s")
    assert (seen[0].unit_scenarios, seen[0].timed_out) == (1, False)
    assert seen[0].oracle_dir("../escape") is None, "a scenario name never leaves the oracle root"
    # a host record with odd fields reads as unknown, never as a time a verdict could rest on
    (tmp_path / "run.json").write_text(json.dumps({"duration_s": "fast", "scenarios": True, "timed_out": 1}))
    odd = judgekit.read_phase_inputs(tmp_path / "run.json", None)
    assert (odd.duration_s, odd.unit_scenarios, odd.timed_out, odd.oracle_dir("two")) == (None, None, False, None)
    (tmp_path / "run.json").write_text(json.dumps({"duration_s": -3.0}))
    assert judgekit.read_phase_inputs(tmp_path / "run.json", None).duration_s is None
    assert judgekit.read_phase_inputs(tmp_path / "missing.json", None).duration_s is None


def test_observer_settings_and_record_files_name_what_the_observer_and_judge_expect(tmp_path: Path) -> None:
    from gym_trainfail.harnesslib import runkit  # noqa: PLC0415 - the run kit's side, standard library only

    settings = launch.observe_settings(tmp_path / "observe", 12, full_every=4)
    assert settings == {"TRAINFAIL_OBSERVE_DIR": str(tmp_path / "observe"), "TRAINFAIL_OBSERVE_STEPS": "12",
                        "TRAINFAIL_OBSERVE_FULL_EVERY": "4"}  # fmt: skip
    pipeline = launch.Pipeline(module="train", observers=("obs:start",))
    env = pipeline.job_env("gloo", settings)
    assert env["TRAINFAIL_OBSERVERS"] == "obs:start" and env["TRAINFAIL_OBSERVE_STEPS"] == "12"
    assert "TRAINFAIL_OBSERVE_DIR" not in pipeline.job_env("gloo"), "observers stay off without settings"
    assert runkit.rank_files("observe", 3, 1 << 20) == [("observe/rank0.pt", 1 << 20), ("observe/rank1.pt", 1 << 20),
                                                        ("observe/rank2.pt", 1 << 20)]  # fmt: skip
    assert runkit.rank_files("observe", 0, 1) == []


TP_LAYOUT = r"""
import io, json, os, sys
from pathlib import Path
sys.path.insert(0, HARNESSLIB)
import torch
from artifacts import ArtifactError
from compare import gather_shards, replica_spread, shard_problem, shard_shapes
from readers import read_model_states

split = lambda name: {"col.weight": 0, "row.weight": 1}.get(name)
full = {"col.weight": torch.arange(24.0).view(6, 4), "row.weight": torch.arange(12.0).view(2, 6),
        "ln.weight": torch.ones(4)}
pieces = [{"col.weight": full["col.weight"][3 * r:3 * r + 3], "row.weight": full["row.weight"][:, 3 * r:3 * r + 3],
           "ln.weight": full["ln.weight"].clone()} for r in range(2)]
out = {"gathered": all(torch.equal(gather_shards(pieces, split)[n], full[n]) for n in full)}
out["shapes"] = {n: list(s) for n, s in shard_shapes({n: v.shape for n, v in full.items()}, 2, split).items()}
try:
    shard_shapes({"col.weight": (5, 4)}, 2, split)
except ValueError as err:
    out["uneven"] = str(err)
shapes = {n: v.shape for n, v in full.items()}
out["layout_ok"] = shard_problem(pieces, shapes, split, "rank")
whole = [dict(pieces[0], **{"row.weight": full["row.weight"]}), pieces[1]]
out["layout_whole"] = shard_problem(whole, shapes, split, "rank")
out["layout_missing"] = shard_problem([pieces[0], {"col.weight": pieces[1]["col.weight"]}], shapes, split, "rank")
try:
    gather_shards([pieces[0], {"ln.weight": torch.ones(4)}], split)
except ValueError as err:
    out["gather_missing"] = str(err)
pieces[1]["ln.weight"][2] += 1e-7
out["spread"] = list(replica_spread(pieces, ["ln.weight"]))

tmp = Path(TMP)
good = tmp / "good"
good.mkdir()
for r in range(2):
    blob = {"module": {**pieces[r], "col._extra_state": None}, "optimizer": None}
    torch.save(blob, good / f"mp_rank_{r:02d}_model_states.pt")
states = read_model_states(good, 2, 1 << 20)
out["read"] = [sorted(s) for s in states]
class Payload:
    def __reduce__(self):
        return (os.system, ("touch " + str(tmp / "pwned"),))
for label, module in [("extra_not_none", {"w._extra_state": torch.zeros(2, dtype=torch.int64)}),
                      ("pickle", {"w": Payload()}), ("no_module", None)]:
    folder = tmp / label
    folder.mkdir()
    torch.save({"module": module} if module is not None else {"model": {}}, folder / "mp_rank_00_model_states.pt")
    try:
        read_model_states(folder, 1, 1 << 20)
    except ArtifactError as err:
        out[label] = str(err)
try:
    read_model_states(good, 3, 1 << 20)
except ArtifactError as err:
    out["rank_missing"] = str(err)
(tmp / "linked").symlink_to(good)
try:
    read_model_states(tmp / "linked", 2, 1 << 20)
except ArtifactError as err:
    out["linked"] = str(err)
out["pwned"] = (tmp / "pwned").exists()
print(json.dumps(out))
"""


def test_tensor_parallel_layouts_gather_and_check_pieces_and_model_states_read_as_adversarial_data(
    runtime: Runtime, tmp_path: Path
) -> None:
    script = TP_LAYOUT.replace("HARNESSLIB", repr(str(HARNESSLIB)), 1).replace("TMP", repr(str(tmp_path)), 1)
    got = _run_in_runtime(runtime, script, tmp_path)
    assert got["gathered"] is True
    assert got["shapes"] == {"col.weight": [3, 4], "row.weight": [2, 3], "ln.weight": [4]}
    assert got["uneven"] == "col.weight: dim 0 of (5, 4) does not split into 2 equal pieces"
    assert got["layout_ok"] is None
    assert got["layout_whole"] == "rank 0: row.weight has shape (2, 6), expected (2, 3)"
    assert "rank 1: names differ from the model's: missing=['ln.weight', 'row.weight']" in str(got["layout_missing"])
    assert got["gather_missing"] == "col.weight: the ranks' pieces do not join along dim 0 (KeyError)"
    spread = got["spread"]
    assert isinstance(spread, list) and spread[1] == "ln.weight" and 0 < spread[0] < 1e-6
    assert got["read"] == [["col.weight", "ln.weight", "row.weight"]] * 2, "an empty _extra_state is skipped"
    assert "not a dense floating-point CPU tensor" in str(got["extra_not_none"])
    assert "refused by torch.load(weights_only=True)" in str(got["pickle"]) and got["pwned"] is False
    assert got["no_module"] == "mp_rank_00_model_states.pt: no 'module' state dict"
    assert got["rank_missing"] == "mp_rank_02_model_states.pt: No such file or directory"
    assert got["linked"] == "linked/: no checkpoint folder"
