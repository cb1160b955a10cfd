"""The ``trainfail`` command line.

``doctor`` · ``cases`` · ``runtimes build|list`` · ``run`` · ``grade`` · ``qualify`` · ``demo`` ·
``batch`` · ``leaderboard`` · ``serve``.
Long work shows progress on stderr; ``--json`` prints one JSON document on stdout.

An error ends a command with one line on stderr that says what to do next, and exit status 1
(``grade --patch/--tree``: 2, as 1 means a failing grade; an interrupt: 130). ``--debug`` adds the
traceback. Text that comes from elsewhere (exceptions, grader reasons, paths) is never read as
rich markup.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import difflib
import json
import os
import platform
import shutil
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from gym_trainfail import demo
from gym_trainfail.admission import (
    REFRESH_ALL,
    current_digests,
    previous_hints,
    record_from_qualification,
    record_path,
    record_status,
    refresh_diagnosis,
    write_record,
)
from gym_trainfail.agent import agent_names, load_agent
from gym_trainfail.arms import ARMS
from gym_trainfail.batch import (
    BatchPlan,
    Counts,
    GradingReport,
    LocalRunner,
    RunLayout,
    adjudicate_batch,
    default_workers,
    grade_batch,
    load_plan,
    make_plan,
    resolve_cases,
    run_episodes,
    write_plan,
)
from gym_trainfail.batch.grade import TreeJob
from gym_trainfail.batch.plan import DEFAULT_MAX_ATTEMPTS
from gym_trainfail.batch.progress import describe, episode_progress
from gym_trainfail.batch.ray_runner import RayRunner, describe_cluster
from gym_trainfail.batch.runner import Runner
from gym_trainfail.cases import DEFAULT_PROFILE, CaseSpec
from gym_trainfail.devices import DevicePool
from gym_trainfail.diagnosis.fixtures import FixtureCheck
from gym_trainfail.diagnosis.heldout import summary_line
from gym_trainfail.diagnosis.judges import Judge, RubricJudge
from gym_trainfail.diagnosis.llm_judge import JUDGE_BASE_URL_ENV, JUDGE_KEY_ENV, JUDGE_MODEL_ENV, LLMJudge
from gym_trainfail.diagnosis.milestones import LABELS, MILESTONES
from gym_trainfail.episode import EpisodeResult, RunGrades, grade_run, resume_episode, run_episode
from gym_trainfail.errors import RuntimeMissingError, ToolError, TrainFailError, missing_extra
from gym_trainfail.files import apply_patch
from gym_trainfail.grading import Grader, Receipt, ScenarioOutcome
from gym_trainfail.hardware import GpuInfo, query_gpus
from gym_trainfail.hashing import TreeRefusedError
from gym_trainfail.leaderboard import render_leaderboard
from gym_trainfail.qualify import Qualification, margins, qualify, qualify_diagnosis
from gym_trainfail.reach.command import cmd_reach, print_reach, reach_json, reach_options
from gym_trainfail.registry import Registry, default_registry, resolve_case
from gym_trainfail.revisions import RevisionLog
from gym_trainfail.runtimes import (
    DEFAULT_VARIANT,
    VARIANT_ENV,
    VARIANTS,
    Runtime,
    build_runtime,
    find_runtime,
    list_runtimes,
    runtime_variant,
)
from gym_trainfail.sandbox import AUTO_ORDER, BACKENDS, backend_status, resolve_backend
from gym_trainfail.sandbox.cgroups import cgroup_support
from gym_trainfail.sandbox.disk import disk_support
from gym_trainfail.scaffold import scaffold_case

DEMO_CASE = "TrainFail/DDPTokenAverage-v1"

# Rich assumes 80 columns when output is not a terminal; tables here are wider than that.
out = Console(width=None if sys.stdout.isatty() else 200)
err = Console(stderr=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``trainfail`` console script."""
    parser = _parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "handler"):
        parser.print_help()
        return 2
    debug = bool(getattr(args, "debug", False))
    try:
        _select_accelerator(args)
        return int(args.handler(args) or 0)
    except TrainFailError as exc:
        return _fail(str(exc), exc, debug)
    except ImportError as exc:
        if (missing := missing_extra(exc, f"trainfail {args.command}")) is not None:
            return _fail(str(missing), exc, debug)
        return _fail(_unexpected(exc), exc, debug)
    except KeyboardInterrupt:
        err.print("interrupted")
        return 130
    except Exception as exc:  # noqa: BLE001 - the operator gets one line; --debug shows the rest
        return _fail(_unexpected(exc), exc, debug)


def _fail(message: str, exc: BaseException, debug: bool, status: int = 1) -> int:
    """Print ``message`` as one ``error:`` line on stderr (after the traceback, with ``--debug``)."""
    if debug:
        traceback.print_exception(exc, file=sys.stderr)
    line = " ".join(message.split()) or type(exc).__name__
    err.print(Text.assemble(("error:", "bold red"), " ", line), soft_wrap=True, highlight=False)
    return status


def _unexpected(exc: BaseException) -> str:
    hint = "" if isinstance(exc, OSError) else " (a bug in trainfail: please report it with the traceback)"
    return f"{type(exc).__name__}: {exc}{hint}; run again with --debug to see the traceback"


@contextlib.contextmanager
def _progress(title: str) -> Iterator[Progress]:
    """A spinner on stderr for long work (see :class:`Progress`)."""
    with err.status(Text(title)) as status:
        yield Progress(status.update)


class Progress:
    """Reports long work on stderr: what runs now in the spinner, finished items as lines above it.
    Text is shown as given, never read as markup."""

    def __init__(self, update: Callable[[Text], None]) -> None:
        self._update = update

    def running(self, text: str) -> None:
        """Show ``text`` in the spinner."""
        self._update(Text(text))

    def done(self, text: str) -> None:
        """Print ``text`` (a finished item) above the spinner."""
        err.print(Text(f"  {text}"), highlight=False, soft_wrap=True)

    def both(self, text: str) -> None:
        """Show ``text`` in the spinner and keep it as a line."""
        self.running(text)
        self.done(text)


def _check_sandbox(name: str, *, probe: bool = True) -> None:
    """Refuse an unknown (or, with ``probe``, an unusable) sandbox before any expensive work."""
    if name != "auto" and name not in BACKENDS:
        known = ["auto", *sorted(BACKENDS)]
        close = difflib.get_close_matches(name, known, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise TrainFailError(f"unknown sandbox {name!r}; {hint}--sandbox takes one of {', '.join(known)}")
    if probe:
        resolve_backend(name)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="trainfail", description=__doc__.split("\n")[0])
    parser.add_argument("--debug", action="store_true", help="on an error, also show its traceback")
    sub = parser.add_subparsers(metavar="COMMAND")

    def command(name: str, handler: Callable[[argparse.Namespace], int], help_: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_, description=help_)
        p.set_defaults(handler=handler, command=name)
        p.add_argument(
            "--debug", action="store_true", default=argparse.SUPPRESS, help="on an error, also show its traceback"
        )
        return p

    p = command("doctor", cmd_doctor, "what backends, runtimes and devices are usable here")
    p.add_argument("--json", action="store_true")

    p = command("cases", cmd_cases, "list the registered cases")
    p.add_argument("--json", action="store_true")

    p = command("runtimes", cmd_runtimes, "build, list or lock (resolve and pin with hashes) case runtimes")
    p.add_argument("action", choices=["build", "list", "lock"])
    p.add_argument("--arm", default="control", help="control, traincheck or all (default: control)")
    _accelerator_option(p)
    p.add_argument("--force", action="store_true", help="rebuild even if up to date")
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="lock: resolve (package metadata only) and show what the lock would pin; build: check that pip "
        "would install exactly the lock's artifacts here (metadata only) and show the build plan; write nothing",
    )
    p.add_argument("--json", action="store_true")

    p = command("images", cmd_images, "build or list the Docker runtime images (one per arm)")
    p.add_argument("action", choices=["build", "list"])
    p.add_argument("--arm", default="control", help="control, traincheck or all (default: control)")
    _accelerator_option(p)
    p.add_argument(
        "--base",
        help="base image: 'local' (made here with debootstrap; needs root) or a reference such as "
        "python:3.11-bookworm (default: $TRAINFAIL_BASE_IMAGE, else local)",
    )
    p.add_argument("--force", action="store_true", help="rebuild even if up to date")
    p.add_argument("--json", action="store_true")

    p = command("run", cmd_run, "play one episode with an agent and grade it (or --resume an interrupted one)")
    p.add_argument("--case", help="case id (or a case folder), e.g. TrainFail/DDPTokenAverage-v1")
    p.add_argument("--arm", default="control", choices=sorted(ARMS))
    p.add_argument("--agent", help=f"agent name ({', '.join(agent_names()) or 'none installed'})")
    p.add_argument("--model", help="model name, for model-driven agents (e.g. --agent openai)")
    p.add_argument("--base-url", help="OpenAI-compatible endpoint, for model-driven agents")
    p.add_argument(
        "--agent-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra agent option (repeatable; values parsed as JSON when they can be)",
    )
    p.add_argument("--resume", type=Path, metavar="RUN_DIR", help="continue this interrupted episode")
    p.add_argument("--sandbox", default="auto", help="auto, bwrap, docker or process (default: auto)")
    p.add_argument("--out", type=Path, help="run directory (default: runs/<time>-<case>-<arm>-<agent>)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-grade", action="store_true", help="do not grade at the end (reward 0, deferred)")
    _scale_options(p)
    p.add_argument("--json", action="store_true")

    p = command("grade", cmd_grade, "grade every revision of an episode, or one patch or tree of a case")
    p.add_argument("run_dir", type=Path, nargs="?", help="an episode's run directory")
    p.add_argument("--case", help="case id or folder, with --patch or --tree")
    p.add_argument("--patch", type=Path, help="a unified diff against the case's workspace (a/ b/ paths)")
    p.add_argument("--tree", type=Path, help="a folder holding a whole workspace")
    p.add_argument("--sandbox", default="auto")
    p.add_argument("--no-cache", action="store_true", help="grade again even when a receipt exists")
    _scale_options(p, note="with --case; an episode is graded at the profile it ran at")
    _judge_options(p)
    p.add_argument("--json", action="store_true")

    p = command("reach", cmd_reach, "measure TrainCheck's reach on a case (its workflow on the case's pipeline)")
    reach_options(p)

    p = command("qualify", cmd_qualify, "run a case's admission gate and print the scenario table")
    p.add_argument("case", nargs="?", help="case id, or the folder of a case that is not registered yet")
    p.add_argument("--all", action="store_true", help="every registered case, one after another (make qualify)")
    p.add_argument("--sandbox", default="auto")
    p.add_argument("--repeats", type=int, default=2, help="runs of the unmodified workspace (default 2)")
    p.add_argument(
        "--wrong-repairs",
        action="store_true",
        help="also grade the case's wrong repairs and forgeries (the full gate); an admitted case's record "
        "(admission.json beside it) is rewritten",
    )
    p.add_argument("--parallel", type=int, default=2, help="gradings at once where the device pool has room "
                   "(default 2; 1: one at a time; 'alone' scenarios are always graded by themselves)")  # fmt: skip
    p.add_argument("--out", type=Path, help="also write the result as JSON here")
    p.add_argument("--diagnosis-only", action="store_true", help="only the diagnosis rubric: its fixtures and the "
                   "held-out statements' precision and recall (no training run)")  # fmt: skip
    _scale_options(p)
    _judge_options(p)
    p.add_argument("--json", action="store_true")

    p = command("case", cmd_case, "case authoring: `case new NAME` scaffolds a case folder")
    p.add_argument("action", choices=["new"])
    p.add_argument("name", help="case name, e.g. FSDPStateSkew (becomes TrainFail/FSDPStateSkew-v0)")
    p.add_argument("--dir", type=Path, default=Path("envs"), help="parent folder (default: envs)")
    p.add_argument("--namespace", default="TrainFail")

    _batch_parsers(command)

    p = command("serve", cmd_serve, "serve cases as OpenEnv environments (WebSocket sessions, token-guarded)")
    p.add_argument("--cases", nargs="+", default=["all"], help="'all' (default), case ids or case folders")
    p.add_argument("--arms", default="control", help="comma-separated arms a session may pick (default: control)")
    p.add_argument("--sandbox", default="auto", help="auto, bwrap, docker or process (default: auto)")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1, loopback only)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000; 0 picks a free one)")
    p.add_argument("--max-sessions", type=int, help="sessions at once (default: the device pool's size)")
    p.add_argument("--runs", type=Path, help="parent of the episodes' run directories (default: the state dir)")
    p.add_argument("--token-file", type=Path, help="file holding the bearer token (default: $TRAINFAIL_SERVE_TOKEN, "
                   "else a new token, printed once)")  # fmt: skip
    p.add_argument("--no-grade", action="store_true", help="do not grade at the end (reward 0, deferred)")
    _scale_options(p)

    p = command("demo", cmd_demo, f"the main job: reference and noop agents on {DEMO_CASE}, graded")
    p.add_argument("--case", default=DEMO_CASE)
    p.add_argument("--sandbox", default="auto")
    p.add_argument("--out", type=Path, default=Path("runs/demo"))
    p.add_argument("--json", action="store_true")
    return parser


def _batch_parsers(command: Callable[[str, Callable[[argparse.Namespace], int], str], argparse.ArgumentParser]) -> None:
    p = command(
        "batch", cmd_batch, "a leaderboard batch: plan, play, grade and adjudicate cases × arms × agents × trials"
    )
    p.add_argument("--cases", nargs="+", help="'all', case ids or case folders (default: the plan in --out)")
    p.add_argument("--arms", help="comma-separated arms, e.g. control,traincheck")
    p.add_argument("--agents", nargs="+", help="agent names")
    p.add_argument("--trials", type=int, help="trials per case × arm × agent")
    p.add_argument("--workers", type=int, help="episodes at once (default: half the cores; Ray: the cluster's CPUs)")
    p.add_argument("--ray", metavar="ADDRESS", help="run episodes as Ray tasks: 'local' (a private cluster), "
                   "'auto', or a cluster address such as ray://head:10001")  # fmt: skip
    p.add_argument("--out", type=Path, required=True, metavar="RUN_DIR", help="the batch's run directory")
    p.add_argument("--sandbox", default="auto", help="auto, bwrap, docker or process (default: auto)")
    p.add_argument("--max-attempts", type=int, default=DEFAULT_MAX_ATTEMPTS,
                   help=f"attempts per episode against infrastructure failures ({DEFAULT_MAX_ATTEMPTS})")  # fmt: skip
    p.add_argument("--stage", choices=["all", "episodes", "grade", "adjudicate"], default="all",
                   help="run only this stage (the others read what is on disk)")  # fmt: skip
    p.add_argument("--grade-workers", type=int, default=1, help="revision trees graded at once (default 1)")
    p.add_argument("--parallel-scenarios", type=int, default=1, help="scenarios of one revision at once (default 1)")
    p.add_argument("--agent-option", action="append", default=[], metavar="AGENT:KEY=VALUE",
                   help="an option for one agent (repeatable; values parsed as JSON when they can be)")  # fmt: skip
    _scale_options(p, note="for a new batch; every case runs at it")
    _judge_options(p)
    p.add_argument("--json", action="store_true")

    p = command("leaderboard", cmd_leaderboard, "render a batch as JSONL/CSV, a Markdown table and an HTML page")
    p.add_argument("run_dir", type=Path)
    p.add_argument("--out", type=Path, help="output folder (default: RUN_DIR/leaderboard)")
    p.add_argument("--title", help="page title (default: the run directory's name)")
    _judge_options(p)  # a judge model re-judges the diagnosis milestones (adjudications) before rendering
    p.add_argument("--json", action="store_true")


def _accelerator_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--accelerator",
        choices=VARIANTS,
        help=f"runtime variant: torch's CPU or CUDA build (default: ${VARIANT_ENV}, else {DEFAULT_VARIANT}); "
        "it is part of the runtime's digest and of its image's tag",
    )


def _scale_options(p: argparse.ArgumentParser, note: str = "") -> None:
    """``--profile`` (the scale a case runs at) and ``--accelerator`` (the runtime it runs on)."""
    p.add_argument(
        "--profile",
        help="the case's scale: 'default' (the CPU dev scale its scenarios are written for) or a profile the "
        f"case declares, e.g. 'native' on GPU hosts (`trainfail cases` lists them){'; ' + note if note else ''}",
    )
    _accelerator_option(p)


def _select_accelerator(args: argparse.Namespace) -> None:
    """``--accelerator`` sets the variant for this process (runtimes, locks, images all read it)."""
    if getattr(args, "accelerator", None):
        os.environ[VARIANT_ENV] = args.accelerator


def _judge_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--judge-model", help=f"judge diagnosis statements with this model, the primary judge where one "
                   f"is configured (default: ${JUDGE_MODEL_ENV}, else the deterministic rubric judge)")  # fmt: skip
    p.add_argument("--judge-base-url", help=f"OpenAI-compatible endpoint of the judge model, apart from the agent's "
                   f"(default: ${JUDGE_BASE_URL_ENV}, else OpenAI)")  # fmt: skip
    p.add_argument("--judge-api-key-env", metavar="NAME", help=f"environment variable holding the judge's key "
                   f"(default: ${JUDGE_KEY_ENV}, else $OPENAI_API_KEY); the key is never written anywhere")  # fmt: skip


def _judge(args: argparse.Namespace) -> Judge | None:
    """The judge the options (or ``$TRAINFAIL_JUDGE_MODEL``) ask for (``None``: the rubric judge)."""
    model = getattr(args, "judge_model", None) or os.environ.get(JUDGE_MODEL_ENV)
    base_url = getattr(args, "judge_base_url", None) or os.environ.get(JUDGE_BASE_URL_ENV) or None
    if base_url and not model:
        raise TrainFailError(f"--judge-base-url needs --judge-model NAME (or ${JUDGE_MODEL_ENV})")
    if not model:
        return None
    return LLMJudge(model, base_url, api_key_env=getattr(args, "judge_api_key_env", None))


# -- doctor / cases / runtimes ----------------------------------------------------------------


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
        return _lock_plans(args, arms)
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
        runtime = _build_with_progress(arm, force=args.force)
        out.print(escape(f"{arm}: {runtime.root}"))
    return 0


def _lock_plans(args: argparse.Namespace, arms: list[str]) -> int:
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


def _ensure_runtime(arm: str) -> None:
    try:
        find_runtime(arm)
    except RuntimeMissingError:
        err.print(f"the {arm} runtime is not built yet; building it now (once, a few minutes)")
        _build_with_progress(arm, force=False)


def _build_with_progress(arm: str, *, force: bool) -> Runtime:
    with _progress(f"building the {arm} runtime") as progress:
        return build_runtime(arm, progress=progress.both, force=force)


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
        with _progress(f"building the {arm} image") as progress:
            image = images.build_image(arm, base=args.base, force=args.force, progress=progress.both)
        built[arm] = image.tag
        if not args.json:
            out.print(escape(f"{arm}: {image.tag}"))
    if args.json:
        print(json.dumps(built, indent=2))
    return 0


# -- run / grade ------------------------------------------------------------------------------


def cmd_run(args: argparse.Namespace) -> int:
    if args.resume is not None:
        _check_sandbox(args.sandbox)
        with _progress(f"resuming {args.resume}"):
            result = resume_episode(args.resume, sandbox=None if args.sandbox == "auto" else args.sandbox,
                                    grade_on_end=not args.no_grade)  # fmt: skip
    else:
        if not args.case or not args.agent:
            raise TrainFailError("run needs --case and --agent (or --resume RUN_DIR)")
        case = resolve_case(args.case).with_profile(args.profile)
        _check_sandbox(args.sandbox)
        options = _agent_options(args)
        agent = load_agent(args.agent, **options)
        _ensure_runtime(args.arm)  # minutes on first use: only after every argument checked out
        run_dir = args.out or Path("runs") / f"{time.strftime('%Y%m%d-%H%M%S')}-{case.name}-{args.arm}-{agent.name}"
        with _progress(f"{agent.name} playing {case.id} ({args.arm})"):
            result = run_episode(
                agent,
                case=case,
                arm=args.arm,
                sandbox=args.sandbox,
                run_dir=run_dir,
                seed=args.seed,
                grade_on_end=not args.no_grade,
                agent_options=options,
            )
    if args.json:
        print(json.dumps(_episode_json(result), indent=2))
    else:
        _print_episodes([result])
    return 0


def _agent_options(args: argparse.Namespace) -> dict[str, Any]:
    options: dict[str, Any] = {}
    if args.model:
        options["model"] = args.model
    if args.base_url:
        options["base_url"] = args.base_url
    for item in args.agent_option:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise TrainFailError(f"--agent-option expects KEY=VALUE, got {item!r}")
        try:
            options[key] = json.loads(raw)
        except json.JSONDecodeError:
            options[key] = raw
    return options


def cmd_grade(args: argparse.Namespace) -> int:
    if args.case or args.patch or args.tree:
        try:
            return _grade_submission(args)
        except TrainFailError as exc:  # could not grade: exit 2, apart from a failing grade
            return _fail(str(exc), exc, bool(getattr(args, "debug", False)), status=2)
    if args.run_dir is None:
        raise TrainFailError("give an episode's run directory, or --case ID with --patch FILE or --tree DIR")
    if args.profile:
        raise TrainFailError("--profile goes with --case; an episode is graded at the profile it ran at")
    if not (args.run_dir / "episode.json").exists():
        raise TrainFailError(f"{args.run_dir} is not an episode run directory (no episode.json)")
    _check_sandbox(args.sandbox)
    grades = _grade_with_progress(args.run_dir, args.sandbox, _judge(args), cache=not args.no_cache)
    if args.json:
        print(json.dumps(grades.to_json(), indent=2))
    else:
        _print_grades(grades)
    return 0


def _grade_submission(args: argparse.Namespace) -> int:
    """``grade --case ID --patch FILE|--tree DIR``: graded exactly like a submitted revision
    (same snapshot rules, sandboxes, receipts and scenario groups). Exit 0 pass, 1 fail,
    2 could not grade."""
    if args.run_dir is not None or not args.case or (args.patch is None) == (args.tree is None):
        raise TrainFailError("give --case ID and exactly one of --patch FILE or --tree DIR (and no run directory)")
    source = args.patch if args.patch is not None else args.tree
    if args.patch is not None and not args.patch.is_file():
        raise TrainFailError(f"--patch {args.patch}: no such file")
    if args.tree is not None and not args.tree.is_dir():
        raise TrainFailError(f"--tree {args.tree}: no such folder")
    case = resolve_case(args.case).with_profile(args.profile)
    _check_sandbox(args.sandbox)
    _ensure_runtime("control")
    with tempfile.TemporaryDirectory(prefix="trainfail-grade-cli-") as scratch:
        workspace = Path(scratch) / "workspace"
        if args.patch is not None:
            shutil.copytree(case.workspace_dir, workspace, symlinks=True)
        # The revision is what a submit would record: snapshot rules, exclusions and limits.
        log = RevisionLog(Path(scratch) / "run")
        try:
            if args.patch is not None:
                apply_patch(workspace, args.patch)
            number, tree = log.record(workspace if args.patch is not None else args.tree, case.workspace_exclude)
        except (ToolError, TreeRefusedError) as exc:
            raise TrainFailError(f"{source} cannot be graded as a revision: {exc}") from None
        grader = Grader(case, sandbox=args.sandbox, cache=not args.no_cache)
        with _progress(f"grading {source} on {case.id}") as progress:

            def hook(scenario: str, outcome: ScenarioOutcome | None) -> None:
                if outcome is None:
                    progress.running(f"grading {scenario}")
                else:
                    progress.done(f"{scenario}: {outcome.status} ({outcome.duration_s:.1f} s)")

            receipt = grader.grade_revision(log, number, tree.digest, progress=hook)
    if args.json:
        print(json.dumps(receipt.to_json(), indent=2, default=str))
    else:
        _print_receipt(case, receipt)
    return {"pass": 0, "fail": 1}.get(receipt.status, 2)


def _print_receipt(case: CaseSpec, receipt: Receipt) -> None:
    table = Table(title=f"{case.id}: tree {receipt.tree[:12]}")
    for column in ("scenario", "kind", "verdict", "measured", "threshold", "reason"):
        table.add_column(column)
    for outcome in receipt.outcomes:
        key, value = _headline(outcome)
        threshold = outcome.metrics.get("threshold", "—")
        table.add_row(escape(outcome.scenario), outcome.kind, outcome.status, escape(f"{key} {value}".strip() or "—"),
                      escape(str(threshold)), escape(outcome.reason))  # fmt: skip
    out.print(table)
    out.print(f"{receipt.status}: {sum(o.status == 'pass' for o in receipt.outcomes)}/{len(receipt.outcomes)} pass, "
              f"{receipt.device_seconds:.1f} grader device-seconds")  # fmt: skip


def _grade_with_progress(run_dir: Path, sandbox: str, judge: Judge | None = None, *, cache: bool = True) -> RunGrades:
    with _progress(f"grading {run_dir}") as progress:

        def hook(revision: int, scenario: str, outcome: ScenarioOutcome | None) -> None:
            if outcome is None:
                progress.running(f"grading revision {revision}: {scenario}")
            else:
                progress.done(f"revision {revision} · {scenario}: {outcome.status} ({outcome.duration_s:.1f} s)")

        return grade_run(run_dir, sandbox=sandbox, progress=hook, judge=judge, cache=cache)


# -- qualify ----------------------------------------------------------------------------------


def cmd_qualify(args: argparse.Namespace) -> int:
    if args.all == bool(args.case):
        raise TrainFailError("name one case (id or folder), or pass --all (`make qualify` does)")
    if args.all:
        return _qualify_all(args)
    return _qualify_one(args, resolve_case(args.case).with_profile(args.profile))


def _qualify_all(args: argparse.Namespace) -> int:
    """Every registered case in turn (``make qualify``), then one line per case with its seconds."""
    if args.out or args.json:
        raise TrainFailError("--all prints tables and writes records; run one case at a time for --out or --json")
    registry = default_registry()
    for folder, reason in registry.refused.items():  # still an error at the end: that case has no record
        err.print(escape(f"refused, not qualified: {folder}: {reason}"), highlight=False, soft_wrap=True)
    summary: list[tuple[str, int, str, float]] = []
    for case in registry:
        if args.profile not in (None, DEFAULT_PROFILE, *case.profiles):
            err.print(escape(f"{case.id} has no profile {args.profile!r}: skipped"), highlight=False)
            continue
        started = time.monotonic()
        states: list[str] = []
        code = _qualify_one(args, case.with_profile(args.profile), states)
        summary.append((case.id, code, states[0] if states else ("done" if code == 0 else "REFUSED"),
                        time.monotonic() - started))  # fmt: skip
    for case_id, _, state, seconds in summary:
        out.print(escape(f"{case_id:<40} {state:<28} {seconds:6.0f} s"), highlight=False)
    return 0 if all(code == 0 for _, code, _, _ in summary) and not registry.refused else 1


def _qualify_one(args: argparse.Namespace, case: CaseSpec, states: list[str] | None = None) -> int:
    """One case's gate (exit status 1 when its verdicts or its diagnosis rubric are refused);
    ``states`` gets a word on which."""
    judge = _judge(args)
    if getattr(args, "diagnosis_only", False):
        return _qualify_diagnosis_only(args, case, judge)
    _check_sandbox(args.sandbox)
    if args.parallel < 1:
        raise TrainFailError(f"--parallel must be at least 1 (1 grades one variant at a time), got {args.parallel}")
    _ensure_runtime("control")
    # What the verdicts are about, taken before any is made: a record is written only if the case,
    # its runtime lock and the harness are still the same when the gate ends.
    digests = current_digests(case)
    # the last record's failing scenarios order the wrong repairs' work (never their verdicts)
    hints = previous_hints(case) if args.wrong_repairs else {}
    with _progress(f"qualifying {case.id}") as progress:

        def hook(variant: str, scenario: str, outcome: ScenarioOutcome | None) -> None:
            if outcome is None:
                progress.running(f"{variant}: {scenario}")
            else:
                progress.done(f"{variant:<22} {scenario:<24} {outcome.status:<5} {outcome.duration_s:6.1f} s")

        result = qualify(case, sandbox=args.sandbox, repeats=args.repeats, wrong_repairs=args.wrong_repairs,
                         progress=hook, judge=judge, hints=hints, parallel=args.parallel)  # fmt: skip
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result.to_json(), indent=2, default=str))
    if args.json:
        print(json.dumps(result.to_json(), indent=2, default=str))
    else:
        _print_qualification(case, result)
    _write_admission_record(args, case, result, digests)
    if states is not None:
        rubric = "" if result.rubric_admitted else ", rubric refused"
        states.append(f"admitted{rubric}" if result.admitted else "REFUSED")
    return 0 if result.admitted and result.rubric_admitted else 1


def _qualify_diagnosis_only(args: argparse.Namespace, case: CaseSpec, judge: Judge | None) -> int:
    result = Qualification(case=case.id, profile=case.profile)
    qualify_diagnosis(case, result, judge)
    if args.json:
        print(json.dumps({k: v for k, v in result.to_json().items() if k in ("case", "problems", "rubric", "heldout")}
                         | {"admitted": None}, indent=2))  # fmt: skip
    else:
        out.print(_rubric_line(result.rubric))
        if case.rubric is not None:
            out.print(escape(summary_line(result.heldout)), highlight=False)
        for problem in result.diagnosis_problems:
            out.print(f"  - {escape(problem)}")
    if refresh_diagnosis(case, result) is not None and not args.json:
        out.print(f"admission record's diagnosis figures refreshed: {record_path(case)}")
    return 1 if result.diagnosis_problems else 0


def _write_admission_record(
    args: argparse.Namespace, case: CaseSpec, result: Qualification, digests: dict[str, str]
) -> None:
    """Rewrite the case's admission record after an admitted full gate (wrong repairs, forgeries
    and at least two repeats) over content that did not change while it ran (``digests``, taken
    before it started); say why not otherwise."""
    if not result.admitted:
        err.print("no admission record written: the case was refused")
        return
    changed = sorted(k for k, v in current_digests(case).items() if digests.get(k) != v)
    if changed:
        err.print(f"no admission record written: the {', '.join(changed)} changed while the case was being qualified "
                  "(its verdicts may be about two versions); qualify it again")  # fmt: skip
        return
    if not args.wrong_repairs or args.repeats < 2:
        err.print(
            "no admission record written: records come only from the full gate (--wrong-repairs, --repeats 2 "
            f"or more); `{REFRESH_ALL}` refreshes every case"
        )
        return
    path = write_record(case, record_from_qualification(case, result, sandbox=args.sandbox, repeats=args.repeats))
    err.print(escape(f"admission record written: {path}"), highlight=False)


def _print_qualification(case: CaseSpec, result: Qualification) -> None:
    at = "" if case.profile == DEFAULT_PROFILE else f" at profile {case.profile}"
    table = Table(title=f"qualification of {case.id}{at}")
    table.add_column("scenario")
    table.add_column("kind")
    for variant in result.variants:
        table.add_column(variant.label)
    keys: set[str] = set()
    for scenario in case.scenarios:
        row = [escape(scenario.name), scenario.kind]
        for variant in result.variants:
            found = next((o for o in variant.receipt.outcomes if o.scenario == scenario.name), None)
            if found is None:  # a wrong repair's grading stops at its first failing unit
                row.append("[dim]not run[/]")
                continue
            outcome = found
            colour = {"pass": "green", "fail": "red"}.get(outcome.status, "yellow")
            key, value = _headline(outcome)
            keys.add(key)
            row.append(f"[{colour}]{outcome.status}[/] {value}")
        table.add_row(*row)
    table.caption = f"figure: {', '.join(sorted(k for k in keys if k))} (the judge's key metric)" if keys else None
    out.print(table)
    if result.forced_settings:
        out.print("\nsettings the grader forces away from the shipped config (grader/README.md):\n")
        out.print(escape(result.forced_settings), highlight=False)
    measured = [m for m in margins(result.variants) if m.healthy_worst is not None or m.failing_best is not None]
    if measured:
        out.print("\nmeasured figures: worst where the pipeline is right (reference, healthy scenarios), best where "
                  "it is not (unmodified, failure scenarios); tolerances go between:")  # fmt: skip
        for m in measured:
            worst = "—" if m.healthy_worst is None else f"{m.healthy_worst:.3g}"
            best = "—" if m.failing_best is None else f"{m.failing_best:.3g}"
            out.print(f"  {escape(m.metric)}: right ≤ {worst}, wrong ≥ {best}", highlight=False)
    if result.promise_table:
        out.print("\nwhat the workspace README promises, and the scenarios covering each class "
                  "(grader/promises.toml):\n")  # fmt: skip
        out.print(escape(result.promise_table), highlight=False)
    out.print(_rubric_line(result.rubric))
    if result.rubric is not None:
        out.print(escape(summary_line(result.heldout)), highlight=False)
    verdict = "[green]admitted[/]" if result.admitted else "[red]refused[/]"
    out.print(f"{verdict} in {result.seconds:.0f} s")
    for problem in result.problems:
        out.print(f"  - {escape(problem)}")
    if result.diagnosis_problems:
        out.print("[red]diagnosis rubric refused[/] (the case's verdicts stand; its milestones are measured with a "
                  "rubric below its floors, as the held-out figures say):")  # fmt: skip
        for problem in result.diagnosis_problems:
            out.print(f"  - {escape(problem)}")


def _rubric_line(check: FixtureCheck | None) -> str:
    if check is None:
        return "diagnosis rubric: none (grader/diagnosis/rubric.toml); diagnosis milestones will not be measured"

    def pct(value: float | None) -> str:
        return "—" if value is None else f"{value:.0%}"

    fixtures = check.true_positive + check.false_positive + check.false_negative + check.true_negative
    line = (f"diagnosis rubric ({escape(check.judge)} judge) on {fixtures} fixtures: precision "
            f"{pct(check.precision)}, recall {pct(check.recall)}")  # fmt: skip
    if check.undecided:
        line += f", {check.undecided} undecided"
    return line


def _headline(outcome: ScenarioOutcome) -> tuple[str, str]:
    """The first numeric metric's name and value (the harness lists its key metric first)."""
    for key, value in outcome.metrics.items():
        if isinstance(value, float):
            return key, f"{value:.1e}"
    return "", ""


def cmd_case(args: argparse.Namespace) -> int:
    case = scaffold_case(args.name, args.dir, namespace=args.namespace)
    out.print(escape(f"created {case.id} in {_short(case.root)} (passes schema validation)"))
    out.print("next: put the real failure in workspace/, write the grader's oracle and scenarios, then run")
    out.print(escape(f"  trainfail qualify {_short(case.root)} --wrong-repairs   (docs/case-authoring.md)"))
    return 0


# -- batch / leaderboard ----------------------------------------------------------------------


def cmd_batch(args: argparse.Namespace) -> int:
    judge = _judge(args)
    _check_sandbox(args.sandbox, probe=not args.ray)  # Ray nodes probe their own backends
    layout = RunLayout(args.out)
    plan = _batch_plan(args, layout)
    err.print(escape(f"plan: {len(plan.episodes)} episodes → {_short(layout.plan)}"))
    if args.stage in ("all", "episodes"):
        # Ray nodes build their own runtimes; the driver needs the control one to grade.
        for arm in sorted({"control"} if args.ray else {*plan.spec.arms, "control"}):
            _ensure_runtime(arm)
        counts = _play(args, layout, plan)
        err.print(escape(f"episodes: {counts.done} done, {counts.gave_up} gave up ({describe(counts)})"))
    result: dict[str, Any] = {"run_dir": str(layout.root), "episodes": len(plan.episodes)}
    if args.stage in ("all", "grade"):
        report = _grade_batch(args, layout, plan)
        result["grading"] = {k: v for k, v in report.to_json().items() if k != "per_tree"}
    if args.stage in ("all", "grade", "adjudicate"):
        adjudications = adjudicate_batch(layout, plan, force=args.stage == "adjudicate", judge=judge)
        result["adjudicated"] = len(adjudications)
        err.print(escape(f"adjudicated {len(adjudications)} episodes → {_short(layout.root / 'adjudication')}"))
        err.print(escape(f"next: trainfail leaderboard {_short(layout.root)}"))
    if args.json:
        print(json.dumps(result, indent=2))
    return 0


def _batch_plan(args: argparse.Namespace, layout: RunLayout) -> BatchPlan:
    given = [args.cases, args.arms, args.agents, args.trials]
    if all(v is None for v in given):
        plan = load_plan(layout)
        if args.profile and args.profile != plan.spec.profile:
            raise TrainFailError(f"{layout.root} holds a batch at profile {plan.spec.profile!r}; resume it without "
                                 f"--profile, or give a new --out for profile {args.profile!r}")  # fmt: skip
        return plan
    if any(v is None for v in given):
        raise TrainFailError("a new batch needs --cases, --arms, --agents and --trials (or none, to resume --out)")
    plan = make_plan(
        [case.with_profile(args.profile) for case in resolve_cases(args.cases)],
        [a.strip() for a in args.arms.split(",") if a.strip()],
        args.agents,
        args.trials,
        sandbox=args.sandbox,
        agent_options=_batch_agent_options(args.agent_option),
        max_attempts=args.max_attempts,
    )
    return write_plan(layout, plan)


def _batch_agent_options(items: list[str]) -> dict[str, dict[str, Any]]:
    options: dict[str, dict[str, Any]] = {}
    for item in items:
        agent, colon, rest = item.partition(":")
        key, equals, raw = rest.partition("=")
        if not (colon and equals and agent and key):
            raise TrainFailError(f"--agent-option expects AGENT:KEY=VALUE, got {item!r}")
        try:
            options.setdefault(agent, {})[key] = json.loads(raw)
        except json.JSONDecodeError:
            options.setdefault(agent, {})[key] = raw
    return options


def _play(args: argparse.Namespace, layout: RunLayout, plan: BatchPlan) -> Counts:
    runner: Runner
    if args.ray:
        runner = RayRunner(layout, args.ray, workers=args.workers, sandbox=plan.spec.sandbox,
                           agent_options=plan.spec.agent_options)  # fmt: skip
        err.print(escape(f"ray: {describe_cluster()}; {runner.slots} episodes at once"))
    else:
        runner = LocalRunner(layout, args.workers or default_workers())
        pool = DevicePool(backend=resolve_backend(plan.spec.sandbox))
        err.print(escape(f"local: {runner.slots} worker(s); devices: {pool.describe()}"))
    with episode_progress(err, len(plan.episodes)) as hook:
        return run_episodes(layout, plan, runner, hook)


def _grade_batch(args: argparse.Namespace, layout: RunLayout, plan: BatchPlan) -> GradingReport:
    with _progress("grading the batch's revisions") as progress:

        def hook(job: TreeJob, receipt: Receipt | None) -> None:
            label = f"{job.case} tree {job.tree[:12]} ({job.submissions} submission(s))"
            if receipt is None:
                progress.running(f"grading {label}")
            else:
                progress.done(f"{label}: {receipt.status} ({receipt.duration_s:.0f} s, "
                              f"{receipt.device_seconds:.0f} grader device-s)")  # fmt: skip

        report = grade_batch(layout, plan, workers=args.grade_workers, parallel_scenarios=args.parallel_scenarios,
                             progress=hook)  # fmt: skip
    err.print(
        f"grading: {report.revisions} revision(s), {report.unique_trees} distinct tree(s): {report.graded_now} "
        f"graded now, {report.node_cache_hits} from this node's receipt cache, {report.reused} already in the batch; "
        f"{report.grader_device_seconds:.0f} grader device-s ({report.grader_device_seconds_without_dedup:.0f} "
        f"without deduplication, {report.grader_device_seconds_spent_now:.0f} spent now)"
    )
    return report


def cmd_leaderboard(args: argparse.Namespace) -> int:
    out_dir = args.out or args.run_dir / "leaderboard"
    if (judge := _judge(args)) is not None:  # the milestone tables come from this judge's adjudications
        layout = RunLayout(args.run_dir)
        with _progress(f"judging diagnosis statements with {judge.identity}"):
            adjudicate_batch(layout, load_plan(layout), judge=judge)
    written = render_leaderboard(args.run_dir, out_dir, title=args.title)
    if args.json:
        print(json.dumps({"out": str(out_dir), "files": [str(p) for p in written]}, indent=2))
        return 0
    for path in written:
        out.print(escape(f"wrote {_short(path)}"))
    return 0


# -- demo -------------------------------------------------------------------------------------


def cmd_demo(args: argparse.Namespace) -> int:
    """``trainfail demo``: see :mod:`gym_trainfail.demo` (the phases and their times)."""
    case = resolve_case(args.case)
    _check_sandbox(args.sandbox)
    clock = demo.PhaseClock()
    with clock.phase("runtime") as phase, _progress("the control runtime") as progress:
        _, phase.note = demo.ensure_demo_runtime("control", progress.both)
    results: list[EpisodeResult] = []
    stamp = time.strftime("%Y%m%d-%H%M%S")
    with clock.phase("episodes") as phase:
        for agent_name in ("reference", "noop"):
            agent = load_agent(agent_name)
            run_dir = args.out / f"{stamp}-{agent_name}"
            with _progress(f"{agent_name} agent playing {case.id} (sandbox {args.sandbox}); grading takes minutes"):
                started = time.monotonic()
                results.append(run_episode(agent, case=case, sandbox=args.sandbox, run_dir=run_dir))
            err.print(
                escape(
                    f"  {agent_name}: reward {results[-1].reward:.0f} in {time.monotonic() - started:.0f} s → {run_dir}"
                )
            )
        grades = [_grade_with_progress(r.run_dir, args.sandbox) for r in results]
        phase.note = f"reference and noop on {case.id}, graded ({args.sandbox})"
    if args.json:
        print(json.dumps([_episode_json(r) | {"grades": g.to_json()} for r, g in zip(results, grades, strict=True)],
                         indent=2))  # fmt: skip
        err.print(escape("  ".join(f"{p.name} {demo.format_seconds(p.seconds)}" for p in clock.table())))
        return 0
    _print_episodes(results, grades)
    _print_phases(clock.table())
    return 0


def _print_phases(phases: list[demo.Phase]) -> None:
    table = Table(title="where the time went")
    for column in ("phase", "time", "how"):
        table.add_column(column)
    for p in phases:
        table.add_row(escape(p.name), demo.format_seconds(p.seconds), escape(p.note))
    out.print(table)


def _episode_json(result: EpisodeResult) -> dict[str, Any]:
    return {
        "run_dir": str(result.run_dir),
        "case": result.case,
        "arm": result.arm,
        "agent": result.agent,
        "reward": result.reward,
        "reward_status": result.reward_status,
        "final_revision": result.final_revision,
        "summary": result.summary.to_dict(),
    }


def _print_episodes(results: list[EpisodeResult], grades: list[RunGrades] | None = None) -> None:
    table = Table(title="episodes")
    for column in ("agent", "case", "arm", "reward", "revisions", "first valid", "raw s", "adjusted s",
                   "tokens", "solver dev-s", "run dir"):  # fmt: skip
        table.add_column(column)
    for index, result in enumerate(results):
        s = result.summary
        first = "—"
        if grades is not None:
            valid = grades[index].first_valid
            rule = grades[index].adjudication
            first = f"rev {valid.revision} @ {valid.cost.adjusted_seconds:.0f} s" if valid else rule.reason
        table.add_row(escape(result.agent), escape(result.case), result.arm,
                      escape(f"{result.reward:.0f} ({result.reward_status})"), str(s.submits), escape(first),
                      f"{s.raw_seconds:.1f}", f"{s.adjusted_seconds:.1f}", str(s.total_tokens),
                      f"{s.solver_device_seconds:.1f}", escape(_short(result.run_dir)))  # fmt: skip
    out.print(table)


def _print_grades(grades: RunGrades) -> None:
    table = Table(title=escape(f"revisions of {_short(grades.run_dir)} ({grades.case})"))
    for column in (
        "revision",
        "tree",
        "verdict",
        "scenarios",
        "raw s",
        "adjusted s",
        "tokens",
        "solver dev-s",
    ):
        table.add_column(column)
    for r in grades.revisions:
        passed = sum(o.status == "pass" for o in r.receipt.outcomes)
        table.add_row(str(r.revision), r.tree[:12], r.status, f"{passed}/{len(r.receipt.outcomes)} pass",
                      f"{r.cost.raw_seconds:.1f}", f"{r.cost.adjusted_seconds:.1f}", str(r.cost.total_tokens),
                      f"{r.cost.solver_device_seconds:.1f}")  # fmt: skip
    out.print(table)
    first = grades.first_valid
    if first is None and grades.adjudication.blocked_by is not None:
        out.print(f"first valid repair: {escape(grades.adjudication.reason)} (its verdict must be known first)")
    elif first is None:
        out.print("no valid repair among the submitted revisions")
    else:
        c = first.cost
        out.print(
            f"first valid repair: revision {first.revision} after {c.raw_seconds:.1f} s raw / "
            f"{c.adjusted_seconds:.1f} s adjusted, {c.total_tokens} tokens, "
            f"{c.solver_device_seconds:.1f} solver device-seconds"
        )
    out.print(
        f"grading: {grades.unique_trees} distinct tree(s), {grades.grader_device_seconds:.1f} grader device-seconds"
    )
    if grades.diagnosis is not None:
        _print_milestones(grades.diagnosis)


def _print_milestones(diagnosis: dict[str, Any]) -> None:
    judge = diagnosis.get("judge")
    title = f"milestones ({escape(judge)} judge; {_heldout_recall(diagnosis)})" if judge else "milestones (no rubric)"
    table = Table(title=title)
    if judge == RubricJudge.identity:
        table.caption = ("the deterministic rubric judge can miss a correct statement: its milestone times are upper "
                         "bounds (a missed statement delays a milestone)")  # fmt: skip
    for column in ("milestone", "raw s", "adjusted s", "turn", "step", "tokens", "solver dev-s", "what was said"):
        table.add_column(column)
    for name in MILESTONES:
        m = diagnosis["milestones"].get(name)
        if m is None:
            table.add_row(LABELS[name], "—", "—", "—", "—", "—", "—", "")
            continue
        low, high = m["tokens_low"], m["tokens_high"]
        tokens = str(high) if low == high else f"{low}–{high}"
        table.add_row(LABELS[name], f"{m['raw_s']:.1f}", f"{m['adjusted_s']:.1f}", str(m["turn"]), str(m["step"]),
                      tokens, f"{m['solver_device_seconds']:.1f}", escape(m["excerpt"][:120]))  # fmt: skip
    out.print(table)
    if (engaged := diagnosis.get("engagement")) is not None:
        out.print(f"TrainCheck engagement: {escape(str(engaged['level']))}")
    scope = diagnosis["validation"]
    steps = f", {scope['steps']} updates trained" if scope.get("steps") is not None else ""
    out.print(f"validation: {scope['jobs']} job(s), {scope['device_seconds']:.1f} device-s, "
              f"{scope['distinct_commands']} distinct command(s), ranks {scope['ranks'] or '—'}{steps}")  # fmt: skip


def _heldout_recall(diagnosis: dict[str, Any]) -> str:
    """``held-out recall 83%, pre-run hypotheses 75%`` (or why there is none) for a milestone table's title."""
    found = diagnosis.get("judge_heldout")
    if not isinstance(found, dict):
        return "no held-out set"
    if "error" in found:
        return "held-out set unusable"
    recall, hypotheses = found.get("recall"), found.get("hypothesis_recall")
    text = f"held-out recall {recall:.0%}" if isinstance(recall, float) else "held-out recall —"
    return text + (f", pre-run hypotheses {hypotheses:.0%}" if isinstance(hypotheses, float) else "")


def _short(path: Path) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:
        return str(path)


def cmd_serve(args: argparse.Namespace) -> int:
    """``trainfail serve``: see :mod:`gym_trainfail.serve` and docs/serving.md."""
    from gym_trainfail.errors import MissingExtraError

    try:
        from gym_trainfail.serve import cli as serve_cli
    except ImportError as exc:  # the [serve] extra is optional
        raise MissingExtraError(exc.name or "openenv", "serve", "trainfail serve") from None
    return serve_cli.serve_command(args, resolve_cases(args.cases))


if __name__ == "__main__":
    sys.exit(main())
