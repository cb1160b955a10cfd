"""Parsing and validation of tool calls."""

from __future__ import annotations

import json

import pytest

from gym_trainfail.errors import ToolError
from gym_trainfail.tools import parse_action, tool_specs

SPECS = tool_specs("/workspace", "4 CPU slots", 1000)


def test_specs_are_openai_function_tools() -> None:
    names = [s["function"]["name"] for s in SPECS]
    assert names == [
        "shell",
        "read_file",
        "write_file",
        "edit_file",
        "list_files",
        "run_job",
        "submit",
        "finish",
    ]
    for spec in SPECS:
        assert spec["type"] == "function"
        params = spec["function"]["parameters"]
        assert params["type"] == "object" and params["additionalProperties"] is False
        assert set(params["required"]) <= set(params["properties"])


def test_accepts_json_text_dict_and_openai_shape() -> None:
    as_text = parse_action('{"tool": "shell", "arguments": {"command": "ls"}}', SPECS)
    as_dict = parse_action({"tool": "shell", "arguments": {"command": "ls"}}, SPECS)
    openai = parse_action({"name": "shell", "arguments": json.dumps({"command": "ls"})}, SPECS)
    assert as_text == as_dict == openai
    assert parse_action({"tool": "submit"}, SPECS).arguments == {}


@pytest.mark.parametrize(
    ("action", "message"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "the action is a list"),
        ('"shell"', "the action is a str"),
        ({"arguments": {}}, "no tool name"),
        (
            {"tool": "rm_rf", "arguments": {}},
            "unknown tool 'rm_rf'; the tools are: shell, read_file",
        ),
        ({"tool": "shell", "arguments": {}}, "shell: missing required argument(s) ['command']"),
        (
            {"tool": "shell", "arguments": {"command": "ls", "sudo": True}},
            "unexpected argument(s) ['sudo']",
        ),
        (
            {"tool": "shell", "arguments": {"command": 3}},
            "argument 'command' must be string, got int",
        ),
        (
            {"tool": "run_job", "arguments": {"command": "x", "devices": True}},
            "'devices' must be integer, got bool",
        ),
        (
            {"tool": "run_job", "arguments": {"command": "x", "devices": 0}},
            "'devices' must be at least 1",
        ),
        (
            {"tool": "shell", "arguments": {"command": "x", "timeout_s": 10**9}},
            "must be at most 1800",
        ),
        ({"tool": "shell", "arguments": "{bad"}, "arguments of 'shell' are not valid JSON"),
        ({"tool": "shell", "arguments": [1]}, "arguments of 'shell' must be an object"),
        ({"tool": "shell", "arguments": {"command": "x"}, "extra": 1}, "unexpected keys ['extra']"),
    ],
)
def test_malformed_actions_are_tool_errors(action: object, message: str) -> None:
    with pytest.raises(ToolError) as caught:
        parse_action(action, SPECS)
    assert message in str(caught.value)
