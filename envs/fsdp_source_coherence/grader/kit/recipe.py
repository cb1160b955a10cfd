"""The training recipe the workspace documents, frozen for the oracle.

Values mirror the workspace's configs/finetune.yaml as shipped (nothing here is private). The
run kit runs the pipeline for STEPS updates; the trusted oracle follows this recipe, and the
judge compares the two.
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
