"""A judge's answer the judge client cannot use is a reason, never a crash: tool-call arguments
that are not JSON, or nested past what the parser follows (a hostile judge endpoint)."""

import jsonschema

from scoreboard.judges.client import _extract
from scoreboard.subjects.values import Output

SCHEMA = {"type": "object", "required": ["verdict"], "properties": {"verdict": {"type": "boolean"}}}


def _answer(args):
    return _extract(Output(text=None, tool_calls=[{"name": "judge", "args": args}]),
                    jsonschema.Draft202012Validator(SCHEMA))


def test_tool_call_arguments_that_are_json_are_used():
    assert _answer('{"verdict": true}') == ({"verdict": True}, None)
    assert _answer({"verdict": False}) == ({"verdict": False}, None)


def test_tool_call_arguments_that_are_not_json_are_a_reason():
    value, why = _answer('{"verdict": tru')
    assert value is None and "the tool call's arguments are not JSON" in why
    deep = "{" + '"a":' * 1 + "[" * 100_000 + "]" * 100_000 + "}"
    value, why = _answer(deep)
    assert value is None and "nested too deeply" in why
