"""Residual MLP emulator model with Megatron tensor-parallel feed-forward layers.

    x -> input_proj -> [h + MLP(LayerNorm(h))] x num_layers -> final_ln -> head

Each MLP is megatron-core's ColumnParallelLinear (``fc1``, output features split across
tensor-parallel ranks) -> GELU -> RowParallelLinear (``fc2``, input features split, output
summed over ranks, bias added after the sum). ``input_proj``, the LayerNorms, ``fc2.bias``
and ``head`` are replicated on every rank.
"""
from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from megatron.core import tensor_parallel
from megatron.core.model_parallel_config import ModelParallelConfig
from torch import nn


def megatron_config(tensor_parallel_size: int) -> ModelParallelConfig:
    """Layer config for CPU-friendly Megatron layers.

    Parameters are built in float32 on the CPU (megatron-core's CPU init, which also marks
    the split weights as tensor-parallel) and then overwritten from the consolidated
    checkpoint; ``build_model`` casts the model to the training dtype afterwards.
    """
    return ModelParallelConfig(
        tensor_model_parallel_size=tensor_parallel_size,
        params_dtype=torch.float32,
        use_cpu_initialization=True,
        gradient_accumulation_fusion=False,
    )


class ParallelMLP(nn.Module):
    """Megatron feed-forward block: column-parallel fc1, GELU, row-parallel fc2."""

    def __init__(self, hidden: int, ffn_hidden: int, config: ModelParallelConfig) -> None:
        super().__init__()
        init = nn.init.xavier_normal_  # overwritten by the consolidated checkpoint
        self.fc1 = tensor_parallel.ColumnParallelLinear(
            hidden, ffn_hidden, config=config, init_method=init, bias=True, gather_output=False
        )
        self.fc2 = tensor_parallel.RowParallelLinear(
            ffn_hidden, hidden, config=config, init_method=init, bias=True,
            input_is_parallel=True, skip_bias_add=False,
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h, _ = self.fc1(x)
        out, _ = self.fc2(F.gelu(h))
        return out


class ResidualBlock(nn.Module):
    """Pre-LayerNorm residual block around a ParallelMLP."""

    def __init__(self, hidden: int, ffn_hidden: int, config: ModelParallelConfig) -> None:
        super().__init__()
        self.ln = nn.LayerNorm(hidden)
        self.mlp = ParallelMLP(hidden, ffn_hidden, config)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.mlp(self.ln(x))


class EmulatorModel(nn.Module):
    """Maps ``[batch, input_dim]`` features to ``[batch, output_dim]`` targets."""

    def __init__(self, input_dim: int, hidden_size: int, ffn_hidden_size: int,
                 num_layers: int, output_dim: int, config: ModelParallelConfig) -> None:
        super().__init__()
        self.input_proj = nn.Linear(input_dim, hidden_size)
        self.blocks = nn.ModuleList(
            ResidualBlock(hidden_size, ffn_hidden_size, config) for _ in range(num_layers)
        )
        self.final_ln = nn.LayerNorm(hidden_size)
        self.head = nn.Linear(hidden_size, output_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.input_proj(x)
        for block in self.blocks:
            h = block(h)
        return self.head(self.final_ln(h))


def build_model(model_cfg: dict[str, Any], tensor_parallel_size: int) -> EmulatorModel:
    """Build this rank's part of the model from the ``model`` config section."""
    return EmulatorModel(
        input_dim=model_cfg["input_dim"],
        hidden_size=model_cfg["hidden_size"],
        ffn_hidden_size=model_cfg["ffn_hidden_size"],
        num_layers=model_cfg["num_layers"],
        output_dim=model_cfg["output_dim"],
        config=megatron_config(tensor_parallel_size),
    )
