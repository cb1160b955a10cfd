"""Judge phase of TrainFail/PipelineTiedEmbedding-v1 (trusted: no revision code runs here).

    python /grader/judge.py --scenarios /io/scenarios.json --artifacts /artifacts \
        --run /io/run.json --out-dir /io/outcomes

Reads the README's outputs as adversarial data: every rank's checkpoint after every step
(checkpoints/step_XXXXX/stage<S>-dp<D>.pt, exactly the README's parameter names and shapes
for that stage) and metrics.jsonl. Regenerates the grader's inputs (kit/fixtures.py) and
trains the specification itself: one process, float64, one tied table used as the input
embedding and as the output layer, the whole global batch per step (mean token cross-entropy),
torch.optim.SGD with momentum. Every saved parameter of every rank after every step, the
first stage's embed.weight and the last stage's head.weight included, and every logged
loss must match it.

Leak canary (never where the agent or the run phase can look): TRAINFAIL-CANARY-8641b7e117ffb73b1d1316a87b38fd01
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(1, str(Path(__file__).resolve().parent / "kit"))

import judgekit  # noqa: E402 - the harness library
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from artifacts import ArtifactError  # noqa: E402
from compare import Check, max_abs_error, structure_problem, verdict  # noqa: E402
from fixtures import corpus, init_state  # noqa: E402
from readers import Step, read_jsonl, read_state  # noqa: E402
from scenario import Scenario  # noqa: E402

State = dict[str, torch.Tensor]


@dataclass(frozen=True)
class Observation:
    saved: list[dict[tuple[int, int], State]]  # per step: (stage, dp) -> that rank's parameters
    metrics: list[Step]


def observe(sc: Scenario, folder: Path) -> Observation:
    metrics = read_jsonl(folder / "metrics.jsonl", index="step", fields=("loss",), count=sc.steps)
    saved = []
    for step in range(1, sc.steps + 1):
        ranks = {}
        for stage in range(sc.stages):
            shapes = {name: shape for name, shape in reference_shapes(sc).items() if name in sc.stage_names(stage)}
            for dp in range(sc.dp_size):
                name = f"checkpoints/step_{step:05d}/stage{stage}-dp{dp}.pt"
                path = folder / name
                if path.is_symlink() or not path.is_file():
                    raise ArtifactError(f"{name} is missing")
                state = read_state(path, sc.state_limit_bytes, dtype=torch.float32)
                problem = structure_problem(state, shapes, name)
                if problem:
                    raise ArtifactError(problem)
                ranks[(stage, dp)] = state
        saved.append(ranks)
    return Observation(saved, metrics)


def reference_shapes(sc: Scenario) -> dict[str, tuple[int, ...]]:
    shapes = {name: tuple(t.shape) for name, t in init_state(sc).items()}
    shapes["head.weight"] = shapes["embed.weight"]
    return shapes


def reference(sc: Scenario) -> tuple[list[State], list[float]]:
    """The tied model trained in one process, float64: parameters after each step, loss of each step."""
    params = {name: t.double().clone().requires_grad_(True) for name, t in init_state(sc).items()}
    opt = torch.optim.SGD(list(params.values()), lr=sc.lr, momentum=sc.momentum)
    rows = corpus(sc)
    states, losses = [], []
    for step in range(sc.steps):
        idx = torch.arange(step * sc.global_batch, (step + 1) * sc.global_batch) % sc.corpus_rows
        batch = rows[idx]
        table = params["embed.weight"]
        h = table[batch[:, :-1]]
        for i in range(sc.num_blocks):
            p = f"blocks.{i}."
            inner = torch.tanh(F.linear(h, params[p + "fc1.weight"], params[p + "fc1.bias"]))
            h = h + F.linear(inner, params[p + "fc2.weight"], params[p + "fc2.bias"])
        logits = h @ table.t()
        loss = F.cross_entropy(logits.reshape(-1, sc.vocab_size), batch[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
        state = {name: t.detach().clone() for name, t in params.items()}
        state["head.weight"] = state["embed.weight"]
        states.append(state)
    return states, losses


def compare(sc: Scenario, obs: Observation) -> judgekit.Verdict:
    ref_states, ref_losses = reference(sc)
    worst, worst_at, first_bad = 0.0, "", 0
    spread, spread_at = 0.0, ""
    for step, (ranks, ref) in enumerate(zip(obs.saved, ref_states), start=1):
        for (stage, dp), state in ranks.items():
            for name, tensor in state.items():
                diff = float((tensor.double() - ref[name]).abs().max())
                diff = diff if diff == diff else float("inf")
                if diff > worst:
                    worst, worst_at = diff, f"{name} of stage {stage} replica {dp} after step {step}"
                if diff > sc.param_atol and not first_bad:
                    first_bad = step
        copies = [s["embed.weight"] for (stage, _), s in ranks.items() if stage == 0]
        copies += [s["head.weight"] for (stage, _), s in ranks.items() if stage == sc.stages - 1]
        for other in copies[1:]:
            gap = float((other.double() - copies[0].double()).abs().max())
            gap = gap if gap == gap else float("inf")
            if gap > spread:
                spread, spread_at = gap, f"after step {step}"
    loss_err, loss_at = max_abs_error([s["loss"] for s in obs.metrics], ref_losses)
    metrics = {"max_param_diff": worst, "tied_copy_spread": spread, "loss_abs_err": loss_err,
               "first_step_off": first_bad}
    checks = [
        Check.within("max |dparam|", worst, sc.param_atol,
                     f"saved parameters leave the single-process tied reference ({worst_at}; tied copies "
                     f"apart by {spread:.3e} {spread_at})"),
        Check.within("loss abs err", loss_err, sc.loss_atol,
                     f"logged loss of step {loss_at} differs from the single-process tied reference"),
    ]
    return verdict(checks, metrics, f"every rank's parameters within {worst:.1e} of single-process tied training "
                                    f"after each of {sc.steps} steps; loss within {loss_err:.1e}")


KIT = judgekit.JudgeKit("PipelineTiedEmbedding", Scenario.from_request, observe, compare)

if __name__ == "__main__":
    judgekit.main(KIT)
