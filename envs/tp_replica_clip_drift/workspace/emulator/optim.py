"""The bf16 optimizer this project trains with.

DeepSpeed builds its ``BF16_Optimizer`` (bf16 model weights and gradients, fp32 master
weights, fp32 gradient accumulation) inside ``deepspeed.initialize`` when ``bf16`` is on with
ZeRO stage 1. We run our own subclass of it, carried over from the Megatron-DeepSpeed fork
this code base started from: it keeps the fork's gradient collection, a single loop that
serves both the global-norm computation and the clipping step, without the expert-parallel
(MoE) bookkeeping of upstream's version (this model has no experts). ``install()`` makes
``deepspeed.initialize`` build this class instead of upstream's.
"""
from __future__ import annotations

import deepspeed.runtime.engine as ds_engine
import torch
from deepspeed.runtime.bf16_optimizer import BF16_Optimizer
from deepspeed.runtime.constants import PIPE_REPLICATED
from deepspeed.runtime.utils import is_model_parallel_parameter
from deepspeed.utils.bwc import bwc_tensor_model_parallel_rank


class ProjectBF16Optimizer(BF16_Optimizer):
    """DeepSpeed's BF16 optimizer with the fork's gradient collection."""

    @torch.no_grad()
    def get_grads_for_norm(self, for_clipping: bool = False):  # type: ignore[no-untyped-def]
        """The fp32 gradients for the global norm (``for_clipping=False``: returned as
        ``(grads, {})``, the shape upstream's ``step`` expects), or the gradients the clip
        coefficient is applied to (``for_clipping=True``: a list).

        The norm is summed over the tensor-parallel group by DeepSpeed, so a parameter that
        every tensor-parallel rank holds in full is counted on rank 0 only; parameters split
        across ranks are counted everywhere.
        """
        grads = []
        tensor_mp_rank = bwc_tensor_model_parallel_rank(mpu=self.mpu)
        for i, group in enumerate(self.bf16_groups):
            for j, lp in enumerate(group):
                if not for_clipping:
                    if hasattr(lp, PIPE_REPLICATED) and lp.ds_pipe_replicated:
                        continue

                if not (tensor_mp_rank == 0 or is_model_parallel_parameter(lp)):
                    continue

                if not self.fp32_groups_has_gradients[i][j]:
                    continue

                grads.append(self.fp32_groups_gradients[i][j])

        if for_clipping:
            return grads
        return grads, {}


def install() -> None:
    """Make ``deepspeed.initialize`` construct :class:`ProjectBF16Optimizer` for bf16 runs."""
    ds_engine.BF16_Optimizer = ProjectBF16Optimizer  # type: ignore[misc]
