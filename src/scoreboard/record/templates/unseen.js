/* Text from a report shown as the text it is (the rules of record/mdtext.py's spell_unseen, which
   the terminal and the Markdown use): C0 and C1 control characters and DEL as \xNN (\n, \t, \r),
   invisible direction and zero-width characters (U+202E RIGHT-TO-LEFT OVERRIDE...) and lone
   surrogates as \uNNNN, so a case id cannot reorder what follows it or pass for another, and an
   escape sequence cannot hide itself. Nothing is dropped; other text (accents, CJK, emoji,
   Arabic and Hebrew letters, ZWJ and ZWNJ) is left as it is. One copy, shared: the HTML report
   inlines this file before its script, the viewer serves it before app.js. */
var scoreboardUnseen = (function () {
  "use strict";
  var INVISIBLE = "\\u061c\\u200b\\u200e\\u200f\\u2028\\u2029\\u202a-\\u202e\\u2060-\\u2064\\u2066-\\u2069\\ufeff\\ufff9-\\ufffb";
  // with the u flag a surrogate range matches lone surrogates only (a pair is one code point)
  var SURROGATE = "\\ud800-\\udfff";
  var ONE_LINE = new RegExp("[\\x00-\\x1f\\x7f-\\x9f" + INVISIBLE + SURROGATE + "]", "gu");
  var LINES = new RegExp("[\\x00-\\x08\\x0b-\\x1f\\x7f-\\x9f" + INVISIBLE + SURROGATE + "]", "gu");
  var NAMED = { "\n": "\\n", "\t": "\\t", "\r": "\\r" };

  function spell(ch) {
    if (NAMED[ch]) return NAMED[ch];
    var hex = ch.charCodeAt(0).toString(16);
    return ch.charCodeAt(0) < 0x100 ? "\\x" + ("0" + hex).slice(-2) : "\\u" + ("000" + hex).slice(-4);
  }
  return {
    /* an identifier or a one-line field (case id, variant, grader, suite, tag, reason): line ends
       and tabs spelt too */
    line: function (text) { return String(text).replace(ONE_LINE, spell); },
    /* multi-line text (an output, an input): line ends and tabs kept */
    lines: function (text) { return String(text).replace(LINES, spell); }
  };
})();
