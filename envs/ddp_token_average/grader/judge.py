"""Judge phase of TrainFail/DDPTokenAverage-v0: verdicts from the run phase's artifacts.

    python /grader/judge.py --scenarios /io/scenarios.json --artifacts /artifacts \\
        --run /io/run.json --out-dir /io/outcomes [--oracle /oracle]

Trusted side of the grader protocol (docs/grader-protocol.md): no revision code runs here, and
everything under ``--artifacts`` is treated as written by an adversary. For each scenario it
regenerates the scenario's data, loads the observer's rank records and the saved model with
bounded, type-checked readers, recomputes each recorded update's gradient in float64 (the mean
cross-entropy over every response token of the global batch, clipped as the scenario sets),
replays the shipped optimizer over the records and compares the result with the final
parameters and the saved model. One outcome per scenario goes to ``OUT/<scenario>.json``.

Runs by hand too: the run kit's helpers are imported from ``kit/`` beside this file.

Leak canary (must never appear where the agent or the run kit can look):
TRAINFAIL-CANARY-cc7d20b46f701c136c97da15b451c8c6
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

GRADER_DIR = Path(__file__).resolve().parent
sys.path[:0] = [str(GRADER_DIR), str(GRADER_DIR / "kit")]

from tokjudge.oracle import Oracles  # noqa: E402
from tokjudge.verdict import Outcome, RunFacts, judge_safely  # noqa: E402
from tokkit.scenario import Scenario, load_scenarios  # noqa: E402

#: The most of ``run.json`` the judge parses.
RUN_FACTS_LIMIT = 1024 * 1024


def read_run_facts(path: Path) -> RunFacts:
    """``/io/run.json`` (written by the host; its ``output_tail`` is the run's own text)."""
    try:
        raw: Any = json.loads(path.read_text(encoding="utf-8")[:RUN_FACTS_LIMIT])
    except (OSError, ValueError):
        raw = {}
    raw = raw if isinstance(raw, dict) else {}
    code = raw.get("exit_code")
    return RunFacts(
        exit_code=code if isinstance(code, int) and not isinstance(code, bool) else None,
        timed_out=raw.get("timed_out") is True,
        output_tail=str(raw.get("output_tail", "")),
    )


def write_outcome(out_dir: Path, scenario: Scenario, outcome: Outcome) -> None:
    """The protocol's outcome JSON (timings rounded), and one line on stdout."""
    outcome.timings = {k: round(v, 3) for k, v in outcome.timings.items()}
    path = out_dir / f"{scenario.name}.json"
    path.write_text(json.dumps(asdict(outcome), indent=2) + "\n", encoding="utf-8")
    print(f"{scenario.name}: {outcome.status}: {outcome.reason}", flush=True)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the judge phase."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", type=Path, required=True)
    parser.add_argument("--artifacts", type=Path, required=True)
    parser.add_argument("--run", type=Path, required=True)
    parser.add_argument("--out-dir", type=Path, required=True)
    parser.add_argument("--oracle", type=Path, help="cached oracles (this case has none)")
    args = parser.parse_args(argv)
    scenarios = load_scenarios(args.scenarios)
    run = read_run_facts(args.run)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    oracles = Oracles()  # one per model size the scenarios ask for
    for scenario in scenarios:
        outcome = judge_safely(scenario, args.artifacts / scenario.name, run, oracles.get(scenario.model))
        write_outcome(args.out_dir, scenario, outcome)
    return 0


if __name__ == "__main__":
    sys.exit(main())
