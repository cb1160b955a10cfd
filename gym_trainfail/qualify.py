"""Qualification: the admission gate every case must pass.

The unmodified workspace must pass every healthy scenario and fail every failure scenario,
identically on each repeat; the reference repair must pass every scenario; each shipped wrong
repair and each shipped forgery (a revision that tries to forge its grade) must fail at least
one; and no grader canary may appear in what the agent sees
(workspace, prompt, tool specs) or in the run kit (which the revision's code can read). A case
with a diagnosis rubric has it checked against its statement fixtures (precision and recall);
the deterministic rubric judge must classify every fixture as its author did, and, where the case
has a held-out statement set (``grader/diagnosis/heldout.toml``), reach precision 0.95 and recall
0.75 on it, credit 75 % of its right-mechanism hypotheses as pre-run hypotheses and reject 95 % of
its withdrawn, attributed-then-refuted and denied ones (``diagnosis.heldout``; a case without a
set is reported as such, not refused). The rubric has a gate of its
own (``diagnosis_problems``, :attr:`Qualification.rubric_admitted`): a rubric below its floors is
refused and reported, and the milestone tables say so through the judge's held-out figures, but
it never refuses the case's verdicts, which a rubric cannot change (rewards never depend on it).

Every other repeat of the unmodified workspace and the wrong repairs are graded in scenario
groups, the rest one scenario per run: a case whose grouped verdicts differ from its
one-scenario verdicts is refused like a non-deterministic one.

A forgery is rejected when it fails a scenario, or when its judge asked for a retry on every
attempt of a scenario it did not pass (it forged an infrastructure flake, such as gloo's exit
abort, that only the host could tell from a real one): such a scenario is *unknown*
(``error``), which is never a pass, and the gym records it as such in episodes too. Every other
scenario left without a verdict (a judge that crashed, wrote nothing, or answered nonsense) is
a problem for every variant, forgeries included, and a wrong repair must fail on its merits.
"""

from __future__ import annotations

import functools
import json
import math
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from gym_trainfail.cases import DEFAULT_PROFILE, CaseSpec, Scenario
from gym_trainfail.diagnosis.fixtures import FixtureCheck, check_fixtures
from gym_trainfail.diagnosis.heldout import HeldoutCheck, check_heldout, load_heldout
from gym_trainfail.diagnosis.judges import Judge, RubricJudge
from gym_trainfail.errors import CaseDefinitionError
from gym_trainfail.files import apply_patch
from gym_trainfail.grading import Grader, Job, Receipt, ScenarioOutcome
from gym_trainfail.hashing import tree_digest, walk_tree
from gym_trainfail.promises import check_promises, markdown
from gym_trainfail.promises import to_json as promises_json
from gym_trainfail.revisions import ALWAYS_EXCLUDED
from gym_trainfail.tools import tool_specs

CANARY_RE = re.compile(r"TRAINFAIL-CANARY-[0-9a-f]{32}")
#: How the grading harness begins the reason of a scenario whose judge answered ``retry`` (on
#: its last attempt, once the retries were spent). A test grades such a forgery end to end.
RETRIED_OUT = "not judged (retry)"
#: The heading of the forced-settings section in ``grader/README.md``.
FORCED_HEADING = "Forced settings"


def forced_settings(case: CaseSpec) -> str:
    """The Markdown table under the grader README's forced-settings heading ('' when absent)."""
    path = case.grader_dir / "README.md"
    if not path.is_file():
        return ""
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    inside, table = False, list[str]()
    for line in lines:
        if line.startswith("#"):
            if table:
                break
            inside = FORCED_HEADING.lower() in line.lower()
            continue
        if inside and line.lstrip().startswith("|"):
            table.append(line.rstrip())
        elif table:
            break
    return "\n".join(table) if len(table) >= 3 else ""


@dataclass(frozen=True)
class VariantResult:
    """One graded variant of the workspace."""

    label: str
    kind: str  # "unmodified" | "reference" | "wrong" | "forgery"
    receipt: Receipt


#: A graded variant of the workspace: (label, kind, patch or None, the grader that grades it).
Variant = tuple[str, str, Path | None, Grader]


@dataclass
class Qualification:
    """The verdict of the gate, with every graded variant and the reasons for a refusal."""

    case: str
    #: The scale it was qualified at (``default``, or a profile the case declares).
    profile: str = DEFAULT_PROFILE
    variants: list[VariantResult] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    #: Why the diagnosis rubric is refused (its fixtures misjudged, held-out floors missed):
    #: reported beside the verdict gate, never part of it.
    diagnosis_problems: list[str] = field(default_factory=list)
    seconds: float = 0.0
    #: The grader's forced-settings table (``grader/README.md``), as Markdown.
    forced_settings: str = ""
    #: The promise table (``grader/promises.toml``) as a record keeps it, and as Markdown.
    promises: list[dict[str, Any]] = field(default_factory=list)
    promise_table: str = ""
    #: The diagnosis rubric's fixtures as the judge classified them (``None``: no rubric).
    rubric: FixtureCheck | None = None
    #: The held-out statements as the deterministic judge classified them (``None``: no set).
    heldout: HeldoutCheck | None = None

    @property
    def admitted(self) -> bool:
        """The verdict gate: scenarios, determinism, wrong repairs, forgeries, leaks, settings."""
        return not self.problems

    @property
    def rubric_admitted(self) -> bool:
        """The diagnosis rubric's own gate (fixtures and held-out floors)."""
        return not self.diagnosis_problems

    def to_json(self) -> dict[str, object]:
        return {
            "case": self.case,
            "profile": self.profile,
            "admitted": self.admitted,
            "problems": self.problems,
            "rubric_admitted": self.rubric_admitted,
            "diagnosis_problems": self.diagnosis_problems,
            "seconds": round(self.seconds, 1),
            "forced_settings": self.forced_settings,
            "promises": self.promises,
            "margins": [vars(m) for m in margins(self.variants)],
            "rubric": self.rubric.to_json() if self.rubric is not None else None,
            "heldout": self.heldout.to_json() if self.heldout is not None else None,
            "variants": [
                {
                    "label": v.label,
                    "kind": v.kind,
                    "tree": v.receipt.tree,
                    "status": v.receipt.status,
                    "seconds": round(v.receipt.duration_s, 1),
                    "scenarios": {
                        o.scenario: {
                            "status": o.status,
                            "reason": o.reason,
                            "metrics": o.metrics,
                            "timings": o.timings,
                            "duration_s": round(o.duration_s, 2),
                        }  # fmt: skip
                        for o in v.receipt.outcomes
                    },
                }
                for v in self.variants
            ],
        }


Progress = Callable[[str, str, ScenarioOutcome | None], None]


def qualify_diagnosis(case: CaseSpec, result: Qualification, judge: Judge | None = None) -> None:
    """The diagnosis part of the gate, no training run: the rubric's fixtures (judged by
    ``judge``, the rubric judge by default; the rubric judge must get every one right) and the
    held-out set (the rubric judge must reach its precision and recall floors)."""
    if case.rubric is None:
        return
    judge = judge or RubricJudge()
    result.rubric = check_fixtures(case.rubric, judge)
    if isinstance(judge, RubricJudge) and result.rubric.misjudged:
        result.diagnosis_problems.append(
            f"the diagnosis rubric misjudges its own fixtures: {'; '.join(result.rubric.misjudged)} "
            "(adjust the concept phrasings or wrong explanations in grader/diagnosis/rubric.toml)"
        )
    try:
        heldout = load_heldout(case.grader_dir, case.id)
    except CaseDefinitionError as exc:
        result.diagnosis_problems.append(f"held-out statements: {exc}")
        return
    if heldout is not None:
        result.heldout = check_heldout(heldout, case.rubric, RubricJudge())
        result.diagnosis_problems.extend(
            f"{problem} (improve the rubric's phrasings on your own development statements, never on the held-out "
            "ones; docs/case-authoring.md)"
            for problem in result.heldout.problems()
        )


def qualify(
    case: CaseSpec,
    *,
    sandbox: str = "auto",
    repeats: int = 2,
    wrong_repairs: bool = False,
    progress: Progress | None = None,
    judge: Judge | None = None,
    hints: Mapping[str, str] | None = None,
    parallel: int = 2,
) -> Qualification:
    """Run the admission gate on ``case`` (its rubric's fixtures judged by ``judge``, the
    deterministic rubric judge by default).

    ``hints`` (``wrong:NAME``/``forgery:NAME`` -> scenario, e.g. from the case's admission
    record) name the scenario each wrong repair or forgery failed last time: it is graded alone
    first, and only when it does not fail is the variant graded in groups, fail-fast. A hint
    orders work; it never stands in for a verdict. Up to ``parallel`` gradings run at once on the
    device pool's room (the unmodified and reference gradings on their scenarios not marked
    ``alone``, then the hinted variants); ``alone`` scenarios are graded by themselves
    (``parallel=1``: one at a time)."""
    started = time.monotonic()
    result = Qualification(case=case.id, profile=case.profile, forced_settings=forced_settings(case))
    result.problems.extend(static_problems(case, result))
    qualify_diagnosis(case, result, judge)
    if result.problems:
        # Nothing a grading run shows can admit a case its static checks refuse: say so in seconds.
        result.seconds = time.monotonic() - started
        return result
    single = Grader(case, sandbox=sandbox, cache=False, group_scenarios=False)
    grouped = Grader(case, sandbox=sandbox, cache=False)
    # (label, kind, patch, grader); a wrong repair needs one failing scenario, not its whole table
    variants: list[Variant] = [
        (f"unmodified#{i + 1}", "unmodified", None, grouped if i % 2 else single) for i in range(repeats)
    ]
    # The reference is graded the way episodes are (in scenario groups); single launches and
    # groups are compared on the unmodified workspace above.
    variants.append(("reference", "reference", case.reference_patch, grouped))
    if wrong_repairs:
        variants += [(f"wrong:{name}", "wrong", patch, grouped) for name, patch in case.wrong_repairs.items()]
        variants += [(f"forgery:{name}", "forgery", patch, grouped) for name, patch in case.forgeries.items()]

    def shown(variant: Variant) -> str:
        return variant[0] if variant[3] is single else f"{variant[0]} (grouped)"

    def grade(variant: Variant, *, fallback: bool = True, hinted: bool = True) -> VariantResult | None:
        """The variant's result (``None`` when its hint did not fail it and ``fallback`` is off;
        ``hinted=False``: its hint was tried already)."""
        label, kind, patch, grader = variant
        hint = _hinted(case, label, hints) if hinted else None
        receipt = None
        if kind in ("wrong", "forgery") and hint is not None:
            receipt = _grade_variant(single, case, patch, shown(variant), progress, scenarios=[hint])
            receipt = receipt if rejected(kind, receipt) else None
        if receipt is None:
            if not fallback:
                return None
            receipt = _grade_variant(
                grader, case, patch, shown(variant), progress, stop_at_first_fail=kind in ("wrong", "forgery")
            )
        return VariantResult(shown(variant), kind, receipt)

    def grade_part(variant: Variant, scenarios: tuple[Scenario, ...]) -> Receipt:
        return _grade_variant(variant[3], case, variant[2], shown(variant), progress, scenarios=scenarios)

    def grade_hinted(chosen: list[Variant]) -> dict[str, VariantResult | None]:
        """Each variant on the scenario its hint names, every run in a sandbox of its own
        (``parallel`` at a time) and one judge for all (``Grader.grade_many``): its result when
        that scenario rejects it, else ``None``."""
        return _grade_hinted(single, case, [(v, _hinted(case, v[0], hints)) for v in chosen], shown, progress, parallel)

    # Everything that may share the machine is graded ``parallel`` at a time (each grading in
    # sandboxes of its own, on leased devices: one's start-up, judge and rank waits overlap
    # another's run; the device pool makes a wide launch wait for room): the unmodified and
    # reference gradings on every scenario not marked ``alone``, then the hinted wrong repairs and
    # forgeries (one scenario each). Oracles are computed once whoever asks first (a lock file).
    # Then, by themselves: the ``alone`` scenarios of those gradings (their judges read the
    # host-timed duration of the run, which a neighbour would stretch), and every variant whose
    # hint names an ``alone`` scenario, names none, or no longer fails it.
    baseline = [v for v in variants if v[1] in ("unmodified", "reference")]
    alone = tuple(s for s in case.scenarios if s.alone)
    shared = tuple(s for s in case.scenarios if not s.alone)
    together = [v for v in variants if _concurrent(case, v[0], hints)]
    jobs: dict[str, Callable[[], Receipt | dict[str, VariantResult | None]]] = {
        **{v[0]: functools.partial(grade_part, v, shared) for v in baseline if shared},
        **({HINTED: functools.partial(grade_hinted, together)} if together else {}),
    }
    workers = max(1, min(parallel, len(jobs), grouped.pool.size))
    if workers > 1:
        with ThreadPoolExecutor(workers, thread_name_prefix="qualify") as executor:
            done = dict(zip(jobs, executor.map(lambda job: job(), jobs.values()), strict=True))
    else:
        done = {label: job() for label, job in jobs.items()}
    hinted_results = done.pop(HINTED, {})
    graded: dict[str, VariantResult | None] = dict(hinted_results) if isinstance(hinted_results, dict) else {}
    for variant in baseline:
        parts = [r] if isinstance(r := done.get(variant[0]), Receipt) else []
        if alone:
            parts.append(grade_part(variant, alone))
        graded[variant[0]] = VariantResult(shown(variant), variant[1], _joined(case, parts))
    for variant in variants:
        result_of = graded.get(variant[0]) or grade(variant, hinted=variant[0] not in graded)
        assert result_of is not None  # with the fallback, every variant is graded
        result.variants.append(result_of)
    result.problems.extend(_judge(case, result.variants))
    if grouped.pool.kind == "gpu":  # GPU runs must reproduce their numbers, not only their verdicts
        result.problems.extend(metric_drift([v for v in result.variants if v.kind == "unmodified"]))
    result.seconds = time.monotonic() - started
    return result


def static_problems(case: CaseSpec, result: Qualification) -> list[str]:
    """The checks that need no grading run (and fill ``result``'s tables): no canary where the
    agent or the run phase can look, a forced-settings table, and a promise table whose every
    class is covered by scenarios (``grader/promises.toml``, :mod:`gym_trainfail.promises`)."""
    problems = leak_scan(case)
    if not result.forced_settings:
        problems.append(
            f"the grader lists no forced settings: add a '{FORCED_HEADING}' section with a table to grader/README.md "
            "(every setting the grader forces away from the shipped config or README, and the scenario that covers "
            "the shipped value or why the objective cannot depend on it)"
        )
    promises, promise_problems = check_promises(case)
    result.promises = promises_json(promises)
    result.promise_table = markdown(promises, case) if promises else ""
    problems.extend(f"promise table: {problem}" for problem in promise_problems)
    return problems


#: The key of the one grading job that holds every hinted variant.
HINTED = "hinted variants"


def _grade_hinted(
    grader: Grader,
    case: CaseSpec,
    chosen: list[tuple[Variant, Scenario | None]],
    shown: Callable[[Variant], str],
    progress: Progress | None,
    parallel: int,
) -> dict[str, VariantResult | None]:
    """``chosen`` (variant, its hinted scenario) graded on that scenario alone, one judge for all."""
    results: dict[str, VariantResult | None] = {}
    with tempfile.TemporaryDirectory(prefix="trainfail-qualify-") as scratch:
        jobs: list[Job] = []
        trees: dict[str, str] = {}
        for variant, scenario in chosen:
            label, _, patch, _ = variant
            if scenario is None:
                results[label] = None
                continue
            workspace = Path(scratch) / f"v{len(jobs)}" / "workspace"
            shutil.copytree(case.workspace_dir, workspace, symlinks=True)
            if patch is not None:
                apply_patch(workspace, patch)
            trees[label] = tree_digest(workspace, exclude=(*ALWAYS_EXCLUDED, *case.workspace_exclude))
            jobs.append(Job(label, workspace, scenario))
            if progress:
                progress(shown(variant), scenario.name, None)
        started = time.time()
        outcomes = grader.grade_many(jobs, parallel=parallel)
    by_label = {v[0]: v for v, _ in chosen}
    for label, found in outcomes.items():
        variant = by_label[label]
        if progress:
            progress(shown(variant), found.scenario, found)
        receipt = Receipt(case.id, trees[label], grader.grader_hash, (found,), created=started,
                          duration_s=found.duration_s)  # fmt: skip
        results[label] = VariantResult(shown(variant), variant[1], receipt) if rejected(variant[1], receipt) else None
    return results


def _joined(case: CaseSpec, parts: list[Receipt]) -> Receipt:
    """One receipt for a revision graded in parts (each on some of the case's scenarios), its
    outcomes in the case's scenario order."""
    by_name = {o.scenario: o for part in parts for o in part.outcomes}
    return replace(
        parts[0],
        outcomes=tuple(by_name[s.name] for s in case.scenarios if s.name in by_name),
        created=min(part.created for part in parts),
        duration_s=sum(part.duration_s for part in parts),
        partial=any(part.partial for part in parts),
    )


def _hinted(case: CaseSpec, label: str, hints: Mapping[str, str] | None) -> Scenario | None:
    """The scenario the hint for variant ``label`` names, if it names one of the case's."""
    hint = (hints or {}).get(label)
    return next((s for s in case.scenarios if s.name == hint), None)


def _concurrent(case: CaseSpec, label: str, hints: Mapping[str, str] | None) -> bool:
    """Whether variant ``label`` is a wrong repair or forgery whose hint names a scenario that is
    not ``alone`` (it may then be graded beside another)."""
    scenario = _hinted(case, label, hints)
    return label.startswith(("wrong:", "forgery:")) and scenario is not None and not scenario.alone


def _grade_variant(
    grader: Grader,
    case: CaseSpec,
    patch: Path | None,
    label: str,
    progress: Progress | None,
    *,
    stop_at_first_fail: bool = False,
    scenarios: Sequence[Scenario] | None = None,
) -> Receipt:
    with tempfile.TemporaryDirectory(prefix="trainfail-qualify-") as scratch:
        workspace = Path(scratch) / "workspace"
        shutil.copytree(case.workspace_dir, workspace, symlinks=True)
        if patch is not None:
            apply_patch(workspace, patch)
        hook = (lambda name, outcome: progress(label, name, outcome)) if progress else None
        return grader.grade_dir(workspace, scenarios=scenarios, progress=hook, stop_at_first_fail=stop_at_first_fail)


def retried_out(status: str, reason: str) -> bool:
    """Whether a scenario graded ``status`` for ``reason`` is unknown because its judge answered
    ``retry`` on every attempt (read from an outcome, or from a qualification's JSON)."""
    return status == "error" and reason.startswith(RETRIED_OUT)


def rejected(kind: str, receipt: Receipt) -> bool:
    """Whether a wrong repair (``kind`` ``wrong``) or forgery is rejected by ``receipt``: it
    fails a scenario, or (a forgery) every scenario it did not pass is unknown by retries."""
    if receipt.status == "fail":
        return True
    unpassed = [o for o in receipt.outcomes if o.status != "pass"]
    return kind == "forgery" and bool(unpassed) and all(retried_out(o.status, o.reason) for o in unpassed)


def _judge(case: CaseSpec, variants: list[VariantResult]) -> list[str]:
    problems = []
    expected = {s.name: ("pass" if s.kind == "healthy" else "fail") for s in case.scenarios}
    unmodified = [v for v in variants if v.kind == "unmodified"]
    for variant in variants:
        for outcome in variant.receipt.outcomes:
            unknown = variant.kind == "forgery" and retried_out(outcome.status, outcome.reason)
            if outcome.status == "error" and not unknown:
                problems.append(f"{variant.label}/{outcome.scenario}: not judged: {outcome.reason}")
    for variant in unmodified:
        for outcome in variant.receipt.outcomes:
            want = expected[outcome.scenario]
            if outcome.status in ("pass", "fail") and outcome.status != want:
                problems.append(
                    f"{variant.label}/{outcome.scenario} ({outcome.kind}): expected {want}, got {outcome.status}"
                    + (f" — {outcome.reason}" if outcome.reason else "")
                )
    patterns = {tuple((o.scenario, o.status) for o in v.receipt.outcomes) for v in unmodified}
    if len(patterns) > 1:
        problems.append(
            "the unmodified workspace gave different verdicts on repeated runs (not deterministic, "
            "or scenario groups judge differently from one scenario per run)"
        )
    for variant in variants:
        if variant.kind == "reference" and not variant.receipt.passed:
            failing = [o.scenario for o in variant.receipt.outcomes if o.status != "pass"]
            problems.append(f"the reference repair does not pass: {failing}")
        if variant.kind in ("wrong", "forgery") and variant.receipt.status == "pass":
            problems.append(f"{variant.label} passes every scenario; the grader must reject it")
    return problems


#: How far a measured quantity may move between repeated GPU runs (relative to its size): with
#: the deterministic settings every GPU run phase gets, repeats should agree bit for bit.
GPU_METRIC_RTOL = 1e-6
#: Below this magnitude, values are compared absolutely (against the same bound).
_METRIC_FLOOR = 1e-12


def numeric_metrics(metrics: Any, prefix: str = "") -> dict[str, float]:
    """Every number in an outcome's metrics, by its dotted path (booleans and strings left out)."""
    found: dict[str, float] = {}
    if isinstance(metrics, dict):
        for key, value in metrics.items():
            found.update(numeric_metrics(value, f"{prefix}.{key}" if prefix else str(key)))
    elif isinstance(metrics, (list, tuple)):
        for i, value in enumerate(metrics):
            found.update(numeric_metrics(value, f"{prefix}[{i}]"))
    elif isinstance(metrics, (int, float)) and not isinstance(metrics, bool):
        found[prefix] = float(metrics)
    return found


@dataclass(frozen=True)
class Margin:
    """One measured quantity across a qualification: its worst value where the pipeline is right
    (the reference everywhere, the unmodified workspace on healthy scenarios) and its best value
    where it is not (the unmodified workspace on failure scenarios), so a tolerance can be set,
    and read, between the two."""

    metric: str
    healthy_worst: float | None
    failing_best: float | None


def margins(variants: Sequence[VariantResult]) -> list[Margin]:
    """Every top-level number the judge reported, as a :class:`Margin` (largest where right,
    smallest where wrong: for error-like figures, a separating tolerance lies in between)."""
    right: dict[str, list[float]] = {}
    wrong: dict[str, list[float]] = {}
    for variant in variants:
        for outcome in variant.receipt.outcomes:
            if variant.kind == "reference" or (variant.kind == "unmodified" and outcome.kind == "healthy"):
                bucket = right
            elif variant.kind == "unmodified":
                bucket = wrong
            else:
                continue
            for key, value in outcome.metrics.items():
                if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
                    bucket.setdefault(key, []).append(float(value))
    return [
        Margin(key, max(right[key]) if key in right else None, min(wrong[key]) if key in wrong else None)
        for key in sorted(right.keys() | wrong.keys())
    ]


def metric_drift(repeats: list[VariantResult], rtol: float = GPU_METRIC_RTOL) -> list[str]:
    """Problems where repeated runs of one variant measured different quantities (beyond ``rtol``)
    or measured different sets of them, scenario by scenario."""
    problems: list[str] = []
    if len(repeats) < 2:
        return problems
    first = {o.scenario: numeric_metrics(o.metrics) for o in repeats[0].receipt.outcomes}
    for other in repeats[1:]:
        for outcome in other.receipt.outcomes:
            base = first.get(outcome.scenario)
            if base is None:
                continue
            values = numeric_metrics(outcome.metrics)
            if set(values) != set(base):
                problems.append(
                    f"{other.label}/{outcome.scenario}: measured quantities differ from {repeats[0].label} "
                    f"({sorted(set(values) ^ set(base))})"
                )
                continue
            for key, value in values.items():
                was = base[key]
                if math.isnan(was) and math.isnan(value):
                    continue
                scale = max(abs(was), abs(value), _METRIC_FLOOR)
                if not abs(value - was) <= rtol * scale:
                    problems.append(
                        f"{other.label}/{outcome.scenario}: {key} = {value!r} but {was!r} in {repeats[0].label} "
                        f"(relative tolerance {rtol:g}); GPU runs are not reproducible"
                    )
    return problems


def leak_scan(case: CaseSpec) -> list[str]:
    """Problems if the grader has no canary or any canary shows up where the agent can look."""
    canaries: set[str] = set()
    for _, path, _ in walk_tree(case.grader_dir):
        if path.is_file() and not path.is_symlink():
            canaries.update(CANARY_RE.findall(path.read_bytes().decode("utf-8", "replace")))
    if not canaries:
        return [
            "the grader carries no canary: add a line with TRAINFAIL-CANARY-<32 hex digits> to a grader file "
            "(`trainfail case new` plants one) so leaks can be detected"
        ]
    problems = []
    visible = {
        "prompt": case.prompt,
        "tool specs": json.dumps(tool_specs("/workspace", "devices", 0)),
    }
    for folder, label in ((case.workspace_dir, "workspace"), (case.kit_dir, f"grader/{case.kit} (the run kit)")):
        for rel, path, _ in walk_tree(folder):
            if path.is_file() and not path.is_symlink():
                visible[f"{label}/{rel}"] = path.read_bytes().decode("utf-8", "replace")
    for where, content in visible.items():
        for canary in canaries:
            if canary in content:
                problems.append(f"grader canary found in {where}: private grader content leaked")
    return problems
