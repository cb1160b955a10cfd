"""Case profiles: the scales a case runs at (``default``, and e.g. ``native`` on GPU hosts).

A profile lays scale parameters over every scenario's params and never changes a scenario's
name, kind or device count; it is part of the grader's version (receipts never cross scales),
of the episode record and of a batch plan, and a profile that needs GPUs is refused, with what
to do, on a host without them.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from gym_trainfail import cli
from gym_trainfail.batch.plan import BatchPlan, make_plan
from gym_trainfail.cases import DEFAULT_PROFILE, load_case, merge_params
from gym_trainfail.devices import DevicePool
from gym_trainfail.env import TrainFailEnv
from gym_trainfail.episode import episode_case
from gym_trainfail.errors import CaseDefinitionError, TrainFailError
from gym_trainfail.grading import Grader, harnesslib_digest
from gym_trainfail.hashing import bytes_digest
from gym_trainfail.registry import get_case
from gym_trainfail.runtimes import Runtime

from .conftest import ECHO_CASE

TP_CASE = "TrainFail/TPClipGradNorm-v1"

#: A profile of the echo case that changes the answer one scenario expects, so a grade shows
#: whether the profile's params reached the judge.
WIDE_CASE_TOML = """
[profiles.wide]
summary = "the answer scenario expects 43"
"""
WIDE_SCENARIOS = """
[profile.wide.params]
scale = 2

[[scenario]]
name = "runs"
kind = "healthy"
devices = 1
timeout_s = 60
[scenario.params]
expect = "any"

[[scenario]]
name = "answer"
kind = "failure"
devices = 2
timeout_s = 60
[scenario.params]
expect = "42"
[scenario.profile.wide]
expect = "43"
"""


def _wide_case(folder: Path) -> Path:
    shutil.copytree(ECHO_CASE, folder)
    with (folder / "case.toml").open("a") as handle:
        handle.write(WIDE_CASE_TOML)
    (folder / "grader" / "scenarios.toml").write_text(WIDE_SCENARIOS)
    return folder


def test_a_profile_lays_its_params_over_every_scenario_and_keeps_what_each_means() -> None:
    case = get_case(TP_CASE)
    native = case.with_profile("native")
    assert (case.profile, native.profile) == (DEFAULT_PROFILE, "native")
    assert native.profiles["native"].accelerator == "cuda"
    # Same scenarios, kinds and device counts; only params change.
    assert [(s.name, s.kind, s.devices) for s in native.scenarios] == [
        (s.name, s.kind, s.devices) for s in case.scenarios
    ]
    base, wide = case.scenario("tp4").params, native.scenario("tp4").params
    assert (wide["hidden_size"], wide["ffn_hidden_size"], wide["tp"], wide["seed"]) == (1024, 4096, 4, base["seed"])
    # A scenario's own override wins over the profile's: the shipped config stays the shipped one.
    assert native.scenario("shipped-config").params["hidden_size"] == 32
    assert native.check_command.endswith("configs/tp2-gpu.yaml")
    assert case.with_profile(None) is case and native.with_profile("native") is native
    # The loaded spec is untouched.
    assert "hidden_size" not in case.scenario("base").params


def test_merge_params_merges_tables_and_replaces_everything_else() -> None:
    base = {"model": {"hidden": 32, "layers": 2}, "calls": [1, 2], "seed": 1}
    merged = merge_params(base, {"model": {"hidden": 1024}, "calls": [3]})
    assert merged == {"model": {"hidden": 1024, "layers": 2}, "calls": [3], "seed": 1}
    assert base["model"] == {"hidden": 32, "layers": 2}


def test_unknown_profiles_and_a_second_profile_are_refused() -> None:
    case = get_case(TP_CASE)
    with pytest.raises(TrainFailError, match=r"has no profile 'huge'; it has: default, native"):
        case.with_profile("huge")
    with pytest.raises(TrainFailError, match="already at profile 'native'"):
        case.with_profile("native").with_profile(DEFAULT_PROFILE)


@pytest.mark.parametrize(
    ("case_toml", "scenarios", "message"),
    [
        ('\n[profiles.default]\nsummary = "x"\n', "", "profiles.default: a profile name is lowercase"),
        ('\n[profiles.Big]\nsummary = "x"\n', "", "profiles.Big: a profile name is lowercase"),
        ('\n[profiles.big]\nsummary = "x"\naccelerator = "tpu"\n', "", "expected one of ('cpu', 'cuda')"),
        ('\n[profiles.big]\nsummary = "x"\nsize = 3\n', "", "profiles.big.size: unknown key"),
        ('\n[profiles.big]\nsummary = "x"\nartifact_limit_mb = 0\n', "", "artifact_limit_mb: expected a positive"),
        ('\n[profiles.big]\nsummary = "  "\n', "", "profiles.big.summary: say what the profile scales"),
        ('\n[profiles.big]\nsummary = "x"\n', "", "profile 'big' (declared in case.toml) changes no scenario"),
        ("", "\n[profile.big.params]\nscale = 2\n", "profile 'big' is not declared in case.toml"),
        ('\n[profiles.big]\nsummary = "x"\n', "\n[profile.big]\nscale = 2\n", "expected one table, [profile.big"),
    ],
)
def test_broken_profiles_are_refused_at_registration(
    case_copy: Path, case_toml: str, scenarios: str, message: str
) -> None:
    with (case_copy / "case.toml").open("a") as handle:
        handle.write(case_toml)
    path = case_copy / "grader" / "scenarios.toml"
    path.write_text(scenarios + path.read_text())
    with pytest.raises(CaseDefinitionError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        load_case(case_copy)


def test_a_scenario_override_for_an_undeclared_profile_is_refused(case_copy: Path) -> None:
    path = case_copy / "grader" / "scenarios.toml"
    path.write_text(path.read_text() + '[scenario.profile.big]\nexpect = "7"\n')
    with pytest.raises(CaseDefinitionError, match="profile 'big' is not declared in case.toml"):
        load_case(case_copy)
    text = path.read_text().replace('[scenario.profile.big]\nexpect = "7"\n', "")
    path.write_text(text.replace("devices = 2\ntimeout_s = 60\n", "devices = 2\ntimeout_s = 60\nprofile = 3\n"))
    with pytest.raises(CaseDefinitionError, match=r"scenario\[1\]\.profile: expected \[scenario.profile.<name>\]"):
        load_case(case_copy)


def test_the_profile_is_part_of_the_graders_version(runtime: Runtime, tmp_path: Path) -> None:
    case = load_case(_wide_case(tmp_path / "echo"))
    default, wide = Grader(case, runtime=runtime), Grader(case.with_profile("wide"), runtime=runtime)
    assert default.grader_hash != wide.grader_hash
    assert default.receipt_path("t" * 64) != wide.receipt_path("t" * 64)
    # The default profile keeps the version it had before profiles existed (receipts stay valid).
    before = f"{case.grader_hash()}:{runtime.digest}:{harnesslib_digest()}"
    assert default.grader_hash == bytes_digest(before.encode())


@pytest.mark.usefixtures("bwrap_usable")
def test_the_judge_sees_the_profiles_params(runtime: Runtime, tmp_path: Path) -> None:
    """End to end: the reference repair answers 42; the ``wide`` profile's answer scenario
    expects 43, so the same tree passes at the default scale and fails at ``wide``."""
    from gym_trainfail.files import apply_patch

    case = load_case(_wide_case(tmp_path / "echo"))
    workspace = tmp_path / "workspace"
    shutil.copytree(case.workspace_dir, workspace)
    apply_patch(workspace, case.reference_patch)
    at_default = Grader(case, sandbox="bwrap", runtime=runtime, cache=False).grade_dir(workspace)
    at_wide = Grader(case.with_profile("wide"), sandbox="bwrap", runtime=runtime, cache=False).grade_dir(workspace)
    assert at_default.status == "pass"
    assert {o.scenario: o.status for o in at_wide.outcomes} == {"runs": "pass", "answer": "fail"}


def test_a_gpu_profile_is_refused_on_a_host_without_gpus(tmp_path: Path) -> None:
    pool = DevicePool(backend="process", count=2, root=tmp_path / "devices")
    with pytest.raises(TrainFailError, match="needs NVIDIA GPUs and this host's device pool has none"):
        TrainFailEnv(TP_CASE, profile="native", sandbox="process", device_pool=pool)
    native = get_case(TP_CASE).profiles["native"]
    assert "--accelerator cuda" in native.unsupported(gpus=1, variant="cpu")
    assert native.unsupported(gpus=1, variant="cuda") == ""
    assert get_case(TP_CASE).with_profile("native").profiles["native"].unsupported(gpus=0, variant="cuda")


def test_the_cli_refuses_a_gpu_profile_here_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(["run", "--case", TP_CASE, "--agent", "noop", "--profile", "native", "--sandbox", "process"])
    assert code == 1
    line = capsys.readouterr().err.strip()
    assert line.startswith("error:") and "profile 'native'" in line and "\n" not in line


def test_episodes_record_their_profile_and_are_graded_at_it(tmp_path: Path) -> None:
    case = load_case(_wide_case(tmp_path / "echo"))
    meta = {"case": case.id, "case_root": str(case.root), "profile": "wide"}
    assert episode_case(meta).profile == "wide"
    assert episode_case({**meta, "profile": None}).profile == DEFAULT_PROFILE
    del meta["profile"]  # an episode recorded before profiles existed ran at the default scale
    assert episode_case(meta).profile == DEFAULT_PROFILE


def test_a_resumed_episode_must_be_at_the_same_profile(runtime: Runtime, tmp_path: Path) -> None:
    case = load_case(_wide_case(tmp_path / "echo"))
    env = TrainFailEnv(case=case, sandbox="process", runs_root=tmp_path / "runs", grade_on_end=False)
    env.reset(options={"run_dir": tmp_path / "run"})
    env.close()
    assert json.loads((tmp_path / "run" / "episode.json").read_text())["profile"] == DEFAULT_PROFILE
    wide = TrainFailEnv(case=case, profile="wide", sandbox="process", grade_on_end=False)
    with pytest.raises(TrainFailError, match="profile default.*not .* profile wide"):
        wide.reset(options={"resume": tmp_path / "run"})


def test_a_batch_plans_every_case_at_its_profile(tmp_path: Path) -> None:
    case = load_case(_wide_case(tmp_path / "echo")).with_profile("wide")
    plan = make_plan([case], ["control"], ["noop"], 1)
    assert plan.spec.profile == "wide" and plan.episodes[0].profile == "wide"
    again = BatchPlan.from_json(json.loads(json.dumps(plan.to_json())))
    assert again.spec == plan.spec and again.episodes[0].case_spec().profile == "wide"
    # A plan written before profiles existed reads as the default scale.
    old = plan.to_json()
    del old["spec"]["profile"]
    for episode in old["episodes"]:
        del episode["profile"]
    assert BatchPlan.from_json(old).episodes[0].case_spec().profile == DEFAULT_PROFILE
    with pytest.raises(TrainFailError, match="one profile"):
        make_plan([case, get_case(TP_CASE)], ["control"], ["noop"], 1)


def test_cases_lists_every_profile(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["cases", "--json"]) == 0
    rows = {row["id"]: row for row in json.loads(capsys.readouterr().out)["cases"]}
    assert rows[TP_CASE]["profiles"]["native"]["accelerator"] == "cuda"


def _module(path: Path, name: str) -> object:
    """A case's grader module, loaded by path with its folder importable (as its kit runs it)."""
    import importlib.util
    import sys

    sys.path.insert(0, str(path.parent))
    try:
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses look their module up there
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(path.parent))


def test_the_tp_kit_accepts_every_native_scenario_and_sizes_its_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    case = get_case(TP_CASE).with_profile("native")
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "gym_trainfail" / "harnesslib"))
    kit = _module(case.kit_dir / "scenario.py", "tp_native_scenario")
    for scenario in case.scenarios:
        request = {"name": scenario.name, "kind": scenario.kind, "devices": scenario.devices, "params": scenario.params}
        parsed = kit.Scenario.from_request(request)  # type: ignore[attr-defined]
        # A rank's saved state (at most the whole model in float32, plus a little) fits its limit.
        assert parsed.state_limit_bytes >= 4 * parsed.parameter_count + (1 << 20)
    wide = kit.Scenario.from_request({"name": "base", "kind": "failure", "devices": 2,  # type: ignore[attr-defined]
                                      "params": dict(case.scenario("base").params)})  # fmt: skip
    assert wide.parameter_count == 33_864_720  # 135,458,880 bytes in float32; the TP=1 state measured 135,466,457


def test_the_ddp_kit_accepts_every_native_scenario_and_refuses_bad_widths(monkeypatch: pytest.MonkeyPatch) -> None:
    case = get_case("TrainFail/DDPTokenAverage-v1")
    native = case.with_profile("native")
    # A profile may give the run phase more room for its artifacts; the default scale keeps the case's.
    assert (case.artifact_limit_mb, native.artifact_limit_mb) == (1024, 2048)
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "gym_trainfail" / "harnesslib"))
    kit = _module(case.kit_dir / "scenario.py", "ddp_native_scenario")

    def parse(params: dict[str, object]) -> object:
        request = {"name": "s", "kind": "failure", "devices": params["world_size"], "params": params}
        return kit.Scenario.from_request(request)  # type: ignore[attr-defined]

    assert {parse(dict(s.params)).architecture for s in native.scenarios} == {"gpu"}  # type: ignore[attr-defined]
    assert {parse(dict(s.params)).architecture for s in case.scenarios} == {"tiny"}  # type: ignore[attr-defined]
    wide = parse(dict(native.scenarios[0].params))
    # a GPU-width record (3 updates of parameters and gradients, the final parameters) fits its limit
    assert wide.record_limit_bytes >= 4 * 3_225_088 * 7  # type: ignore[attr-defined]
    good = dict(native.scenarios[0].params)
    for bad, message in [
        ({"architecture": "huge"}, "architecture not one of"),
        ({"world_size": 3}, "world_size must be the devices"),
        ({"records": 63}, "records whole batches"),
        ({"max_grad_norm": float("nan")}, "max_grad_norm must be >= 0"),
        ({"grad_accum": True}, "grad_accum = True: expected an integer"),  # params.toml types it
        ({"model": {"hidden_size": 256}}, "unknown scenario params"),
    ]:
        with pytest.raises(ValueError, match=message):
            kit.Scenario.from_request({"name": "s", "kind": "failure", "devices": 2, "params": {**good, **bad}})  # type: ignore[attr-defined]


def test_the_fsdp_kit_reads_the_native_training_and_refuses_bad_values(monkeypatch: pytest.MonkeyPatch) -> None:
    case = get_case("TrainFail/FSDPSourceCoherence-v2")
    native = case.with_profile("native")
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "gym_trainfail" / "harnesslib"))
    kit = _module(case.kit_dir / "scenario.py", "fsdp_native_scenario")

    def parse(params: dict[str, object], devices: int = 2) -> object:
        request = {"name": "s", "kind": "healthy", "devices": devices, "params": params}
        return kit.Scenario.from_request(request)  # type: ignore[attr-defined]

    scaled = [parse(dict(s.params), s.devices) for s in native.scenarios]
    assert {(r.steps, r.micro_batch_size, r.seq_len) for r in scaled} == {(20, 8, 512)}  # type: ignore[attr-defined]
    assert {parse(dict(s.params), s.devices).steps for s in case.scenarios} == {2, 3}  # type: ignore[attr-defined]
    good = dict(native.scenarios[0].params)
    for bad in ({"steps": 0}, {"seq_len": 4096}, {"revision": "../x"}, {"mirror": "/abs"}, {"epochs": 3}):
        with pytest.raises(ValueError):
            parse({**good, **bad})
