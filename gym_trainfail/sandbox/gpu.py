"""How each backend shows a job exactly its leased GPUs, under the ids the job sees.

One device model: a lease holds host GPU indices (``nvidia-smi``'s ``index``, PCI bus order).

* ``docker``: a job container made with device requests for exactly those ids; inside, the
  NVIDIA runtime numbers them from 0, so ``CUDA_VISIBLE_DEVICES=0..n-1``.
* ``bwrap``: the sandbox's ``/dev`` is a fresh minimal one; the leased ``/dev/nvidia<minor>``
  nodes and the driver's control nodes (``nvidiactl``, ``nvidia-uvm``, ``nvidia-uvm-tools``,
  ``nvidia-modeset``, ``nvidia-caps/``, where present) are bound into it (``--dev-bind``, as
  Flatpak does), and the driver's user-space libraries (``ldconfig -p``: ``libcuda``,
  ``libnvidia-*``) are visible (under ``/usr``, read-only already; any outside ``/usr`` are bound
  read-only at their own paths). ``CUDA_VISIBLE_DEVICES`` names the leased GPUs by UUID, which
  means the same GPU whether or not CUDA numbers the GPUs without nodes.
* ``process``: the host itself; ``CUDA_VISIBLE_DEVICES`` = the leased host indices with
  ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` (CUDA's default order is fastest-first, not nvidia-smi's).

Without a GPU, tests point :data:`DEV_DIR` at a folder of fake nodes and feed
:func:`driver_libraries` a fake ``ldconfig -p`` listing.
"""

from __future__ import annotations

import functools
import re
import subprocess
from collections.abc import Sequence
from pathlib import Path

from gym_trainfail.hardware import Device, GpuInfo, query_gpus

#: Where the host's device nodes are (tests point it at fake nodes).
DEV_DIR = Path("/dev")
#: Driver nodes every CUDA process needs besides its GPUs' own nodes (bound where present).
CONTROL_NODES = ("nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset")
#: A folder of MIG capability nodes, bound where present.
CAPS_DIR = "nvidia-caps"
#: Driver libraries, as ``ldconfig -p`` names them.
_DRIVER_LIB = re.compile(r"^\s*(libcuda\.so\S*|libnvidia-[\w.-]+\.so\S*|libcudadebugger\.so\S*)\s.*=>\s*(\S+)\s*$")

NO_CONTROL_NODE = "no NVIDIA driver control node ({path})"
NO_LIBCUDA = "the NVIDIA driver library libcuda is not in the linker cache (ldconfig -p)"


def ldconfig_listing() -> str:
    """``ldconfig -p`` (empty when it cannot run)."""
    for binary in ("ldconfig", "/sbin/ldconfig", "/usr/sbin/ldconfig"):
        try:
            return subprocess.run([binary, "-p"], capture_output=True, text=True, timeout=30, check=False).stdout
        except (OSError, subprocess.SubprocessError):
            continue
    return ""


def driver_libraries(listing: str | None = None) -> list[Path]:
    """The driver's user-space libraries the linker cache knows (``libcuda``, ``libnvidia-*``)."""
    text = ldconfig_listing() if listing is None else listing
    found: dict[str, Path] = {}
    for line in text.splitlines():
        match = _DRIVER_LIB.match(line)
        if match:
            found.setdefault(match.group(2), Path(match.group(2)))
    return list(found.values())


def bwrap_gpu_support(dev: Path | None = None, listing: str | None = None) -> str | None:
    """``None`` if bubblewrap sandboxes can be given GPUs here, else why not."""
    dev = dev or DEV_DIR
    if not (dev / "nvidiactl").exists():
        return "bwrap cannot expose GPUs: " + NO_CONTROL_NODE.format(path=dev / "nvidiactl")
    if not any(p.name.startswith("libcuda.so") for p in driver_libraries(listing)):
        return "bwrap cannot expose GPUs: " + NO_LIBCUDA
    return None


@functools.cache
def _gpu_table() -> dict[int, GpuInfo]:
    return {gpu.index: gpu for gpu in query_gpus()}


def gpu_infos(devices: Sequence[Device]) -> list[GpuInfo]:
    """What ``nvidia-smi`` says of each leased GPU (an index alone where it says nothing)."""
    table = _gpu_table()
    return [table.get(d.index, GpuInfo(d.index)) for d in devices if d.kind == "gpu"]


def bwrap_gpu_args(gpus: Sequence[GpuInfo], dev: Path | None = None, listing: str | None = None) -> list[str]:
    """bwrap options that show exactly ``gpus`` (their nodes, the control nodes, the libraries)."""
    if not gpus:
        return []
    dev = dev or DEV_DIR
    args: list[str] = []
    for gpu in gpus:
        node = dev / f"nvidia{gpu.minor}"
        if not node.exists():
            raise FileNotFoundError(f"the device node of GPU {gpu.index} ({node}) does not exist")
        args += ["--dev-bind", str(node), f"/dev/nvidia{gpu.minor}"]
    for name in (*CONTROL_NODES, CAPS_DIR):
        if (dev / name).exists():
            args += ["--dev-bind", str(dev / name), f"/dev/{name}"]
    for library in driver_libraries(listing):
        if library.parts[:2] != ("/", "usr") and library.exists():  # /usr is bound read-only already
            args += ["--ro-bind", str(library), str(library)]
    return args


def cuda_visible_devices(backend: str, gpus: Sequence[GpuInfo]) -> dict[str, str]:
    """``CUDA_VISIBLE_DEVICES`` (and the order it assumes) for a job of ``backend`` on ``gpus``."""
    if not gpus:
        return {"CUDA_VISIBLE_DEVICES": ""}
    if backend == "process":
        return {"CUDA_VISIBLE_DEVICES": ",".join(str(g.index) for g in gpus), "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
    if backend == "bwrap":
        if all(g.uuid for g in gpus):
            return {"CUDA_VISIBLE_DEVICES": ",".join(g.uuid for g in gpus)}
        return {"CUDA_VISIBLE_DEVICES": ",".join(str(i) for i in range(len(gpus)))}
    return {"CUDA_VISIBLE_DEVICES": ",".join(str(i) for i in range(len(gpus)))}  # docker: renumbered from 0
