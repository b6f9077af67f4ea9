/* scoreboard report page. Every value from the report reaches the DOM through textContent or
   setAttribute and is never parsed as markup, so model output is always shown as text; every text
   shown goes through scoreboardUnseen (unseen.js, inlined before this script): control and
   direction characters spelt as escapes, line ends kept only in multi-line text (a <pre>, or an
   element made with lines: true). */
(function () {
  "use strict";

  var DATA = JSON.parse(document.getElementById("data").textContent);
  // how a detectable difference was reached (record.detectable.detectable_how)
  function detectableHow(d) {
    var share = Math.round(d.discordance * 100) + "% of cases";
    if (!d.power_method) return d.test || "paired t";
    return (d.test || "paired t") + ", power " + d.power_method + (d.sd_from === "assumption"
      ? ", the variants assumed to disagree on " + share + " (they agreed on every case)"
      : ", the variants disagreeing on " + share);
  }

  var PAGE_SIZE = 100;
  var FAILED = { failed: 1, error: 1, interrupted: 1 };
  var JUDGED = { passed: 1, failed: 1, error: 1 };
  var COLORS = ["#4c78a8", "#f58518", "#54a24b", "#b279a2", "#e45756", "#72b7b2", "#9d755d", "#eeca3b"];
  var STATUS_WORDS = {
    passed: "passed", failed: "failed", error: "error", unassessed: "not assessed",
    "not-run": "not run", interrupted: "interrupted", waiting: "waiting on a batch"
  };
  var STATUS_CLASS = { passed: "ok", failed: "bad", error: "warn", interrupted: "warn", unassessed: "none", "not-run": "none",
    waiting: "none" };

  var run = DATA.run || {};
  var plan = DATA.plan || {};
  var summary = DATA.summary || {};
  var VS = summary.variants || {};
  var variants = (plan.variants || []).map(function (v) { return v.name; });
  var cases = DATA.cases || [];

  /* ---------- small DOM helpers ---------- */

  function el(tag, attrs) {
    var node = document.createElement(tag);
    setAttrs(node, attrs);
    for (var i = 2; i < arguments.length; i++) add(node, arguments[i]);
    return node;
  }
  function svg(tag, attrs) {
    var node = document.createElementNS("http://www.w3.org/2000/svg", tag);
    setAttrs(node, attrs);
    for (var i = 2; i < arguments.length; i++) add(node, arguments[i]);
    return node;
  }
  /* Text as this node shows it: one line (ids, names, reasons) unless the node holds multi-line text. */
  function shown(node, text) {
    return node.localName === "pre" || node.sbLines ? scoreboardUnseen.lines(text) : scoreboardUnseen.line(text);
  }
  function setAttrs(node, attrs) {
    if (!attrs) return;
    if (attrs.lines) node.sbLines = true;
    Object.keys(attrs).forEach(function (k) {
      var v = attrs[k];
      if (v === null || v === undefined || v === false || k === "lines") return;
      if (k === "text") node.textContent = shown(node, v);
      else if (k === "class") node.setAttribute("class", v);
      else if (k.slice(0, 2) === "on") node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v === true ? "" : String(v));
    });
  }
  function add(node, child) {
    if (child === null || child === undefined || child === false) return;
    if (Array.isArray(child)) { child.forEach(function (c) { add(node, c); }); return; }
    node.appendChild(typeof child === "object" ? child : document.createTextNode(shown(node, child)));
  }

  /* ---------- formatting ---------- */

  function fmtRate(v) { return v === null || v === undefined ? "n/a" : (v * 100).toFixed(1) + "%"; }
  /* A difference of rates in points (percentage points), as the Markdown and terminal show it. */
  function fmtSigned(v) { var x = v * 100; return (x >= 0 ? "+" : "") + x.toFixed(1); }
  /* One p-value format in every rendering: four decimals, or "<0.0001" below that. */
  function fmtP(p) {
    if (p === null || p === undefined) return "n/a";
    return p < 0.00005 ? "<0.0001" : p.toFixed(4);
  }
  /* An interval's method in words, its first clause (the summary's methods hold the whole text). */
  function methodShort(ci) {
    var m = ci && ci.method;
    if (!m) return null;
    var words = summary.methods && typeof summary.methods[m] === "string" ? summary.methods[m] : null;
    return words ? words.split(" (")[0].split("; ")[0] : m;
  }
  /* How one case fared over its judged runs, in the Markdown's words. */
  function stabilityWords(passed, judged) {
    if (!judged) return "no judged run";
    if (passed === judged) return judged > 1 ? "passes every run" : "passes";
    if (passed === 0) return judged > 1 ? "fails every run" : "fails";
    return "passes " + passed + " of " + judged + " runs";
  }
  function fmtNum(v, digits) {
    if (v === null || v === undefined) return "unknown";
    if (typeof v !== "number") return String(v);
    if (Number.isInteger(v)) return v.toLocaleString("en-US");
    return v.toLocaleString("en-US", { maximumFractionDigits: digits === undefined ? 4 : digits });
  }
  function level(rate) {
    if (rate === null || rate === undefined) return "none";
    return rate >= 0.9 ? "ok" : rate >= 0.7 ? "warn" : "bad";
  }
  var EMOJI = { ok: "\u2705", warn: "\u26a0\ufe0f", bad: "\u274c", none: "\u2796" };
  var TITLES = { ok: "90% or more", warn: "70% to 90%", bad: "below 70%", none: "nothing judged" };
  /* Icons drawn as inline SVG so they look the same without an emoji font; the emoji stays as
     hidden text so copying a cell keeps the marker the Markdown report uses. */
  function mark(kind, title) {
    var color = { ok: "var(--ok)", warn: "var(--warn)", bad: "var(--bad)", none: "var(--none)" }[kind];
    var shape;
    if (kind === "warn") {
      shape = [svg("path", { d: "M8 1.5 15 14.5H1z", fill: color }),
        svg("path", { d: "M8 6v4.2M8 11.9v.3", stroke: "#fff", "stroke-width": "1.8", "stroke-linecap": "round" })];
    } else {
      var inner = kind === "ok" ? svg("path", { d: "M4.6 8.3 7 10.6 11.4 5.8", fill: "none", stroke: "#fff", "stroke-width": "1.9", "stroke-linecap": "round", "stroke-linejoin": "round" })
        : kind === "bad" ? svg("path", { d: "M5.5 5.5l5 5M10.5 5.5l-5 5", stroke: "#fff", "stroke-width": "1.9", "stroke-linecap": "round" })
        : svg("path", { d: "M5 8h6", stroke: "#fff", "stroke-width": "1.9", "stroke-linecap": "round" });
      shape = [svg("circle", { cx: 8, cy: 8, r: 7, fill: color }), inner];
    }
    return el("span", { class: "mark " + kind, title: title || TITLES[kind], "data-mark": kind },
      svg("svg", { viewBox: "0 0 16 16", "aria-hidden": "true" }, shape),
      el("span", { class: "sr", text: EMOJI[kind] }));
  }
  function statusBadge(status) {
    return el("span", { class: "badge " + (STATUS_CLASS[status] || "none"), text: STATUS_WORDS[status] || String(status) });
  }
  function isOmitted(v) { return v !== null && typeof v === "object" && !Array.isArray(v) && typeof v.__omitted__ === "number" && Object.keys(v).length === 1; }
  function valueText(v) {
    if (v === undefined) return "";
    if (typeof v === "string") return v;
    return JSON.stringify(v, null, 2);
  }
  function valueNode(v) {
    if (isOmitted(v)) return el("span", { class: "omitted", text: "(" + v.__omitted__.toLocaleString("en-US") + " characters, not embedded here; see the JSON report)" });
    return document.createTextNode(scoreboardUnseen.lines(valueText(v)));
  }
  /* One diff cell: compact JSON; a long value that matched is clipped (full text on hover). */
  function diffCell(v, passed) {
    if (v === undefined || isOmitted(v)) return el("td", null, valueNode(v));
    var text = JSON.stringify(v);
    if (text === undefined) text = String(v);
    if (passed && text.length > 64) return el("td", { title: text, text: text.slice(0, 61) + "\u2026" });
    return el("td", { text: text });
  }
  /* Output text shown pretty-printed when it is JSON, so it lines up with the expected answer. */
  function prettyOutput(text) {
    var t = text.trim();
    if (t && (t[0] === "{" || t[0] === "[")) {
      try { return { text: JSON.stringify(JSON.parse(t), null, 2), json: true }; } catch (e) { /* not JSON */ }
    }
    return { text: text, json: false };
  }
  function variantColor(i) { return COLORS[i % COLORS.length]; }
  function swatch(i) { var s = el("span", { class: "swatch" }); s.style.background = variantColor(i); return s; }
  function plural(n, word, many) { return n + " " + (n === 1 ? word : (many || word + "s")); }

  /* ---------- per-case facts, computed once ---------- */

  var flakySets = variants.map(function (name) {
    var list = (VS[name] || {}).flaky_cases;
    return Array.isArray(list) ? new Set(list) : null;
  });
  var facts = cases.map(function (c, index) {
    var per = variants.map(function () { return { passed: 0, judged: 0, errors: 0, interrupted: 0, failed: 0, waiting: 0, unassessed: 0, notRun: 0, runs: [] }; });
    (c.a || []).forEach(function (a) {
      var t = per[a.v];
      if (!t) return;
      t.runs.push(a);
      if (a.s === "waiting") t.waiting++;
      if (a.s === "unassessed") t.unassessed++;
      if (a.s === "not-run") t.notRun++;
      if (a.s === "passed") t.passed++;
      if (JUDGED[a.s]) t.judged++;
      if (a.s === "error") t.errors++;
      if (a.s === "interrupted") t.interrupted++;
      if (FAILED[a.s]) t.failed++;
    });
    /* When the page holds only some attempts (DATA.omitted), each case carries its counts over
       every attempt: [runs, passed, judged, errors, failed, not assessed, not run, interrupted] per
       variant (a report written before interrupted runs were counted apart has 7, errors holding both). */
    if (Array.isArray(c.n)) {
      per.forEach(function (t, vi) {
        var n = c.n[vi];
        if (!Array.isArray(n)) return;
        t.total = n[0]; t.passed = n[1]; t.judged = n[2]; t.errors = n[3]; t.failed = n[4];
        if (n.length > 6) { t.unassessed = n[5]; t.notRun = n[6]; }
        if (n.length > 7) t.interrupted = n[7];
      });
    }
    per.forEach(function (t, vi) {
      t.runs.sort(function (x, y) { return x.r - y.r; });
      if (t.total === undefined) t.total = t.runs.length;
      var set = flakySets[vi];
      // Without the summary's list, a case is flaky when its judged runs disagree.
      t.flaky = set ? set.has(c.id) : (t.judged > 1 && t.passed > 0 && t.passed < t.judged);
    });
    var failing = per.some(function (t) { return t.failed > 0; });
    var outcomes = per.filter(function (t) { return t.judged > 0; }).map(function (t) { return t.passed === t.judged ? "p" : t.passed === 0 ? "f" : "m"; });
    return {
      index: index, per: per, failing: failing,
      flaky: per.some(function (t) { return t.flaky; }),
      disagree: outcomes.length > 1 && outcomes.some(function (o) { return o !== outcomes[0]; }),
      failures: per.reduce(function (n, t) { return n + t.failed; }, 0),
      category: c.cat || ""
    };
  });
  var haystack = null; // built on the first search: case id, expected answer and every output
  function buildHaystack() {
    haystack = cases.map(function (c) {
      var parts = [];
      // each text as stored and as shown (its hidden characters spelt), so a copied id is found
      function both(text, show) { parts.push(text); var s = show(text); if (s !== text) parts.push(s); }
      both(c.id, scoreboardUnseen.line);
      both(c.x === undefined ? "" : valueText(c.x), scoreboardUnseen.lines);
      (c.a || []).forEach(function (a) {
        if (a.o !== undefined && a.o !== null) both(a.o, scoreboardUnseen.lines);
        if (a.j !== undefined) both(valueText(a.j), scoreboardUnseen.lines);
      });
      return parts.join("\n").toLowerCase();
    });
  }

  /* ---------- sections ---------- */

  var app = document.getElementById("app");
  document.title = (run.dry_run ? "DRY RUN (mock subject): " : "") + "scoreboard report: " + scoreboardUnseen.line(run.suite || "report");

  function header() {
    var status = run.status || "unknown";
    var statusKind = status === "completed" ? "ok" : status === "running" || status === "waiting" ? "warn" : "bad";
    var gates = DATA.gates || [];
    var failedGates = gates.filter(function (g) { return !g.passed; }).length;
    var nodes = [
      el("div", { class: "brand", text: "scoreboard report" }),
      el("div", { class: "header" },
        el("h1", { "data-testid": "run-suite", text: run.suite || "(unnamed suite)" }),
        el("span", { class: "badge " + statusKind, "data-testid": "run-status", text: status }),
        run.dry_run ? el("span", { class: "badge warn", "data-testid": "dry-run-badge", text: "DRY RUN (mock subject)" }) : null,
        gates.length ? el("span", { class: "badge " + (failedGates ? "bad" : "ok"), "data-testid": "gates-badge",
          text: failedGates ? plural(failedGates, "gate") + " failed" : "all gates passed" }) : null)
    ];
    var meta = el("dl", { class: "meta" });
    function item(label, value, testid, title) {
      meta.appendChild(el("div", null, el("dt", { text: label }),
        el("dd", { "data-testid": testid, title: title || (typeof value === "string" ? value : null) }, value)));
    }
    item("Variants", variants.join(", ") || "none", "run-variants");
    if (typeof plan.model_text === "string") item("Model", plan.model_text, "run-model");
    item("Cases", cases.length.toLocaleString("en-US"), "run-cases");
    item("Runs per case", plan.runs === undefined ? "n/a" : String(plan.runs), "run-runs");
    item("Started", run.started_at || "n/a", "run-started");
    item("Finished", run.finished_at || (status === "running" ? "still running" : "n/a"), "run-finished");
    if (plan.fixture_hash) item("Fixture hash", el("code", { text: plan.fixture_hash.slice(0, 16) + "\u2026" }), "run-fixture-hash", plan.fixture_hash);
    if (plan.split) item("Split", String(plan.split), "run-split");
    if (run.versions && run.versions.scoreboard) item("scoreboard", run.versions.scoreboard +
      (run.versions.graders ? " \u00b7 graders version " + run.versions.graders : "") + " \u00b7 Python " + (run.versions.python || "?"), "run-versions");
    nodes.push(meta);
    if (run.dry_run) {
      nodes.push(el("div", { class: "callout warn", "data-testid": "dry-run-note" },
        el("strong", { text: "DRY RUN (mock subject). " }),
        "Every subject and judge was replaced by the mock subject: these outputs are not the system's, " +
        "no model was called, and gates were skipped."));
    }
    if (run.synthetic) {
      nodes.push(el("div", { class: "callout warn", "data-testid": "synthetic-note" },
        el("strong", { text: "Synthetic data. " }),
        "Every case in this run is synthetic; accuracy here does not measure production performance."));
    }
    if (status === "stopped") {
      nodes.push(el("div", { class: "callout bad", "data-testid": "stopped-note" },
        el("strong", { text: "This run was stopped" }),
        run.stop_reason ? ": " + run.stop_reason + ". " : ". ",
        "Attempts that never finished are counted as not run and are not in the pass rates. " +
        (DATA.finish_words || "Finish it with scoreboard run --resume on this run's folder.")));
    } else if (status === "waiting") {
      var open = (run.batches || []).filter(function (b) { return b.state !== "ended"; });
      nodes.push(el("div", { class: "callout warn", "data-testid": "waiting-note" },
        el("strong", { text: "Waiting on provider batches. " }),
        "Attempts whose requests are still in a batch are not finished and are not in the pass rates. Batches still open: " +
        (open.map(function (b) { return b.batch_id || b.submission; }).join(", ") || "none") +
        ". Collect them with scoreboard run --resume on this run's folder."));
    } else if (status === "running") {
      nodes.push(el("div", { class: "callout warn", "data-testid": "running-note" },
        el("strong", { text: "Run in progress. " }), "This is a checkpoint; the figures cover only the attempts finished so far."));
    }
    if (DATA.omitted) {
      var om = DATA.omitted;
      var count = function (n, word) { return fmtNum(n || 0) + " " + (n === 1 ? word : word + "s"); };
      var left = count(om.passes_omitted, "passing attempt");
      if (om.not_passed_omitted) left += " and " + count(om.not_passed_omitted, "attempt") + " that did not pass";
      nodes.push(el("div", { class: "callout warn", "data-testid": "omitted-note" },
        el("strong", { text: "Showing " + fmtNum(om.shown) + " of " + count(om.attempts, "attempt") + ". " }),
        "To keep this page small it holds every attempt that did not pass (up to " + fmtNum(om.cap) +
        ") and an evenly spread sample of passes; " + left + " are left out. Counts and rates cover every attempt; the JSON report holds them all."));
    }
    if (DATA.shortened) {
      nodes.push(el("div", { class: "callout", "data-testid": "shortened-note" },
        "To keep this file small, " + plural(DATA.shortened.count, "long text or value", "long texts and values") +
        (DATA.shortened.count === 1 ? " was" : " were") + " shortened here (texts to " + DATA.shortened.text_limit.toLocaleString("en-US") + " characters). The JSON report holds everything."));
    }
    return el("header", null, nodes);
  }

  /* The pass rate on a 0-100% track with its interval; plain boxes, so nothing stretches. */
  function ciBar(rate, ci, color) {
    var pct = function (v) { return Math.max(0, Math.min(1, v)) * 100 + "%"; };
    var bar = el("div", { class: "cibar", "aria-hidden": "true" }, el("div", { class: "track" }));
    [0.7, 0.9].forEach(function (t) { var tick = el("div", { class: "tick" }); tick.style.left = pct(t); bar.appendChild(tick); });
    if (ci && typeof ci.low === "number" && typeof ci.high === "number") {
      var range = el("div", { class: "range" });
      range.style.left = pct(ci.low);
      range.style.width = "calc(" + pct(ci.high) + " - " + pct(ci.low) + ")";
      range.style.background = color;
      bar.appendChild(range);
    }
    if (typeof rate === "number") {
      var dot = el("div", { class: "point" });
      dot.style.left = pct(rate);
      dot.style.background = color;
      bar.appendChild(dot);
    }
    return bar;
  }

  function ciText(ci) {
    if (!ci || ci.low === null || ci.low === undefined) return null;
    var lvl = typeof ci.level === "number" ? Math.round(ci.level * 100) + "%" : "95%";
    return lvl + " interval " + fmtRate(ci.low) + "\u2013" + fmtRate(ci.high);
  }

  /* A pass rate carries a mark only when a gate judged its variant: red when one failed, green
     when all passed; with no gate there is no verdict to show, so no mark (never red by a threshold). */
  function gateMark(name) {
    var mine = (DATA.gates || []).filter(function (g) { return g.variant === name; });
    if (!mine.length) return null;
    var failed = mine.filter(function (g) { return !g.passed; });
    return failed.length ? mark("bad", failed.map(function (g) { return "gate failed: " + (g.description || g.gate); }).join("; "))
      : mark("ok", plural(mine.length, "gate") + " passed");
  }

  function summarySection() {
    var cards = variants.map(function (name, vi) {
      var s = VS[name] || {};
      // the errors of cases with no grader are counted as errors, outside the pass rate (as the
      // terminal and the Markdown count judged attempts)
      var judged = (s.passed || 0) + (s.failed || 0) + (s.errors || 0) - (s.errors_not_graded || 0);
      var ci = s.pass_rate_ci;
      var words = summary.methods && ci && typeof summary.methods[ci.method] === "string" ? summary.methods[ci.method] : null;
      var method = words || (ci && (ci.method || ci.unit) ? [ci.method, ci.unit ? "by " + ci.unit : null].filter(Boolean).join(", ") : null);
      var flaky = Array.isArray(s.flaky_cases) ? s.flaky_cases.length : null;
      var kv = el("dl", { class: "kv num" });
      function row(k, v, testid) { kv.appendChild(el("dt", { text: k })); kv.appendChild(el("dd", { "data-testid": testid, text: v })); }
      row("passed / judged", (s.passed || 0) + " / " + judged, "counts-" + name);
      row("failed", String(s.failed || 0), "failed-" + name);
      row("errors", String(s.errors || 0), "errors-" + name);
      if (s.unassessed) row("not assessed", String(s.unassessed), "unassessed-" + name);
      if (s.not_run) row("not run", String(s.not_run), "not-run-" + name);
      if (s.interrupted) row("interrupted", String(s.interrupted), "interrupted-" + name);
      if (s.waiting) row("waiting on a batch", String(s.waiting), "waiting-" + name);
      if ((plan.runs || 1) > 1) {
        row("mean of runs", fmtRate(s.mean_pass_rate), "mean-run-" + name);
        row("worst run", fmtRate(s.min_pass_rate), "min-run-" + name);
      }
      if (typeof s.cases === "number") row("cases judged", String(s.cases), "cases-" + name);  // with a verdict on some run
      if (flaky !== null) row("flaky cases", String(flaky), "flaky-" + name);
      // turns of a conversation are one unit of every interval: said, as record/figures.unit_words says it
      if (typeof s.conversations === "number" && s.conversations > 0) {
        row("unit", "the intervals count " + (s.conversations === 1 ? "the 1 conversation" : "each of the " + plural(s.conversations, "conversation")) +
          " as one unit (its turns are correlated), and each case outside any as one", "units-" + name);
      }
      ["pass_at_k", "pass_hat_k"].forEach(function (key) {
        var figs = s[key];
        if (!figs || typeof figs !== "object") return;
        Object.keys(figs).forEach(function (k) {
          var f = figs[k] || {};
          var label = (key === "pass_at_k" ? "pass@" : "pass^") + k;
          // a case judged fewer than k times has no unbiased estimate: left out, and said
          var units = s.conversations && typeof s.units === "number" ? s.units : s.cases;
          var gone = typeof f.cases === "number" && typeof units === "number" && f.cases < units ? units - f.cases : 0;
          var what = s.conversations ? "unit" : "case";
          var left = gone ? "; over " + f.cases + " of " + units + " " + what + (units === 1 ? "" : "s") + ": " + gone +
            " judged fewer than " + k + " times " + (gone === 1 ? "has" : "have") + " no pass@" + k + " or pass^" + k +
            " and " + (gone === 1 ? "is" : "are") + " left out" : "";
          row(label, fmtRate(f.value) + (f.ci ? " (" + fmtRate(f.ci.low) + "\u2013" + fmtRate(f.ci.high) + ")" : "") + left,
              label.replace(/[@^]/, key === "pass_at_k" ? "-at-" : "-all-") + "-" + name);
        });
      });
      // issue 14: case score, named and derived metrics, reducers, record-only attempts
      // a derived metric over totals (aggregate sum) is a number, not a share
      function num(f) { return f && typeof f.value === "number" ? String(Number(f.value.toPrecision(6))) + (f.ci && typeof f.ci.low === "number" ? " (" + Number(f.ci.low.toPrecision(6)) + "\u2013" + Number(f.ci.high.toPrecision(6)) + ")" : "") : "n/a"; }
      function fig(f) { return f && typeof f.value === "number" ? fmtRate(f.value) + (f.ci && typeof f.ci.low === "number" ? " (" + fmtRate(f.ci.low) + "\u2013" + fmtRate(f.ci.high) + ")" : "") : "n/a"; }
      // an expression of means that leaves 0..1 (quality * 2) is a number too
      function share(f) { if (f && (f.unit === "share" || f.unit === "number")) return f.unit === "share";  // its definition's (version 21)
        return !f || [f.value].concat(f.ci ? [f.ci.low, f.ci.high] : []).every(function (x) { return typeof x !== "number" || (x >= 0 && x <= 1); }); }
      if (s.not_graded) row("not graded", String(s.not_graded), "not-graded-" + name);
      if (s.errors_not_graded) row("errors not graded", plural(s.errors_not_graded, "error") +
          " of cases with no grader (or only record-only ones): counted as errors, outside the pass rate", "errors-not-graded-" + name);
      if (s.usage_over_bound) row("usage over its bound", s.usage_over_bound + " attempt" + (s.usage_over_bound === 1 ? "" : "s") +
          " where the provider reported more usage than the request allowed", "over-bound-" + name);
      if (s.score) row("score", fig(s.score), "score-" + name);
      [["metrics", "metric "], ["derived_metrics", "derived "], ["reducers", "reducer "]].forEach(function (pair) {
        var block = s[pair[0]];
        if (!block || typeof block !== "object") return;
        Object.keys(block).forEach(function (k) {
          var f = block[k];
          var text = f && (f.aggregate === "sum" || (pair[0] === "derived_metrics" && !share(f))) ? num(f) : fig(f);
          // what a derived total left out of its totals and __count, and why (record/figures.left_out_words)
          var gone = pair[0] === "derived_metrics" ? ((DATA.derived_left_out || {})[name] || {})[k] : null;
          if (typeof gone === "string") text += " (" + gone + ")";
          // why a derived metric has no value (a name no attempt was scored on: often a typo), or no
          // interval (no spread between cases), as the terminal and the Markdown say it
          if (f && typeof f.note === "string") text += " (" + f.note + ")";
          // an at_least reducer's cases judged fewer than k times: unknown, left out (never 0)
          if (f && typeof f.left_out === "number" && f.left_out > 0) text += " (" + f.left_out + " case" + (f.left_out === 1 ? "" : "s") +
              " judged fewer than " + k.slice(9).split("@")[0] + " times, left out: unknown)";
          row(pair[1] + k, text, pair[0] + "-" + k + "-" + name);
        });
      });
      var over = s.field_accuracy_over;
      if (over && over.errored_attempts) row("errored, fields not graded", String(over.errored_attempts), "fields-errored-" + name);
      var v = (plan.variants || [])[vi] || {};
      var subject = v.subject && typeof v.subject === "object" ? v.subject : null;
      var describe = subject ? [subject.type, subject.model || subject.function || subject.command || subject.url].filter(function (x) { return typeof x === "string"; }).join(": ") : "";
      if (v.skill_path) describe += (describe ? " \u00b7 " : "") + "skill " + v.skill_path;
      return el("div", { class: "card", "data-testid": "variant-card-" + name },
        el("div", { class: "name" }, swatch(vi), el("span", { class: "label", text: name, title: name })),
        describe ? el("div", { class: "muted small", text: describe }) : null,
        el("div", { class: "big num" }, gateMark(name), el("span", { "data-testid": "pass-rate-" + name, text: fmtRate(s.pass_rate) })),
        el("div", { class: "ci num" },
          ciText(ci) ? el("span", { "data-testid": "pass-rate-ci-" + name, text: ciText(ci) }) : el("span", { "data-testid": "pass-rate-ci-" + name, text: "no interval in this report" }),
          method ? el("span", { class: "small", text: " (" + method + ")" }) : null),
        ciBar(s.pass_rate, ci, variantColor(vi)),
        kv);
    });
    return el("section", { "data-testid": "summary" },
      el("h2", null, "Pass rate", el("span", { class: "muted", text: "judged attempts that passed; ticks at 70% and 90%; a mark only where a gate judged the variant" })),
      el("div", { class: "cards" }, cards),
      typeof DATA.small_sample === "string" ? el("p", { class: "muted small", "data-testid": "small-sample" },
        mark("warn", "caution"), " " + DATA.small_sample) : null);
  }

  /* What a pair's per-field figures leave out: each side's errored attempts have no fields to
     grade (record/figures.field_errors_words says the same in the Markdown). */
  function fieldErrors(c) {
    var left = [c.a, c.b].filter(function (n) {
      var over = (VS[n] || {}).field_accuracy_over;
      return over && over.errored_attempts;
    }).map(function (n) { return n + "'s " + plural(VS[n].field_accuracy_over.errored_attempts, "errored attempt"); });
    return left.length ? "fields are compared over the attempts graded field by field: left out, " + left.join(" and ") +
      " (no fields to grade; the pass-rate comparison counts them as failures)" : null;
  }

  var FLAG_WORDS = {
    "few-discordant": "Few cases differ between the variants, so this comparison cannot say much.",
    "underpowered": "Too few cases to detect a difference of this size reliably.",
    "not-significant": "The difference is within what chance alone would produce.",
    "different-cases": "The variants were not run on exactly the same cases.",
    "flaky": "Some cases give different results on different runs."
  };
  function flagWords(f) {
    if (typeof f !== "string") return JSON.stringify(f);
    if (FLAG_WORDS[f]) return FLAG_WORDS[f];
    if (!/\s/.test(f)) { var s = f.replace(/[-_]+/g, " "); return s.charAt(0).toUpperCase() + s.slice(1) + "."; }
    return f;
  }

  function comparisonSection() {
    var comps = summary.comparisons;
    if (!Array.isArray(comps) || !comps.length) return null;
    var pairNotes = Array.isArray(DATA.pair_notes) ? DATA.pair_notes : [];
    var blocks = comps.map(function (c, i) {
      var id = "comparison-" + c.a + "-" + c.b;
      var mc = c.mcnemar && typeof c.mcnemar === "object" ? c.mcnemar : null;
      var mcP = mc ? mc.p : c.mcnemar_p;
      var diff = c.mean_difference, dci = c.mean_difference_ci || {};
      var diffText = diff === null || diff === undefined ? "n/a" : fmtSigned(diff);
      var diffCi = ciRange(dci);
      var diffLevel = typeof dci.level === "number" ? Math.round(dci.level * 100) + "% interval " : "95% interval ";
      function stat(k, v, testid, sub) {
        return el("div", { class: "stat" }, el("div", { class: "k", text: k }),
          el("div", { class: "v num", "data-testid": testid, text: v === undefined || v === null ? "n/a" : String(v) }),
          sub ? el("div", { class: "sub num", text: sub }) : null);
      }
      var stats = el("div", { class: "stats" },
        stat("cases compared", c.cases, "cmp-cases"),
        stat(c.a + " better", c.a_wins, "cmp-a-wins"),
        stat(c.b + " better", c.b_wins, "cmp-b-wins"),
        stat("ties", c.ties, "cmp-ties"),
        c.discordant !== undefined ? stat("discordant", c.discordant, "cmp-discordant") : null,
        stat("mean difference (A\u2212B, points)", diffText, "cmp-mean-difference", diffCi ? diffLevel + diffCi + (methodShort(dci) ? " (" + methodShort(dci) + ")" : "") : null),
        stat("sign test p", fmtP(c.sign_test_p), "cmp-sign-p"),
        stat("McNemar p", fmtP(mcP), "cmp-mcnemar-p", mc && mc.b01 !== undefined ? "only A passed " + mc.b10 + " \u00b7 only B passed " + mc.b01 : null),
        c.detectable_difference && typeof c.detectable_difference.value === "number" ?
          stat("detectable difference", c.detectable_difference.value > 1 ? "none within 100 points" :
               "\u00b1" + Math.round(c.detectable_difference.value * 100) + " points", "cmp-detectable",
               "80% power, " + detectableHow(c.detectable_difference) + ", spread from " +
               c.detectable_difference.sd_from) :
          typeof c.cases === "number" && c.cases < 2 ? stat("detectable difference", "not estimated", "cmp-detectable",
               "a paired test needs 2 or more shared cases, this comparison has " + c.cases) : null);
      /* Each flag once, beside the headline (which carries none); the per-field note sits with its table. */
      var flagList = (Array.isArray(c.flags) ? c.flags : []).concat(Array.isArray(pairNotes[i]) ? pairNotes[i] : []);
      var flags = flagList.length ? el("ul", { class: "flags", "data-testid": "cmp-flags" },
        flagList.map(function (f) { return el("li", null, mark("warn", "caution"), el("span", { text: flagWords(f) })); })) : null;
      var differs = c.differs_in;
      var differsNode = differs && (!Array.isArray(differs) || differs.length) ? el("p", { class: "muted", "data-testid": "cmp-differs-in" },
        "The variants differ in: " + (Array.isArray(differs) ? differs.join(", ") : typeof differs === "string" ? differs : JSON.stringify(differs)) + ".") : null;
      return el("div", { class: "cmp", "data-testid": id },
        el("h3", null, c.a + " vs " + c.b),
        c.headline ? el("p", { class: "headline", "data-testid": "cmp-headline", text: c.headline }) : null,
        differsNode, stats, flags, metricComparison(c), fieldComparison(c));
    });
    return el("section", { "data-testid": "comparisons" },
      el("h2", null, "Paired comparison", el("span", { class: "muted", text: "same cases, variant against variant" })), blocks);
  }

  function ciRange(ci) {
    return ci && typeof ci.low === "number" && typeof ci.high === "number" ? fmtSigned(ci.low) + " to " + fmtSigned(ci.high) : null;
  }

  /* The pair's case score and named metrics compared case by case like its pass rate (record/
     figures.comparison_rows says the same in the terminal and the Markdown); nothing without any. */
  function metricComparison(c) {
    var rows = [];
    if (c.score && typeof c.score === "object") rows.push({ label: "case score", fig: c.score, testid: "cmp-score" });
    var metrics = c.metrics && typeof c.metrics === "object" ? c.metrics : {};
    Object.keys(metrics).forEach(function (name) {
      if (metrics[name] && typeof metrics[name] === "object") rows.push({ name: name, fig: metrics[name], testid: "cmp-metric-" + name });
    });
    if (!rows.length) return null;
    function count(v) { return typeof v === "number" ? fmtNum(v) : "n/a"; }
    var heads = ["metric", "cases", c.a + " better", c.b + " better", "ties", "mean difference, points (95% interval)",
      "sign test p", "could detect"];
    var names = rows.length - (c.score ? 1 : 0);
    return el("details", { class: "field-cmp", open: rows.length <= 12, "data-testid": "cmp-metric-figures" },
      el("summary", { class: "muted", text: (c.score ? "Case score" + (names ? " and " : "") : "") +
        (names ? plural(names, "named metric") : "") + ", compared case by case" }),
      el("div", { class: "table-wrap" }, el("table", { "data-testid": "cmp-metrics" },
        el("thead", null, el("tr", null, heads.map(function (h, i) { return el("th", { class: i ? "r" : null, text: h }); }))),
        el("tbody", null, rows.map(function (r) {
          var f = r.fig, ci = f.mean_difference_ci, d = f.detectable_difference;
          var range = ciRange(ci);
          var how = methodShort(ci);
          var level = ci && typeof ci.level === "number" && ci.level !== 0.95 ? Math.round(ci.level * 100) + "% interval " : "";
          var could = detectCell(d, "cmp-metric-detect");
          return el("tr", { "data-testid": r.testid },
            el("td", null, r.name === undefined ? r.label : el("code", { text: r.name }), erroredLeftOut(c, f, r.name)),
            ["cases", "a_wins", "b_wins", "ties"].map(function (k) { return el("td", { class: "r num", text: count(f[k]) }); }),
            el("td", { class: "r num", "data-testid": "cmp-metric-diff" },
              typeof f.mean_difference === "number" ? fmtSigned(f.mean_difference) : "n/a",
              range ? el("span", { class: "sub", text: level + range + (how ? " (" + how + ")" : "") }) : null),
            el("td", { class: "r num", "data-testid": "cmp-metric-p", text: fmtP(f.sign_test_p) }),
            could);
        })))));
  }

  /* What a score or metric comparison leaves out: each side's errored attempts with no score (as
     record/figures.errored_words and fieldErrors say); nothing with none. */
  function erroredLeftOut(c, f, name) {
    var gone = f.errored_left_out;
    if (!gone || typeof gone !== "object") return null;
    var left = [["a", c.a], ["b", c.b]].filter(function (p) { return typeof gone[p[0]] === "number" && gone[p[0]] > 0; })
      .map(function (p) { return p[1] + "'s " + plural(gone[p[0]], "errored attempt"); });
    return left.length ? el("span", { class: "sub", "data-testid": "cmp-metric-errored",
      text: "left out, " + left.join(" and ") + " (no " + (name === undefined || name === "score" ? "score" : name + " score") +
        "; the pass-rate comparison counts them as failures)" }) : null;
  }

  /* A table cell of what a paired comparison could detect (80% power), with how it was found. */
  function detectCell(d, testid) {
    if (!d || typeof d.value !== "number") return el("td", { class: "r num", "data-testid": testid, text: "n/a" });
    return el("td", { class: "r num", "data-testid": testid },
      d.value > 1 ? "none within 100 points" : "\u00b1" + Math.round(d.value * 100) + " points",
      el("span", { class: "sub", text: "80% power, " + detectableHow(d) + (d.sd_from ? ", spread from " + d.sd_from : "") }));
  }

  /* Per-field paired comparison: the known figures in fixed columns, anything else after them. */
  function fieldComparison(c) {
    var fields = c.fields;
    if (!fields || typeof fields !== "object") return null;
    var paths = Object.keys(fields).sort();
    if (!paths.length) return null;
    var known = ["cases", "a_wins", "b_wins", "ties", "mean_difference", "mean_difference_ci", "sign_test_p", "detectable_difference"];
    var extra = [];
    paths.forEach(function (p) {
      var f = fields[p];
      if (f && typeof f === "object") Object.keys(f).forEach(function (k) { if (known.indexOf(k) < 0 && extra.indexOf(k) < 0) extra.push(k); });
    });
    function cellText(k, v) {
      if (v === null || v === undefined) return "n/a";
      if (typeof v === "number") {
        if (/(^|_)p$|p_value|(^|_)p_/.test(k)) return fmtP(v);
        if (/rate|accuracy/.test(k)) return fmtRate(v);
        if (/diff/.test(k)) return fmtSigned(v);
        return fmtNum(v, 3);
      }
      if (Array.isArray(v)) return v.map(function (x) { return typeof x === "string" ? flagWords(x) : JSON.stringify(x); }).join(" ");
      if (typeof v === "object") return ciRange(v) || JSON.stringify(v);
      return String(v);
    }
    var heads = ["field", "cases", c.a + " better", c.b + " better", "ties", "mean difference, points (95% interval)", "sign test p",
      "could detect"].concat(extra.map(function (k) { return k.replace(/_/g, " "); }));
    var fieldFlags = Array.isArray(c.field_flags) ? c.field_flags : [];
    return el("details", { class: "field-cmp", open: paths.length <= 12 },
      el("summary", { class: "muted", text: "Per field (" + plural(paths.length, "field") + ")" }),
      fieldFlags.length ? el("p", { class: "muted small", "data-testid": "cmp-field-flags" }, mark("warn", "caution"), " " + fieldFlags.map(flagWords).join("; ")) : null,
      fieldErrors(c) ? el("p", { class: "muted small", "data-testid": "cmp-field-errors" }, mark("warn", "caution"), " " + fieldErrors(c)) : null,
      el("div", { class: "table-wrap" }, el("table", { "data-testid": "cmp-fields" },
        el("thead", null, el("tr", null, heads.map(function (h, i) { return el("th", { class: i ? "r" : null, text: h }); }))),
        el("tbody", null, paths.map(function (p) {
          var f = fields[p] || {};
          var diff = typeof f.mean_difference === "number" ? fmtSigned(f.mean_difference) : "n/a";
          var range = ciRange(f.mean_difference_ci);
          return el("tr", { "data-testid": "cmp-field-" + p },
            el("td", null, el("code", { text: p })),
            ["cases", "a_wins", "b_wins", "ties"].map(function (k) { return el("td", { class: "r num", text: cellText(k, f[k]) }); }),
            el("td", { class: "r num" }, diff, range ? el("span", { class: "sub", text: range }) : null),
            el("td", { class: "r num", text: fmtP(f.sign_test_p) }),
            detectCell(f.detectable_difference, "cmp-field-detect"),
            extra.map(function (k) { return el("td", { class: "r num", text: cellText(k, f[k]) }); }));
        })))));
  }

  function notMeasuredSection() {
    var items = summary.not_measured;
    if (!Array.isArray(items) || !items.length) return null;
    return el("section", { "data-testid": "not-measured" },
      el("h2", null, "Not measured", el("span", { class: "muted", text: "what this report cannot tell you" })),
      el("ul", { class: "plain" }, items.map(function (it) {
        return el("li", null, el("strong", { text: String(it.what || "") }), it.why ? ": " + it.why : "");
      })));
  }

  /* The requests block in words (record/requests_text.py): what the run sent, how each request
     ended, what it spent against the budget; marked when a request failed, was lost in flight or
     had no price. */
  function requestsSection() {
    var req = DATA.requests;
    if (!req || !Array.isArray(req.lines) || !req.lines.length) return null;
    return el("section", { "data-testid": "requests", class: req.notable ? "notable" : null },
      el("h2", null, "Requests", el("span", { class: "muted", text: "every request the run sent, retries and judges included" })),
      el("ul", { class: "plain" }, req.lines.map(function (line) { return el("li", { text: String(line) }); })));
  }

  /* Agent tasks (summary.tasks): utility and attack success per variant with their intervals by
     case, and the egress tries each attempt's allowlist proxy refused. */
  function taskRate(r) {
    if (!r) return el("td", { class: "r num muted", text: "n/a" });
    var ci = r.ci && typeof r.ci.low === "number" && typeof r.ci.high === "number"
      ? fmtRate(r.ci.low) + "–" + fmtRate(r.ci.high) : null;
    return el("td", { class: "r num" }, fmtRate(r.value) + " (" + r.hits + "/" + r.attempts + ")",
      ci ? el("span", { class: "sub", text: ci }) : null);
  }
  function tasksSection() {
    var t = summary.tasks;
    if (!t || !t.variants) return null;
    var names = Object.keys(t.variants);
    if (!names.length) return null;
    var heads = ["variant", "mode", "benign utility", "utility under attack", "attack success", "errors",
      "not assessed", "not isolated", "commands (mean)", "egress refused"];
    var parts = [el("h2", null, "Agent tasks",
      el("span", { class: "muted", text: t.method || "" })),
      el("div", { class: "table-wrap" }, el("table", null,
        el("thead", null, el("tr", null, heads.map(function (h, i) { return el("th", { class: i > 1 ? "r" : null, text: h }); }))),
        el("tbody", null, names.map(function (name) {
          var v = t.variants[name], per = v.per_attempt || {};
          var commands = per.commands && typeof per.commands.mean === "number" ? per.commands.mean.toFixed(1) : "unknown";
          var egress = per.egress_refused;
          var refused = egress && egress.known_count ? String(egress.known_subtotal) : "unknown";
          return el("tr", { "data-testid": "task-" + name },
            el("td", { text: name }), el("td", { text: v.mode }), taskRate(v.benign_utility),
            taskRate(v.utility_under_attack), taskRate(v.attack_success_rate),
            el("td", { class: "r num", text: String(v.errors) }), el("td", { class: "r num", text: String(v.not_assessed) }),
            el("td", { class: "r num", text: String(v.not_isolated_attempts) }), el("td", { class: "r num", text: commands }),
            el("td", { class: "r num", "data-testid": "task-egress-" + name, text: refused }));
        }))))];
    names.forEach(function (name) {  // statistics 20: the calls a sub-agent made and those denied (never executed)
      var per = t.variants[name].per_attempt || {};
      [["denied_tool_calls", " denied (attempted, never executed)"], ["subagent_tool_calls", " made by a sub-agent"]].forEach(function (k) {
        var f = per[k[0]];
        if (f && f.known_subtotal) parts.push(el("p", { class: "muted", "data-testid": "task-" + k[0] + "-" + name,
          text: name + ": " + f.known_subtotal + " tool call" + (f.known_subtotal === 1 ? "" : "s") + k[1] + " over " +
            f.known_count + " attempt" + (f.known_count === 1 ? "" : "s") }));
      });
    });
    var refusedList = DATA.egress_refused || [];
    if (refusedList.length) {
      parts.push(el("h3", null, "Egress refused",
        el("span", { class: "muted", text: "hosts the allowlist proxy refused, per attempt" })));
      parts.push(el("ul", { class: "plain", "data-testid": "egress-refused" }, refusedList.map(function (e) {
        return el("li", null, el("strong", { text: e.case + " · " + e.variant + " · run " + e.run }),
          ": " + e.refused + " refused (" + (e.hosts || []).join(", ") + ")");
      })));
    }
    return el("section", { "data-testid": "tasks" }, parts);
  }

  // What a judge spent (a pairwise comparison's usage), unknown said as such, never 0.
  function judgeUsageWords(u) {
    function said(key, fmt) {
      var m = u[key];
      if (!m || ((m.total === null || m.total === undefined) && !m.known_count)) return "unknown";
      if (m.total === null || m.total === undefined) return "unknown (at least " + fmt(m.known_subtotal) + " known, " + m.unknown_count + " unknown)";
      return fmt(m.total);
    }
    function count(n) { return Number(n).toLocaleString("en-US", { maximumFractionDigits: 0 }); }
    function usd(c) { return String(Number(Number(c).toPrecision(6))); }
    return "judge " + said("requests", count) + " requests, tokens " + said("input_tokens", count) + " in / " +
      said("output_tokens", count) + " out, cost USD " + said("cost_usd", usd);
  }

  function judgesSection() {
    var j = summary.judges, agree = summary.judge_agreement;
    if (!j && !agree) return null;
    var parts = [el("h2", null, "Model-graded evaluation",
      el("span", { class: "muted", text: "judge usage counted apart from the subjects'; a judge failure is not assessed, never a pass or a fail" }))];
    if (j && j.variants) {
      var names = Object.keys(j.variants);
      parts.push(el("div", { class: "table-wrap" }, el("table", null,
        el("thead", null, el("tr", null, ["variant", "judged", "judge failures", "no majority", "self-agreement", "judge requests", "judge cost (USD)"]
          .map(function (h, i) { return el("th", { class: i ? "r" : null, text: h }); }))),
        el("tbody", null, names.map(function (n) {
          var v = j.variants[n] || {}, u = v.usage || {};
          return el("tr", { "data-testid": "judge-" + n },
            el("td", { text: n }),
            el("td", { class: "r num", text: fmtNum(v.judged) }),
            el("td", { class: "r num", "data-testid": "judge-failures-" + n, text: fmtNum(v.judge_failures) }),
            el("td", { class: "r num", "data-testid": "judge-no-majority-" + n, text: fmtNum(v.no_majority || 0) }),
            el("td", { class: "r num", text: v.self_agreement === null || v.self_agreement === undefined ? "n/a" : fmtRate(v.self_agreement) }),
            // no grade of the variant asked the judge anything (pairwise usage is the pair's): a known 0
            Object.keys(u).length ? measureCell("judge-" + n, "requests", u.requests, 0) : el("td", { class: "r num", text: "0" }),
            Object.keys(u).length ? measureCell("judge-" + n, "cost_usd", u.cost_usd, 4) : el("td", { class: "r num", text: "0" }));
        })))));
      var choiceRows = [];
      names.forEach(function (n) {
        var cs = j.variants[n].choices || {};
        Object.keys(cs).forEach(function (label) {
          var c = cs[label] || {}, counts = c.counts || {};
          choiceRows.push(el("tr", { "data-testid": "choices-" + n + "-" + label }, el("td", { text: n }), el("td", { text: label }),
            el("td", { "data-testid": "choice-counts-" + n, text: Object.keys(counts).map(function (k) { return k + ": " + counts[k]; }).join(", ") || "none" }),
            el("td", { class: "r num", "data-testid": "choice-none-" + n, text: fmtNum(c.no_choice) }),
            el("td", { class: "r num", text: fmtNum(c.attempts) })));
        });
      });
      if (choiceRows.length) {
        parts.push(el("h3", { text: "Judge's choices, recorded only (no score, no pass or fail; OpenAI Evals' counts/<choice>)" }), el("div", { class: "table-wrap" }, el("table", { "data-testid": "choice-counts" },
          el("thead", null, el("tr", null, ["variant", "grader", "attempts per choice", "no choice (judge failure, no majority)", "of attempts"].map(function (h, i) { return el("th", { class: i > 2 ? "r" : null, text: h }); }))),
          el("tbody", null, choiceRows))));
      }
      var rubricRows = [];
      names.forEach(function (n) {
        var rs = j.variants[n].rubric_scores || {};
        Object.keys(rs).forEach(function (scale) {
          var r = rs[scale] || {}, ci = r.ci;
          rubricRows.push(el("tr", { "data-testid": "rubric-" + n + "-" + scale }, el("td", { text: n }), el("td", { text: scale }),
            el("td", { class: "r num", "data-testid": "rubric-mean-" + n, text: typeof r.mean === "number" ? r.mean.toFixed(2) : "n/a" }),
            el("td", { class: "r num", "data-testid": "rubric-ci-" + n, text: ci && typeof ci.low === "number" ? ci.low.toFixed(2) + "\u2013" + ci.high.toFixed(2) : "n/a" }),
            el("td", { class: "r num", text: fmtNum(r.cases) + (r.small_sample ? " (small sample: fewer than 30 cases)" : "") })));
        });
      });
      if (rubricRows.length) {
        parts.push(el("h3", { text: "Rubric scores (mean over cases, each case's runs averaged first)" }), el("div", { class: "table-wrap" }, el("table", { "data-testid": "rubric-scores" },
          el("thead", null, el("tr", null, ["variant", "scale", "mean score", "95% interval (Student t by case)", "cases"].map(function (h, i) { return el("th", { class: i > 1 ? "r" : null, text: h }); }))),
          el("tbody", null, rubricRows))));
      }
      var dims = {};
      names.forEach(function (n) { Object.keys(j.variants[n].pointwise || {}).forEach(function (d) { dims[d] = true; }); });
      var dimNames = Object.keys(dims).sort();
      if (dimNames.length) {
        parts.push(el("h3", { text: "Blind pointwise scores (0-3, mean over cases)" }), el("div", { class: "table-wrap" }, el("table", null,
          el("thead", null, el("tr", null, el("th", { text: "dimension" }), names.map(function (n) { return el("th", { class: "r", text: n }); }))),
          el("tbody", null, dimNames.map(function (d) {
            return el("tr", null, el("td", { text: d }), names.map(function (n) {
              var x = (j.variants[n].pointwise || {})[d];
              return el("td", { class: "r num", "data-testid": "pointwise-" + n + "-" + d, text: typeof x === "number" ? x.toFixed(2) : "n/a" });
            }));
          })))));
      }
    }
    var items = [];
    ((j && j.dq) || []).forEach(function (q) {
      var range = q.ci && typeof q.ci.low === "number" ? " (95% CI " + (q.ci.low >= 0 ? "+" : "") + q.ci.low.toFixed(2) + " to " + (q.ci.high >= 0 ? "+" : "") + q.ci.high.toFixed(2) + ")" : "";
      items.push(el("li", { "data-testid": "dq-" + q.a + "-" + q.b }, el("strong", { text: "dQ " + q.a + " − " + q.b + ": " }),
        (q.dq >= 0 ? "+" : "") + q.dq.toFixed(2) + range + " on " + q.cases + " cases" +
        (Array.isArray(q.flags) && q.flags.length ? " (" + q.flags.join("; ") + ")" : q.small_sample ? " (small sample: fewer than 30 cases)" : "")));
    });
    ((j && j.pairwise) || []).forEach(function (w) {
      items.push(el("li", { "data-testid": "pairwise-" + w.a + "-" + w.b }, el("strong", { text: "pairwise " + w.a + " vs " + w.b + ": " }),
        w.a_wins + " wins, " + w.b_wins + " losses, " + w.ties + " ties over " + w.cases + " cases; position consistency " +
        (w.position_consistency === null || w.position_consistency === undefined ? "n/a" : fmtRate(w.position_consistency)) +
        " (a verdict that flips when the order is swapped counts as a tie)" +
        (Array.isArray(w.flags) && w.flags.length ? "; " + w.flags.join("; ") : "") + (w.usage && Object.keys(w.usage).length ? "; " + judgeUsageWords(w.usage) : ""),
        // why its comparisons went unjudged (a refusal in the judge's words, a timeout, no majority)
        ((DATA.pairwise_failures || {})[w.a + "\u0000" + w.b] || []).length ? el("ul", { "data-testid": "pairwise-unjudged-" + w.a + "-" + w.b },
          DATA.pairwise_failures[w.a + "\u0000" + w.b].map(function (why) { return el("li", { text: "not assessed: " + why }); })) : null));
    });
    if (items.length) parts.push(el("ul", { class: "plain" }, items));
    var agreeWords = DATA.agreement;  // the same sentences as the Markdown and the terminal
    if (agree && agreeWords) {
      parts.push(el("h3", { text: "Judge agreement with human reviews" }), el("div", { class: "table-wrap" }, el("table", { "data-testid": "judge-confusion" },
        el("thead", null, el("tr", null, ["judge verdict", "human pass", "human fail"].map(function (h, i) { return el("th", { class: i ? "r" : null, text: h }); }))),
        el("tbody", null, (agreeWords.confusion || []).map(function (row) {
          return el("tr", null, el("td", { text: row[0] }), el("td", { class: "r num", text: fmtNum(row[1]) }), el("td", { class: "r num", text: fmtNum(row[2]) }));
        })))), el("ul", { class: "plain", "data-testid": "judge-agreement" },
        (agreeWords.lines || []).map(function (line) { return el("li", { text: line }); })));
    }
    return el("section", { "data-testid": "judges" }, parts);
  }

  function gatesSection() {
    var gates = DATA.gates || [];
    if (!gates.length) return null;
    return el("section", { "data-testid": "gates" },
      el("h2", null, "Gates"),
      el("div", { class: "table-wrap" }, el("table", null,
        el("thead", null, el("tr", null, ["", "gate", "variant", "threshold", "value", "description"].map(function (h) { return el("th", { text: h }); }))),
        el("tbody", null, gates.map(function (g, i) {
          // a gate on a derived metric the report shows as a number (over totals, aggregate sum, or
          // one whose value or interval leaves 0..1) is one too: stats/gates.derived_is_number
          function derivedNumber(g) {
            var sv = ((summary.variants || {})[g.variant]) || {}, f = (sv.derived_metrics || {})[g.metric];
            if (!f || typeof f !== "object") return false;  // a derived metric never takes a built-in figure's name
            if (f.unit === "share" || f.unit === "number") return f.unit === "number";  // its definition's (version 21)
            var ci = f.ci || {};
            return f.aggregate === "sum" || ![f.value, ci.low, ci.high].every(function (x) { return typeof x !== "number" || (x >= 0 && x <= 1); });
          }
          // a derived metric whose definition makes it a share reads as one, whatever its value and floor
          function derivedShare(g) {
            var f = ((((summary.variants || {})[g.variant]) || {}).derived_metrics || {})[g.metric];
            return g.gate === "fail-under-metric" && !!f && typeof f === "object" && f.unit === "share";
          }
          // a share (a pass rate; a metric, pass@k, score or reducer floor within 0..1 whose value is
          // too) reads as a percentage, as the gate's description and stats/gates.metric_gates write it
          var isRate = typeof g.threshold === "number" && g.threshold <= 1 && (g.gate || "").indexOf("rate") >= 0 || g.gate === "fail-under" ||
            (g.gate === "fail-under-metric" && typeof g.threshold === "number" && g.threshold >= 0 && g.threshold <= 1 &&
             (typeof g.value !== "number" || (g.value >= 0 && g.value <= 1)) && !derivedNumber(g)) || derivedShare(g);
          var show = function (v) { return v === null || v === undefined ? "n/a" : typeof v === "number" && isRate ? fmtRate(v) : typeof v === "number" ? fmtNum(v) : String(v); };
          // a baseline gate: the change of rates and the drop allowed, in points as its description says them
          var baseline = g.gate === "baseline" || g.gate === "baseline-fields";
          var threshold = baseline && typeof g.threshold === "number" ? "allowed drop " + (g.threshold * 100).toFixed(1) + " points" : show(g.threshold);
          var value = baseline && typeof g.value === "number" ? fmtSigned(g.value) + " points" : show(g.value);
          return el("tr", { "data-testid": "gate-row", "data-passed": g.passed ? "true" : "false" },
            el("td", null, mark(g.passed ? "ok" : "bad", g.passed ? "passed" : "failed"), el("span", { class: "sr", text: g.passed ? " passed" : " failed" })),
            el("td", { text: g.gate || "" }), el("td", { text: g.variant || "" }),
            el("td", { class: "num", text: threshold }), el("td", { class: "num", text: value }),
            el("td", { text: g.description || "" }));
        })))));
  }

  function fieldsSection() {
    var paths = [];
    variants.forEach(function (name) {
      Object.keys((VS[name] || {}).field_accuracy || {}).forEach(function (p) { if (paths.indexOf(p) < 0) paths.push(p); });
    });
    var unknown = DATA.fields_unknown || {};
    if (!paths.length) {  /* every attempt errored: field accuracy unknown, said, never left out */
      var said = variants.filter(function (name) { return unknown[name]; });
      if (!said.length) return null;
      return el("section", { "data-testid": "field-accuracy" }, el("h2", null, "Per-field accuracy"),
        el("ul", null, said.map(function (name) { return el("li", { "data-testid": "fields-unknown-" + name, text: name + ": field accuracy " + unknown[name] }); })));
    }
    paths.sort();
    var labelW = 200, barW = 520, valueW = 70, barH = 14, gap = 3, groupGap = 12, top = 22;
    var groupH = variants.length * (barH + gap) - gap;
    var height = top + paths.length * (groupH + groupGap) + 4;
    var width = labelW + barW + valueW;
    var x = function (v) { return labelW + v * barW; };
    var g = [];
    [0, 0.25, 0.5, 0.75, 1].forEach(function (t) {
      g.push(svg("line", { class: "grid", x1: x(t), x2: x(t), y1: top - 4, y2: height - 4 }));
      g.push(svg("text", { class: "axis", x: x(t), y: 12, "text-anchor": t === 0 ? "start" : t === 1 ? "end" : "middle", text: (t * 100) + "%" }));
    });
    paths.forEach(function (p, pi) {
      var y0 = top + pi * (groupH + groupGap);
      var label = p.length > 30 ? p.slice(0, 29) + "\u2026" : p;
      g.push(svg("text", { x: labelW - 10, y: y0 + groupH / 2 + 4, "text-anchor": "end", "data-testid": "field-label-" + p },
        svg("title", { text: p }), label));
      variants.forEach(function (name, vi) {
        var r = ((VS[name] || {}).field_accuracy || {})[p];
        var y = y0 + vi * (barH + gap);
        var has = typeof r === "number";
        g.push(svg("rect", { x: labelW, y: y, width: barW, height: barH, rx: 3, fill: "var(--border-soft)" }));
        if (has) g.push(svg("rect", { x: labelW, y: y, width: Math.max(r * barW, 1.5), height: barH, rx: 3, fill: variantColor(vi) },
          svg("title", { text: name + " \u00b7 " + p + ": " + fmtRate(r) })));
        g.push(svg("text", { x: width - 4, y: y + barH - 3, "text-anchor": "end", class: "num", "data-testid": "field-acc-" + name + "-" + p,
          fill: has && r < 0.7 ? "var(--bad)" : null, text: has ? fmtRate(r) : "n/a" }));
      });
    });
    var chart = svg("svg", { class: "chart", viewBox: "0 0 " + width + " " + height, role: "img", "aria-label": "Per-field accuracy by variant", "data-testid": "field-chart" }, g);
    var legend = el("div", { class: "legend" }, variants.map(function (name, vi) { return el("span", null, swatch(vi), el("bdi", null, name)); }));
    return el("section", { "data-testid": "field-accuracy" },
      el("h2", null, "Per-field accuracy", el("span", { class: "muted", text: "share of graded fields that matched" })),
      overallFields(), legend, chart);
  }

  /* Overall field accuracy per variant: fields correct over fields graded, interval by case. */
  function overallFields() {
    var rows = variants.map(function (name) {
      var s = VS[name] || {}, fo = s.field_accuracy_overall, over = s.field_accuracy_over || {};
      var unknown = (DATA.fields_unknown || {})[name];
      if (!fo && unknown) return el("tr", { "data-testid": "fields-overall-" + name }, el("td", { text: name }),
        el("td", { class: "r", "data-testid": "fields-overall-value-" + name }, el("span", { class: "unknown", text: "unknown" })),
        el("td", { class: "r muted", text: "n/a" }), el("td", { class: "muted", text: unknown.replace(/^unknown: /, "") }));
      if (!fo) return null;
      var ci = fo.ci;
      var denom = fo.correct + "/" + fo.total + " fields" + (typeof over.graded_attempts === "number" ? " over " + plural(over.graded_attempts, "graded attempt") : "") +
        (over.errored_attempts ? "; " + over.errored_attempts + " errored, not graded" : "");
      return el("tr", { "data-testid": "fields-overall-" + name }, el("td", { text: name }),
        el("td", { class: "r num", "data-testid": "fields-overall-value-" + name, text: fmtRate(fo.value) }),
        el("td", { class: "r num", "data-testid": "fields-overall-ci-" + name, title: methodShort(ci) || "", text: ci && typeof ci.low === "number" ? fmtRate(ci.low) + "\u2013" + fmtRate(ci.high) : "n/a" }),
        el("td", { class: "muted", text: denom }));
    }).filter(Boolean);
    if (!rows.length) return null;
    var fieldsMethod = variants.map(function (name) { var fo = (VS[name] || {}).field_accuracy_overall; return fo ? methodShort(fo.ci) : null; }).filter(Boolean)[0];
    return el("div", { class: "table-wrap" }, el("table", { "data-testid": "fields-overall" },
      el("thead", null, el("tr", null, ["variant", "all fields", "95% interval (by case" + (fieldsMethod ? "; " + fieldsMethod : "") + ")", "over"].map(function (h, i) { return el("th", { class: i && i < 3 ? "r" : null, text: h }); }))),
      el("tbody", null, rows)));
  }

  /* Per document (case): fields correct / graded / accuracy over every run, worst first. */
  function documentsSection() {
    var docs = cases.filter(function (c) { return Array.isArray(c.fd); });
    if (!docs.length) return null;
    function acc(c) {
      var worst = 2;
      c.fd.forEach(function (x) { if (Array.isArray(x) && x[1]) worst = Math.min(worst, x[0] / x[1]); });
      return worst;
    }
    var sorted = docs.slice().sort(function (a, b) { return acc(a) - acc(b); });
    var limit = 200;
    var tbody = el("tbody");
    function fill(n) {
      tbody.replaceChildren();
      sorted.slice(0, n).forEach(function (c) {
        tbody.appendChild(el("tr", { "data-testid": "document-row", "data-case-id": c.id }, el("td", { class: "id", text: c.id }),
          variants.map(function (name, vi) {
            var x = c.fd[vi];
            var e = Array.isArray(c.fe) ? c.fe[vi] : 0;
            var errored = e ? e + " errored, not graded" : "";
            if (!Array.isArray(x) || !x[1]) return [el("td", { class: "r muted", "data-testid": "document-counts-" + name, text: errored || "n/a" }), el("td", { class: "r muted", text: "n/a" })];
            return [el("td", { class: "r num", "data-testid": "document-counts-" + name, text: x[0] + "/" + x[1] + (errored ? "; " + errored : "") }),
              el("td", { class: "r num", "data-testid": "document-accuracy-" + name, text: Math.round(100 * x[0] / x[1]) + "%" })];
          })));
      });
    }
    fill(limit);
    var more = sorted.length > limit ? el("button", { type: "button", "data-testid": "documents-more", text: "Show all " + sorted.length.toLocaleString("en-US") + " documents" }) : null;
    if (more) more.addEventListener("click", function () { fill(sorted.length); more.remove(); });
    return el("section", { "data-testid": "documents" },
      el("h2", null, "Per-document results", el("span", { class: "muted", text: "fields graded correct over fields graded, every graded run counted, runs that errored beside them; lowest accuracy first" })),
      el("div", { class: "table-wrap" }, el("table", { "data-testid": "documents-table" },
        el("thead", null, el("tr", null, el("th", { text: "document" }), variants.map(function (v) {
          return [el("th", { class: "r", text: v + " correct / total" }), el("th", { class: "r", text: v + " accuracy" })];
        }))), tbody)), more);
  }

  function categorySection() {
    var cats = [];
    variants.forEach(function (name) { Object.keys((VS[name] || {}).by_category || {}).forEach(function (c) { if (cats.indexOf(c) < 0) cats.push(c); }); });
    if (cats.length < 2) return null;
    cats.sort();
    return el("section", { "data-testid": "by-category" },
      el("h2", null, "By category"),
      el("div", { class: "table-wrap" }, el("table", null,
        el("thead", null, el("tr", null, el("th", { text: "category" }), variants.map(function (v) { return el("th", { class: "r", text: v }); }))),
        el("tbody", null, cats.map(function (cat) {
          return el("tr", null, el("td", { text: cat }), variants.map(function (v) {
            var b = ((VS[v] || {}).by_category || {})[cat];
            if (!b) return el("td", { class: "r muted", text: "\u2014" });
            // with conversations the interval counts units (a conversation once): its small sample too
            var units = typeof b.units === "number" ? b.units : null;
            var extra = typeof b.cases === "number" ? ", " + b.cases + (b.cases === 1 ? " case" : " cases") +
              (units !== null ? " in " + units + (units === 1 ? " unit" : " units") : "") +
              ((units !== null ? units : b.cases) < 30 ? " (small sample)" : "") + (ciText(b.ci) ? "; " + ciText(b.ci) : "") : "";
            return el("td", { class: "r num", "data-testid": "category-" + v + "-" + cat },
              fmtRate(b.pass_rate), el("span", { class: "sub", text: b.passed + " / " + b.attempts + extra }));
          }));
        })))),
      el("p", { class: "muted", text: cats.some(function (cat) { return variants.some(function (v) {
          var b = ((VS[v] || {}).by_category || {})[cat]; return b && typeof b.units === "number"; }); }) ?
        "Each category's interval counts units, as the variant's: a conversation once, a case outside any as one; " +
        "a category of fewer than 30 units is a small sample and its interval is wide." :
        "Each category's interval has the case as its unit, as the variant's; a category of " +
        "fewer than 30 cases is a small sample and its interval is wide." }));
  }

  var MEASURES = [["input_tokens", "input tokens", 0], ["output_tokens", "output tokens", 0], ["cost_usd", "cost (USD)", 4], ["requests", "requests", 0]];
  // dollars as the Markdown and the Requests line write them: 4 places, and a cost above 0 that
  // would read 0.0000 to two significant digits (a known cost is never shown as 0)
  function fmtUsd(v) {
    if (typeof v !== "number") return fmtNum(v);
    if (v > 0 && v < 0.00005) return String(Number(v.toPrecision(2)));
    return v.toLocaleString("en-US", { minimumFractionDigits: 4, maximumFractionDigits: 4 });
  }
  function measureCell(name, key, m, digits) {
    var testid = "measure-" + name + "-" + key;
    var fmt = key === "cost_usd" ? fmtUsd : function (v) { return fmtNum(v, digits); };
    if (!m) return el("td", { class: "r", "data-testid": testid }, el("span", { class: "unknown", text: "unknown" }), el("span", { class: "sub", text: "not recorded" }));
    var known = m.known_count || 0, unknown = m.unknown_count || 0;
    if (m.total !== null && m.total !== undefined) {
      return el("td", { class: "r num", "data-testid": testid }, el("span", { text: fmt(m.total) }),
        el("span", { class: "sub", text: "all " + known.toLocaleString("en-US") + " measured" }));
    }
    var sub = known ? "known subtotal " + fmt(m.known_subtotal) + " from " + known.toLocaleString("en-US") + " \u00b7 " + unknown.toLocaleString("en-US") + " unknown"
      : "none of " + unknown.toLocaleString("en-US") + " measured";
    return el("td", { class: "r num", "data-testid": testid }, el("span", { class: "unknown", text: "unknown" }), el("span", { class: "sub", text: sub }));
  }
  function measurementsSection() {
    var rows = variants.map(function (name) {
      var m = (VS[name] || {}).measurements || {};
      var lat = m.latency_ms || {};
      function lcell(k, testid) {
        var v = lat[k];
        if (v === null || v === undefined) return el("td", { class: "r", "data-testid": testid }, el("span", { class: "unknown", text: "unknown" }));
        // over the known latencies only: when some are unknown, say over how many
        return lat.unknown_count ? el("td", { class: "r num", "data-testid": testid }, el("span", { text: v.toFixed(1) + " ms" }),
          el("span", { class: "sub", text: "of " + (lat.known_count || 0).toLocaleString("en-US") + " known \u00b7 " + lat.unknown_count.toLocaleString("en-US") + " unknown" }))
          : el("td", { class: "r num", "data-testid": testid, text: v.toFixed(1) + " ms" });
      }
      return el("tr", null, el("td", { text: name }),
        lcell("median", "measure-" + name + "-latency-median"), lcell("p95", "measure-" + name + "-latency-p95"),
        MEASURES.map(function (spec) { return measureCell(name, spec[0], m[spec[0]], spec[2]); }));
    });
    return el("section", { "data-testid": "measurements" },
      el("h2", null, "Measurements", el("span", { class: "muted", text: "unknown means not reported by the subject, never zero" })),
      el("div", { class: "table-wrap" }, el("table", null,
        el("thead", null, el("tr", null, el("th", { text: "variant" }), el("th", { class: "r", text: "latency median" }), el("th", { class: "r", text: "latency p95" }),
          MEASURES.map(function (spec) { return el("th", { class: "r", text: spec[1] }); }))),
        el("tbody", null, rows))));
  }

  /* ---------- case table: filtered, sorted, one page of rows at a time ---------- */

  var state = { query: "", failing: false, flaky: false, disagree: false, category: "", sort: "plan", page: 0 };
  var expanded = new Set();
  var view = [];
  var tbody, countNode, pagerInfo, prevBtn, nextBtn;

  function computeView() {
    var q = state.query.trim().toLowerCase();
    if (q && !haystack) buildHaystack();
    view = [];
    for (var i = 0; i < facts.length; i++) {
      var f = facts[i];
      if (state.failing && !f.failing) continue;
      if (state.flaky && !f.flaky) continue;
      if (state.disagree && !f.disagree) continue;
      if (state.category && (state.category === "\u0000none" ? f.category !== "" : f.category !== state.category)) continue;
      if (q && haystack[i].indexOf(q) < 0) continue;
      view.push(i);
    }
    if (state.sort === "failures") view.sort(function (a, b) { return facts[b].failures - facts[a].failures || a - b; });
    else if (state.sort === "id") view.sort(function (a, b) { var x = cases[a].id, y = cases[b].id; return x < y ? -1 : x > y ? 1 : a - b; });
  }

  function caseRow(i) {
    var c = cases[i], f = facts[i];
    var open = expanded.has(i);
    var tr = el("tr", { class: "row" + (open ? " open" : ""), "data-testid": "case-row", "data-case-id": c.id, "aria-expanded": open ? "true" : "false" },
      el("td", null, el("button", { class: "expander", type: "button", "aria-label": "show details", text: "\u25b6" })),
      el("td", { class: "id", text: c.id }),
      el("td", { class: "muted", text: c.cat || "" }),
      f.per.map(function (t, vi) {
        var kind = !t.judged ? "none" : t.passed === t.judged ? "ok" : t.passed === 0 ? "bad" : "warn";
        return el("td", { "data-testid": "case-cell-" + variants[vi] },
          el("div", { class: "vcell" }, mark(kind), el("span", { class: "num", text: t.passed + "/" + t.judged }),
            t.runs.length > 1 ? el("span", { class: "dots" }, t.runs.map(function (a) { return el("span", { class: "dot " + a.s, title: "run " + a.r + ": " + (STATUS_WORDS[a.s] || a.s) }); })) : null,
            t.flaky ? el("span", { class: "tag", title: stabilityWords(t.passed, t.judged), text: "flaky" }) : null,
            t.errors ? el("span", { class: "tag err", text: plural(t.errors, "error") }) : null,
            t.interrupted ? el("span", { class: "tag err", title: "the run was stopped while these ran: outside the pass rate; scoreboard run --resume runs them again", text: t.interrupted + " interrupted" }) : null,
            t.unassessed ? el("span", { class: "tag", title: "no grader could judge these runs; outside the pass rate", text: t.unassessed + " not assessed" }) : null,
            t.notRun ? el("span", { class: "tag", text: t.notRun + " not run" }) : null,
            t.waiting ? el("span", { class: "tag", title: "in a provider batch that has not ended", text: "waiting on a batch" }) : null));
      }));
    tr.addEventListener("click", function (ev) {
      if (ev.target && ev.target.closest && ev.target.closest("a")) return;
      toggle(i, tr);
    });
    return tr;
  }

  function toggle(i, tr) {
    var next = tr.nextSibling;
    if (expanded.has(i)) {
      expanded.delete(i);
      if (next && next.getAttribute && next.getAttribute("data-detail-for") === String(i)) next.remove();
      tr.classList.remove("open");
      tr.setAttribute("aria-expanded", "false");
    } else {
      expanded.add(i);
      tr.parentNode.insertBefore(detailRow(i), next);
      tr.classList.add("open");
      tr.setAttribute("aria-expanded", "true");
    }
  }

  function renderRows() {
    var pages = Math.max(1, Math.ceil(view.length / PAGE_SIZE));
    if (state.page >= pages) state.page = pages - 1;
    var start = state.page * PAGE_SIZE, end = Math.min(view.length, start + PAGE_SIZE);
    var frag = document.createDocumentFragment();
    for (var k = start; k < end; k++) {
      var i = view[k];
      frag.appendChild(caseRow(i));
      if (expanded.has(i)) frag.appendChild(detailRow(i));
    }
    if (!view.length) frag.appendChild(el("tr", null, el("td", { class: "empty", colspan: 3 + variants.length, text: "No case matches these filters." })));
    tbody.replaceChildren(frag);
    // both numbers written one way: "3,143 of 10,000 cases", never "3,143 of 10000 cases"
    countNode.textContent = (view.length === cases.length ? "" : view.length.toLocaleString("en-US") + " of ") +
      cases.length.toLocaleString("en-US") + (cases.length === 1 ? " case" : " cases");
    countNode.setAttribute("data-count", String(view.length));
    pagerInfo.textContent = view.length ? "rows " + (start + 1).toLocaleString("en-US") + "\u2013" + end.toLocaleString("en-US") + " \u00b7 page " + (state.page + 1) + " of " + pages : "";
    prevBtn.disabled = state.page === 0;
    nextBtn.disabled = state.page >= pages - 1;
  }

  function refresh() { state.page = 0; computeView(); renderRows(); }

  function casesSection() {
    var cats = [], hasNone = false;
    cases.forEach(function (c) { if (c.cat) { if (cats.indexOf(c.cat) < 0) cats.push(c.cat); } else hasNone = true; });
    cats.sort();
    var search = el("input", { type: "search", placeholder: "Search id, output or expected text\u2026", "aria-label": "search cases", "data-testid": "case-search" });
    var timer = null;
    search.addEventListener("input", function () {
      clearTimeout(timer);
      timer = setTimeout(function () { state.query = search.value; refresh(); }, cases.length > 2000 ? 200 : 60);
    });
    function check(key, label, testid) {
      var box = el("input", { type: "checkbox", "data-testid": testid });
      box.addEventListener("change", function () { state[key] = box.checked; refresh(); });
      return el("label", null, box, label);
    }
    var catSel = el("select", { "aria-label": "category", "data-testid": "filter-category" },
      el("option", { value: "", text: "All categories" }),
      cats.map(function (c) { return el("option", { value: c, text: c }); }),
      hasNone && cats.length ? el("option", { value: "\u0000none", text: "(no category)" }) : null);
    catSel.addEventListener("change", function () { state.category = catSel.value; refresh(); });
    var sortSel = el("select", { "aria-label": "order", "data-testid": "case-sort" },
      el("option", { value: "plan", text: "Plan order" }), el("option", { value: "failures", text: "Most failures first" }), el("option", { value: "id", text: "Case id" }));
    sortSel.addEventListener("change", function () { state.sort = sortSel.value; refresh(); });
    countNode = el("span", { class: "count num", "data-testid": "case-count" });
    var toolbar = el("div", { class: "toolbar" }, search,
      check("failing", "Failing only", "filter-failing"),
      check("flaky", "Flaky only", "filter-flaky"),
      variants.length > 1 ? check("disagree", "Variants disagree", "filter-disagree") : null,
      cats.length ? catSel : null, sortSel, countNode);
    tbody = el("tbody", { "data-testid": "case-rows" });
    var table = el("table", { class: "cases" },
      el("thead", null, el("tr", null, el("th", { style: "width:28px" }), el("th", { text: "case" }), el("th", { text: "category" }),
        variants.map(function (v, vi) { return el("th", null, el("span", { class: "vcell" }, swatch(vi), el("bdi", null, v))); }))),
      tbody);
    prevBtn = el("button", { type: "button", "data-testid": "pager-prev", text: "\u2190 Previous" });
    nextBtn = el("button", { type: "button", "data-testid": "pager-next", text: "Next \u2192" });
    pagerInfo = el("span", { class: "muted num", "data-testid": "pager-info" });
    prevBtn.addEventListener("click", function () { if (state.page > 0) { state.page--; renderRows(); } });
    nextBtn.addEventListener("click", function () { state.page++; renderRows(); });
    return el("section", { "data-testid": "cases" },
      el("h2", null, "Cases", el("span", { class: "muted", text: "click a row for outputs, grader reasons and field diffs" })),
      toolbar, el("div", { class: "table-wrap" }, table), el("div", { class: "pager" }, pagerInfo, prevBtn, nextBtn));
  }

  /* ---------- case detail, built only when a row is opened ---------- */

  function detailRow(i) {
    var c = cases[i], f = facts[i];
    var panes = [];
    var exp = el("div", { class: "pane", "data-testid": "expected-pane" }, el("h3", { text: "Expected" }));
    if (c.x === undefined) exp.appendChild(el("p", { class: "muted", text: "No expected answer (graded by other means)." }));
    else if (isOmitted(c.x)) exp.appendChild(valueNode(c.x));
    else exp.appendChild(el("pre", { class: "text", text: valueText(c.x) }));
    panes.push(exp);
    f.per.forEach(function (t, vi) { panes.push(variantPane(c, t, vi)); });
    var grid = el("div", { class: "detail-grid" }, panes);
    grid.style.setProperty("--cols", String(panes.length));
    var input = null;
    if (c["in"] !== undefined) {
      input = el("details", { class: "input" }, el("summary", { text: "Input" }),
        isOmitted(c["in"]) ? valueNode(c["in"]) : el("pre", { class: "text", text: valueText(c["in"]) }));
    }
    /* each tag isolated (<bdi>): a direction override in one cannot reorder the others */
    var meta = c.tags && c.tags.length ? el("p", { class: "muted small" }, "tags: ",
      c.tags.map(function (t, k) { return [k ? ", " : null, el("bdi", null, String(t))]; })) : null;
    return el("tr", { class: "detail", "data-testid": "case-detail", "data-detail-for": String(i) },
      el("td", { colspan: 3 + variants.length }, meta, input, grid));
  }

  function variantPane(c, t, vi) {
    var name = variants[vi];
    var pane = el("div", { class: "pane", "data-testid": "variant-pane-" + name });
    pane.appendChild(el("h3", null, swatch(vi), el("bdi", null, name),
      t.judged ? el("span", { class: "muted small", "data-testid": "case-stability", text: stabilityWords(t.passed, t.judged) }) : null));
    if (t.total > t.runs.length) {
      pane.appendChild(el("p", { class: "muted small", "data-testid": "runs-omitted",
        text: t.runs.length + " of " + plural(t.total, "run") + " shown here; the JSON report holds the others." }));
    }
    if (!t.runs.length) { pane.appendChild(el("p", { class: "muted", text: t.total ? "No attempt of this case is on this page." : "No attempt recorded." })); return pane; }
    var body = el("div");
    var chosen = 0;
    for (var k = 0; k < t.runs.length; k++) { if (FAILED[t.runs[k].s]) { chosen = k; break; } }
    if (t.runs.length > 1) {
      var tabs = el("div", { class: "runtabs", role: "tablist" });
      t.runs.forEach(function (a, k) {
        var b = el("button", { type: "button", role: "tab", "aria-selected": k === chosen ? "true" : "false", "data-testid": "run-tab" },
          el("span", { class: "dot " + a.s }), "run " + a.r);
        b.addEventListener("click", function (ev) {
          ev.stopPropagation();
          Array.prototype.forEach.call(tabs.children, function (x) { x.setAttribute("aria-selected", "false"); });
          b.setAttribute("aria-selected", "true");
          body.replaceChildren(attemptView(a));
        });
        tabs.appendChild(b);
      });
      pane.appendChild(tabs);
    }
    body.appendChild(attemptView(t.runs[chosen]));
    pane.appendChild(body);
    return pane;
  }

  function attemptView(a) {
    var box = el("div", { "data-testid": "attempt" });
    box.appendChild(el("div", null, statusBadge(a.s), a.os ? el("span", { class: "muted small", text: " output status: " + a.os }) : null));
    if (a.e) box.appendChild(el("div", { class: "error-box", "data-testid": "attempt-error", lines: true, text: a.e }));
    if (a.o !== undefined && a.o !== null) {
      var pretty = prettyOutput(a.o);
      box.appendChild(el("pre", { class: "text", "data-testid": "attempt-output", title: pretty.json ? "JSON output, pretty-printed" : null, text: pretty.text }));
    } else if (a.j !== undefined) {
      box.appendChild(isOmitted(a.j) ? valueNode(a.j) : el("pre", { class: "text", "data-testid": "attempt-output", text: valueText(a.j) }));
    } else if (a.s !== "not-run") {
      box.appendChild(el("p", { class: "muted", text: "No output." }));
    }
    if (a.rd) box.appendChild(renderedView(a.rd));
    if (a.t !== undefined) {
      box.appendChild(el("details", null, el("summary", { class: "muted small", text: "tool calls" }), isOmitted(a.t) ? valueNode(a.t) : el("pre", { class: "text", text: valueText(a.t) })));
    }
    (a.g || []).forEach(function (g) {
      var kind = g.p === true ? "ok" : g.p === false ? "bad" : "none";
      var said = g.ro !== undefined ? (g.ro ? "recorded only: chose " + g.ro : "recorded only: no choice") :
        g.p === true ? "passed" : g.p === false ? "failed" : "not assessed";
      var gradeBox = el("div", { class: "grade", "data-testid": "grade" },
        el("div", { class: "gh" }, mark(kind, said), el("span", { text: g.n || "grader" }),
          typeof g.sc === "number" ? el("span", { class: "muted small num", text: "score " + fmtNum(g.sc, 3) }) : null),
        g.re ? el("div", { class: "reason", "data-testid": "grade-reason", text: g.re }) : null);
      if (g.f && g.f.length) gradeBox.appendChild(fieldDiff(g.f));
      box.appendChild(gradeBox);
    });
    var m = a.m || {};
    var parts = [];
    if (typeof m.latency_ms === "number") parts.push(m.latency_ms.toFixed(1) + " ms");
    parts.push("tokens in " + fmtNum(m.input_tokens) + " / out " + fmtNum(m.output_tokens));
    parts.push("cost " + (typeof m.cost_usd === "number" ? "$" + fmtUsd(m.cost_usd) : "unknown"));
    if (a.s !== "not-run") box.appendChild(el("div", { class: "measure-line num", text: parts.join(" \u00b7 ") }));
    return box;
  }

  /* visual work (issue 17): the rendered page as thumbnails that open full size */
  var SHOT_PATH = /^[A-Za-z0-9._-]+\/screenshots\/[0-9a-f]{64}\.png$/;
  function renderedView(rd) {
    var facts = ["rendered as " + (rd.k || "nothing"), rd.ce + " console error(s)", rd.bl + " blocked request(s)"];
    if (rd.blank) facts.push("blank page");
    if (rd.err) facts.push(rd.err);
    var box = el("div", { class: "rendered", "data-testid": "rendered" }, el("div", { class: "muted small", text: facts.join(" \u00b7 ") }));
    (rd.sh || []).forEach(function (sh) {
      var label = (sh.fp ? "full page" : "at " + sh.m + " ms") + " \u00b7 sha256 " + sh.h.slice(0, 12) + "\u2026";
      var pic = sh.th ? el("img", { src: sh.th, alt: "screenshot " + label, "data-testid": "thumbnail", style: "max-width:240px;border:1px solid #ccc;display:block" })
        : el("span", { class: "muted small", text: "(no thumbnail)" });
      var link = sh.p && SHOT_PATH.test(sh.p) ? el("a", { href: sh.p, target: "_blank", rel: "noopener", title: "open full size" }, pic) : pic;
      box.appendChild(el("figure", { style: "display:inline-block;margin:6px" }, link, el("figcaption", { class: "muted small", text: label })));
    });
    return box;
  }
  function leadSection() {
    if (!DATA.lead || !DATA.lead.length) return null;
    return el("section", { "data-testid": "lead" }, el("h2", { text: "Quality first" }),
      el("ul", null, DATA.lead.map(function (line) { return el("li", { text: line }); })));
  }

  function fieldDiff(fields) {
    return el("table", { class: "diff", "data-testid": "field-diff" },
      el("thead", null, el("tr", null, el("th", { text: "field" }), el("th", { text: "expected" }), el("th", { text: "actual" }), el("th"))),
      el("tbody", null, fields.map(function (f) {
        var kept = f.x !== undefined || f.y !== undefined;
        return el("tr", { class: f.ok ? "" : "miss", "data-testid": "field-diff-row", "data-passed": f.ok ? "true" : "false", title: f.re || null },
          el("td", { text: f.p }),
          kept ? diffCell(f.x, f.ok) : el("td", { class: "omitted", text: "matches" }),
          f.ya ? el("td", { class: "omitted", "data-testid": "field-absent", text: "nothing (" + f.ya + ")" })
            : kept ? diffCell(f.y, f.ok) : el("td", { class: "omitted", text: "matches" }),
          el("td", null, mark(f.ok ? "ok" : "bad", f.ok ? "match" : "mismatch")));
      })));
  }

  /* ---------- page ---------- */

  var sections = [header(), leadSection(), summarySection(), comparisonSection(), judgesSection(), tasksSection(),
    notMeasuredSection(), requestsSection(), gatesSection(),
    fieldsSection(), documentsSection(), categorySection(), measurementsSection(), casesSection()];
  sections.forEach(function (s) { if (s) app.appendChild(s); });
  computeView();
  renderRows();
  document.documentElement.setAttribute("data-ready", "true");
})();
