"""What devices this host has: GPUs as ``nvidia-smi`` and the driver report them, and the
``Device`` handle both the device pool and the sandboxes use. The lowest layer of the device
model: it imports nothing of the gym but its errors.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from gym_trainfail.errors import TrainFailError


@dataclass(frozen=True)
class Device:
    """One allocatable device: a GPU (``kind='gpu'``, ``index`` its host id) or a CPU slot."""

    kind: str
    index: int


#: What :func:`query_gpus` asks ``nvidia-smi`` for, in this order.
GPU_QUERY = "index,uuid,name,driver_version,pci.bus_id"
#: Restricts the GPUs a pool may lease to these host indices (comma-separated; empty: none).
#: The Ray runner sets it to the ids Ray assigned to the task.
GPU_IDS_ENV = "TRAINFAIL_GPU_IDS"
#: Where the NVIDIA driver publishes per-GPU facts (``Device Minor`` = the ``/dev/nvidia<N>`` node).
PROC_DRIVER_GPUS = Path("/proc/driver/nvidia/gpus")


@dataclass(frozen=True)
class GpuInfo:
    """One GPU as ``nvidia-smi`` reports it (``index`` is its host index, PCI bus order)."""

    index: int
    uuid: str = ""
    name: str = ""
    driver: str = ""
    bus_id: str = ""

    @property
    def minor(self) -> int:
        """The minor number of its ``/dev/nvidia<N>`` node (from the driver's proc file; the
        index where that file is missing, which is what the driver does on most hosts)."""
        for folder in (self.bus_id.lower(), self.bus_id.lower().removeprefix("0000")):
            info = PROC_DRIVER_GPUS / folder / "information" if folder else None
            if info is not None and info.is_file():
                for line in info.read_text(errors="replace").splitlines():
                    key, _, value = line.partition(":")
                    if key.strip() == "Device Minor" and value.strip().isdigit():
                        return int(value.strip())
        return self.index


def query_gpus() -> list[GpuInfo]:
    """The host's GPUs as ``nvidia-smi`` reports them (empty without one or when it fails)."""
    if shutil.which("nvidia-smi") is None:
        return []
    try:
        out = subprocess.run(
            ["nvidia-smi", f"--query-gpu={GPU_QUERY}", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=20, check=True,
        ).stdout  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return []
    gpus = []
    for line in out.splitlines():
        fields = [f.strip() for f in line.split(",")]
        if fields and fields[0].isdigit():
            fields += [""] * (5 - len(fields))
            gpus.append(GpuInfo(int(fields[0]), fields[1], fields[2], fields[3], fields[4]))
    return gpus


def detect_gpus() -> list[int]:
    """Host GPU indices reported by ``nvidia-smi`` (empty without one)."""
    return [gpu.index for gpu in query_gpus()]


def allowed_gpu_ids() -> set[int] | None:
    """The host GPU indices ``$TRAINFAIL_GPU_IDS`` allows (``None``: unrestricted)."""
    value = os.environ.get(GPU_IDS_ENV)
    if value is None:
        return None
    try:
        return {int(part) for part in value.replace(" ", "").split(",") if part}
    except ValueError:
        raise TrainFailError(f"{GPU_IDS_ENV}={value!r}: expected comma-separated GPU indices") from None
