"""Probe: how many response tokens each rank's micro-batches hold, and what the loss does with them.

Runs the pipeline's own training (sft.train.main: its dataset, collator, the Trainer's
distributed sampler and accumulation) for two updates, with SFTTrainer.compute_loss wrapped to
print, per rank and micro-batch, the valid (response) token count after the causal shift, the
Trainer's global count (num_items_in_batch) and the loss compute_loss returns.

    torchrun --standalone --nproc_per_node 2 outputs/probe_tokens.py
"""

from __future__ import annotations

import logging
import os
import sys
import warnings

sys.path.insert(0, os.getcwd())
warnings.filterwarnings("ignore")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
logging.disable(logging.WARNING)

from sft import train as sft_train  # noqa: E402
from sft.data import IGNORE_INDEX  # noqa: E402
from sft.trainer import SFTTrainer  # noqa: E402

RANK = int(os.environ.get("RANK", "0"))
STEPS = 2
original = SFTTrainer.compute_loss
micro = {"step": -1, "index": 0}


def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):  # type: ignore[no-untyped-def]
    step = self.state.global_step
    if step != micro["step"]:
        micro.update(step=step, index=0)
    valid = int((inputs["labels"][:, 1:] != IGNORE_INDEX).sum())
    result = original(self, model, inputs, return_outputs=return_outputs, num_items_in_batch=num_items_in_batch)
    loss = result[0] if isinstance(result, tuple) else result
    items = int(num_items_in_batch) if num_items_in_batch is not None else None
    print(
        f"[rank{RANK}] step {step} micro {micro['index']}: valid tokens={valid} "
        f"num_items_in_batch={items} loss={float(loss):.6f}",
        flush=True,
    )
    micro["index"] += 1
    return result


SFTTrainer.compute_loss = compute_loss

if __name__ == "__main__":
    sft_train.main([
        "--config", "configs/sft_tiny.yaml",
        f"training.max_steps={STEPS}",
        "training.output_dir=outputs/probe_tokens",
        "training.logging_steps=1",
    ])
    if RANK == 0:
        print(f"probe done: global_step={STEPS}", flush=True)
