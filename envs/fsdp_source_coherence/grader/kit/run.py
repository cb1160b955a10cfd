"""Run phase of TrainFail/FSDPSourceCoherence-v2 (untrusted: beside the revision; no verdicts).

    python /kit/run.py --scenarios /io/scenarios.json --out-dir /out

Takes the two authentic revisions from the host's cached fixtures (``sources.py``, run once per
grader version), or publishes them once itself; for each scenario, on a fresh copy
of the revision, lays out its hub caches where the scenario's ``cache.mirror`` and
``cache.node_root`` say (the mirror's refs, the node-local copies that exist at job start), then
runs the README's ``torchrun -m ftpipe.train --config configs/finetune.yaml`` with overrides for
every setting the oracle depends on and the state probe in every rank (ranks forked from the
harness library's warm launcher, torchrun when it cannot start). Under ``OUT/<scenario>/``: the
probe's ``probe/rank<r>.pt``, the pipeline's ``final/model.safetensors``, ``job.log``,
``timings.json`` (``runkit``).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import runkit  # the harness library (on the path in grading sandboxes)
import sources
from launch import Pipeline, RunResult, dotted, observe_settings
from scenario import COMMIT_PREFIX, Scenario

KIT = Path(__file__).resolve().parent
PIPELINE = Pipeline(
    module="ftpipe.train",
    base_args=("--config", "configs/finetune.yaml"),
    preload=("torch", "torch.distributed", "torch.distributed.fsdp", "torch.distributed.checkpoint.state_dict",
             "transformers", "transformers.models.gpt_neox.modeling_gpt_neox", "safetensors.torch", "yaml",
             "torch._dynamo", "deepspeed"),
    observers=("source_probe:install",),
    observer_path=(KIT,),
    env={"HF_HUB_OFFLINE": "1", "HF_HUB_DISABLE_PROGRESS_BARS": "1", "TQDM_DISABLE": "1"},
)
#: The probe's record and the saved weights (at most 14,067,712 float32 parameters: about 56 MB).
RECORD_LIMIT, WEIGHTS_LIMIT = 16 << 20, 128 << 20
_published: list[Path] = []


def publish_once(sc: Scenario, inputs: Path) -> Path:
    """Both authentic revisions, shared by the run phase's scenarios: the host's cached copy
    (``python /kit/sources.py``, the case's fixtures command), else built here once."""
    if not _published:
        dst = inputs.parents[1] / "published"
        _published.append(dst if runkit.cached_fixture("published", dst) else sources.publish_all(dst))
    return _published[0]


def overrides(sc: Scenario, out_dir: Path) -> list[str]:
    """README keys pinning everything the oracle depends on."""
    revision = sc.revision
    if revision.startswith(COMMIT_PREFIX):
        revision = sources.commit_of(sc.expected, sc.vocab_size)
    return dotted({
        "model.revision": revision, "model.hidden_dropout": sc.hidden_dropout,
        "model.attention_dropout": sc.attention_dropout, "cache.mirror": sc.mirror, "cache.node_root": sc.node_root,
        "cache.node_local": sc.node_local, "cache.ranks_per_node": sc.ranks_per_node, "train.steps": sc.steps,
        "train.seed": sc.seed, "train.micro_batch_size": sc.micro_batch_size, "train.seq_len": sc.seq_len,
        "train.lr": sc.lr, "train.betas": ",".join(map(repr, sc.betas)), "train.eps": sc.eps,
        "train.weight_decay": sc.weight_decay, "output.dir": out_dir / sc.name, "output.save_final": True,
    })  # fmt: skip


def launch(sc: Scenario, workspace: Path, published: Path, out_dir: Path, log: Path, warm: Any | None) -> RunResult:
    """Lay out the scenario's caches in the workspace copy, then run the pipeline once."""
    sources.lay_cache(workspace / sc.mirror, published, ("A", "B"), sc.mirror_refs, sc.vocab_size)
    for node, (snapshots, refs) in sc.nodes().items():
        sources.lay_cache(workspace / sc.node_root / node, published, snapshots, refs, sc.vocab_size)
    (workspace / sc.node_root).mkdir(parents=True, exist_ok=True)
    return PIPELINE.run(workspace=workspace, args=overrides(sc, out_dir), nproc=sc.devices, log_path=log,
                        timeout_s=sc.run_timeout_s, backend=sc.backend, warm=warm,
                        observe=observe_settings(out_dir / sc.name / "probe", sc.steps))  # fmt: skip


def wanted(sc: Scenario) -> list[tuple[str, int]]:
    records = [(f"probe/rank{r}.pt", RECORD_LIMIT) for r in range(sc.devices)]
    return [*records, ("final/model.safetensors", WEIGHTS_LIMIT)]


KIT_SPEC = runkit.case_kit("FSDPSourceCoherence", Scenario.from_request, PIPELINE, fixtures=publish_once,
                           launch=launch, wanted=wanted, warm_alone=True)  # fmt: skip

if __name__ == "__main__":
    runkit.main(KIT_SPEC)
