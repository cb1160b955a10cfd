"""Reach helper: writes the tables the reach runs train on (copied to .reach/ by the workflow).

    python .reach/tables.py OUT_DIR

`extreme.pt`: the shipped recipe's table (twinhead.prepare.make_table) with every target kept
ordinary except one extreme demand target in rank 0's slice of step 1 (2 ranks x 8 rows);
`clean.pt`: the same table with no extreme target.
"""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path.cwd()))
from twinhead.prepare import make_table  # noqa: E402

out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
table = make_table(rows=128, seed=5)
table["target"].clamp_(-3.0, 3.0)
torch.save(table, out / "clean.pt")
table["target"][16 + 1, 0] = 2.0e4
torch.save(table, out / "extreme.pt")
