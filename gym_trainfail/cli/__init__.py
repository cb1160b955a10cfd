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
import os
from collections.abc import Callable, Sequence
from pathlib import Path

from gym_trainfail.agent import agent_names
from gym_trainfail.arms import ARMS
from gym_trainfail.batch import resolve_cases
from gym_trainfail.batch.plan import DEFAULT_MAX_ATTEMPTS
from gym_trainfail.cli.batches import cmd_batch, cmd_leaderboard
from gym_trainfail.cli.common import err, fail, unexpected
from gym_trainfail.cli.episodes import DEMO_CASE, cmd_demo, cmd_grade, cmd_run
from gym_trainfail.cli.host import cmd_cases, cmd_doctor, cmd_images, cmd_runtimes
from gym_trainfail.cli.qualifying import cmd_case, cmd_qualify
from gym_trainfail.diagnosis.llm_judge import JUDGE_BASE_URL_ENV, JUDGE_KEY_ENV, JUDGE_MODEL_ENV
from gym_trainfail.errors import TrainFailError, missing_extra
from gym_trainfail.reach.command import cmd_reach, reach_options
from gym_trainfail.runtimes import DEFAULT_VARIANT, VARIANT_ENV, VARIANTS


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
        return fail(str(exc), exc, debug)
    except ImportError as exc:
        if (missing := missing_extra(exc, f"trainfail {args.command}")) is not None:
            return fail(str(missing), exc, debug)
        return fail(unexpected(exc), exc, debug)
    except KeyboardInterrupt:
        err.print("interrupted")
        return 130
    except Exception as exc:  # noqa: BLE001 - the operator gets one line; --debug shows the rest
        return fail(unexpected(exc), exc, debug)


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


def cmd_serve(args: argparse.Namespace) -> int:
    """``trainfail serve``: see :mod:`gym_trainfail.serve` and docs/serving.md."""
    from gym_trainfail.errors import MissingExtraError

    try:
        from gym_trainfail.serve import cli as serve_cli
    except ImportError as exc:  # the [serve] extra is optional
        raise MissingExtraError(exc.name or "openenv", "serve", "trainfail serve") from None
    return serve_cli.serve_command(args, resolve_cases(args.cases))
