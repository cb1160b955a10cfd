"""The residual MLP surrogate, with megatron-core tensor-parallel feed-forward layers.

    x -> input_proj -> num_layers x [h + fc2(GELU(fc1(ln(h))))] -> final_ln -> head

``fc1`` is megatron-core's ColumnParallelLinear (output features split across the
tensor-parallel ranks), ``fc2`` its RowParallelLinear (input features split; the partial
outputs are summed over the ranks before the bias is added). ``input_proj``, the LayerNorms,
``fc2.bias`` and ``head`` are full copies on every rank.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from megatron.core import tensor_parallel
from megatron.core.model_parallel_config import ModelParallelConfig
from torch import nn

from surrogate.config import ModelSettings


def megatron_config(tensor_parallel_size: int) -> ModelParallelConfig:
    """Layer settings for fp32 Megatron layers built on the CPU.

    Parameters are allocated and left uninitialised: every run loads a consolidated
    checkpoint into them (``ckpt.restore``), so a random init would only be overwritten.
    """
    return ModelParallelConfig(
        tensor_model_parallel_size=tensor_parallel_size,
        params_dtype=torch.float32,
        use_cpu_initialization=True,
        perform_initialization=False,
        gradient_accumulation_fusion=False,
    )


class ParallelMLP(nn.Module):
    """Column-parallel ``fc1``, exact GELU, row-parallel ``fc2``."""

    def __init__(self, hidden: int, ffn_hidden: int, config: ModelParallelConfig) -> None:
        super().__init__()
        unused_init = nn.init.xavier_normal_  # the checkpoint provides the weights
        self.fc1 = tensor_parallel.ColumnParallelLinear(
            hidden, ffn_hidden, config=config, init_method=unused_init, bias=True, gather_output=False
        )
        self.fc2 = tensor_parallel.RowParallelLinear(
            ffn_hidden, hidden, config=config, init_method=unused_init, bias=True,
            input_is_parallel=True, skip_bias_add=False,
        )

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        inner, _ = self.fc1(h)
        out, _ = self.fc2(F.gelu(inner))
        return out


class Block(nn.Module):
    """``h + mlp(ln(h))``."""

    def __init__(self, hidden: int, ffn_hidden: int, config: ModelParallelConfig) -> None:
        super().__init__()
        self.ln = nn.LayerNorm(hidden)
        self.mlp = ParallelMLP(hidden, ffn_hidden, config)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return h + self.mlp(self.ln(h))


class SurrogateModel(nn.Module):
    """``[batch, input_dim]`` features to ``[batch, output_dim]`` predictions."""

    def __init__(self, shape: ModelSettings, config: ModelParallelConfig) -> None:
        super().__init__()
        self.input_proj = nn.Linear(shape.input_dim, shape.hidden_size)
        self.blocks = nn.ModuleList(
            [Block(shape.hidden_size, shape.ffn_hidden_size, config) for _ in range(shape.num_layers)]
        )
        self.final_ln = nn.LayerNorm(shape.hidden_size)
        self.head = nn.Linear(shape.hidden_size, shape.output_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.input_proj(x)
        for block in self.blocks:
            h = block(h)
        return self.head(self.final_ln(h))


def build_model(shape: ModelSettings, tensor_parallel_size: int) -> SurrogateModel:
    """This rank's part of the model."""
    return SurrogateModel(shape, megatron_config(tensor_parallel_size))
