"""The decoder a trainer rank runs: packed sequences, activation checkpointing, BF16."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

from .config import ModelConfig, RuntimeConfig


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.rms_norm(x, (x.shape[-1],), self.weight, self.eps)


class DecoderLayer(nn.Module):
    """Pre-norm attention + SwiGLU MLP over packed rows (causal within each sequence)."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        h = cfg.hidden_size
        self.num_heads = cfg.num_heads
        self.attn_norm = RMSNorm(h)
        self.qkv = nn.Linear(h, 3 * h, bias=False)
        self.out = nn.Linear(h, h, bias=False)
        self.mlp_norm = RMSNorm(h)
        self.gate_up = nn.Linear(h, 2 * cfg.ffn_hidden_size, bias=False)
        self.down = nn.Linear(cfg.ffn_hidden_size, h, bias=False)

    def attention(self, x: torch.Tensor, lengths: list[int]) -> torch.Tensor:
        rows, hidden = x.shape
        q, k, v = self.qkv(x).view(rows, 3, self.num_heads, hidden // self.num_heads).unbind(1)
        parts = []
        for qs, ks, vs in zip(q.split(lengths), k.split(lengths), v.split(lengths)):
            # (1, heads, seq, head_dim): the fused CPU/GPU kernels keep memory linear in seq
            o = F.scaled_dot_product_attention(qs.transpose(0, 1)[None], ks.transpose(0, 1)[None],
                                               vs.transpose(0, 1)[None], is_causal=True)
            parts.append(o[0].transpose(0, 1).reshape(-1, hidden))
        return self.out(torch.cat(parts))

    def forward(self, x: torch.Tensor, lengths: list[int]) -> torch.Tensor:
        x = x + self.attention(self.attn_norm(x), lengths)
        gate, up = self.gate_up(self.mlp_norm(x)).chunk(2, dim=-1)
        return x + self.down(F.silu(gate) * up)


class Decoder(nn.Module):
    """Embedding, decoder layers and the final norm; the vocabulary head is ``head.py``."""

    def __init__(self, cfg: ModelConfig, runtime: RuntimeConfig | None = None) -> None:
        super().__init__()
        self.cfg = cfg
        self.runtime = runtime or RuntimeConfig()
        self.embed = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
        self.layers = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.num_layers))
        self.final_norm = RMSNorm(cfg.hidden_size)
        # vocabulary head weight, rows padded to a multiple of 128 (see head.py)
        self.head_weight = nn.Parameter(torch.empty(cfg.padded_vocab, cfg.hidden_size))

    @classmethod
    def build(cls, cfg: ModelConfig, runtime: RuntimeConfig | None = None) -> "Decoder":
        torch.manual_seed(cfg.seed)
        model = cls(cfg, runtime)
        with torch.no_grad():
            for p in model.parameters():
                if p.dim() > 1:
                    p.normal_(0.0, 0.02)
            model.head_weight[cfg.vocab_size:].zero_()
        model = model.to(torch.bfloat16)
        # the head's weight gradient is accumulated in place (see head.py), into a buffer
        # allocated once with the model, like the other persistent training state
        model.head_weight.main_grad = torch.zeros_like(model.head_weight)
        return model

    def forward(self, tokens: torch.Tensor, lengths: list[int]) -> torch.Tensor:
        x = self.embed(tokens)
        last = len(self.layers) - 1
        for index, layer in enumerate(self.layers):
            # the final norm runs inside the last layer's segment
            segment = layer if index < last else self._last_segment
            if self.runtime.recompute == "full" and torch.is_grad_enabled():
                # one decoder layer per checkpoint: only the segment's input is kept
                x = checkpoint(segment, x, lengths, use_reentrant=False)
            else:
                x = segment(x, lengths)
        return x

    def _last_segment(self, x: torch.Tensor, lengths: list[int]) -> torch.Tensor:
        return self.final_norm(self.layers[-1](x, lengths))
