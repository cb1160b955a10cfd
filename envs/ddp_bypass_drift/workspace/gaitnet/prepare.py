"""Write the synthetic sensor windows and the initial checkpoint a config names.

    python -m gaitnet.prepare --config configs/ddp.yaml [name=value ...]

Both depend on ``seed`` and the model sizes only, never on the number of ranks: the weights are
the layers' default initialisation after ``torch.manual_seed(seed)``; the 4096 windows are class
prototypes seen through the two sensors with independent noise.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import torch

from gaitnet.model import ActivityNet
from gaitnet.settings import read_settings

WINDOWS = 4096


def sensor_windows(seed: int, input_dim: int, num_classes: int) -> dict[str, torch.Tensor]:
    """Wrist (``x``) and ankle (``x_view``) windows of the same activity (``y``)."""
    rng = torch.Generator().manual_seed(seed)
    prototypes = torch.randn(num_classes, input_dim, generator=rng)
    ankle_mixing = torch.eye(input_dim) + 0.3 * torch.randn(input_dim, input_dim, generator=rng)
    activity = torch.randint(0, num_classes, (WINDOWS,), generator=rng)
    wrist_noise, ankle_noise = (0.8 * torch.randn(WINDOWS, input_dim, generator=rng) for _ in "wa")
    wrist = prototypes[activity]
    return {"x": wrist + wrist_noise, "x_view": wrist @ ankle_mixing + ankle_noise, "y": activity}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="write the synthetic dataset and the initial checkpoint")
    parser.add_argument("--config", required=True)
    parser.add_argument("overrides", nargs="*")
    args = parser.parse_args()
    settings = read_settings(args.config, args.overrides)
    torch.manual_seed(settings["seed"])
    files = {
        settings["model.init_checkpoint"]: ActivityNet.from_settings(settings).state_dict(),
        settings["data.path"]: sensor_windows(settings["seed"], settings["model.input_dim"], settings["model.num_classes"]),
    }
    for path, blob in files.items():
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        torch.save(blob, path)
    print(f"wrote {settings['data.path']} ({WINDOWS} windows) and {settings['model.init_checkpoint']}")
