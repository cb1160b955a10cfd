"""Run phase of TrainFail/FSDPSourceCoherence-v0: untrusted, the revision's code runs here.

    cd <revision> && python /kit/run.py --scenarios FILE --out-dir DIR

Once per run it publishes the two authentic revisions (sources.py). Then, for every scenario
of FILE in turn, on its own fresh copy of the working directory:

1. lay out the scenario's hub caches where configs/finetune.yaml ships them: the shared
   mirror at .cache/hub-mirror (both revisions, refs/main per scenario) and the node-local
   copies that already exist when the job starts under .cache/nodes;
2. launch the pipeline as the workspace README documents (`-m ftpipe.train --config
   configs/finetune.yaml` on the scenario's devices, with the overrides of `overrides`), the
   state probe installed in every rank. Ranks are forked from a warm launcher that imported
   torch and Transformers once (warm_launch.py from /harnesslib); if it cannot start, torchrun
   launches them cold with the probe on PYTHONPATH (observer/sitecustomize.py);
3. leave what the judge needs in DIR/<scenario>/ (layout.py): probe records, the saved final
   weights, the log's tail, launch.json, timings.json.

It never writes a verdict: the judge phase decides from these artifacts and treats them as
adversarial. The gym mounts gym_trainfail/harnesslib at /harnesslib; elsewhere, point
TRAINFAIL_HARNESSLIB at that folder.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import stat
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

KIT = Path(__file__).resolve().parent
sys.path.insert(0, str(KIT))

import layout  # noqa: E402
import recipe  # noqa: E402
import sources  # noqa: E402

sys.path.append(os.environ.get("TRAINFAIL_HARNESSLIB", "/harnesslib"))
from warm_launch import Ended, WarmLauncher, launch_cold  # noqa: E402

#: What the pipeline imports that costs start-up time; the warm launcher imports it once.
PRELOAD = ["torch", "torch.distributed", "torch.distributed.fsdp", "torch.distributed.checkpoint.state_dict",
           "transformers", "transformers.models.gpt_neox.modeling_gpt_neox", "safetensors.torch", "yaml"]
#: Where configs/finetune.yaml as shipped keeps its caches and outputs (relative to the workspace).
MIRROR = ".cache/hub-mirror"
NODE_ROOT = ".cache/nodes"
OUTPUT_DIR = "outputs/dev"
#: Local state the README says is not part of the repository: never copied into a scenario.
LOCAL_STATE = (".cache", "outputs")
#: Seconds of a scenario's time kept for laying out caches and collecting artifacts.
MARGIN_S = 30.0
PUBLISH_TIMEOUT_S = 240.0


@dataclass
class Launcher:
    """Starts a module on N ranks: forked from a warm server, or through torchrun (cold)."""

    warm: WarmLauncher | None

    @property
    def kind(self) -> str:
        return "warm" if self.warm is not None else "cold"

    def run(self, module: str, args: list[str], nproc: int, cwd: Path, env: dict[str, str], log: Path,
            timeout_s: float, probe: bool) -> Ended:
        """`python -m module args` on `nproc` ranks in `cwd`, until it exits or `timeout_s` passes."""
        if self.warm is not None:
            setup = "trainfail_probe:install" if probe else ""
            return self.warm.launch(module, args, nproc, cwd, env, log, timeout_s, setup=setup)
        argv = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}",
                "-m", module, *args]
        return launch_cold(argv, cwd, env, log, timeout_s)


def base_env(backend: str, devices: int) -> dict[str, str]:
    """The sandbox's environment plus the README's knobs; only the probe folder on PYTHONPATH."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRAINFAIL_PROBE")}
    env.update(
        PYTHONPATH=str(KIT / "observer"), OMP_NUM_THREADS=env.get("OMP_NUM_THREADS", "1"), HF_HUB_OFFLINE="1",
        HF_HUB_DISABLE_PROGRESS_BARS="1", TQDM_DISABLE="1", TRAINFAIL_BACKEND=backend, TRAINFAIL_DEVICES=str(devices),
    )
    return env


def overrides(request: layout.Request) -> list[str]:
    """Command-line overrides: the scenario's cache mode, the grader's step count, and the
    shipped values of every other setting the verdict reads (grader/README.md has the table).
    A scenario whose `train` param scales the batch or the sequence also forces those; without
    it they stay at the shipped values, frozen (recipe.py), as before."""
    train = request.train
    scaled = []
    if train.micro_batch_size != recipe.MICRO_BATCH_SIZE:
        scaled.append(f"train.micro_batch_size={train.micro_batch_size}")
    if train.seq_len != recipe.SEQ_LEN:
        scaled.append(f"train.seq_len={train.seq_len}")
    return [
        f"cache.mirror={MIRROR}",
        f"cache.node_root={NODE_ROOT}",
        f"cache.node_local={'true' if request.node_local else 'false'}",
        "cache.ranks_per_node=1",
        f"train.steps={train.steps}",
        *scaled,
        f"output.dir={OUTPUT_DIR}",
        "output.save_final=true",
    ]


def _skip_for(root: Path) -> Callable[[str, list[str]], set[str]]:
    """copytree filter: local state at the top, and anything that is not a file, folder or link."""

    def skip(folder: str, names: list[str]) -> set[str]:
        skipped = set(LOCAL_STATE) & set(names) if Path(folder) == root else set()
        for name in names:
            mode = os.lstat(os.path.join(folder, name)).st_mode
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode)):
                skipped.add(name)
        return skipped

    return skip


def copy_workspace(src: Path, dst: Path) -> Path:
    """A fresh copy of the revision for one scenario."""
    shutil.copytree(src, dst, symlinks=True, ignore=_skip_for(src))
    return dst


def lay_out_caches(request: layout.Request, workspace: Path, published: Path) -> None:
    """The scenario's mirror (both revisions) and the node-local copies it starts with."""
    sources.lay_cache(workspace / MIRROR, published, list(sources.SOURCES), request.mirror_main)
    for node, cache in request.node_caches.items():
        sources.lay_cache(workspace / NODE_ROOT / node, published, cache.snapshots, cache.main)
    (workspace / NODE_ROOT).mkdir(parents=True, exist_ok=True)


def _open_regular(path: Path, limit: int) -> int | None:
    """A read descriptor for a regular file of at most `limit` bytes, never following a link
    or blocking on a FIFO; None otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    info = os.fstat(fd)
    if stat.S_ISREG(info.st_mode) and info.st_size <= limit:
        return fd
    os.close(fd)
    return None


def copy_bounded(src: Path, dst: Path, limit: int, tail: bool = False) -> bool:
    """Copy a regular file of at most `limit` bytes (or, with `tail`, its last `limit` bytes)."""
    fd = _open_regular(src, sys.maxsize if tail else limit)
    if fd is None:
        return False
    with os.fdopen(fd, "rb") as f:
        if tail:
            f.seek(max(os.fstat(fd).st_size - limit, 0))
        data = f.read(limit)
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_bytes(data)
    return True


def collect(request: layout.Request, workspace: Path, work: Path, dest: Path) -> None:
    """Copy what the judge reads into `dest`: records, saved weights, the log's tail."""
    for rank in range(request.devices):
        name = f"rank{rank}.pt"
        copy_bounded(work / "probe" / name, dest / layout.PROBE_DIR / name, layout.RECORD_LIMIT_BYTES)
    weights = workspace / OUTPUT_DIR / "final" / layout.WEIGHTS_FILE
    copy_bounded(weights, dest / layout.FINAL_DIR / layout.WEIGHTS_FILE, layout.WEIGHTS_LIMIT_BYTES)
    copy_bounded(work / "job.log", dest / layout.LOG_FILE, layout.LOG_LIMIT_BYTES, tail=True)


def write_json(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n")


def run_scenario(request: layout.Request, launcher: Launcher, published: Path, scratch: Path, out: Path,
                 deadline: float, shared_s: float = 0.0) -> None:
    """Steps 1-3 of the module docstring for one scenario; a failure of the kit itself is
    reported in launch.json as `kit_error` (the judge then leaves the scenario unjudged).
    `shared_s`: the run's one-off start-up (launcher, sources), counted in this scenario's time."""
    started = time.time()
    dest = out / request.name
    dest.mkdir(parents=True, exist_ok=True)
    work = scratch / request.name
    launch: dict[str, Any] = {"launcher": launcher.kind}
    timings: dict[str, float] = {"shared_s": shared_s}
    try:
        workspace = copy_workspace(Path.cwd(), work / "workspace")
        lay_out_caches(request, workspace, published)
        env = base_env(request.backend, request.devices)
        env.update(TRAINFAIL_PROBE_DIR=str(work / "probe"), TRAINFAIL_PROBE_STEPS=str(request.train.steps))
        args = ["--config", "configs/finetune.yaml", *overrides(request)]
        timings["setup_s"] = time.time() - started
        ended = launcher.run("ftpipe.train", args, request.devices, workspace, env, work / "job.log",
                             max(deadline - time.time(), 1.0), probe=True)
        launch.update(returncode=ended.returncode, timed_out=ended.timed_out, started=ended.started,
                      ended=ended.ended)
        timings["launch_s"] = ended.ended - ended.started
        collect(request, workspace, work, dest)
    except Exception as exc:  # noqa: BLE001 - the kit's own failure: the scenario is not judged
        traceback.print_exc()
        launch["kit_error"] = f"{type(exc).__name__}: {exc}"[:500]
    finally:
        shutil.rmtree(work, ignore_errors=True)
        timings["total_s"] = time.time() - started + shared_s
        write_json(dest / layout.LAUNCH_FILE, launch)
        write_json(dest / layout.TIMINGS_FILE, timings)
    print(f"{request.name}: launch {launch}", flush=True)


def publish(launcher: Launcher, scratch: Path, request: layout.Request) -> Path:
    """Both authentic revisions, built once per run by the kit's own code (before any revision
    code runs)."""
    published = scratch / "published"
    env = base_env(request.backend, 1)
    ended = launcher.run("sources", [str(published)], 1, KIT, env, scratch / "publish.log", PUBLISH_TIMEOUT_S,
                         probe=False)
    if ended.returncode != 0 or not all((published / s / "config.json").is_file() for s in sources.SOURCES):
        log = (scratch / "publish.log").read_text(errors="replace")[-2000:]
        raise RuntimeError(f"publishing the sources failed (rc={ended.returncode}): {log}")
    return published


def start_launcher(request: layout.Request, log: Path) -> Launcher:
    """The warm launcher, or the cold path when it cannot start."""
    try:
        return Launcher(WarmLauncher(PRELOAD, base_env(request.backend, request.devices), log))
    except (RuntimeError, OSError, ValueError) as exc:
        print(f"warm launcher unavailable ({exc}); launching cold with torchrun", flush=True)
        return Launcher(None)


def run_all(requests: list[layout.Request], out: Path) -> None:
    """Every scenario in turn; scenario i ends by the sum of the first i timeouts (the host's
    limit for the whole run is the sum of them all)."""
    began = time.time()
    scratch = Path(tempfile.mkdtemp(prefix="fsdp-source-run-"))
    launcher = start_launcher(requests[0], scratch / "launcher.log")
    try:
        try:
            published = publish(launcher, scratch, requests[0])
        except Exception as exc:  # reported per scenario (nothing was judged), then raised
            for request in requests:
                write_json(out / request.name / layout.LAUNCH_FILE, {"kit_error": str(exc)[:500]})
            raise
        shared_s, budget = time.time() - began, began
        for index, request in enumerate(requests):
            budget += request.timeout_s
            run_scenario(request, launcher, published, scratch, out, budget - MARGIN_S, shared_s if index == 0 else 0.0)
    finally:
        if launcher.warm is not None:
            launcher.warm.close()
        shutil.rmtree(scratch, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenarios", type=Path, required=True, help="list of scenario requests (JSON)")
    parser.add_argument("--out-dir", type=Path, required=True, help="artifacts, one folder per scenario")
    args = parser.parse_args()
    requests = layout.load_requests(args.scenarios)
    out_dir = args.out_dir.resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    run_all(requests, out_dir)


if __name__ == "__main__":
    main()
