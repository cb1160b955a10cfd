"""What a process pays before it does anything: ``import gym_trainfail`` (every case's id registered with
Gymnasium), then one case asked for by id (that case validated, its rubric parsed), then the full registry
(every case validated). Each figure is the median of fresh interpreters, so nothing is cached between them.

    .venv/bin/python benchmarks/bench_import.py [--repeats N]

Every CLI call, batch worker and spawned helper pays the import; before the import registered ids only, it
validated all cases (their rubrics: megabytes of TOML, thousands of regexes), which the last line compares.
Figures, not assertions; the machine's load average is printed with them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

PROBE = """
import json, time
started = time.perf_counter()
import gym_trainfail
imported = time.perf_counter()
gym_trainfail.get_case("TrainFail/DDPTokenAverage-v1")
one = time.perf_counter()
registry = gym_trainfail.default_registry()
full = time.perf_counter()
print(json.dumps({"import": imported - started, "one case": one - imported, "full registry": full - one,
                  "cases": len(registry)}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    runs = [
        json.loads(subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True).stdout)
        for _ in range(args.repeats)
    ]
    median = {key: statistics.median(run[key] for run in runs) for key in ("import", "one case", "full registry")}
    for key, seconds in median.items():
        print(f"{key:<14} {seconds:6.2f} s (median of {args.repeats})")
    cases = runs[0]["cases"]
    eager = median["import"] + median["full registry"]
    print(f"import then one case: {median['import'] + median['one case']:.2f} s; the import validating all {cases} "
          f"cases as before: {eager:.2f} s ({eager / (median['import'] + median['one case']):.1f}x)")  # fmt: skip
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
