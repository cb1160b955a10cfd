"""The model: input projection, a stack of residual MLP blocks, a regression head.

Each block's MLP is megatron-core's ColumnParallelLinear (``fc1``, output features split across
tensor-parallel ranks) -> GELU -> RowParallelLinear (``fc2``, input features split). With
sequence parallelism the residual stream between the blocks is split along the sequence
(``seqmodel/sequence.py``), as in Megatron-LM.
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from megatron.core import tensor_parallel
from megatron.core.model_parallel_config import ModelParallelConfig
from torch import nn

from seqmodel.config import Config
from seqmodel.sequence import gather_sequence, split_sequence


def megatron_config(cfg: Config) -> ModelParallelConfig:
    """megatron-core layer settings: fp32 parameters built on the CPU, no fused kernels.

    The layers themselves run with ``sequence_parallel=False``: the sequence split and gather
    around them are ``seqmodel/sequence.py``'s.
    """
    return ModelParallelConfig(
        tensor_model_parallel_size=cfg.parallel.tensor_model_parallel_size,
        sequence_parallel=False,
        use_cpu_initialization=True,
        perform_initialization=True,
        gradient_accumulation_fusion=False,
        params_dtype=torch.float32,
    )


def _init(weight: torch.Tensor) -> None:
    nn.init.normal_(weight, mean=0.0, std=0.05)


class Block(nn.Module):
    """x + dropout(fc2(gelu(fc1(ln(x)))))."""

    def __init__(self, cfg: Config, mcfg: ModelParallelConfig) -> None:
        super().__init__()
        self.sequence_parallel = cfg.parallel.sequence_parallel
        hidden, ffn = cfg.model.hidden_size, cfg.model.ffn_hidden_size
        self.ln = nn.LayerNorm(hidden)
        self.fc1 = tensor_parallel.ColumnParallelLinear(
            hidden, ffn, config=mcfg, init_method=_init, bias=True, gather_output=False)
        self.fc2 = tensor_parallel.RowParallelLinear(
            ffn, hidden, config=mcfg, init_method=_init, bias=True, input_is_parallel=True,
            skip_bias_add=False)
        self.hidden_dropout = nn.Dropout(cfg.model.hidden_dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.ln(x)
        if self.sequence_parallel:
            h = gather_sequence(h)
        h, _ = self.fc1(h)
        h = F.gelu(h)
        h, _ = self.fc2(h)
        if self.sequence_parallel:
            h = split_sequence(h)
        return x + self.hidden_dropout(h)


class Stack(nn.Module):
    """The blocks, run in the RNG stream and the precision the configuration asks for."""

    def __init__(self, cfg: Config, mcfg: ModelParallelConfig) -> None:
        super().__init__()
        self.sequence_parallel = cfg.parallel.sequence_parallel
        self.bf16 = cfg.model.bf16
        self.layers = nn.ModuleList(Block(cfg, mcfg) for _ in range(cfg.model.num_layers))

    def precision_context(self, device_type: str) -> contextlib.AbstractContextManager[Any]:
        if self.bf16:
            return torch.autocast(device_type=device_type, dtype=torch.bfloat16)
        return contextlib.nullcontext()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.sequence_parallel:
            rng_context = tensor_parallel.get_cuda_rng_tracker().fork()
        else:
            rng_context = contextlib.nullcontext()
        precision_context = self.precision_context(x.device.type)

        with rng_context and precision_context:
            for layer in self.layers:
                x = layer(x)
        return x


class SequenceRegressor(nn.Module):
    """[s, b, input_dim] -> [s, b, output_dim]."""

    def __init__(self, cfg: Config) -> None:
        super().__init__()
        mcfg = megatron_config(cfg)
        self.sequence_parallel = cfg.parallel.sequence_parallel
        self.input_proj = nn.Linear(cfg.model.input_dim, cfg.model.hidden_size)
        self.embed_dropout = nn.Dropout(cfg.model.embed_dropout)
        self.stack = Stack(cfg, mcfg)
        self.final_ln = nn.LayerNorm(cfg.model.hidden_size)
        self.head = nn.Linear(cfg.model.hidden_size, cfg.model.output_dim)
        for name, param in self.named_parameters():
            # LayerNorms inside the sequence-parallel region see one chunk of the sequence
            # per rank: their gradients are summed over the tensor-parallel group.
            if self.sequence_parallel and name.endswith(("ln.weight", "ln.bias")):
                param.sequence_parallel = True  # type: ignore[attr-defined]

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        h = self.input_proj(x)
        if self.sequence_parallel:
            h = split_sequence(h)
            with tensor_parallel.get_cuda_rng_tracker().fork():
                return self.embed_dropout(h)
        return self.embed_dropout(h)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.stack(self.embed(x))
        h = self.final_ln(h)
        if self.sequence_parallel:
            h = gather_sequence(h)
        return self.head(h)


def build(cfg: Config, device: torch.device, init: Callable[[nn.Module], None] | None = None) -> SequenceRegressor:
    """The model on ``device`` (parameters built on the CPU from the default generator)."""
    model = SequenceRegressor(cfg)
    if init is not None:
        init(model)
    return model.to(device)
