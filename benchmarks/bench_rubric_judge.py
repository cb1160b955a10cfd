"""The deterministic rubric judge on long and adversarial statements (agent messages are kept up
to 64,000 characters): seconds per statement for each in-tree rubric, worst case printed last.

    .venv/bin/python benchmarks/bench_rubric_judge.py

The judge reads at most ``MAX_MATCHES`` matches of a phrasing per view and at most
``MAX_SENTENCE`` characters of a sentence each side of a match, so its work is bounded; before
those bounds a 64,000-character statement could take minutes. Held-out statements are not read.
"""

from __future__ import annotations

import time
from pathlib import Path

from gym_trainfail.cases import load_case
from gym_trainfail.diagnosis.judges import RubricJudge

ENVS = Path(__file__).resolve().parents[1] / "envs"
#: Every in-tree case with a rubric.
CASES = tuple(sorted(p.parent.parent.parent.name for p in ENVS.glob("*/grader/diagnosis/rubric.toml")))
LIMIT = 64_000
TEXTS = {
    "repeated claims": "the per rank token mean over its own local count differs between ranks and the planner "
    "misses the head backward ",
    "no punctuation": "a ",
    "numbers": "rank 0 has 12 tokens and rank 1 has 88 tokens, ",
    "bullet lines": "- three buffers of the chunk over the vocab\n",
    "negated claims": "it is not true that each rank normalises by its own count and the planner never misses the "
    "head backward. ",
}


def main() -> None:
    worst = 0.0
    for folder in CASES:
        rubric = load_case(ENVS / folder).rubric
        assert rubric is not None
        for name, unit in TEXTS.items():
            text = (unit * (LIMIT // len(unit) + 1))[:LIMIT]
            started = time.perf_counter()
            RubricJudge().judge(text, rubric)
            seconds = time.perf_counter() - started
            worst = max(worst, seconds)
            print(f"{folder:<24} {name:<16} {len(text)} chars  {seconds:6.2f} s")
    print(f"worst: {worst:.2f} s per 64,000-character statement")


if __name__ == "__main__":
    main()
