// scoreboard history viewer: draws what the server computed (figures come from scoreboard's
// stats/ functions); every value from the store is set as text, never parsed as HTML, through
// scoreboardUnseen (unseen.js, loaded first): control and direction characters spelt as escapes,
// line ends kept only in a <pre> (an output, an input).
"use strict";

const shown = (node, text) => (node.localName === "pre" ? scoreboardUnseen.lines(text) : scoreboardUnseen.line(text));

const COLORS = ["#0969da", "#cf222e", "#1a7f37", "#8250df", "#bc4c00", "#1b7c83", "#6e7781", "#bf3989"];
let META = null;

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = shown(node, v);
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(shown(node, c)));
  }
  return node;
}

function svg(tag, attrs, ...children) {
  const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs || {})) if (v !== null && v !== undefined) node.setAttribute(k, String(v));
  for (const c of children.flat()) if (c !== null && c !== undefined) node.append(c instanceof Node ? c : document.createTextNode(shown(node, c)));
  return node;
}

const pct = (x) => (x === null || x === undefined ? "n/a" : (100 * x).toFixed(1) + "%");
const num = (x, d = 3) => (x === null || x === undefined ? "n/a" : Number(x).toPrecision(d));
// a p-value as every rendering writes it (stats.comparison.format_p): four decimals, or <0.0001
const pval = (p) => (p === null || p === undefined ? "n/a" : p < 0.00005 ? "<0.0001" : p.toFixed(4));
const pText = (p) => { const v = pval(p); return v.startsWith("<") ? "p" + v : "p=" + v; };
// a difference of two rates in points, as the reports write it (+46.7, -10.0)
const points = (x) => (x === null || x === undefined ? "n/a" : (x >= 0 ? "+" : "") + (100 * x).toFixed(1));
// an interval's method in words (the report's summary.methods; /api/meta carries them)
const methodWords = (m) => (m && META && META.methods && META.methods[m] ? META.methods[m] : m || "method not recorded");
// the smallest difference the paired t test would detect, in words (record.io.detectable_words)
function detectable(d, cases) {
  if (!d && typeof cases === "number" && cases < 2) return `not estimated: a paired test needs 2 or more shared cases, this comparison has ${cases}`;
  if (!d || d.value === null || d.value === undefined) return "n/a";
  const share = `${Math.round(100 * d.discordance)}% of cases`;
  const who = d.sd_from === "assumption" ? `the variants assumed to disagree on ${share} (they agreed on every case)` : `the variants disagreeing on ${share}`;
  const test = d.power_method ? `${d.test || "paired t"}, power ${d.power_method}, ${who}` : d.test || "paired t";
  const how = ` (80% power, ${test}; spread from ${d.sd_from})`;
  return (d.value > 1 ? "could not detect even a 100-point difference with this few cases" : `${(100 * d.value).toFixed(0)} points or more`) + how;
}
// a measurement nobody measured is unknown, never a number or a "?"
// what a paired test counted: units where a conversation's turns count once (as in the reports)
const counted = (n, unit) => `${n} ${unit === "conversation" ? "unit" : "case"}${n === 1 ? "" : "s"}`;
const known = (x, unit = "") => (x === null || x === undefined ? "unknown" : x + unit);
const short = (s) => (s ? String(s).slice(0, 10) : "");

// the cases a variant's interval is over (with conversations, the units it counts), a small
// sample said in words, as `scoreboard history` says them; nothing when the store holds no count
function overWords(f) {
  const small = (META && META.small_sample) || 30;
  const many = (n, one) => `${n} ${one}${n === 1 ? "" : "s"}`;
  if (!f || typeof f.cases !== "number") return "";
  if (typeof f.units === "number") {
    return `${many(f.cases, "case")}, ${many(f.units, "unit")} (a conversation counting once)` +
      (f.units < small ? `; small sample: fewer than ${small} units` : "");
  }
  return f.cases ? many(f.cases, "case") + (f.cases < small ? `; small sample: fewer than ${small} cases` : "") : "";
}

function rateText(f) {
  if (!f || f.pass_rate === null || f.pass_rate === undefined) return "n/a";
  const ci = f.ci_low !== null && f.ci_low !== undefined ? ` [${pct(f.ci_low)}–${pct(f.ci_high)}]` : "";
  return pct(f.pass_rate) + ci;
}

// Each render of a route is a generation: an answer that arrives once the user has moved on (back,
// forward, another link while a page loads) belongs to a page no longer shown and is dropped, or
// it drew that page over the one the address names.
let GENERATION = 0;
class Stale extends Error {}

async function api(path, options) {
  const generation = GENERATION;
  const response = await fetch(path, Object.assign({ credentials: "same-origin" }, options || {}));
  const body = await response.json().catch(() => ({ error: response.statusText }));
  // a read for a page left since (a write, a review, is said where it was made)
  if (generation !== GENERATION && !(options && options.method)) throw new Stale("left");
  if (!response.ok) throw new Error(body.error || response.statusText);
  return body;
}

// a part of the address as the text it encodes; one that is no percent-encoding is said
function decoded(part) {
  try {
    return decodeURIComponent(part);
  } catch (e) {
    throw new Error(`this address cannot be read: ${part.slice(0, 80)} is not percent-encoded text (open a link from the viewer)`);
  }
}

function route() {
  const hash = location.hash || "#/runs";
  const [path, query] = hash.slice(1).split("?");
  const parts = path.split("/").filter(Boolean).map(decoded);
  return { parts, params: new URLSearchParams(query || "") };
}

function go(parts, params) {
  const q = params && [...params.keys()].length ? "?" + params.toString() : "";
  location.hash = "#/" + parts.map(encodeURIComponent).join("/") + q;
}

function link(text, parts, params) {
  const q = params && [...params.keys()].length ? "?" + params.toString() : "";
  return el("a", { href: "#/" + parts.map(encodeURIComponent).join("/") + q, text });
}

function main(...children) {
  const m = document.getElementById("main");
  m.replaceChildren(...children.flat(Infinity).filter((c) => c !== null && c !== undefined && c !== false));
  return m;
}

function fail(error) {
  if (error instanceof Stale) return;  // a page left before its answer came: the next page draws
  main(el("div", { class: "error", role: "alert", text: String(error.message || error) }));
}

// ---------------------------------------------------------------- runs
async function runsPage(params, first) {
  if (!first) await readMeta();
  const form = el("form", { class: "filters", id: "run-filters" });
  const field = (name, label, input) => el("label", {}, label, input);
  const suiteSel = el("select", { name: "suite" }, el("option", { value: "", text: "all suites" }),
    META.suites.map((s) => el("option", { value: s.suite, text: `${s.suite} (${s.runs})` })));
  const status = el("select", { name: "status" }, ["", "completed", "stopped", "running", "interrupted", "waiting"].map((s) =>
    el("option", { value: s, text: s || "any status" })));
  const inputs = {
    suite: suiteSel, status,
    variant: el("input", { name: "variant", size: 10 }), tag: el("input", { name: "tag", size: 8 }),
    commit: el("input", { name: "commit", size: 9 }), since: el("input", { name: "since", type: "date" }),
    until: el("input", { name: "until", type: "date" }), search: el("input", { name: "search", type: "search", size: 16 }),
  };
  for (const [k, input] of Object.entries(inputs)) input.value = params.get(k) || "";
  form.append(field("suite", "suite", suiteSel), field("variant", "variant", inputs.variant),
    field("status", "status", status), field("since", "from", inputs.since), field("until", "to", inputs.until),
    field("tag", "tag", inputs.tag), field("commit", "git commit", inputs.commit),
    field("search", "search", inputs.search), el("button", { type: "submit", id: "run-filter", text: "Filter" }));
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const p = new URLSearchParams();
    for (const [k, input] of Object.entries(inputs)) if (input.value) p.set(k, input.value);
    go(["runs"], p);
  });
  const body = el("tbody", { id: "runs-body" });
  const table = el("table", { id: "runs" }, el("thead", {}, el("tr", {},
    ["", "started", "suite", "run", "status", "variants: pass rate [95% CI]", "commit", "tags", "attempts"].map((h) => el("th", { text: h })))), body);
  const compareBtn = el("button", { id: "compare-selected", type: "button", text: "Compare the two selected runs" });
  const more = el("button", { id: "runs-more", type: "button", text: "Load more" });
  const count = el("span", { class: "muted" });
  const methodNote = el("p", { class: "muted", id: "runs-method" });
  const methods = new Set();
  main(el("h1", { text: "Runs" }), form, el("p", {}, compareBtn, " ", count), table,
    methodNote, more);
  compareBtn.addEventListener("click", () => {
    const picked = [...body.querySelectorAll("input[type=checkbox]:checked")].map((c) => c.value);
    if (picked.length !== 2) { count.textContent = "select exactly two runs"; return; }
    go(["compare", picked[1], picked[0]]);  // older run as A
  });
  let cursor = null;
  async function load() {
    const q = new URLSearchParams(params);
    if (cursor) q.set("cursor", cursor);
    const page = await api("/api/runs?" + q.toString());
    for (const r of page.runs) {
      const variants = r.figures.map((f) => el("div", {}, el("b", { text: f.name }), ": ", rateText(f),
        overWords(f) ? el("span", { class: "muted over", text: ` (${overWords(f)})` }) : null));
      for (const f of r.figures) if (f.ci_method) methods.add(f.ci_method);
      body.append(el("tr", { "data-run": r.key },
        el("td", {}, el("input", { type: "checkbox", value: r.key, "aria-label": "select " + r.run_id })),
        el("td", { text: r.started_at || "" }),
        el("td", {}, link(r.suite, ["trends", r.suite])),
        el("td", {}, link(r.run_id, ["run", r.key])),
        el("td", { class: "status-" + r.status, text: r.status || "", title: r.note || "" }),
        // its gates as `history` says them: a run that failed CI is not one more "completed"
        el("td", {}, variants.length ? variants : r.variants.join(", "), (r.gates || []).map((g) =>
          el("div", { class: g.passed ? "ok gate" : "bad gate", text: `gate ${g.passed ? "passed" : "FAILED"}: ${g.description || g.gate}` }))),
        el("td", { title: r.git_commit || "", text: short(r.git_commit) + (r.git_dirty ? " (dirty)" : "") }),
        el("td", {}, r.tags.map((t) => el("span", { class: "pill", text: t }))),
        el("td", { text: r.attempts === null ? "unknown" : r.attempts + notRun(r.figures) })));
    }
    cursor = page.next;
    more.hidden = !cursor;
    count.textContent = `${body.children.length} run(s) shown`;
    methodNote.textContent = methods.size ? scoreboardUnseen.line("95% intervals: " + [...methods].map((m) => `${m}: ${methodWords(m)}`).join("; ")) : "";
  }
  more.addEventListener("click", () => load().catch(fail));
  await load();
}

// ---------------------------------------------------------------- one run
// the attempts a stop left unrun (the store keeps a record of each), said beside the count
function notRun(figures) {
  const n = figures.reduce((sum, f) => sum + (f.not_run ?? 0), 0);
  return n ? ` (${n} not run)` : "";
}

async function runPage(key, params) {
  const run = await api("/api/runs/" + encodeURIComponent(key));
  const variantsRows = run.figures.map((f) => el("tr", {},
    el("td", { text: f.name }), el("td", { class: "rate", text: rateText(f) }), el("td", { text: f.ci_method || "not recorded" }),
    // judged = passed + failed + errors, unknown (never 0) while any of them is not stored (a run under way);
    // the errors of not-graded cases are outside it (statistics version 7)
    el("td", { text: `${f.passed ?? "?"} / ${[f.passed, f.failed, f.errors].some((n) => n === null || n === undefined) ? "?" : f.passed + f.failed + f.errors - (f.errors_not_graded || 0)}` +
      (f.errors_not_graded ? ` (${f.errors_not_graded} ${f.errors_not_graded === 1 ? "error" : "errors"} of not-graded cases outside the rate)` : "") }),
    el("td", { class: "over", text: typeof f.cases === "number" ? overWords(f) || "0 cases" : "unknown" }),
    el("td", { class: f.errors ? "bad" : "", text: f.errors ?? "?" }),
    el("td", { class: f.unassessed ? "warn" : "", text: f.unassessed ?? "?" }),
    el("td", { class: f.not_run ? "warn" : "", text: f.not_run ?? "?" }),
    el("td", { text: f.field_accuracy === null ? "n/a" : `${pct(f.field_accuracy)} [${pct(f.fa_low)}–${pct(f.fa_high)}]` }),
    el("td", { text: f.cost_per_case === null ? "unknown" : "$" + num(f.cost_per_case, 3) })));
  const comparisons = ((run.summary || {}).comparisons || []).map((c) =>
    el("div", { class: "card" }, el("div", { text: c.headline }), el("ul", { class: "flags" }, c.flags.map((f) => el("li", { text: f })))));
  // the gates that judged the run and what it could not measure, as every report says them
  const gates = ((run.head || {}).gates || []).map((g) => el("li", { class: g.passed ? "ok" : "bad", "data-gate": g.gate },
    `${g.passed ? "passed" : "FAILED"}: ${g.description || g.gate}`));
  const notMeasured = ((run.summary || {}).not_measured || []).map((n) => el("li", { text: `${n.what}: ${n.why}` }));
  // record-only classify graders: the judge's choices counted per variant (OpenAI Evals' counts/<choice>)
  const choices = Object.entries(((run.summary || {}).judges || {}).variants || {}).flatMap(([v, jv]) =>
    Object.entries(jv.choices || {}).map(([label, c]) => el("li", { "data-choices": `${v}/${label}`, text:
      `${v}, ${label}: ${Object.entries(c.counts || {}).map(([k, n]) => `${k} ${n}`).join(", ") || "none"} of ${c.attempts} attempts; ` +
      `${c.no_choice} without a choice (judge failure or no majority); recorded only: no score, no pass or fail` })));
  const head = el("table", {}, el("tbody", {},
    [["suite", run.suite], ["run id", run.run_id], ["status", (run.status ?? "") + (run.note ? ` (${run.note})` : "")], ["started", run.started_at],
      ["finished", run.finished_at], ["git commit", (run.git_commit || "unknown") + (run.git_branch ? ` (${run.git_branch})` : "")],
      ["report", (run.report_path || "not written") + (run.report_state === "missing" ? " (not there now: deleted or moved since it was stored; the store keeps its rows, store verify needs the file)" : run.report_state === "changed" ? " (changed since it was stored: not the size recorded; scoreboard store verify checks it)" : "")], ["report SHA-256", run.report_sha256 || ""],
      ["attempts", `${run.attempts ?? "?"} of ${run.planned ?? "?"} planned` + notRun(run.figures)], ["recorded", `${run.source} at ${run.recorded_at}`],
      ["tags", run.tags.join(", ")]].map(([k, v]) => el("tr", {}, el("th", { text: k }), el("td", { text: v ?? "" })))));
  const others = el("span");
  const cmp = el("form", { class: "filters" }, el("label", {}, "compare with run", others));
  const m = main(el("h1", {}, "Run ", el("span", { id: "run-id", text: run.run_id }), " of ", link(run.suite, ["trends", run.suite])),
    head, el("h2", { text: "Variants" }),
    el("table", { id: "variant-figures" }, el("thead", {}, el("tr", {}, ["variant", "pass rate [95% CI]", "interval", "passed / judged", "cases", "errors", "not assessed", "not run", "field accuracy", "cost per case"].map((h) => el("th", { text: h })))), el("tbody", {}, variantsRows)),
    el("p", { class: "muted", id: "variant-methods", text: "95% intervals: " + ([...new Set(run.figures.map((f) => f.ci_method).filter(Boolean))].map((m) => `${m}: ${methodWords(m)}`).join("; ") || "method not recorded") }),
    gates.length ? el("h2", { text: "Gates" }) : null, gates.length ? el("ul", { id: "gates" }, gates) : null,
    choices.length ? el("h2", { text: "Judge's choices (recorded only)" }) : null, choices.length ? el("ul", { id: "choices" }, choices) : null,
    notMeasured.length ? el("h2", { text: "Not measured" }) : null, notMeasured.length ? el("ul", { id: "not-measured" }, notMeasured) : null,
    comparisons.length ? el("h2", { text: "Paired comparison in this run" }) : null, comparisons, cmp);
  api("/api/runs?suite=" + encodeURIComponent(run.suite) + "&limit=50").then((page) => {
    const sel = el("select", { id: "compare-with" }, el("option", { value: "", text: "choose a run" }),
      page.runs.filter((r) => r.key !== key).map((r) => el("option", { value: r.key, text: `${r.run_id} (${r.status})` })));
    sel.addEventListener("change", () => sel.value && go(["compare", sel.value, key]));
    others.replaceWith(sel);
  }).catch(fail);
  m.append(el("h2", { text: "Cases" }));
  await caseList(m, run, params);
}

async function caseList(m, run, params) {
  const variant = el("select", { name: "variant", "aria-label": "variant" }, el("option", { value: "", text: "any variant" }), run.figures.map((f) => el("option", { value: f.name, text: f.name })));
  const outcome = el("select", { name: "outcome", id: "outcome", "aria-label": "outcome" }, [["", "any outcome"], ["failing", "failing"], ["passing", "passing"], ["flaky", "flaky"], ["errors", "errors"], ["unjudged", "no verdict (not assessed or not run)"]].map(([o, t]) => el("option", { value: o, text: t })));
  const category = el("select", { name: "category", "aria-label": "category" }, el("option", { value: "", text: "any category" }), run.categories.map((c) => el("option", { value: c, text: c })));
  const search = el("input", { type: "search", name: "search", placeholder: "case id", "aria-label": "search case ids" });
  // the order of the list, kept by the server (a run of a million cases sorts as a small one); over
  // the variant chosen above, else every variant's attempts; an unknown value last either way
  const sort = el("select", { name: "sort", id: "case-sort", "aria-label": "sort cases" }, SORTS.map(([o, t]) => el("option", { value: o, text: t })));
  const controls = { variant, outcome, category, search, sort };
  for (const [k, input] of Object.entries(controls)) input.value = params.get(k) || "";
  const form = el("form", { class: "filters", id: "case-filters" }, variant, outcome, category, search, sort, el("button", { type: "submit", id: "case-filter", text: "Filter" }));
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const p = new URLSearchParams();
    for (const [k, input] of Object.entries(controls)) if (input.value) p.set(k, input.value);
    go(["run", run.key], p);
  });
  const names = run.figures.map((f) => f.name);
  const body = el("tbody", { id: "cases-body" });
  const more = el("button", { type: "button", id: "cases-more", text: "Load more" });
  const by = sortBy(params.get("sort"));
  const heads = ["case", "category", ...names].map((h, i) => el("th", { text: h, "aria-sort": i === 0 && by && by.name === "id" ? by.dir : null }));
  if (by && by.name !== "id") heads.push(el("th", { id: "sort-column", "aria-sort": by.dir, text: SORT_WORDS[by.name] }));
  m.append(form, el("table", { id: "cases" }, el("thead", {}, el("tr", {}, heads)), body), more);
  let cursor = null;
  async function load() {
    const q = new URLSearchParams(params);
    q.set("limit", "100");
    if (cursor !== null) q.set("cursor", cursor);
    const page = await api(`/api/runs/${encodeURIComponent(run.key)}/cases?` + q.toString());
    for (const c of page.cases) {
      body.append(el("tr", { "data-case": c.case_id }, el("td", {}, link(c.case_id, ["case", run.key, c.case_id])),
        el("td", { text: c.category || "" }),
        names.map((n) => {
          const v = c.variants[n];
          if (!v) return el("td", { class: "muted", text: "—" });
          const cls = !v.tries ? "muted" : v.hits === v.tries ? "ok" : v.hits === 0 ? "bad" : "warn";
          return el("td", { class: cls, text: `${v.hits}/${v.tries} passed` + (v.errors ? `, ${v.errors} ${v.errors === 1 ? "error" : "errors"}` : "") +
            (v.other ? ` (+${v.other} with no verdict: not assessed, not run or interrupted)` : "") });
        }), by && by.name !== "id" ? el("td", { class: "sort-value", text: sortValue(by.name, c.sort_value) }) : null));
    }
    cursor = page.next;
    more.hidden = cursor === null;
  }
  more.addEventListener("click", () => load().catch(fail));
  await load();
}

// the case list's orders (store/casesort.py): a leading "-" is descending
const SORT_WORDS = { pass_rate: "pass rate", change: "change since the previous run, points", latency: "mean latency", cost: "mean cost" };
const SORTS = [["", "plan order"], ["id", "case id, A to Z"], ["-id", "case id, Z to A"], ["pass_rate", "pass rate, lowest first"],
  ["-pass_rate", "pass rate, highest first"], ["change", "change since the previous run, largest drop first"],
  ["-change", "change since the previous run, largest gain first"], ["-latency", "latency, slowest first"], ["latency", "latency, fastest first"],
  ["-cost", "cost, costliest first"], ["cost", "cost, cheapest first"]];
function sortBy(value) {
  if (!value) return null;
  const name = value.replace(/^-/, "");
  return { name, dir: value.startsWith("-") ? "descending" : "ascending" };
}
function sortValue(name, v) {
  if (v === null || v === undefined) {
    return name === "change" ? "unknown (not in the previous run, another input there, or no verdict)" : name === "pass_rate" ? "no verdict" : "unknown";
  }
  if (name === "pass_rate") return pct(v);
  if (name === "change") return points(v);
  if (name === "latency") return `${num(v, 4)} ms`;
  return "$" + num(v, 3);
}

// ---------------------------------------------------------------- trends
function chart(title, series, opts) {
  const W = 760, H = 240, L = 48, R = 12, T = 22, B = 30;
  const names = Object.keys(series);
  const labels = [];
  for (const n of names) for (const p of series[n]) if (!labels.includes(p.x)) labels.push(p.x);
  labels.sort();
  let lo = opts.min, hi = opts.max;
  if (lo === undefined || hi === undefined) {
    const ys = names.flatMap((n) => series[n].flatMap((p) => [p.y, p.low, p.high])).filter((v) => v !== null && v !== undefined);
    // every value equal (a cost of $0 in every run): a unit's scale, not ticks of 2.50e-10
    lo = Math.min(0, ...ys); hi = Math.max(lo, ...ys);
    if (!(hi > lo)) hi = lo + 1;
  }
  const x = (label) => L + (labels.length <= 1 ? (W - L - R) / 2 : (labels.indexOf(label) * (W - L - R)) / (labels.length - 1));
  const y = (v) => T + (H - T - B) * (1 - (v - lo) / (hi - lo || 1));
  const root = svg("svg", { class: "chart", width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": title });
  root.append(svg("text", { x: L, y: 14 }, title));
  for (const t of [0, 0.25, 0.5, 0.75, 1]) {
    const v = lo + t * (hi - lo);
    root.append(svg("line", { x1: L, x2: W - R, y1: y(v), y2: y(v), stroke: "#eee" }),
      svg("text", { x: 4, y: y(v) + 4 }, opts.percent ? pct(v) : num(v, 3)));
  }
  labels.forEach((label, i) => {
    if (labels.length < 12 || i % Math.ceil(labels.length / 10) === 0) root.append(svg("text", { x: x(label) - 20, y: H - 8 }, String(label).slice(5, 16)));
  });
  names.forEach((n, i) => {
    const color = COLORS[i % COLORS.length];
    const pts = series[n].filter((p) => p.y !== null && p.y !== undefined);
    if (pts.length > 1) root.append(svg("polyline", { fill: "none", stroke: color, "stroke-width": 1.5, points: pts.map((p) => `${x(p.x)},${y(p.y)}`).join(" ") }));
    for (const p of pts) {
      const g = svg("g", { class: "point", "data-series": n });
      if (p.low !== null && p.low !== undefined && p.high !== null && p.high !== undefined) {
        g.append(svg("line", { class: "interval", x1: x(p.x), x2: x(p.x), y1: y(p.low), y2: y(p.high), stroke: color, "stroke-width": 6, "stroke-opacity": 0.25 }));
      }
      g.append(svg("circle", { cx: x(p.x), cy: y(p.y), r: 3.5, fill: color }));
      if (p.marker) g.append(svg("circle", { class: "significant", cx: x(p.x), cy: y(p.y), r: 8, fill: "none", stroke: "#000", "stroke-width": 1.5 }));
      g.append(svg("title", {}, p.title || ""));
      root.append(g);
    }
  });
  const legend = el("div", { class: "legend" }, names.map((n, i) => {
    const sw = el("span", { class: "swatch" });
    sw.style.background = COLORS[i % COLORS.length];
    return el("span", {}, sw, n);
  }));
  return el("figure", {}, root, legend);
}

// Where a trend's window of runs lies among the suite's runs: what it leaves out, said, with a
// link to the older runs and one to the newer (a store of 600 runs drew its latest 60 and no more).
function trendWindow(suite, t) {
  const w = t.window;
  if (!w) return null;
  const runs = (n) => `${n} run${n === 1 ? "" : "s"}`;
  const older = w.older_cursor !== null ? link(`Older runs (${runs(w.older)})`, ["trends", suite], new URLSearchParams({ before: w.older_cursor })) : null;
  const newer = w.newer_cursor !== null ? link(`Newer runs (${runs(w.newer)})`, ["trends", suite], new URLSearchParams(w.newer_cursor ? { before: w.newer_cursor } : {})) : null;
  if (older) older.id = "trend-older";
  if (newer) newer.id = "trend-newer";
  const left = [w.older ? `${runs(w.older)} older` : "", w.newer ? `${runs(w.newer)} newer` : ""].filter(Boolean).join(" and ");
  return el("nav", { class: "notice", id: "trend-window", "aria-label": "runs of this trend" },
    `Drawn: ${runs(t.runs)} of the suite's ${runs(w.total)}` + (left ? `; not drawn here: ${left}. ` : ". "), newer, newer && older ? " · " : "", older);
}

async function trendsPage(suite, params) {
  const before = params && params.get("before");
  const t = await api("/api/trends?suite=" + encodeURIComponent(suite) + (before ? "&before=" + encodeURIComponent(before) : ""));
  const pass = {}, fields = {}, cost = {}, metrics = {};
  const rows = [];
  for (const [name, points] of Object.entries(t.series)) {
    pass[name] = points.map((p) => ({
      x: p.started_at, y: p.pass_rate, low: p.low, high: p.high, marker: p.change && p.change.significant,
      title: `${name} ${p.run_id}: ${pct(p.pass_rate)} [${pct(p.low)}–${pct(p.high)}] (${p.method || ""})` +
        (p.change ? `; vs previous run: sign test ${pText(p.change.sign_test_p)} on ${counted(p.change.cases, p.change.unit)}` : "") +
        (p.change && p.change.case_set_changed ? "; the cases changed since the previous run" : "") + (p.partial ? "; " + p.partial : ""),
    }));
    if (points.some((p) => p.field_accuracy !== null)) fields[name] = points.map((p) => ({ x: p.started_at, y: p.field_accuracy, low: p.fa_low, high: p.fa_high, title: `${name} ${p.run_id}: ${pct(p.field_accuracy)}` }));
    if (points.some((p) => p.cost_per_case !== null)) cost[name] = points.map((p) => ({ x: p.started_at, y: p.cost_per_case, title: `${name} ${p.run_id}: ${p.cost_per_case === null ? "unknown" : "$" + num(p.cost_per_case)}` }));
    for (const p of points) for (const [m, v] of Object.entries(p.metrics || {})) {
      (metrics[m] = metrics[m] || {})[name] = (metrics[m][name] || []).concat([{ x: p.started_at, y: v.value, low: v.low, high: v.high, title: `${name} ${m}: ${num(v.value)}` }]);
    }
    for (const p of points) {
      const c = p.change;
      rows.push(el("tr", { class: c && c.significant ? "significant-row" : "" },
        el("td", { text: p.started_at }), el("td", {}, link(p.run_id, ["run", p.key])), el("td", { text: name }),
        el("td", { text: `${pct(p.pass_rate)} [${pct(p.low)}–${pct(p.high)}]` + (t.statistics_note ? ` (statistics version ${p.statistics_version === null ? "not stated" : p.statistics_version})` : "") }),
        el("td", {}, c ? link(`${pText(c.sign_test_p)} (${counted(c.cases, c.unit)})` + (c.significant ? " significant" : ""), ["compare", c.previous, p.key]) : "first run"),
        el("td", {}, c || p.partial ? el("ul", { class: "flags" }, [...(p.partial ? [p.partial] : []), ...(c ? c.flags : [])].map((f) => el("li", { text: f }))) : "")));
    }
  }
  const dq = {};
  for (const [pair, points] of Object.entries(t.dq || {})) dq[pair] = points.map((p) => ({ x: p.started_at, y: p.dq, low: p.low, high: p.high, title: `${pair}: dQ ${num(p.dq)}` }));
  main(el("h1", {}, "Trends: ", el("span", { id: "trend-suite", text: suite })),
    trendWindow(suite, t),
    el("p", { class: "muted", text: `${t.runs} run(s). Bars are 95% intervals (${[...new Set(Object.values(t.series).flat().map((p) => p.method).filter(Boolean))].map((m) => m + ": " + methodWords(m)).join("; ") || "method not recorded"}), a conversation or a case outside any as the unit; a ringed point differs from the previous run by the paired test (${t.test}).` }),
    t.statistics_note ? el("p", { class: "notice", id: "trend-statistics-versions", text: t.statistics_note }) : null,
    el("div", { id: "trend-pass" }, chart("pass rate", pass, { min: 0, max: 1, percent: true })),
    Object.keys(fields).length ? chart("field accuracy (all fields)", fields, { min: 0, max: 1, percent: true }) : null,
    Object.keys(cost).length ? chart("cost per case (USD, when every cost is known)", cost, {}) : null,
    Object.entries(metrics).map(([m, s]) => chart("metric " + m, s, {})),
    Object.keys(dq).length ? chart("dQ (pointwise quality difference)", dq, {}) : null,
    el("h2", { text: "Run to run" }),
    el("table", { id: "trend-table" }, el("thead", {}, el("tr", {}, ["started", "run", "variant", "pass rate [95% CI]", "vs previous run", "flags"].map((h) => el("th", { text: h })))), el("tbody", {}, rows)));
}

// ---------------------------------------------------------------- compare
function caseLinks(ids, keyA, keyB) {
  return el("ul", {}, ids.map((cid) => el("li", {}, link(cid, ["case", keyB, cid], new URLSearchParams({ with: keyA })))));
}

// What a score or metric comparison leaves out: each side's errored attempts with no score (as
// record/figures.errored_words says it in the reports); nothing with none.
function erroredLeftOut(c, name, f) {
  const gone = f.errored_left_out;
  if (!gone || typeof gone !== "object") return null;
  // each side as the pair's headline names it (A:a, B:a): two runs pair one variant name with itself
  const left = [["a", `A:${c.a}`], ["b", `B:${c.b}`]].filter(([k]) => typeof gone[k] === "number" && gone[k] > 0)
    .map(([k, side]) => `${side}'s ${gone[k]} errored attempt${gone[k] === 1 ? "" : "s"}`);
  return left.length ? el("div", { class: "muted", "data-errored-left-out": name, text:
    `left out, ${left.join(" and ")} (no ${name === "score" ? "score" : name + " score"}; the pass-rate comparison counts them as failures)` }) : null;
}

// What a side's pass rate is over: " (26/40 attempts, 40 cases)"; nothing when not given.
function rateOver(n) {
  return n && typeof n.judged === "number" ? ` (${n.passed}/${n.judged} attempts, ${n.cases} case${n.cases === 1 ? "" : "s"})` : "";
}

// The variants left out of the comparison: a name in one run only (renamed, added or dropped).
function unmatchedNote(u) {
  const sides = [["A", (u || {}).a || []], ["B", (u || {}).b || []]].filter(([, names]) => names.length);
  return sides.length ? el("p", { class: "notice", id: "unmatched-variants", text: "not compared (no variant of that " +
    "name in the other run: renamed, added or dropped): " + sides.map(([s, names]) => `only in ${s}: ${names.join(", ")}`).join("; ") }) : null;
}

async function comparePage(a, b) {
  const r = await api(`/api/compare?a=${encodeURIComponent(a)}&b=${encodeURIComponent(b)}`);
  const side = (s, label) => el("div", {}, el("b", { text: label + ": " }), link(`${s.suite} ${s.run_id}`, ["run", s.key]), ` (${s.status}, ${s.started_at}, commit ${short(s.git_commit) || "unknown"})`);
  const blocks = r.comparisons.map((c) => {
    const ci = c.mean_difference_ci || {};
    const groups = ["newly_failing", "newly_passing", "still_failing"].map((g) => el("div", { class: "card", "data-group": g },
      el("h4", { text: `${g.replace("_", " ")}: ${c.transitions[g].count}` }), caseLinks(c.transitions[g].cases, a, b),
      c.transitions[g].truncated ? el("p", { class: "muted", text: "list cut; the count covers all" }) : null));
    const fieldRows = Object.entries(c.fields || {}).map(([k, f]) => el("tr", {}, el("td", { text: k }), el("td", { text: f.cases }),
      el("td", { text: f.a_wins }), el("td", { text: f.b_wins }), el("td", { text: points(f.mean_difference) }), el("td", { text: pval(f.sign_test_p) })));
    // the case score and each named metric, compared case by case as the reports compare them
    const signed = (x) => (x === null || x === undefined ? "n/a" : (x >= 0 ? "+" : "") + Number(x).toFixed(3));
    const scored = [...(c.score ? [["score", c.score]] : []), ...Object.entries(c.metrics || {})].map(([k, f]) => {
      const fci = f.mean_difference_ci || {};
      return el("tr", { "data-metric": k }, el("td", { text: k }, erroredLeftOut(c, k, f)), el("td", { text: f.cases }), el("td", { text: f.a_wins }),
        el("td", { text: f.b_wins }), el("td", { text: f.ties }),
        el("td", { text: signed(f.mean_difference) + (fci.low !== null && fci.low !== undefined ? ` [${signed(fci.low)} to ${signed(fci.high)}]` : "") }),
        el("td", { text: pval(f.sign_test_p) }), el("td", { text: detectable(f.detectable_difference, f.cases) }));
    });
    return el("section", { class: "pair" }, el("h2", { text: `${c.a} (A) vs ${c.b} (B)` }),
      el("p", { class: "headline", text: c.headline }),
      el("table", { class: "paired" }, el("tbody", {},
        [[r.unit === "conversation" ? "units compared (a conversation counting once)" : "cases compared", c.cases], ["A pass rate", pct(c.a_pass_rate) + rateOver(c.a_counts)], ["B pass rate", pct(c.b_pass_rate) + rateOver(c.b_counts)],
          ["A better / B better / ties", `${c.a_wins} / ${c.b_wins} / ${c.ties}`],
          ["sign test p (two-sided, exact)", pval(c.sign_test_p)], ["McNemar p (exact)", pval(c.mcnemar.p)],
          ["mean difference A−B, points [95% CI]", `${points(c.mean_difference)} [${points(ci.low)} to ${points(ci.high)}]` + (ci.method ? ` (${ci.method}: ${methodWords(ci.method)})` : "")],
          ["could detect", detectable(c.detectable_difference, c.cases)]]
          .map(([k, v]) => el("tr", {}, el("th", { text: k }), el("td", { text: v }))))),
      el("ul", { class: "flags" }, c.flags.map((f) => el("li", { text: f }))),
      el("div", { class: "grid" }, groups),
      fieldRows.length ? el("h3", { text: "Per field (paired, on the same cases)" }) : null,
      fieldRows.length ? el("table", {}, el("thead", {}, el("tr", {}, ["field", "cases", "A better", "B better", "mean diff A−B, points", "sign test p"].map((h) => el("th", { text: h })))), el("tbody", {}, fieldRows)) : null,
      scored.length ? el("h3", { text: "Scores and metrics (paired, case by case; differences on the metric's 0–1 scale)" }) : null,
      scored.length ? el("table", { class: "scored" }, el("thead", {}, el("tr", {}, ["figure", "cases", "A higher", "B higher", "ties", "mean diff A−B [95% CI]", "sign test p", "could detect"].map((h) => el("th", { text: h })))), el("tbody", {}, scored)) : null,
      el("h3", { text: "Figures (B − A)" }),
      el("table", { class: "deltas" }, el("thead", {}, el("tr", {}, ["figure", "A", "B", "B − A"].map((h) => el("th", { text: h })))),
        el("tbody", {}, c.figures.map((f) => el("tr", { "data-figure": f.figure }, el("td", { text: f.figure }),
          el("td", { text: f.rate ? pct(f.a) : f.measurement ? known(f.a === null ? null : num(f.a, 4)) : num(f.a, 4) }),
          el("td", { text: f.rate ? pct(f.b) : f.measurement ? known(f.b === null ? null : num(f.b, 4)) : num(f.b, 4) }),
          el("td", { text: f.rate ? (f.delta === null || f.delta === undefined ? "n/a" : points(f.delta) + " points") : f.measurement ? known(f.delta === null ? null : num(f.delta, 3)) : num(f.delta, 3) }))))));
  });
  const listing = (title, ids, id) => el("div", { class: "card", id }, el("h4", { text: `${title}: ${ids.length}` }), el("ul", {}, ids.slice(0, 500).map((c) => el("li", { text: c }))));
  main(el("h1", { text: "Compare two runs" }), side(r.a, "A"), side(r.b, "B"),
    el("p", { class: "muted", text: `${r.matching}. Shared cases: ${r.shared_cases}` + (r.conversations ? `, the turns of ${r.conversations} conversation${r.conversations === 1 ? "" : "s"} among them.` : ".") }),
    r.statistics_note ? el("p", { class: "notice", id: "statistics-versions", text: r.statistics_note }) : null,
    blocks.length ? blocks : el("p", { class: "notice", text: "no variant pair to compare (names differ and the runs do not hold one variant each)" }),
    unmatchedNote(r.unmatched_variants),
    el("h2", { text: "Cases in only one run" }),
    el("div", { class: "grid" }, listing("only in A", r.only_in_a, "only-a"), listing("only in B", r.only_in_b, "only-b"), listing("inputs differ (left out)", r.inputs_differ, "inputs-differ")));
}

// ---------------------------------------------------------------- a case
function show(value) {
  if (value === null || value === undefined) return el("span", { class: "muted", text: "null" });
  return el("pre", { text: typeof value === "string" ? value : JSON.stringify(value, null, 2) });
}

function gradeView(g) {
  const cls = g.passed === true ? "ok" : g.passed === false ? "bad" : "muted";
  const judge = g.judge || {};
  return el("div", { class: "grade" },
    el("div", {}, el("b", { text: g.grader }), " ", el("span", { class: cls, text: g.record_only === true ? (typeof g.choice === "string" ? `recorded only: chose ${g.choice}` : "recorded only: no choice") : g.passed === null ? "not assessed" : g.passed ? "passed" : "failed" }),
      g.score !== null && g.score !== undefined ? ` score ${num(g.score)}` : ""),
    g.reason ? el("div", { class: "reason", text: g.reason }) : null,
    judge.explanation || judge.rationale ? el("div", { class: "rationale" }, el("i", { text: "judge: " }), String(judge.explanation || judge.rationale)) : null,
    g.fields && g.fields.length ? el("table", { class: "field-diff" }, el("thead", {}, el("tr", {}, ["field", "expected", "actual", ""].map((h) => el("th", { text: h })))),
      el("tbody", {}, g.fields.map((f) => el("tr", { class: f.passed ? "" : "field-wrong" }, el("td", { text: f.path }),
        el("td", {}, show(f.expected)), el("td", {}, show(f.actual)), el("td", { class: f.passed ? "ok" : "bad", text: f.passed ? "✓" : "✗ " + (f.reason || "") }))))) : null);
}

function reviewForm(runKey, caseId, attempt, done) {
  const verdict = el("select", { name: "verdict", "aria-label": "verdict" }, [["", "no verdict"], ["pass", "pass"], ["fail", "fail"]].map(([v, t]) => el("option", { value: v, text: t })));
  const ratings = META.dimensions.map((d) => el("label", {}, d + " ", el("select", { name: "rating-" + d, "data-dimension": d },
    el("option", { value: "", text: "–" }), [1, 2, 3, 4, 5].map((n) => el("option", { value: n, text: n })))));
  const reviewer = el("input", { name: "reviewer_id", value: META.reviewer, size: 12 });
  const rubric = el("input", { name: "rubric_version", value: META.rubric_version, size: 6 });
  const notes = el("textarea", { name: "notes", rows: 2, placeholder: "note (required)", "aria-label": "note (required)" });
  const status = el("span", { class: "muted", role: "status" });
  const form = el("form", { class: "review-form" }, el("div", { class: "row" }, verdict, ratings),
    el("div", { class: "row" }, el("label", {}, "reviewer ", reviewer), el("label", {}, "rubric ", rubric)), notes,
    el("div", { class: "row" }, el("button", { type: "submit", text: "Save review" }), status));
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const body = { run: runKey, case_id: caseId, output_hash: attempt.output_hash, verdict: verdict.value || null,
      reviewer_id: reviewer.value, rubric_version: rubric.value, notes: notes.value, ratings: {} };
    for (const s of form.querySelectorAll("select[data-dimension]")) if (s.value) body.ratings[s.dataset.dimension] = Number(s.value);
    try {
      await api("/api/reviews", { method: "POST", headers: { "Content-Type": "application/json", "X-CSRF-Token": META.csrf }, body: JSON.stringify(body) });
      status.textContent = "saved";
      status.className = "ok saved";
      done();
    } catch (e) { status.textContent = scoreboardUnseen.line(e.message); status.className = "bad"; }
  });
  return el("details", { class: "review" }, el("summary", { text: "Review this output" }), form);
}

// a screenshot the run took of this output (served from its run folder by its hash); one that
// cannot be shown says why in its place (a run recorded elsewhere, a folder moved, a file changed)
function shotView(runKey, s) {
  const src = `/api/runs/${encodeURIComponent(runKey)}/screenshots/${s.sha256}`;
  const when = typeof s.moment_ms === "number" ? `at ${s.moment_ms} ms (page clock)` : "";
  const what = [s.full_page ? "full page" : "viewport", when].filter(Boolean).join(" ");
  const img = el("img", { src, alt: `screenshot of the rendered output, ${what}`, class: "shot" });
  const box = el("figure", { class: "shot", "data-shot": s.sha256 }, img, el("figcaption", { class: "muted", text: `${what} · ${s.sha256.slice(0, 12)}` }));
  img.addEventListener("error", () => {
    fetch(src, { credentials: "same-origin" }).then((r) => r.json()).catch(() => ({})).then((body) =>
      img.replaceWith(el("div", { class: "bad shot-missing", text: `screenshot not shown: ${body.error || "it could not be read"}` })));
  });
  return box;
}

function attemptCard(runKey, caseId, a, label, reload) {
  const m = a.measurements || {};
  const out = a.output || {};
  const info = a.subject_info && Object.keys(a.subject_info).length ? a.subject_info : null;
  const render = a.render && typeof a.render === "object" ? a.render : null;
  const shots = ((render || {}).shots || []).filter((s) => s && typeof s.sha256 === "string" && /^[0-9a-f]{64}$/.test(s.sha256));
  return el("div", { class: "card attempt", "data-variant": a.variant, "data-run": a.run },
    el("h4", {}, label ? label + " · " : "", `${a.variant} · run ${a.run} · `, el("span", { class: a.status === "passed" ? "ok" : "bad", text: a.status })),
    a.error ? el("div", { class: "bad", text: "error: " + a.error }) : null,
    el("div", { class: "muted", text: "output " + (a.output_hash ? a.output_hash.slice(0, 12) : "none") }),
    // an attempt with no output (an error before the subject answered) says so, never a JSON "null"
    !a.output ? el("div", { class: "muted no-output", text: a.error ? "no output (the attempt ended in the error above)" : "no output recorded" })
      : out.text !== undefined && out.text !== null ? el("pre", { class: "output", text: out.text }) : show(out.json),
    out.tool_calls && out.tool_calls.length ? el("details", {}, el("summary", { text: `tool calls (${out.tool_calls.length})` }), show(out.tool_calls)) : null,
    a.transcript ? el("details", {}, el("summary", { text: "transcript" }), show(a.transcript)) : null,
    render && render.error ? el("div", { class: "bad", text: "render error: " + render.error }) : null,
    shots.length ? el("div", { class: "shots" }, shots.map((s) => shotView(runKey, s))) : null,
    (a.grades || []).map(gradeView),
    el("div", { class: "muted measurements", text: `latency ${known(m.latency_ms, " ms")} · tokens in ${known(m.input_tokens)} / out ${known(m.output_tokens)} · cost ${m.cost_usd === null || m.cost_usd === undefined ? "unknown" : "$" + m.cost_usd}` }),
    info ? el("details", {}, el("summary", { text: "subject info" }), show(info)) : null,
    a.output_hash ? reviewForm(runKey, caseId, a, reload) : null);
}

async function casePage(key, caseId, params, saved) {
  const other = params.get("with");
  // the id as a query value: a browser resolves a path segment "." or ".." before sending it
  const q = new URLSearchParams(other ? { id: caseId, with: other } : { id: caseId });
  const d = await api(`/api/runs/${encodeURIComponent(key)}/case?` + q.toString());
  // drawn again with the review, saying so where the focus was (the form it was sent from is gone)
  const reload = () => casePage(key, caseId, params, true).catch(fail);
  const c = d.case;
  const cards = d.attempts.map((a) => attemptCard(key, caseId, a, d.other ? "this run" : "", reload));
  const otherCards = d.other ? d.other.attempts.map((a) => attemptCard(d.other.run.key, caseId, a, "run " + d.other.run.run_id, reload)) : [];
  const reviews = d.reviews.map((r) => el("tr", {}, el("td", { text: r.reviewer_id }), el("td", { text: r.rubric_version }),
    el("td", { text: r.output_hash.slice(0, 12) }), el("td", { text: r.verdict === null ? "none" : r.verdict ? "pass" : "fail" }),
    el("td", { text: Object.entries(r.ratings).map(([k, v]) => `${k} ${v ?? "–"}`).join(", ") }), el("td", { text: r.notes })));
  const history = d.history.map((h) => el("tr", {}, el("td", { text: h.started_at }), el("td", {}, link(h.run_id, ["case", h.key, caseId])),
    el("td", { text: Object.entries(h.variants).map(([v, t]) => `${v} ${t.hits}/${t.tries}`).join(" · ") })));
  main(el("h1", {}, "Case ", el("span", { id: "case-id", text: c.id }), " in ", link(`${d.run.suite} ${d.run.run_id}`, ["run", key])),
    el("div", { class: "muted", text: `input hash ${c.input_hash || ""} · category ${c.category || "none"}` }),
    d.other && !d.other.same_input ? el("p", { class: "notice", text: "the other run's input for this case differs (its input hash)" }) : null,
    el("div", { class: "grid" }, el("div", { class: "card" }, el("h4", { text: "input" }), show(c.input)),
      el("div", { class: "card" }, el("h4", { text: "expected" }), show(c.expected))),
    el("h2", { text: d.other ? `Outputs: this run and ${d.other.run.run_id}, side by side` : "Outputs, side by side" }),
    el("div", { class: "grid", id: "attempts" }, otherCards, cards),
    el("h2", { text: "Reviews of these outputs" }),
    saved ? el("p", { class: "ok saved", id: "review-saved", role: "status", tabindex: "-1", text: "review saved" }) : null,
    reviews.length ? el("table", { id: "reviews" }, el("thead", {}, el("tr", {}, ["reviewer", "rubric", "output", "verdict", "ratings", "note"].map((h) => el("th", { text: h })))), el("tbody", {}, reviews))
      : el("p", { class: "muted", text: "none yet" }),
    el("p", {}, el("a", { href: "/api/reviews/export?run=" + encodeURIComponent(key), text: "Export this run's reviews (the file `scoreboard import reviews` reads)" })),
    el("h2", { text: "This case across runs" }),
    el("table", { id: "case-history" }, el("tbody", {}, history)));
  if (saved) document.getElementById("review-saved").focus();
}

// ---------------------------------------------------------------- start
async function render(first) {
  const shown = location.hash;
  const generation = ++GENERATION;
  try {
    const { parts, params } = route();
    if (parts[0] === "run" && parts[1]) await runPage(parts[1], params);
    else if (parts[0] === "trends" && parts[1]) await trendsPage(parts[1], params);
    else if (parts[0] === "compare" && parts[1] && parts[2]) await comparePage(parts[1], parts[2]);
    else if (parts[0] === "case" && parts[1] && parts[2]) await casePage(parts[1], parts[2], params);
    else await runsPage(params, first);
  } catch (e) { fail(e); }
  if (generation !== GENERATION) return;  // a later render says when its page is ready
  placeFocus(shown);
  // which route this page shows: a hash change not yet handled leaves the two apart
  document.documentElement.dataset.route = shown;
  document.documentElement.dataset.ready = "true";
}

// the store's suites and their run counts, read again with each runs page: a page left open
// while runs of a new suite arrive lists them, so its filter and the trend links offer that suite
async function readMeta() {
  META = await api("/api/meta");
  document.getElementById("store").textContent = scoreboardUnseen.line(`${META.kind}: ${META.store}`);
  document.getElementById("nav-suites").replaceChildren(...META.suites.map((s) => el("a", { href: "#/trends/" + encodeURIComponent(s.suite), text: "trends: " + s.suite })));
}

// Keyboard focus across pages: leaving a page remembers the control that had the focus (the link
// followed), and coming back to that page (the browser's back or forward) puts the focus on it again;
// a page come to otherwise, whose link is gone with the page it was on, takes it on its heading,
// not on the document's start (a keyboard user was sent back to the top of every page).
const FOCUSED = new Map();
// the control left on a page; the next page has it again (the filter button it was sent from): the focus stays there
let CARRIED = null;

function focusedOn(node) {
  if (!node || node === document.body || !document.getElementById("main").contains(node)) return null;
  if (node.id) return { id: node.id };
  const href = node.getAttribute("href");
  if (href !== null) return { href, nth: [...document.querySelectorAll("#main a")].filter((a) => a.getAttribute("href") === href).indexOf(node) };
  return null;
}

function placeFocus(hash) {
  const mark = FOCUSED.get(hash || "#/runs");
  let target = null;
  if (mark && mark.id) target = document.getElementById(mark.id);
  else if (mark) target = [...document.querySelectorAll("#main a")].filter((a) => a.getAttribute("href") === mark.href)[mark.nth] || null;
  if (!target && CARRIED && CARRIED.id) target = document.getElementById(CARRIED.id);
  CARRIED = null;
  const active = document.activeElement;
  if (!target && active && active !== document.body && active.isConnected) return;  // the page kept it (a form)
  if (!target) {
    target = document.querySelector("#main h1");
    if (target) target.setAttribute("tabindex", "-1");
  }
  if (target) target.focus();
}

async function start() {
  await readMeta();
  window.addEventListener("hashchange", (ev) => {
    const left = focusedOn(document.activeElement);
    const from = new URL(ev.oldURL).hash || "#/runs";
    if (left) FOCUSED.set(from, left); else FOCUSED.delete(from);
    CARRIED = left;
    document.documentElement.dataset.ready = "false";
    render();
  });
  await render(true);
}

document.addEventListener("DOMContentLoaded", () => start().catch(fail));
