"""Bounded, typed reads of one scenario's artifacts (``/artifacts/<scenario>/``).

Everything here was written by the run phase, where the revision's code runs: it is adversarial
data. Files are opened only when they are regular files below a size bound, JSON is checked
field by field, tensors come from safetensors (no pickle), and a missing file is told apart from
a malformed one: the judge may call a run whose artifacts are missing a flake (the gloo exit
abort), never one whose artifacts are malformed.
"""

from __future__ import annotations

import json
import math
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError, safe_open

from tokkit import layout

#: Largest rank record or saved model the judge opens (the case's model: about 0.1 MB; a
#: record of three updates: under 1 MB). A scenario that sizes the model raises it from the
#: architecture (``observations.tensor_file_limit``).
TENSOR_FILE_LIMIT = 64 * 1024 * 1024
#: Largest JSON document the judge parses.
JSON_LIMIT = 64 * 1024

Tensors = dict[str, torch.Tensor]


class ArtifactMissing(Exception):
    """An artifact the judge needs is absent (or is not a regular file)."""


class ArtifactMalformed(Exception):
    """An artifact is present but is not what the run kit writes."""


def regular_file(path: Path, limit: int) -> int:
    """Size of ``path`` if it is a regular file within ``limit`` bytes (links are not followed)."""
    try:
        info = os.lstat(path)
    except OSError as exc:
        raise ArtifactMissing(f"{path.name} is missing") from exc
    if not stat.S_ISREG(info.st_mode):
        raise ArtifactMissing(f"{path.name} is not a regular file")
    if info.st_size > limit:
        raise ArtifactMalformed(f"{path.name} holds {info.st_size} bytes, over the judge's limit of {limit}")
    return info.st_size


def read_json_object(path: Path) -> dict[str, Any]:
    """A small JSON object from the artifacts."""
    regular_file(path, JSON_LIMIT)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ArtifactMalformed(f"{path.name} is not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ArtifactMalformed(f"{path.name} is not a JSON object")
    return data


def read_tail(path: Path, limit: int = layout.LOG_LIMIT_BYTES) -> str:
    """The last ``limit`` bytes of a text file, or "" when it is unusable."""
    try:
        size = regular_file(path, 2**62)
    except (ArtifactMissing, ArtifactMalformed):
        return ""
    with open(path, "rb") as handle:
        handle.seek(max(0, size - limit))
        return handle.read(limit).decode("utf-8", errors="replace")


def one_line_tail(text: str, lines: int = 6, limit: int = 400) -> str:
    """The last non-blank lines of a log, joined for a one-line reason."""
    kept = [line.strip() for line in text.splitlines() if line.strip()][-lines:]
    return " | ".join(kept)[-limit:] or "(no log)"


@dataclass(frozen=True)
class Job:
    """``job.json``: how the run kit says the launch ended (untrusted)."""

    launcher: str
    returncode: int | None
    timed_out: bool
    error: str


def read_job(folder: Path) -> Job | None:
    """The scenario's ``job.json``, or None when it is missing or malformed."""
    try:
        raw = read_json_object(folder / layout.JOB_FILE)
    except (ArtifactMissing, ArtifactMalformed):
        return None
    code = raw.get("returncode")
    if code is not None and (isinstance(code, bool) or not isinstance(code, int)):
        return None
    return Job(
        launcher=str(raw.get("launcher", ""))[:20],
        returncode=code,
        timed_out=raw.get("timed_out") is True,
        error=str(raw.get("error", ""))[:400],
    )


def read_timings(folder: Path) -> dict[str, float]:
    """``timings.json``: finite numbers only (untrusted; used to split device-seconds)."""
    try:
        raw = read_json_object(folder / layout.TIMINGS_FILE)
    except (ArtifactMissing, ArtifactMalformed):
        return {}
    return {
        str(key): float(value)
        for key, value in raw.items()
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    }


def load_safetensors(path: Path, limit: int = TENSOR_FILE_LIMIT) -> Tensors:
    """Every tensor of a safetensors file (bounded; no code runs on load)."""
    regular_file(path, limit)
    try:
        with safe_open(str(path), framework="pt") as handle:
            return {str(key): handle.get_tensor(key) for key in handle.keys()}  # noqa: SIM118 - not a dict
    except (SafetensorError, OSError, ValueError, RuntimeError) as exc:
        raise ArtifactMalformed(f"{path.name} is not a readable safetensors file: {exc}") from exc


def load_torch_record(path: Path, limit: int = TENSOR_FILE_LIMIT) -> Any:
    """A ``torch.save`` file through the weights-only unpickler (tensors and plain containers)."""
    regular_file(path, limit)
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - the unpickler refuses in many ways; all mean malformed
        raise ArtifactMalformed(f"{path.name} is refused by the weights-only unpickler: {_unpickler_why(exc)}") from exc


def _unpickler_why(exc: Exception) -> str:
    """The informative line of torch's weights-only refusal (its preamble suggests unsafe loading)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    specific = [line for line in lines if "GLOBAL" in line or "Unsupported" in line]
    return (specific or lines or [type(exc).__name__])[0][:240]
