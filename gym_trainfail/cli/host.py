"""``trainfail doctor``, ``cases``, ``runtimes`` and ``images``: what this host has and builds."""

from __future__ import annotations

import argparse
import dataclasses
import json
import platform

from rich.markup import escape
from rich.table import Table

from gym_trainfail.admission import record_status
from gym_trainfail.agent import agent_names
from gym_trainfail.arms import ARMS
from gym_trainfail.cases import DEFAULT_PROFILE
from gym_trainfail.cli.common import build_with_progress, err, out, spinner
from gym_trainfail.devices import DevicePool
from gym_trainfail.errors import RuntimeMissingError, TrainFailError
from gym_trainfail.hardware import GpuInfo, query_gpus
from gym_trainfail.reach.command import print_reach, reach_json
from gym_trainfail.registry import Registry, default_registry
from gym_trainfail.runtimes import find_runtime, list_runtimes, runtime_variant
from gym_trainfail.sandbox import AUTO_ORDER, backend_status
from gym_trainfail.sandbox.cgroups import cgroup_support
from gym_trainfail.sandbox.disk import disk_support


def cmd_doctor(args: argparse.Namespace) -> int:
    registry = default_registry()
    cgroups = cgroup_support()
    backends = backend_status()
    usable = next((name for name in AUTO_ORDER if backends.get(name) is None), None)
    pool = DevicePool(backend=usable)
    gpus = query_gpus()
    runtimes: dict[str, str] = {}
    for arm in ARMS:
        try:
            runtimes[arm] = str(find_runtime(arm).root)
        except RuntimeMissingError as exc:
            runtimes[arm] = f"missing: {exc}"
    report = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "sandboxes": {name: reason or "usable" for name, reason in backend_status().items()},
        "cgroup_limits": f"cgroup v{cgroups.version}" if cgroups.version else f"unavailable: {cgroups.reason}",
        "disk_budget": disk_support().describe(),
        "gpus": _gpu_report(gpus),
        "devices": pool.describe()
        + (f" (not GPUs: {pool.cpu_reason})" if gpus and pool.kind == "cpu" else "")
        + (f" for sandbox {usable}" if usable else ""),
        "runtime_variant": f"{runtime_variant()} (torch's {'CUDA' if runtime_variant() == 'cuda' else 'CPU'} build)",
        "runtimes": runtimes,
        "cases": registry.ids(),
        "cases_runnable_in_full": _runnable_cases(registry, pool.size),
        "profiles": _profiles_here(registry, pool.size if pool.kind == "gpu" else 0),
        "refused_cases": registry.refused,
        "agents": agent_names(),
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    table = Table(title="trainfail doctor", show_header=False)
    for key, value in report.items():
        if isinstance(value, dict):
            value = "\n".join(f"{k}: {v}" for k, v in value.items()) or "none"
        elif isinstance(value, list):
            value = "\n".join(value) or "none"
        table.add_row(key, escape(str(value)))
    out.print(table)
    return 0


def _gpu_report(gpus: list[GpuInfo]) -> dict[str, str]:
    """``nvidia-smi``'s GPUs: count, driver, one line per GPU."""
    if not gpus:
        return {"count": "0 (no nvidia-smi, or it found none)"}
    report = {"count": str(len(gpus)), "driver": ", ".join(sorted({g.driver for g in gpus if g.driver})) or "?"}
    for gpu in gpus:
        report[f"gpu {gpu.index}"] = f"{gpu.name} {gpu.uuid}".strip()
    return report


def _runnable_cases(registry: Registry, devices: int) -> dict[str, str]:
    """Each case: whether its largest scenario fits this node's devices."""
    found = {}
    for case in registry:
        needed = max((s.devices for s in case.scenarios), default=1)
        found[case.id] = f"yes ({needed} devices)" if needed <= devices else f"no: needs {needed}, node has {devices}"
    return found


def _profiles_here(registry: Registry, gpus: int) -> dict[str, str]:
    """Each case's profiles beyond ``default``: usable here, or why not."""
    found = {}
    for case in registry:
        for profile in case.profiles.values():
            why = profile.unsupported(gpus=gpus, variant=runtime_variant())
            found[f"{case.id} {profile.name}"] = f"no: {why}" if why else f"yes ({profile.accelerator})"
    return found


def cmd_cases(args: argparse.Namespace) -> int:
    registry = default_registry()
    cases = list(registry)
    if not cases:
        from gym_trainfail.paths import builtin_cases_dir

        err.print(
            f"no cases registered: {escape(str(builtin_cases_dir()))} holds no case folder (case.toml) and no "
            "'gym_trainfail.cases' entry point added one; reinstall gym-trainfail from a wheel or "
            "checkout that carries envs/, or install a package that registers cases",
            soft_wrap=True,
        )
        if not args.json:
            for folder, reason in registry.refused.items():
                err.print(f"[yellow]refused[/] {escape(folder)}: {escape(reason)}")
            return 1
    if args.json:
        rows = [
            {
                "id": c.id,
                "title": c.title,
                "world_size": c.topology.world_size,
                "tp": c.topology.tensor_parallel,
                "scenarios": len(c.scenarios),
                "sources": list(c.provenance["sources"]),
                "folder": str(c.root),
                "profiles": {p.name: {"summary": p.summary, "accelerator": p.accelerator} for p in c.profiles.values()},
                "admission": record_status(c).to_json(),
                "traincheck_reach": reach_json(c),
            }
            for c in cases
        ]
        print(json.dumps({"cases": rows, "refused": registry.refused}, indent=2))
        return 0 if cases else 1
    table = Table(title="registered cases")
    for column in ("id", "title", "ranks", "scenarios", "profiles", "admission", "source"):
        table.add_column(column)
    stale = []
    for c in cases:
        ranks = f"{c.topology.world_size} (TP {c.topology.tensor_parallel})"
        profiles = "\n".join([DEFAULT_PROFILE, *(f"{p.name} ({p.accelerator})" for p in c.profiles.values())])
        status = record_status(c)
        admission = "[green]current[/]" if status.current else f"[red]{status.state}[/]"
        if not status.current:
            stale.append(status)
        table.add_row(escape(c.id), escape(c.title), ranks, str(len(c.scenarios)), escape(profiles), admission,
                      escape("\n".join(c.provenance["sources"])))  # fmt: skip
    out.print(table)
    print_reach(out, cases)
    for status in stale:
        out.print(escape(status.describe()), highlight=False, soft_wrap=True)
    for folder, reason in registry.refused.items():
        err.print(f"[yellow]refused[/] {escape(str(folder))}: {escape(str(reason))}")
    return 0 if cases else 1


def cmd_runtimes(args: argparse.Namespace) -> int:
    if args.action == "list":
        found = list_runtimes()
        if args.json:
            print(json.dumps(found, indent=2))
        else:
            for item in found:
                packages = item["packages"]
                count = len(packages) if isinstance(packages, list) else 0
                out.print(escape(f"{item['arm']!s:<11} {item['path']}  ({count} packages, python {item['python']})"))
        return 0
    arms = sorted(ARMS) if args.arm == "all" else [args.arm]
    if args.action == "lock" and args.dry_run:
        return lock_plans(args, arms)
    if args.action == "build" and args.dry_run:
        return _build_plans(args, arms)
    if args.action == "lock":
        from gym_trainfail.runtimes import lock_runtime

        locks = {arm: str(lock_runtime(arm, progress=lambda line: err.print(escape(f"  {line}")))) for arm in arms}
        if args.json:
            print(json.dumps(locks, indent=2))
        for arm, lock in [] if args.json else locks.items():
            out.print(escape(f"{arm}: {lock}"))
        return 0
    for arm in arms:
        runtime = build_with_progress(arm, force=args.force)
        out.print(escape(f"{arm}: {runtime.root}"))
    return 0


def lock_plans(args: argparse.Namespace, arms: list[str]) -> int:
    """``runtimes lock --dry-run``: what each lock would pin (torch build, accelerator packages)."""
    from gym_trainfail.runtimes import plan_lock

    plans = [plan_lock(arm, progress=lambda line: err.print(escape(f"  {line}"))) for arm in arms]
    if args.json:
        print(json.dumps([dataclasses.asdict(p) for p in plans], indent=2))
    for plan in [] if args.json else plans:
        out.print(
            escape(f"{plan.arm} ({plan.variant}): torch {plan.torch or '-'}, {plan.packages} packages → {plan.lock}")
        )
        out.print(escape(f"  accelerator packages: {', '.join(plan.accelerator_packages) or 'none'}"))
        if plan.problem:
            out.print(escape(f"  refused: {plan.problem}"))
    return 1 if any(p.problem for p in plans) else 0


def _build_plans(args: argparse.Namespace, arms: list[str]) -> int:
    """``runtimes build --dry-run``: would each lock install here, and what the build would do."""
    from gym_trainfail.runtimes import plan_build

    plans = [plan_build(arm, progress=lambda line: err.print(escape(f"  {line}"))) for arm in arms]
    if args.json:
        print(json.dumps([dataclasses.asdict(p) for p in plans], indent=2))
    for plan in [] if args.json else plans:
        state = "built" if plan.built else "not built"
        out.print(escape(f"{plan.arm} ({plan.variant}): {plan.runtime} ({state})"))
        out.print(escape(f"  from {plan.lock}: {plan.packages} packages, torch {plan.torch or '-'}"))
        out.print(escape(f"  {plan.wheels} wheels, built from sdists: {', '.join(plan.sdists) or 'none'}"))
        out.print(escape(f"  accelerator packages: {', '.join(plan.accelerator_packages) or 'none'}"))
        out.print(escape(f"  then: {', '.join(plan.hooks)}"))
        for problem in plan.problems:
            out.print(escape(f"  refused: {problem}"))
        if not plan.problems:
            out.print("  pip would install exactly the lock's artifacts (versions and sha256 checked)")
    return 1 if any(p.problems for p in plans) else 0


def cmd_images(args: argparse.Namespace) -> int:
    try:  # imported here, not at the top: the `docker` extra is optional
        from gym_trainfail.sandbox import docker_image as images
    except ImportError as missing:
        raise TrainFailError(
            f"the Docker SDK is not installed ({missing.name}); pip install 'gym-trainfail[docker]'"
        ) from None
    if args.action == "list":
        found = images.list_images()
        if args.json:
            print(json.dumps(found, indent=2))
        for item in [] if args.json else found:
            out.print(escape(f"{item['arm']!s:<11} {item['tag']}  (runtime {item['runtime']}, base {item['base']})"))
        return 0
    built = {}
    for arm in sorted(ARMS) if args.arm == "all" else [args.arm]:
        with spinner(f"building the {arm} image") as progress:
            image = images.build_image(arm, base=args.base, force=args.force, progress=progress.both)
        built[arm] = image.tag
        if not args.json:
            out.print(escape(f"{arm}: {image.tag}"))
    if args.json:
        print(json.dumps(built, indent=2))
    return 0
