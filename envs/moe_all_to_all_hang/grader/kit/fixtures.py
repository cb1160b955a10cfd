"""The grader's own corpus and initial weights: pure functions of the scenario (the run kit writes
them for the pipeline, the judge regenerates them; nothing is read back from the run)."""
from __future__ import annotations

from pathlib import Path

import torch
from scenario import DENSE, EXPERT_KEYS, Scenario


def corpus(sc: Scenario) -> dict[str, torch.Tensor]:
    """``{"x", "y", "lengths"}`` in the README's corpus layout."""
    gen = torch.Generator().manual_seed(sc.seed)
    lengths = torch.tensor(sc.lengths, dtype=torch.long)
    n = int(lengths.sum())
    x = torch.randn(n, sc.input_dim, generator=gen)
    mix = torch.randn(sc.input_dim, sc.output_dim, generator=gen) / sc.input_dim**0.5
    y = torch.sin(x @ mix) + 0.1 * torch.randn(n, sc.output_dim, generator=gen)
    return {"x": x, "y": y, "lengths": lengths}


def initial_weights(sc: Scenario) -> dict[str, torch.Tensor]:
    """Every tensor of the README's flat weight file (all experts), float32."""
    gen = torch.Generator().manual_seed(sc.seed + 1)

    def uniform(*shape: int, fan_in: int) -> torch.Tensor:
        return (torch.rand(*shape, generator=gen) * 2 - 1) / fan_in**0.5

    h, f = sc.hidden_size, sc.ffn_hidden_size
    out = {"embed.weight": uniform(h, sc.input_dim, fan_in=sc.input_dim), "embed.bias": uniform(h, fan_in=sc.input_dim),
           "router.weight": uniform(sc.num_experts, h, fan_in=h) * 2,
           "head.weight": uniform(sc.output_dim, h, fan_in=h), "head.bias": uniform(sc.output_dim, fan_in=h)}
    for g in range(sc.num_experts):
        shapes = {"0.weight": ((f, h), h), "0.bias": ((f,), h), "2.weight": ((h, f), f), "2.bias": ((h,), f)}
        for key in EXPERT_KEYS:
            shape, fan_in = shapes[key]
            out[f"experts.{g}.{key}"] = uniform(*shape, fan_in=fan_in)
    assert set(DENSE) <= set(out)
    return out


def save_inputs(sc: Scenario, folder: Path) -> dict[str, Path]:
    """Write the corpus and the initial weights; the options that point the pipeline at them."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = {"data.corpus": folder / "corpus.pt", "init.checkpoint": folder / "init.pt"}
    torch.save(corpus(sc), paths["data.corpus"])
    torch.save(initial_weights(sc), paths["init.checkpoint"])
    return paths
