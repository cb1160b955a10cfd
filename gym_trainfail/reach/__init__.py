"""TrainCheck's reach on a case: does TrainCheck, run as its manual says on the case's own
pipeline, flag the case's failure, and at what cost?

:mod:`.spec` reads the case's private ``grader/diagnosis/traincheck/reach.toml``;
:mod:`.workflow` runs collect → infer → collect → check in a sandbox like an agent's;
:mod:`.results` reads what TrainCheck wrote (adversarial data); :mod:`.record` keys, stores and reads the case's record
(``envs/<case>/traincheck-reach.json``).
"""

from __future__ import annotations

from typing import Any

from gym_trainfail.cases import CaseSpec
from gym_trainfail.devices import DevicePool
from gym_trainfail.reach.record import (
    RECORD_FILE,
    RecordStatus,
    build_record,
    record_path,
    record_status,
    write_record,
)
from gym_trainfail.reach.spec import ReachSpec, load_spec, spec_path
from gym_trainfail.reach.workflow import Progress, VariantResult, Workflow
from gym_trainfail.sandbox import resolve_backend

__all__ = [
    "RECORD_FILE",
    "ReachSpec",
    "RecordStatus",
    "VariantResult",
    "build_record",
    "load_spec",
    "measure_reach",
    "record_path",
    "record_status",
    "spec_path",
    "write_record",
]


def measure_reach(
    case: CaseSpec,
    *,
    sandbox: str = "auto",
    variants: list[str] | None = None,
    progress: Progress | None = None,
    spec: ReachSpec | None = None,
) -> dict[str, Any]:
    """Run the reach workflow on ``case`` (every variant of its spec, or those named) and return
    its record (not written: :func:`write_record` stores it)."""
    spec = spec or load_spec(spec_path(case.grader_dir))
    names = ["default", *(n for n in dict.fromkeys(variants) if n != "default")] if variants else None
    # the headline is always the default's, measured first
    chosen = [spec.variant(name) for name in names] if names else list(spec.variants)
    backend = resolve_backend(sandbox)
    pool = DevicePool(kind="cpu", backend=backend)
    results = Workflow(case, spec, sandbox=backend, pool=pool, progress=progress).run(chosen)
    return build_record(case, spec, results, backend=backend, pool_kind=pool.kind)
