"""Validating user input with pydantic: strict models and one-line errors naming the field."""

from __future__ import annotations

import re
import unicodedata
from typing import Any, get_args

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from .errors import ConfigError, ConfigErrors, closest


def first_repeat(keys: Any) -> tuple[int, int] | None:
    """(the index of a key's first place, the index it comes again at) for the first key that
    comes twice, else None: one pass, where a scan of the keys before each (`k in keys[:i]`)
    took 2 s over 20,000 and grows with the square."""
    first: dict = {}
    for i, key in enumerate(keys or ()):
        j = first.setdefault(key, i)
        if j != i:
            return j, i
    return None


def each_once(values: Any) -> Any:
    """An `expand` list as a validator checks it: a name given twice would expand twice, making
    every case again under a doubled id."""
    twice = first_repeat(values)
    if twice is not None:
        raise ValueError(f"names {values[twice[1]]!r} twice")
    return values


def one_line_id(value: str) -> str:
    """A case's or task's id as a validator checks it: not blank, and no control character (a
    newline or an escape would forge report lines and terminal output)."""
    if not value.strip():
        raise ValueError("must be a nonempty string")
    bad = next((c for c in value if ord(c) < 0x20 or 0x7f <= ord(c) <= 0x9f), None)
    if bad is not None:
        raise ValueError(f"must not hold control characters (found U+{ord(bad):04X})")
    return value


#: invisible code points outside the format category (Cf): the combining grapheme joiner, the
#: Hangul fillers and the variation selectors
_INVISIBLE = frozenset([0x034F, 0x115F, 0x1160, 0x3164, 0xFFA0, *range(0xFE00, 0xFE10)])


def _invisible(char: str) -> bool:
    return ord(char) in _INVISIBLE or unicodedata.category(char) == "Cf"


def lookalike(value: str) -> str:
    """The form two ids share when no reader can tell them apart: NFC ("é" as one character or
    as "e" plus a combining accent) without invisible characters (zero-width spaces and joiners,
    bidi marks, variation selectors). Two ids of one form are one id to whoever reads a report."""
    if value.isascii():
        return value
    return unicodedata.normalize("NFC", "".join(c for c in value if not _invisible(c)))


def twin_problem(value: str, other: str, where: str = "") -> str:
    """Why `value` repeats `other` (an id already given; `where`: " (line 3)"): they differ only
    in what nobody sees."""
    hidden = sorted({f"U+{ord(c):04X}" for c in value + other if _invisible(c)})
    why = (f"invisible characters ({', '.join(hidden)})" if hidden
           else "how their accents are encoded (Unicode NFC and NFD)")
    return f"looks the same as {ascii(other)}{where}, differing only in {why}"


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False, defer_build=True)


class StrictSettings(Strict):
    """Settings a person writes (a suite file and its blocks): each value of its own type, never
    coerced: `runs: "3"`, `cache: 1` or `require_live: "no"` are refused, not read as 3, true, false.
    One exception: a number in exponent form where a number (not a whole one) is wanted, `1e-3`,
    which YAML 1.2 reads as a number and PyYAML (YAML 1.1, no dot, no sign) hands over as text."""

    # no NaN or Infinity: a file's are refused as it is parsed, a flag's (`--max-cost inf`) here
    model_config = ConfigDict(extra="forbid", frozen=False, strict=True, allow_inf_nan=False, defer_build=True)

    @model_validator(mode="before")
    @classmethod
    def _yaml_exponents(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        fixed = {key: float(value) for key, value in data.items()
                 if isinstance(value, str) and key in cls.model_fields and _wants_float(cls.model_fields[key].annotation)
                 and _EXPONENT.fullmatch(value.strip())}
        return {**data, **fixed} if fixed else data


def _wants_float(annotation: Any) -> bool:
    """Whether a field's type takes a float (float, float | None, a union holding float; not int)."""
    if annotation is float:
        return True
    return any(_wants_float(arg) for arg in get_args(annotation))


# pydantic names each branch of a union in the error location ("str", "list[Message]",
# "dict[any,any]"); those tags mean nothing to a user writing a case or suite file. A part is
# taken as a tag only where errors of two or more branches diverge, so a user's own key (a
# variant named "str") is never dropped.
_UNION_TAG = re.compile(r"^(?:str|int|float|bool|bytes|none|[A-Za-z_]\w*\[.*\])$")


def _model_names() -> set[str]:
    """Names of our pydantic models: pydantic tags a union branch that is a model by its name."""
    names, stack = set(), [Strict]
    while stack:
        cls = stack.pop()
        names.add(cls.__name__)
        stack.extend(cls.__subclasses__())
    return names


def _union_points(errors: list[dict]) -> dict[tuple, set]:
    seen: dict[tuple, set] = {}
    models = _model_names()
    for e in errors:
        loc = tuple(e.get("loc", ()))
        for i, part in enumerate(loc):
            if isinstance(part, str) and (_UNION_TAG.match(part) or part in models):
                seen.setdefault(loc[:i], set()).add(part)
    return {prefix: parts for prefix, parts in seen.items() if len(parts) > 1}


def _clean_loc(loc: tuple, points: dict[tuple, set]) -> tuple:
    return tuple(p for i, p in enumerate(loc) if p not in points.get(loc[:i], ()))


def _pick_error(errors: list[dict], points: dict[tuple, set]) -> tuple[dict, list[dict]]:
    """The error to report, and the sibling union branches that failed at the same place.

    A union reports one error per branch; the useful one is the branch the value got
    furthest into (a list of messages with a bad `role`), not "should be a valid string"."""
    first = errors[0]
    loc = tuple(first.get("loc", ()))
    tag_at = next((i for i, p in enumerate(loc) if p in points.get(loc[:i], ())), None)
    if tag_at is None:
        return first, [first]
    prefix = loc[:tag_at]
    branches = [e for e in errors if tuple(e.get("loc", ()))[:tag_at] == prefix
                and len(e.get("loc", ())) > tag_at and e["loc"][tag_at] in points[prefix]]
    best = max(branches, key=lambda e: len(_clean_loc(tuple(e["loc"]), points)))
    best_loc = _clean_loc(tuple(best["loc"]), points)

    def at_branch(e: dict) -> bool:  # failed on the branch's own type, not inside it
        raw = tuple(e["loc"])
        return _clean_loc(raw, points) == best_loc and raw[-1] in points.get(raw[:-1], ())

    if not at_branch(best):
        return best, [best]
    # The value matched no branch at all: say what each branch wanted.
    return best, [e for e in branches if at_branch(e)]


def first_error(exc: ValidationError) -> tuple[str, str]:
    """(field path, message) of a pydantic error, phrased for one line."""
    loc, msg = first_error_parts(exc)
    return ".".join(str(p) for p in loc), msg


def error_list(exc: ValidationError) -> list[tuple[tuple, str, Any]]:
    """(location, message, value) of every error, union branch tags left out and the branches
    of one union at one place merged into one entry."""
    errors = exc.errors()
    points = _union_points(errors)
    out: dict[tuple, tuple[list[str], Any]] = {}
    for err in errors:
        loc = _clean_loc(tuple(err.get("loc", ())), points)
        msg = err.get("msg", "invalid value")
        msgs, _ = out.setdefault(loc, ([], err.get("input")))
        if msg not in msgs:
            msgs.append(msg)
    return [(loc, " or ".join(msgs), value) for loc, (msgs, value) in out.items()]


def first_error_parts(exc: ValidationError, model: type[BaseModel] | None = None) -> tuple[tuple, str]:
    """(location as keys and indexes, message) of a pydantic error, union branch tags left out,
    phrased in the project's words ("must be at least 1 (got 0)", not pydantic's "Input should
    be ..."). With `model`, an unknown field gets a "did you mean" from the fields allowed there."""
    errors = exc.errors()
    points = _union_points(errors)
    err, siblings = _pick_error(errors, points)
    loc = _clean_loc(tuple(err.get("loc", ())), points)
    return loc, _message(err, siblings, loc, model)


def _message(err: dict, siblings: list[dict], loc: tuple, model: type[BaseModel] | None) -> str:
    kind = err.get("type", "")
    if kind == "extra_forbidden":
        hint = did_you_mean(loc[-1], fields_at(model, loc[:-1])) if model is not None and loc else ""
        if all(isinstance(part, str) for part in loc):  # a flag's name a suite spells otherwise, a key misplaced
            hint = getattr(model, "UNKNOWN_HINTS", {}).get(".".join(loc), hint)
        return "unknown field" + hint
    if kind == "missing":
        return "required field is missing"
    wanted: list[str] = []
    for e in siblings if len(siblings) > 1 else [err]:
        text = phrase(e)
        if text not in wanted:
            wanted.append(text)
    if len(wanted) > 1:  # "must be a list or must be text" -> "must be a list or text"
        rest = [w.removeprefix("must be ") for w in wanted[1:]]
        msg = " or ".join([wanted[0], *rest])
    else:
        msg = wanted[0]
    if kind not in _NO_VALUE_SHOWN:
        got = err.get("input")
        got_s = repr(got) if got is not None else "null: the key has no value"  # YAML's `basic:`, not Python's None
        if len(got_s) > 60:
            got_s = got_s[:57] + "..."
        msg = f"{msg} (got {got_s}{_exponent_hint(got) if kind == 'float_type' else ''}){_share_hint(err)}"
        value_hint = getattr(model, "value_hint", None)  # another tool's spelling of a value, said
        if value_hint is not None:
            msg += value_hint(loc, got)
    return " ".join(msg.split())


def _share_hint(err: dict) -> str:
    """`threshold: 80` where a share is wanted: the share it means (0.8), as a percentage floor is told."""
    got, ctx = err.get("input"), err.get("ctx") or {}
    if err.get("type") != "less_than_equal" or ctx.get("le") != 1 or isinstance(got, bool) \
            or not isinstance(got, (int, float)) or not 1 < got <= 100:
        return ""
    return f": a share from 0 to 1, so {got:g}% is {got / 100:g}"


_EXPONENT = re.compile(r"([-+]?\d[\d_]*)(?:\.(\d*))?[eE]([-+]?)(\d+)")


def _exponent_hint(value: Any) -> str:
    """A number YAML 1.1 (PyYAML) reads as text, `1e-3` or `1.5e3` (it wants a dot and a signed
    exponent), and how to write it so it is a number."""
    found = _EXPONENT.fullmatch(value.strip()) if isinstance(value, str) else None
    if found is None:
        return ""
    whole, fraction, sign, power = found.groups()
    return (f": YAML reads an exponent without a dot and a sign as text; write {whole}.{fraction or '0'}"
            f"e{sign or '+'}{power}")


#: pydantic error types -> what the value must be, in the words the README uses
_PHRASES = {
    "greater_than_equal": "must be at least {ge}", "greater_than": "must be more than {gt}",
    "less_than_equal": "must be at most {le}", "less_than": "must be less than {lt}",
    "int_type": "must be a whole number", "int_parsing": "must be a whole number",
    "int_from_float": "must be a whole number", "float_type": "must be a number",
    "float_parsing": "must be a number", "finite_number": "must be a finite number",
    "string_type": "must be text (a string)", "bool_type": "must be true or false",
    "bool_parsing": "must be true or false", "list_type": "must be a list",
    "dict_type": "must be a mapping (an object)", "model_type": "must be a mapping (an object)",
    "model_attributes_type": "must be a mapping (an object)", "none_required": "must be null",
    "too_short": "must hold at least {min_length} item(s)", "too_long": "must hold at most {max_length} item(s)",
    "string_too_short": "must be at least {min_length} character(s) long",
    "string_too_long": "must be at most {max_length} characters long",
    "literal_error": "must be one of {expected}", "enum": "must be one of {expected}",
}
#: errors whose offending value is not repeated after the message
_NO_VALUE_SHOWN = {"missing", "extra_forbidden", "value_error", "assertion_error"}


def phrase(err: dict) -> str:
    """One pydantic error's message in the project's own words (never "Input should be ...",
    which reads as if it were about a case's `input` field)."""
    kind = err.get("type", "")
    ctx = err.get("ctx") or {}
    if kind == "string_too_short" and ctx.get("min_length") == 1:
        return "must not be empty"
    template = _PHRASES.get(kind)
    if template is not None:
        try:
            return template.format(**{k: _show(v) for k, v in ctx.items()})
        except (KeyError, IndexError, ValueError):
            pass
    msg = str(err.get("msg", "invalid value"))
    for prefix in ("Value error, ", "Assertion failed, "):
        if msg.startswith(prefix):
            return msg[len(prefix):]
    if msg.startswith("Input should be "):
        return "must be " + msg[len("Input should be "):]
    return msg.replace("Input ", "The value ", 1) if msg.startswith("Input ") else msg


def _show(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def did_you_mean(name: Any, choices: Any) -> str:
    """" (did you mean 'expected'?)" when `name` is close to one of `choices`, else ""."""
    if not isinstance(name, str) or not choices:
        return ""
    close = closest(name, choices)
    if close is None:
        close = next((c for c in sorted(str(c) for c in choices) if c.lower() == name.lower().replace("-", "_")), None)
    return f" (did you mean {close!r}?)" if close is not None else ""


def fields_at(model: type[BaseModel] | None, path: tuple) -> set[str]:
    """The field names a model allows at `path` (keys and indexes into nested models, lists and
    mappings); empty when the place is not a model."""
    import typing

    def options(tp: Any) -> list:
        if typing.get_origin(tp) in (typing.Union, getattr(__import__("types"), "UnionType", typing.Union)):
            return [o for arg in typing.get_args(tp) for o in options(arg)]
        return [tp]

    current = options(model)
    for part in path:
        nxt: list = []
        for tp in current:
            origin = typing.get_origin(tp)
            if isinstance(tp, type) and issubclass(tp, BaseModel) and isinstance(part, str):
                info = tp.model_fields.get(part)
                if info is not None:
                    nxt += options(info.annotation)
            elif origin in (list, tuple) and isinstance(part, int):
                nxt += [o for arg in typing.get_args(tp)[:1] for o in options(arg)]
            elif origin is dict and typing.get_args(tp):
                nxt += options(typing.get_args(tp)[1])
        current = nxt
    names: set[str] = set()
    for tp in current:
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            names |= set(tp.model_fields)
    return names


def all_errors(exc: ValidationError, model: type[BaseModel] | None = None) -> list[tuple[tuple, str]]:
    """(location, message) of every error of a validation, in the project's words: one entry
    per place (the branches of one union merged), in the order pydantic found them."""
    errors = exc.errors()
    points = _union_points(errors)
    by_loc: dict[tuple, list[dict]] = {}
    for err in errors:
        by_loc.setdefault(_clean_loc(tuple(err.get("loc", ())), points), []).append(err)
    out = []
    for loc, group in by_loc.items():
        # A value that got into one branch of a union: that branch's own errors speak for it.
        deeper = [other for other in by_loc if len(other) > len(loc) and other[:len(loc)] == loc]
        if deeper and all(tuple(e["loc"])[-1] in points.get(tuple(e["loc"])[:-1], ()) for e in group):
            continue
        out.append((loc, _message(group[0], group, loc, model)))
    return out


def parse_model(model: type[BaseModel], data: Any, *, file: str | None = None,
                line: int | None = None, case_id: str | None = None, prefix: str = "",
                every: bool = False) -> Any:
    """Validate `data` against `model`; a failure is one ConfigError naming the field (with
    `every`, a ConfigErrors naming each field that failed, a line each)."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        found = all_errors(exc, model) if every else [first_error_parts(exc, model)]
        problems = []
        for loc_parts, msg in found:
            loc = ".".join(str(p) for p in loc_parts)
            if prefix:
                loc = f"{prefix}.{loc}" if loc else prefix
            problems.append(ConfigError(msg, file=file, line=line, case_id=case_id, field=loc or None))
        if len(problems) == 1:
            raise problems[0] from None
        raise ConfigErrors(problems) from None
