"""The promise table: every README promise covered by scenarios away from its shipped value."""

from __future__ import annotations

from pathlib import Path

import pytest

from gym_trainfail.cases import load_case, load_scenarios
from gym_trainfail.promises import (
    PromiseTableError,
    check_promises,
    load_promises,
    markdown,
    promise_problems,
    promises_path,
)
from gym_trainfail.qualify import qualify
from gym_trainfail.registry import default_registry
from gym_trainfail.scaffold import scaffold_case


@pytest.fixture
def scaffolded(tmp_path: Path) -> Path:
    return scaffold_case("PromiseProbe", tmp_path).root


def _rewrite(root: Path, old: str, new: str) -> None:
    path = root / "grader" / "promises.toml"
    text = path.read_text()
    assert old in text, f"{old!r} not in the scaffold's promise table"
    path.write_text(text.replace(old, new))


def test_the_scaffold_covers_every_class_and_renders(scaffolded: Path) -> None:
    case = load_case(scaffolded)
    promises, problems = check_promises(case)
    assert problems == []
    assert [p.name for p in promises] == ["ranks"]
    table = markdown(promises, case)
    assert "| `ranks` |" in table and "*(shipped)*" in table and "`equal-shards`" in table


def test_an_uncovered_class_is_a_problem(scaffolded: Path) -> None:
    with promises_path(load_case(scaffolded)).open("a") as handle:
        handle.write('\n[[promise.class]]\nname = "four ranks"\nscenarios = []\n')
    problems = check_promises(load_case(scaffolded))[1]
    assert problems == [
        "promise 'ranks', class 'four ranks': uncovered; add a scenario in this class (or narrow the README)"
    ]


def test_a_promise_covered_only_at_its_shipped_value_is_a_problem(scaffolded: Path) -> None:
    _rewrite(scaffolded, 'name = "one rank"\n', 'name = "one rank"\nshipped = true\n')
    problems = check_promises(load_case(scaffolded))[1]
    assert "more than one class is marked shipped" in problems[0]
    _rewrite(scaffolded, 'name = "one rank"\nshipped = true\n', 'name = "one rank"\n')
    _rewrite(scaffolded, 'scenarios = ["equal-shards"]', "scenarios = []")
    problems = check_promises(load_case(scaffolded))[1]
    assert any("covered only at its shipped value" in p for p in problems), problems


def test_readme_words_must_be_in_the_workspace(scaffolded: Path) -> None:
    _rewrite(scaffolded, "the mean of every sample on every rank", "the median of every sample")
    problems = check_promises(load_case(scaffolded))[1]
    assert len(problems) == 1 and "are not in the workspace" in problems[0]


def test_readme_words_are_matched_ignoring_markup_and_line_breaks(scaffolded: Path) -> None:
    readme = scaffolded / "workspace" / "README.md"
    readme.write_text(readme.read_text().replace("every sample on every", "every *sample*\non `every`"))
    assert check_promises(load_case(scaffolded))[1] == []


def test_a_scenario_outside_its_class_is_a_problem(scaffolded: Path) -> None:
    _rewrite(scaffolded, "where = { world_size = 1 }", "where = { world_size = 4 }")
    problems = check_promises(load_case(scaffolded))[1]
    assert problems == [
        "promise 'ranks', class 'one rank': scenario 'equal-shards' has world_size = 1, the class needs 4"
    ]
    _rewrite(scaffolded, "where = { world_size = 4 }", 'where = { "data.world_size" = 1 }')
    assert "has data.world_size = not set" in check_promises(load_case(scaffolded))[1][0]


def test_unknown_scenarios_are_a_problem(scaffolded: Path) -> None:
    _rewrite(scaffolded, 'scenarios = ["equal-shards"]', 'scenarios = ["equal-shard"]')
    problems = check_promises(load_case(scaffolded))[1]
    assert problems[0] == "promise 'ranks', class 'one rank': names scenarios the case does not have: ['equal-shard']"
    assert "covered only at its shipped value" in problems[1], "an unknown scenario covers nothing"


def test_a_gpu_promise_needs_a_cuda_profile(scaffolded: Path) -> None:
    _rewrite(scaffolded, 'shipped = "2 ranks', 'gpu = true\nshipped = "2 ranks')
    problems = check_promises(load_case(scaffolded))[1]
    assert any("GPU-only but the case declares no cuda profile" in p for p in problems), problems


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ('name = "ranks"', 'name = "Ranks"', "expected lowercase letters"),
        ('dimension = "', 'dimensions = "', "unknown key 'dimensions'; did you mean 'dimension'?"),
        ('[[promise.class]]\nname = "one rank"', '[[promise.class]]\nname = "one rank"\nscenario = []', "'scenario'"),
        ('scenarios = ["two-ranks"]', 'scenarios = "two-ranks"', "expected a list of scenario names"),
        ("shipped = true", 'shipped = "yes"', "shipped: expected true or false"),
        ("where = { world_size = 1 }", "where = {}", "where: expected a table of scenario params"),
        ('readme = "the mean of every sample on every rank"', 'readme = " "', "readme: expected a non-empty string"),
    ],
)
def test_a_malformed_table_is_refused_with_the_key_named(scaffolded: Path, old: str, new: str, message: str) -> None:
    _rewrite(scaffolded, old, new)
    with pytest.raises(PromiseTableError, match="promises.toml") as caught:
        load_promises(load_case(scaffolded))
    assert message in str(caught.value)


def test_a_missing_table_says_what_to_write(scaffolded: Path) -> None:
    promises_path(load_case(scaffolded)).unlink()
    promises, problems = check_promises(load_case(scaffolded))
    assert promises == () and "missing; write the promise table" in problems[0]


def test_qualify_refuses_an_uncovered_class_before_any_grading(scaffolded: Path) -> None:
    with promises_path(load_case(scaffolded)).open("a") as handle:
        handle.write('\n[[promise.class]]\nname = "four ranks"\nscenarios = []\n')
    # No runtime or sandbox is needed: the static gate answers before anything is graded.
    result = qualify(load_case(scaffolded), sandbox="process", repeats=2)
    assert not result.admitted and result.variants == []
    assert result.problems == [
        "promise table: promise 'ranks', class 'four ranks': uncovered; add a scenario in this class "
        "(or narrow the README)"
    ]
    assert result.to_json()["promises"][0]["classes"][-1] == {"name": "four ranks", "shipped": False, "scenarios": []}


@pytest.mark.parametrize("case_id", sorted(default_registry().ids()))
def test_every_registered_case_covers_its_promises(case_id: str) -> None:
    case = default_registry().get(case_id)
    promises, problems = check_promises(case)
    assert problems == [], "\n".join(problems)
    assert promise_problems(case, promises) == []
    scenarios = {s.name for s in load_scenarios(case.grader_dir / "scenarios.toml")}
    assert all(set(c.scenarios) <= scenarios for p in promises for c in p.classes)
