"""The deterministic rubric judge on long and adversarial statements (agent messages are kept up
to 64,000 characters): seconds per statement for each in-tree rubric, worst case printed last.
With ``--development``: milliseconds per development statement (what CI's fixture check pays, about
26,000 statements), with the phrasing prefilter (gym_trainfail/diagnosis/prefilter.py) and without
it, and the ratio; the verdicts must agree.

    .venv/bin/python benchmarks/bench_rubric_judge.py [--development [N]]

The judge reads at most ``MAX_MATCHES`` matches of a phrasing per view and at most
``MAX_SENTENCE`` characters of a sentence each side of a match, so its work is bounded; before
those bounds a 64,000-character statement could take minutes. Held-out statements are not read.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from gym_trainfail.cases import load_case
from gym_trainfail.diagnosis import reading
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


def development(per_rubric: int) -> None:
    """The first ``per_rubric`` development statements of every rubric, judged with and without the prefilter."""
    filtered = reading.may_match
    totals = {"with": 0.0, "without": 0.0}
    count = 0
    print(f"{'rubric':<26} {'statements':>10} {'with ms':>8} {'without ms':>10} {'ratio':>6}")
    for folder in CASES:
        rubric = load_case(ENVS / folder).rubric
        assert rubric is not None
        texts = [f.text for f in rubric.fixtures[:per_rubric]]
        seconds, verdicts = {}, {}
        for mode in ("without", "with"):
            reading.may_match = filtered if mode == "with" else (lambda pattern, folded: True)  # type: ignore[assignment]
            judge = RubricJudge()
            started = time.perf_counter()
            verdicts[mode] = [(v.correct, v.hypothesis, v.stance) for v in (judge.judge(t, rubric) for t in texts)]
            seconds[mode] = time.perf_counter() - started
            totals[mode] += seconds[mode]
        reading.may_match = filtered
        assert verdicts["with"] == verdicts["without"], f"{folder}: the prefilter changed a verdict"
        count += len(texts)
        ms = {k: 1000 * v / len(texts) for k, v in seconds.items()}
        print(f"{folder:<26} {len(texts):>10} {ms['with']:>8.1f} {ms['without']:>10.1f} "
              f"{seconds['without'] / seconds['with']:>5.2f}x")  # fmt: skip
    print(
        f"all: {count} statements, {1000 * totals['with'] / count:.1f} ms with the prefilter, "
        f"{1000 * totals['without'] / count:.1f} ms without: {totals['without'] / totals['with']:.2f}x faster"
    )


if __name__ == "__main__":
    if "--development" in sys.argv[1:]:
        rest = sys.argv[sys.argv.index("--development") + 1 :]
        development(int(rest[0]) if rest else 200)
    else:
        main()
