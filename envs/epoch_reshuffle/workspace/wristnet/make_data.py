"""Write the synthetic window table and the starting weights a config names.

    python -m wristnet.make_data --config configs/cpu.toml [--set section.key=value ...]

``data.table``: ``{"windows": float32 [rows, features], "gesture": int64 [rows]}``;
``model.init``: a ``GestureNet`` state dict. Both come from ``run.seed``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch

from wristnet.net import GestureNet
from wristnet.settings import load


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True)
    parser.add_argument("--set", dest="assignments", action="append", default=[])
    cfg = load(parser.parse_args().config, parser.parse_args().assignments)
    data, model = cfg["data"], cfg["model"]
    gen = torch.Generator().manual_seed(cfg["run"]["seed"])
    centres = torch.randn(data["classes"], data["features"], generator=gen)
    gesture = torch.randint(0, data["classes"], (data["rows"],), generator=gen)
    windows = centres[gesture] + 1.5 * torch.randn(data["rows"], data["features"], generator=gen)
    torch.manual_seed(cfg["run"]["seed"])
    net = GestureNet(data["features"], model["hidden"], data["classes"])
    for path in (data["table"], model["init"]):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    torch.save({"windows": windows, "gesture": gesture}, data["table"])
    torch.save(net.state_dict(), model["init"])
    print(f"wrote {data['rows']} windows to {data['table']} and weights to {model['init']}")


if __name__ == "__main__":
    main()
