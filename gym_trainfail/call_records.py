"""Tool calls as the ledger and the transcript record them: bounded, whatever the agent sends.

Each step's arguments are written twice (the ledger's ``step`` event and the transcript), so an
agent sending megabytes per call would grow both without limit. A string argument longer than
:data:`ELIDE_OVER_CHARS` is recorded as its first :data:`PREVIEW_CHARS` characters with a
notice, and ``elided`` gives, per argument, its length in characters and UTF-8 bytes and its
SHA-256. If it is small enough to have been accepted by a tool (:data:`MAX_STORED_BYTES`), the
whole text is also kept once in the run's object store under that digest (``stored``): the
same blob as a file it was written to, so a checkpoint does not store it again. Larger ones can
only have been refused, and only their preview and digest are kept.

Replaying a transcript (an agent loop that lost its own checkpoint) rebuilds such a call with
its preview: the step is not run again, and its effect on the workspace is in the checkpoint.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gym_trainfail.hashing import bytes_digest
from gym_trainfail.revisions import ObjectStore

#: String arguments up to this many characters are recorded whole.
ELIDE_OVER_CHARS = 16_000
#: How much of a longer one is recorded.
PREVIEW_CHARS = 2_000
#: Longer arguments up to this many bytes are kept whole in the object store (write_file takes
#: 2 MiB; a shell command one argument of 128 KiB).
MAX_STORED_BYTES = 4 << 20


@dataclass(frozen=True)
class RecordedCall:
    """A tool call's arguments as recorded, and what was left out of them."""

    arguments: dict[str, Any]
    elided: dict[str, dict[str, Any]] = field(default_factory=dict)

    def fields(self) -> dict[str, Any]:
        """The fields of a ledger event or transcript record (``elided`` only when not empty)."""
        return {"arguments": self.arguments, **({"elided": self.elided} if self.elided else {})}


def record_call(arguments: Mapping[str, Any], store: ObjectStore) -> RecordedCall:
    """``arguments`` with long strings cut to previews; their whole text goes to ``store``
    when a tool could have accepted it."""
    kept: dict[str, Any] = {}
    elided: dict[str, dict[str, Any]] = {}
    for key, value in arguments.items():
        if not isinstance(value, str) or len(value) <= ELIDE_OVER_CHARS:
            kept[key] = value
            continue
        data = value.encode("utf-8", "surrogatepass")  # as write_file encodes it
        digest = bytes_digest(data)
        stored = len(data) <= MAX_STORED_BYTES
        if stored:
            try:
                store.put_bytes(data, digest)
            except OSError:  # a full disk must not fail the step: the digest is still recorded
                stored = False
        omitted = len(value) - PREVIEW_CHARS
        kept[key] = value[:PREVIEW_CHARS] + f"\n[... {omitted} more characters not recorded here; sha256 {digest} ...]"
        elided[key] = {"chars": len(value), "bytes": len(data), "sha256": digest, "stored": stored}
    return RecordedCall(kept, elided)
