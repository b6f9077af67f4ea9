"""tool-calls: argument checks and validation against the tools the variant offered."""

from scoreboard.graders.registry import build_grader

TOOLS = [{"type": "function", "function": {"name": "search", "parameters": {
    "type": "object", "required": ["q"], "additionalProperties": False,
    "properties": {"q": {"type": "string"}, "limit": {"type": "integer", "maximum": 10}}}}}]


def test_argument_checks(ctx):
    g = build_grader({"tool-calls": {"required": ["search"], "args": {"search": {
        "q": {"regex": "weather"}, "limit": 5}}}})
    ok = ctx(tool_calls=[{"name": "search", "args": {"q": "weather in Paris", "limit": 5}}])
    assert g.grade(ok).passed is True
    wrong = g.grade(ctx(tool_calls=[{"name": "search", "args": {"q": "news", "limit": 5}}]))
    assert wrong.passed is False and "does not match" in wrong.reason
    # OpenAI-style arguments as a JSON string; one of several calls is enough
    calls = [{"function": {"name": "search", "arguments": '{"q": "x"}'}},
             {"function": {"name": "search", "arguments": '{"q": "weather", "limit": 5}'}}]
    assert g.grade(ctx(tool_calls=calls)).passed is True


def test_exact_mode_and_schema_check(ctx):
    g = build_grader({"tool-calls": {"args": {"search": {"q": {"schema": {"type": "string", "minLength": 3}}}},
                                     "args_mode": "exact"}})
    assert g.grade(ctx(tool_calls=[{"name": "search", "args": {"q": "abc"}}])).passed is True
    extra = g.grade(ctx(tool_calls=[{"name": "search", "args": {"q": "abc", "limit": 1}}]))
    assert extra.passed is False and "limit not expected" in extra.reason
    assert g.grade(ctx(tool_calls=[{"name": "search", "args": {"q": "ab"}}])).passed is False


def test_validate_against_offered_tools(ctx):
    g = build_grader({"tool-calls": {"validate": True}})
    c = ctx(tool_calls=[{"name": "search", "args": {"q": "x", "limit": 3}}])
    c.tools = TOOLS
    assert g.grade(c).passed is True
    bad = ctx(tool_calls=[{"name": "search", "args": {"limit": 30}}, {"name": "delete", "args": {}}])
    bad.tools = TOOLS
    grade = g.grade(bad)
    assert grade.passed is False and "'q' is a required property" in grade.reason and "delete is not a tool" in grade.reason
    none = ctx(tool_calls=[])
    assert g.grade(none).passed is False  # no tool definitions offered: nothing to validate against
