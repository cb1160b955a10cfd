"""The vocabulary head: projects only the rows some output needs, 512 rows at a time.

Every output of every request in a call names physical rows: target-loss rows, raw-logits
rows and top-k rows. Their union, in index order, is projected in chunks of
``PROJECTION_CHUNK_ROWS`` rows, so the full ``rows x vocab`` logits never exist. The target
loss is computed chunk by chunk in the forward pass, and its backward recomputes each chunk's
logits for the rows that are part of the target graph (a target request's labelled rows, and
its ignored rows when another output projects them: they are in the same projected chunk).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from .calls import IGNORE_INDEX, Call
from .config import PROJECTION_CHUNK_ROWS


@dataclass(frozen=True)
class Projection:
    """Which physical rows the head projects, and what each output takes from them."""

    rows: tuple[int, ...]                 # the union, ascending
    target_rows: tuple[int, ...]          # rows in the target graph, ascending
    target_labels: tuple[int, ...]        # their labels (IGNORE_INDEX allowed)
    logits_rows: tuple[int, ...]
    topk_rows: tuple[tuple[int, int], ...]

    @classmethod
    def of(cls, call: Call) -> "Projection":
        others = set(call.logits_rows()) | {row for row, _ in call.topk_rows()}
        target: dict[int, int] = {}
        for off, req in zip(call.offsets, call.requests):
            if req.labels is None:
                continue
            for i, lab in enumerate(req.labels):
                if lab != IGNORE_INDEX or off + i in others:
                    target[off + i] = lab
        rows = sorted(others | set(target))
        ordered = sorted(target)
        return cls(tuple(rows), tuple(ordered), tuple(target[r] for r in ordered),
                   tuple(call.logits_rows()), tuple(call.topk_rows()))

    def chunks(self) -> list[tuple[int, ...]]:
        step = PROJECTION_CHUNK_ROWS
        return [self.rows[i:i + step] for i in range(0, len(self.rows), step)]


class ProjectedHead(torch.autograd.Function):
    """Target loss (sum over labelled rows / their count) plus raw-logits and top-k outputs."""

    @staticmethod
    def forward(ctx, hidden, weight, proj: Projection, vocab: int, outputs: dict):  # noqa: ANN001
        labelled = sum(1 for lab in proj.target_labels if lab != IGNORE_INDEX)
        target_at = dict(zip(proj.target_rows, proj.target_labels))
        logits_at = {row: i for i, row in enumerate(proj.logits_rows)}
        topk_at: dict[int, list[tuple[int, int]]] = {}
        for i, (row, k) in enumerate(proj.topk_rows):
            topk_at.setdefault(row, []).append((i, k))
        out_logits = hidden.new_empty((len(proj.logits_rows), vocab))
        topk_values: list[torch.Tensor | None] = [None] * len(proj.topk_rows)
        topk_ids: list[torch.Tensor | None] = [None] * len(proj.topk_rows)
        loss = torch.zeros((), dtype=torch.float32)
        for chunk in proj.chunks():
            index = torch.tensor(chunk, dtype=torch.long)
            logits = F.linear(hidden.index_select(0, index), weight)
            logits[:, vocab:] = float("-inf")
            picks = [(j, target_at[row]) for j, row in enumerate(chunk)
                     if target_at.get(row, IGNORE_INDEX) != IGNORE_INDEX]
            if picks:
                sel = torch.tensor([j for j, _ in picks], dtype=torch.long)
                lab = torch.tensor([t for _, t in picks], dtype=torch.long)
                lse = torch.logsumexp(logits, dim=-1).float()[sel]
                loss += (lse - logits[sel, lab].float()).sum()
            for j, row in enumerate(chunk):
                if row in logits_at:
                    out_logits[logits_at[row]] = logits[j, :vocab]
                for i, k in topk_at.get(row, ()):
                    topk_values[i], topk_ids[i] = logits[j, :vocab].topk(k)
            del logits
        outputs["logits"] = out_logits
        outputs["topk"] = list(zip(topk_values, topk_ids))
        ctx.save_for_backward(hidden, weight)
        ctx.proj, ctx.vocab, ctx.labelled = proj, vocab, labelled
        return loss / max(labelled, 1)

    @staticmethod
    def backward(ctx, grad_loss):  # noqa: ANN001
        hidden, weight = ctx.saved_tensors
        proj, vocab = ctx.proj, ctx.vocab
        scale = (grad_loss / max(ctx.labelled, 1)).to(hidden.dtype)
        grad_hidden = torch.zeros_like(hidden)
        # the weight gradient accumulates straight into the preallocated main_grad buffer
        grad_weight = weight.main_grad
        target_at = dict(zip(proj.target_rows, proj.target_labels))
        for chunk in proj.chunks():
            rows = [row for row in chunk if row in target_at]
            if not rows:
                continue
            index = torch.tensor(rows, dtype=torch.long)
            labels = torch.tensor([target_at[r] for r in rows], dtype=torch.long)
            keep = labels != IGNORE_INDEX
            h = hidden.index_select(0, index)
            # three dense buffers of the chunk: logits, probabilities, d loss / d logits
            logits = F.linear(h, weight)
            logits[:, vocab:] = float("-inf")
            probs = torch.softmax(logits, dim=-1)
            grad_logits = probs.clone()
            hit = keep.nonzero().squeeze(1)
            grad_logits[hit, labels[hit]] -= 1
            grad_logits.mul_(keep.to(grad_logits.dtype)[:, None] * scale)
            grad_hidden.index_add_(0, index, grad_logits @ weight)
            grad_weight.addmm_(grad_logits.t(), h)
            del logits, probs, grad_logits, h
        return grad_hidden, None, None, None, None
