"""The training recipe the workspace documents, frozen for the oracle.

Values mirror the workspace's configs/finetune.yaml as shipped; the harness runs the
pipeline for STEPS updates and compares it with an oracle that follows this recipe.
"""
from __future__ import annotations

REPO_ID = "lumen-labs/pythia-14m-base"
STEPS = 2
SEED = 1234
MICRO_BATCH_SIZE = 2
SEQ_LEN = 64
LR = 3.0e-4
BETAS = (0.9, 0.95)
EPS = 1.0e-8
WEIGHT_DECAY = 0.1
HIDDEN_DROPOUT = 0.1
ATTENTION_DROPOUT = 0.1
