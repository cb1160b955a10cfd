"""One frozen scenario of TrainFail/FSDPSourceCoherence-v2 (public: the run phase reads it too).

A scenario lays out hub caches (the team mirror's refs, and the node-local copies that already
exist when the job starts), names the revision the run asks for, and sets the documented
training options; the defaults are the shipped ``configs/finetune.yaml`` but for the length (2
updates). The run must start from exactly the revision ``revision`` names *on the mirror*:
:attr:`Scenario.expected`. Sources: ``A`` = published revision v1, ``B`` = v2.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from scenario_base import params_base  # the harness library
from sources import VOCABS

SOURCES = ("A", "B")
#: ``revision`` values naming a published commit rather than a ref: ``commit:A`` -> v1's commit.
COMMIT_PREFIX = "commit:"
REF_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
LIMITS = {"steps": 1000, "micro_batch_size": 256, "seq_len": 2048}


def node_cache(node: str, value: Any) -> tuple[list[str], dict[str, str]]:
    """A node copy at job start, ``(snapshots, refs)``: ``"A"`` (v1 alone, ``main`` -> it) or
    ``{snapshots = [...], refs = {main = "A", ...}}``."""
    if isinstance(value, str):
        value = {"snapshots": [value], "refs": {"main": value}}
    shaped = isinstance(value, dict) and set(value) == {"snapshots", "refs"} and isinstance(value["refs"], dict)
    if not (re.fullmatch(r"node\d{1,3}", node) and shaped and set(value["snapshots"]) <= set(SOURCES)
            and set(value["refs"].values()) <= set(value["snapshots"])):
        raise ValueError(f"node cache {node!r}: a source or {{snapshots, refs}} whose refs point into its snapshots")
    return list(value["snapshots"]), dict(value["refs"])


@dataclass(frozen=True)
class Scenario(params_base(Path(__file__).with_name("params.toml"))):
    """Caches, the requested revision and the training options (``params.toml``: the base scenario,
    the shipped config)."""

    def validate(self) -> None:
        if not (self.revision.startswith(COMMIT_PREFIX) or REF_RE.match(self.revision)):
            raise ValueError(f"revision {self.revision!r}: a ref name or commit:A / commit:B")
        refs = self.mirror_refs
        if "main" not in refs or not all(REF_RE.match(r) and s in SOURCES for r, s in refs.items()):
            raise ValueError(f"mirror_refs {self.mirror_refs!r}: ref -> A or B, main among them")
        self.expected  # noqa: B018 - raises when the revision names nothing on the mirror
        self.nodes()
        for path in (self.mirror, self.node_root):
            if PurePosixPath(path).is_absolute() or ".." in PurePosixPath(path).parts:
                raise ValueError(f"cache path {path!r} must stay inside the workspace")
        if self.vocab_size not in VOCABS:
            raise ValueError(f"vocab_size {self.vocab_size!r}: a published build, one of {VOCABS}")
        if not all(1 <= getattr(self, k) <= bound for k, bound in LIMITS.items()) or self.ranks_per_node < 1:
            raise ValueError(f"steps, micro_batch_size, seq_len within {LIMITS}, ranks_per_node >= 1")

    @property
    def expected(self) -> str:
        """The source the run must reproduce: what ``revision`` names on the mirror."""
        if self.revision.startswith(COMMIT_PREFIX):
            source = self.revision.removeprefix(COMMIT_PREFIX)
            if source not in SOURCES:
                raise ValueError(f"revision {self.revision!r} names no published commit")
            return source
        if self.revision not in self.mirror_refs:
            raise ValueError(f"revision {self.revision!r} is not a ref of the mirror {sorted(self.mirror_refs)}")
        return self.mirror_refs[self.revision]

    def nodes(self) -> dict[str, tuple[list[str], dict[str, str]]]:
        """The node-local copies that exist when the job starts: node -> (snapshots, refs)."""
        return {node: node_cache(node, value) for node, value in self.node_caches.items()}
