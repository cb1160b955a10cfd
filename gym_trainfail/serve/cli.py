"""``trainfail serve``: resolve the options, print how to connect, run the server."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from gym_trainfail.arms import ARMS
from gym_trainfail.cases import CaseSpec
from gym_trainfail.devices import DevicePool
from gym_trainfail.errors import TrainFailError
from gym_trainfail.paths import episodes_dir
from gym_trainfail.sandbox import resolve_backend
from gym_trainfail.serve.app import LOOPBACK, bind, build_app, run
from gym_trainfail.serve.auth import check_token, new_token
from gym_trainfail.serve.guard import fd_budget
from gym_trainfail.serve.session import ServeConfig

#: Where the token may come from instead of a file (removed from the process environment once read).
TOKEN_ENV = "TRAINFAIL_SERVE_TOKEN"


def serve_command(args: argparse.Namespace, cases: list[CaseSpec]) -> int:
    """Run the server until SIGINT/SIGTERM."""
    arms = tuple(a.strip() for a in str(args.arms).split(",") if a.strip())
    unknown = [a for a in arms if a not in ARMS]
    if not arms or unknown:
        raise TrainFailError(f"--arms takes a comma-separated list of {', '.join(sorted(ARMS))}; got {args.arms!r}")
    if not cases:
        raise TrainFailError("no cases to serve; give --cases all, case ids or case folders")
    for case in cases:
        if args.profile:
            case.with_profile(args.profile)  # refuses an unknown profile now, not at the first reset
    token, generated = read_token(args.token_file)
    backend = resolve_backend(args.sandbox)
    pool = DevicePool(backend=backend)
    max_sessions = args.max_sessions if args.max_sessions is not None else max(1, pool.size)
    if max_sessions < 1:
        raise TrainFailError("--max-sessions must be at least 1")
    runs_root = (args.runs or episodes_dir()).resolve()
    runs_root.mkdir(parents=True, exist_ok=True)
    config = ServeConfig(
        cases={c.id: c for c in cases},
        arms=arms,
        sandbox=backend,
        runs_root=runs_root,
        pool=pool,
        profile=args.profile,
        grade_on_end=not args.no_grade,
    )
    budget = fd_budget(max_sessions)  # refuses to start when the open-file limit leaves too little room
    app = build_app(config, token, max_sessions)
    if args.host not in LOOPBACK:
        print(
            f"trainfail serve: warning: listening on {args.host}, beyond this machine, over plain HTTP; "
            "anyone who can read the traffic can take the token (put TLS in front)",
            file=sys.stderr,
        )
    try:
        sock = bind(args.host, args.port)
    except OSError as exc:
        raise TrainFailError(
            f"cannot listen on {args.host}:{args.port} ({exc.strerror}); pick another --port"
        ) from None
    host, port = sock.getsockname()[:2]
    url = f"http://{'[' + host + ']' if ':' in host else host}:{port}"

    def ready() -> None:
        if generated:
            print(f"trainfail serve: token (not shown again): {token}", file=sys.stderr)
        ready_line = {"url": url, "cases": sorted(config.cases), "arms": list(arms), "max_sessions": max_sessions,
                      "runs": str(runs_root), "devices": pool.describe()}  # fmt: skip
        print(json.dumps(ready_line), flush=True)
        print(
            f"trainfail serve: {len(cases)} case(s) on {url} (WebSocket {url}/ws, schema {url}/schema), "
            f"up to {max_sessions} sessions; episodes under {runs_root}; {budget.describe()}",
            file=sys.stderr,
            flush=True,
        )

    run(app, sock, budget, ready)
    return 0


def read_token(token_file: Path | None) -> tuple[str, bool]:
    """The bearer token (from ``--token-file``, else ``$TRAINFAIL_SERVE_TOKEN``, else a new one) and
    whether it was generated. The variable is removed from this process's environment once read."""
    from_env = os.environ.pop(TOKEN_ENV, None)
    raw: str | None
    if token_file is not None:
        try:
            raw = token_file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise TrainFailError(f"cannot read --token-file {token_file}: {exc}") from None
    else:
        raw = from_env
    if raw is None:
        return new_token(), True
    try:
        return check_token(raw), False
    except ValueError as exc:
        raise TrainFailError(f"unusable token: {exc}; generate one with: python -c 'import secrets; "
                             "print(secrets.token_urlsafe(32))'") from None  # fmt: skip
