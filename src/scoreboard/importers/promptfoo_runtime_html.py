"""promptfoo 0.121's `is-html` (src/assertions/html.ts validateHtml / handleIsHtml) ported to Python.

promptfoo parses the trimmed output with parse5 (the WHATWG HTML tree construction) and decides on
that tree: the output fails when text sits directly in a `<body>` the parser implied (parse5 wraps
fragments and plain text in html/head/body), or when no element of the tree is a known HTML5
element or a custom element (a name with a hyphen; `html`, `head` and `body` count only when the
output wrote them as start tags). The same algorithm is html5lib's (WHATWG tree construction in
pure Python), so the tree is built with it; whether an html/head/body element came from a start tag
in the output (parse5's `sourceCodeLocation`) is recorded while it builds. html5lib is optional
(`pip install 'scoreboard[html]'`): without it an is-html grade is not assessed, never guessed.
"""

from __future__ import annotations

import re
from typing import Any

from .promptfoo_runtime_base import JS_SPACE, _verdict, js_trim, text_of, utf16_len
from .promptfoo_runtime_markup import unassessed

_MAX_INPUT_SIZE = 10 * 1024 * 1024
_S = f"[{JS_SPACE}]"
#: LITERAL_WRAPPER_PATTERNS (tested on the lowercased output)
_LITERAL = {name: re.compile(rf"<{name}(?=[{JS_SPACE}>/])") for name in ("html", "head", "body")}
_XML_DECL = re.compile(rf"^{_S}*<\?[xX][mM][lL]")
#: VALID_HTML_ELEMENTS (HTML5, obsolete elements excluded)
VALID_HTML_ELEMENTS = frozenset("""
html head title base link meta style body article section nav aside h1 h2 h3 h4 h5 h6 header footer
address p hr pre blockquote ol ul li dl dt dd figure figcaption main div a em strong small s cite q
dfn abbr ruby rt rp data time code var samp kbd sub sup i b u mark bdi bdo span br wbr img iframe
embed object param picture source video audio track map area svg math script noscript canvas ins del
table caption colgroup col tbody thead tfoot tr td th form label input button select datalist
optgroup option textarea output progress meter fieldset legend details summary dialog menu slot
template""".split())
_NS = re.compile(r"^\{[^}]*\}")

_parser_class: Any = None


def _parser():
    """An html5lib parser whose elements say whether a start tag in the input made them (parse5's
    sourceCodeLocation is null for the elements it implies); built once per process."""
    global _parser_class
    if _parser_class is None:
        import html5lib
        from html5lib.treebuilders import getTreeBuilder

        base = getTreeBuilder("etree")

        def marked(element, token):
            element._element.set("\0literal", "1" if token.get("\0literal") else "")
            return element

        class Builder(base):  # type: ignore[misc, valid-type]
            def createElement(self, token):
                return marked(super().createElement(token), token)

            def insertElementNormal(self, token):
                return marked(super().insertElementNormal(token), token)

            def insertElementTable(self, token):
                return marked(super().insertElementTable(token), token)

        from html5lib._tokenizer import HTMLTokenizer

        class Tokenizer(HTMLTokenizer):
            def __iter__(self):
                before_html = True
                for token in super().__iter__():
                    kind = token.get("type")
                    if kind in (3, 4, 5) and token["name"] == "isindex":
                        # html5lib predates the spec's removal of isindex's rewriting into a
                        # form: parse5 makes it an element like any unknown tag, so does this name
                        token["name"] = "isindex\0"
                    if kind in (3, 5):  # StartTag, EmptyTag: a tag written in the input
                        token["\0literal"] = True
                        if token["name"] == "template":
                            self.parser.saw_template = True
                    if before_html and kind not in (0, 2, 6, 7) and not (
                            kind == 4 and token["name"] not in ("head", "body", "html", "br")):
                        # the spec's "before html" mode: an <html> start tag makes the root (parse5
                        # gives it a location); html5lib implies it and merges the tag's attributes
                        before_html = False
                        self.parser.html_literal = kind in (3, 5) and token["name"] == "html"
                    yield token

        foreign_classes: dict = {}

        def modern_foreign(phase_class):
            """The spec's change since html5lib 1.1 that parse5 follows: an end tag `</p>` or `</br>`
            in SVG or MathML closes the foreign elements and is processed as HTML."""
            class Foreign(phase_class):
                __slots__ = ()

                def processEndTag(self, token):
                    if token["name"] not in ("p", "br"):
                        return super().processEndTag(token)
                    open_elements = self.tree.openElements
                    while (open_elements[-1].namespace != self.tree.defaultNamespace
                           and not self.parser.isHTMLIntegrationPoint(open_elements[-1])
                           and not self.parser.isMathMLTextIntegrationPoint(open_elements[-1])):
                        open_elements.pop()
                    return self.parser.phase.processEndTag(token)  # in the current insertion mode
            return Foreign

        class Parser(html5lib.HTMLParser):
            html_literal = False
            saw_template = False

            def __init__(self, *args, **kwargs):
                super().__init__(*args, **kwargs)
                phase = self.phases["inForeignContent"]
                cls = type(phase)
                if cls not in foreign_classes:
                    foreign_classes[cls] = modern_foreign(cls)
                phase.__class__ = foreign_classes[cls]

            def mainLoop(self):
                self.tokenizer.__class__ = Tokenizer
                return super().mainLoop()

        _parser_class = (Parser, Builder)
    parser_class, builder = _parser_class
    return parser_class(tree=builder, namespaceHTMLElements=False)


def _name(element) -> str | None:
    tag = element.tag
    return _NS.sub("", tag).lower() if isinstance(tag, str) else None


def _literal(element) -> bool:
    return element.get("\0literal") == "1"


class TemplateUnsupported(Exception):
    """html5lib 1.1 builds <template> as an ordinary element, without the spec's template
    insertion modes that parse5 follows (`<template><frameset>` keeps the template in parse5 only)."""


def validate_html(html: str) -> tuple[bool, str]:
    """validateHtml: (valid, reason)."""
    trimmed = js_trim(html)
    if not trimmed:
        return False, "Output is empty"
    if utf16_len(trimmed) > _MAX_INPUT_SIZE:
        return False, "Output exceeds maximum size limit"
    if _XML_DECL.search(trimmed):
        return False, "Output appears to be XML, not HTML"
    parser = _parser()
    root = parser.parse(trimmed, scripting=True)  # parse5's default: scripting enabled
    if parser.saw_template:
        raise TemplateUnsupported
    root.set("\0literal", "1" if parser.html_literal else "")
    lower = trimmed.lower()
    elements = [e for e in root.iter() if _name(e) is not None]
    body = next((e for e in elements if _name(e) == "body"), None)
    user_body = body is not None and bool(_LITERAL["body"].search(lower)) and _literal(body)
    if not user_body and body is not None:
        texts = [body.text or ""] + [child.tail or "" for child in body]
        if any(js_trim(t) for t in texts):
            return False, "Output must be wrapped in HTML tags"
    for element in elements:
        name = _name(element)
        if name in _LITERAL:
            if _LITERAL[name].search(lower) and _literal(element):
                return True, "Output is valid HTML"
        elif name in VALID_HTML_ELEMENTS or "-" in name:
            return True, "Output is valid HTML"
    return False, "Output does not contain recognized HTML elements"


def is_html(output: Any, inverse: bool) -> dict:
    """handleIsHtml."""
    try:
        valid, reason = validate_html(text_of(output))
    except ImportError:
        return unassessed("is-html needs html5lib (pip install 'scoreboard[html]'): not assessed")
    except TemplateUnsupported:
        return unassessed("is-html: an output with a <template> tag is not assessed (parse5's template insertion "
                          "modes are not ported)")
    passed = valid != inverse
    return _verdict(passed, reason)
