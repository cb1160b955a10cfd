"""TrainFail/FSDPSourceCoherence-v2's judge against hand-made probe records (no training run).

The judge passes a run only when its records agree with themselves and with the saved weights
and its whole state is bitwise the oracle of the revision the scenario's ``model.revision``
names on the mirror. Each check is attacked on its own: the other revision reproduced exactly
(what a pipeline reading a stale node copy, or rank 0's copy, does), a row-wise hybrid, a record
whose digests were rewritten, saved weights that are not the recorded ones, another RNG state,
malformed records, and a missing oracle (not a verdict). Runs in the case runtime's python.
The whole grader (oracle, kit, judge, every scenario) is exercised by the case's qualification.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from gym_trainfail.paths import SOURCE_ROOT
from gym_trainfail.runtimes import Runtime

CASE_DIR = SOURCE_ROOT / "envs" / "fsdp_source_coherence"
HARNESSLIB = SOURCE_ROOT / "gym_trainfail" / "harnesslib"

SCRIPT = """
import copy, json, sys
sys.path[:0] = [GRADER, GRADER + "/kit", HARNESSLIB, HARNESSLIB + "/observers"]
import torch
import coherence
from artifacts import ArtifactError
from judge import Observation, compare
from scenario import Scenario
from source_probe import FIELDS, combined, row_fingerprints, value_digest

def model(seed):
    g = torch.Generator().manual_seed(seed)
    return {"w": torch.randn(6, 3, generator=g), "b": torch.randn(6, generator=g)}

def raws(init, final, rng=None, world=2):
    state = {"init": init, "params": final, "buffers": {}, "grads": {k: v * 0.5 for k, v in final.items()},
             "opt": {"w.step": torch.tensor(2.0), "group0.lr": 3e-4}}
    digests = {f: {k: value_digest(v) for k, v in state[f].items()} for f in FIELDS}
    rng = rng if rng is not None else torch.Generator().manual_seed(9).get_state()
    out = []
    for rank in range(world):
        rec = {"format": 1, "rank": rank, "world": world, "rng": rng.clone(),
               "init_digest": combined(digests["init"]), "final_digest": combined(digests["params"])}
        if rank == 0:
            rec |= {"digests": digests, "init_rows": {k: row_fingerprints(v) for k, v in init.items()},
                    "params": final}
        out.append(rec)
    return out

a_init, b_init = model(1), model(2)
a_final = {k: v + 0.01 for k, v in a_init.items()}
b_final = {k: v + 0.01 for k, v in b_init.items()}
oracles = {"A": coherence.parse_record(raws(a_init, a_final), 2, oracle=True),
           "B": coherence.parse_record(raws(b_init, b_final), 2, oracle=True)}
main_b = Scenario.from_request({"name": "s", "kind": "failure", "devices": 2, "params": {}})
by_commit = Scenario.from_request({"name": "c", "kind": "healthy", "devices": 2, "params": {"revision": "commit:A"}})
rollback = Scenario.from_request({"name": "r", "kind": "failure", "devices": 2,
                                  "params": {"revision": "release", "mirror_refs": {"main": "B", "release": "A"}}})
out = {"expected": [main_b.expected, by_commit.expected, rollback.expected]}

def verdict(label, sc, records, weights, problem=""):
    v = compare(sc, Observation(coherence.parse_record(records, 2), weights, oracles, problem))
    out[label] = [v.status, v.reason, v.metrics.get("initial_rows")]

verdict("honest_b", main_b, raws(b_init, b_final), b_final)
verdict("honest_a_by_commit", by_commit, raws(a_init, a_final), a_final)
verdict("honest_a_by_release", rollback, raws(a_init, a_final), a_final)
verdict("other_revision", main_b, raws(a_init, a_final), a_final)
hybrid = {k: torch.cat([a_init[k][:3], b_init[k][3:]]) for k in a_init}
hybrid_final = {k: v + 0.01 for k, v in hybrid.items()}
verdict("hybrid", main_b, raws(hybrid, hybrid_final), hybrid_final)
forged = raws(b_init, b_final)
forged[0]["digests"]["params"]["w"] = value_digest(b_final["w"] + 1)
verdict("digest_rewritten", main_b, forged, b_final)
verdict("weights_not_recorded", main_b, raws(b_init, b_final), {**b_final, "w": b_final["w"] + 1e-7})
verdict("weights_extra", main_b, raws(b_init, b_final), {**b_final, "extra": torch.zeros(1)})
other_rng = raws(b_init, b_final)
other_rng[1]["rng"] = torch.Generator().manual_seed(10).get_state()
verdict("rng", main_b, other_rng, b_final)
verdict("no_oracle", main_b, raws(b_init, b_final), b_final, "rank0.pt: missing")

def refused(label, records, world=2):
    try:
        coherence.parse_record(records, world)
        out[label] = "accepted"
    except ArtifactError as err:
        out[label] = str(err)

bad = raws(b_init, b_final); bad[0]["digests"]["init"]["w"] = "not-a-digest"
refused("bad_digest", bad)
bad = raws(b_init, b_final); del bad[0]["digests"]["opt"]
refused("missing_field", bad)
bad = raws(b_init, b_final); bad[1]["rng"] = torch.zeros(3)
refused("rng_type", bad)
refused("world", raws(b_init, b_final), world=4)
bad = raws(b_init, b_final); bad[0]["init_rows"]["w"] = torch.zeros(2, 2, dtype=torch.int64)
refused("rows_shape", bad)
bad = raws(b_init, b_final); bad[0]["digests"]["grads"] = {f"p{i}": "0" * 64 for i in range(5000)}
refused("too_many", bad)
for bad_params in ({"revision": "commit:C"}, {"revision": "nightly"}, {"mirror_refs": {"release": "A"}},
                   {"node_caches": {"node0": {"snapshots": ["A"], "refs": {"main": "B"}}}}, {"node_root": "../up"}):
    try:
        Scenario.from_request({"name": "x", "kind": "failure", "devices": 2, "params": bad_params})
        out.setdefault("scenario_refused", []).append("accepted")
    except ValueError as err:
        out.setdefault("scenario_refused", []).append(str(err)[:80])
print(json.dumps(out))
"""


def test_the_judge_passes_only_the_named_revision_bitwise(runtime: Runtime, tmp_path: Path) -> None:
    head = f"GRADER = {str(CASE_DIR / 'grader')!r}\nHARNESSLIB = {str(HARNESSLIB)!r}\n"
    done = subprocess.run(
        [str(runtime.bin_dir / "python"), "-c", head + SCRIPT],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["expected"] == ["B", "A", "A"], "a ref as the mirror's refs say; a commit is itself"
    for label in ("honest_b", "honest_a_by_commit", "honest_a_by_release"):
        assert out[label][0] == "pass", (label, out[label])
    status, reason, rows = out["other_revision"]
    assert status == "fail" and "bitwise the single-source run of A" in reason and "names B" in reason
    status, reason, rows = out["hybrid"]
    assert status == "fail" and "matches no single source" in reason
    assert rows == {"A": 6, "B": 6, "neither": 0}, "half of each tensor's rows from each revision"
    assert out["digest_rewritten"][0] == "fail" and "disagree" in out["digest_rewritten"][1]
    assert out["weights_not_recorded"][0] == "fail" and "differ from the recorded" in out["weights_not_recorded"][1]
    assert out["weights_extra"][0] == "fail" and "saved weights hold" in out["weights_extra"][1]
    assert out["rng"][0] == "fail" and "rng" in out["rng"][1]
    assert out["no_oracle"][0] == "retry", "a missing oracle is a grader fault, never a verdict"
    for label in ("bad_digest", "missing_field", "rng_type", "world", "rows_shape", "too_many"):
        assert out[label] != "accepted", label
    assert "accepted" not in out["scenario_refused"], out["scenario_refused"]


@pytest.mark.parametrize("patch", sorted(p.name for p in (CASE_DIR / "grader" / "wrong_repairs").glob("*.patch")))
def test_every_wrong_repair_is_documented(patch: str) -> None:
    assert f"`{patch.removesuffix('.patch')}`" in (CASE_DIR / "grader" / "README.md").read_text()
