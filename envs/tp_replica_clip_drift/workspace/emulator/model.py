"""The emulator network: a residual MLP whose feed-forward layers are megatron-core's
tensor-parallel linears.

    x -> input_proj -> [h + fc2(GELU(fc1(ln(h))))] x num_layers -> final_ln -> head

Layers are built in fp32 on the CPU with megatron-core's own CPU initialisation (which marks
the partitioned weights as tensor-parallel), overwritten from the consolidated checkpoint, and
then cast to the training dtype by ``train.py``. ``fc1`` (ColumnParallelLinear) keeps its
output partitioned; ``fc2`` (RowParallelLinear) takes a partitioned input, sums the partial
products over the ranks and adds its (replicated) bias after the sum.
"""
from __future__ import annotations

import argparse

import torch
import torch.nn.functional as F
from megatron.core.model_parallel_config import ModelParallelConfig
from megatron.core.tensor_parallel import ColumnParallelLinear, RowParallelLinear
from torch import nn


def layer_config(args: argparse.Namespace) -> ModelParallelConfig:
    return ModelParallelConfig(
        tensor_model_parallel_size=args.tensor_model_parallel_size,
        params_dtype=torch.float32,
        use_cpu_initialization=True,
        gradient_accumulation_fusion=False,
    )


class FeedForward(nn.Module):
    def __init__(self, args: argparse.Namespace, config: ModelParallelConfig) -> None:
        super().__init__()
        self.fc1 = ColumnParallelLinear(args.hidden_size, args.ffn_hidden_size, config=config,
                                        init_method=nn.init.xavier_normal_, bias=True, gather_output=False)
        self.fc2 = RowParallelLinear(args.ffn_hidden_size, args.hidden_size, config=config,
                                     init_method=nn.init.xavier_normal_, bias=True, input_is_parallel=True,
                                     skip_bias_add=False)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.fc2(F.gelu(self.fc1(hidden)[0]))[0]


class ResidualLayer(nn.Module):
    """Pre-LayerNorm residual layer (LayerNorm eps 1e-5)."""

    def __init__(self, args: argparse.Namespace, config: ModelParallelConfig) -> None:
        super().__init__()
        self.ln = nn.LayerNorm(args.hidden_size, eps=1e-5)
        self.mlp = FeedForward(args, config)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return hidden + self.mlp(self.ln(hidden))


class EmulatorModel(nn.Module):
    def __init__(self, args: argparse.Namespace) -> None:
        super().__init__()
        config = layer_config(args)
        self.input_proj = nn.Linear(args.input_dim, args.hidden_size)
        self.blocks = nn.ModuleList(ResidualLayer(args, config) for _ in range(args.num_layers))
        self.final_ln = nn.LayerNorm(args.hidden_size, eps=1e-5)
        self.head = nn.Linear(args.hidden_size, args.output_dim)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        hidden = self.input_proj(features)
        for layer in self.blocks:
            hidden = layer(hidden)
        return self.head(self.final_ln(hidden))


def model_provider(args: argparse.Namespace) -> EmulatorModel:
    """This tensor-parallel rank's part of the model, in fp32 on the CPU."""
    return EmulatorModel(args)
