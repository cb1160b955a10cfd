"""What a run leaves in `out_dir`: `metrics.jsonl` (rank 0) and the console line of each step."""
from __future__ import annotations

import json
from pathlib import Path


class Journal:
    def __init__(self, folder: str, *, enabled: bool) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.handle = (self.folder / "metrics.jsonl").open("w") if enabled else None

    def record(self, step: int, loss: float, grad_norm: float) -> None:
        if self.handle is None:
            return
        self.handle.write(json.dumps({"step": step, "loss": loss}) + "\n")
        self.handle.flush()
        print(f"step {step:3d}  loss {loss:.4f}  grad_norm {grad_norm:.4f}", flush=True)

    def close(self) -> None:
        if self.handle is not None:
            self.handle.close()
