// Runs promptfoo-style JavaScript assertions and transforms (scoreboard's `javascript` grader
// and `javascript` transform). One job: stdin {code?, file?, function?, output, context,
// threshold?, inverse?}, stdout one line of JSON {pass, score, reason, named_scores?} or {error}.
// `--serve`: one job per stdin line, one result per stdout line, in order (graders/node_pool.py).
// A job with kind "transform" follows src/util/transform.ts: {code | file, function?, input,
// context, input_type: "output" | "vars"}; the result is {value, text} or {error}.
// The rules are promptfoo's (src/assertions/javascript.ts, scriptResultNormalization.ts):
// a single-line expression is returned (after a leading const/let/var statement list, the
// last expression is), a multi-line value is a function body; a file exports a function
// (module.exports, a named export, or default) called with (output, context).
'use strict';
const path = require('path');

// stdout carries only the result lines: what a job prints (console.log, process.stdout.write, as
// promptfoo's own examples log from their assertions) goes to stderr instead
const writeResult = process.stdout.write.bind(process.stdout);
process.stdout.write = (chunk, encoding, callback) => process.stderr.write(chunk, encoding, callback);

function lastTopLevelSemicolon(code) {
  let depth = 0, quote = null, last = -1;
  for (let i = 0; i < code.length; i++) {
    const c = code[i];
    if (quote) {
      if (c === '\\') { i++; continue; }
      if (c === quote) quote = null;
      continue;
    }
    if (c === '"' || c === "'" || c === '`') quote = c;
    else if ('([{'.includes(c)) depth++;
    else if (')]}'.includes(c)) depth--;
    else if (c === ';' && depth === 0) last = i;
  }
  return last;
}

// promptfoo 0.121's findLastStatementSemicolon (strict jobs): the last semicolon outside
// quotes, braces and brackets not considered
function lastUnquotedSemicolon(code) {
  let single = false, double = false, template = false, last = -1;
  for (let i = 0; i < code.length; i++) {
    const c = code[i];
    let slashes = 0;
    for (let j = i - 1; j >= 0 && code[j] === '\\'; j--) slashes++;
    if (slashes % 2 === 0) {
      if (c === "'" && !double && !template) single = !single;
      else if (c === '"' && !single && !template) double = !double;
      else if (c === '`' && !single && !double) template = !template;
    }
    if (c === ';' && !single && !double && !template) last = i;
  }
  return last;
}

function buildFunctionBody(code, strict) {
  const trimmed = code.trim().replace(/;+\s*$/, '');
  if (/^(const|let|var)\s/.test(trimmed)) {
    const semi = strict ? lastUnquotedSemicolon(trimmed) : lastTopLevelSemicolon(trimmed);
    if (semi !== -1 && trimmed.slice(semi + 1).trim()) {
      return `${trimmed.slice(0, semi + 1)} return ${trimmed.slice(semi + 1).trim()}`;
    }
    return trimmed;
  }
  return `return ${trimmed}`;
}

function isGradingResult(r) {
  return r !== null && typeof r === 'object' && typeof r.pass === 'boolean';
}

// src/types isGradingResult, as promptfoo's validateResult checks it (strict jobs)
function isFullGradingResult(r) {
  return r !== null && typeof r === 'object' && typeof r.pass === 'boolean' && typeof r.score === 'number' &&
    typeof r.reason === 'string' && (r.namedScores === undefined || typeof r.namedScores === 'object');
}

function normalizeStrict(result, inverse, threshold) {
  if (typeof result === 'boolean') {
    const pass = result !== inverse;
    return { pass, score: pass ? 1 : 0, reason: pass ? 'Assertion passed' : `Custom function returned ${result}` };
  }
  if (typeof result === 'number') {
    const raw = threshold === undefined || threshold === null ? result > 0 : result >= threshold;
    const pass = raw !== inverse;
    return { pass, score: Number.isFinite(result) ? result : 0, reason: pass ? 'Assertion passed' : `Custom function returned ${raw}` };
  }
  if (isFullGradingResult(result)) {
    const pass = result.pass !== inverse;
    const out = { pass, score: result.score,
      reason: pass === result.pass ? result.reason : (pass ? 'Assertion passed' : `Custom function returned ${result.pass}`) };
    if (result.namedScores && typeof result.namedScores === 'object') out.named_scores = result.namedScores;
    return out;
  }
  throw new Error(`Custom function must return a boolean, number, or GradingResult object. Got type ${typeof result}: ${JSON.stringify(result)}`);
}

function normalize(result, inverse, threshold) {
  if (typeof result === 'boolean') {
    const pass = result !== inverse;
    return { pass, score: pass ? 1 : 0, reason: pass ? 'Assertion passed' : `Custom function returned ${result}` };
  }
  if (typeof result === 'number' && Number.isFinite(result)) {
    const raw = threshold === undefined || threshold === null ? result > 0 : result >= threshold;
    const pass = raw !== inverse;
    return { pass, score: result, reason: pass ? 'Assertion passed' : `Custom function returned ${raw}` };
  }
  if (isGradingResult(result)) {
    const score = typeof result.score === 'number' ? result.score : (result.pass ? 1 : 0);
    if (!Number.isFinite(score)) throw new Error('Custom function must return a GradingResult object with a finite score.');
    const pass = result.pass !== inverse;
    const out = { pass, score, reason: result.reason === undefined ? (pass ? 'Assertion passed' : 'Custom function returned false') : String(result.reason) };
    if (result.namedScores && typeof result.namedScores === 'object') out.named_scores = result.namedScores;
    return out;
  }
  throw new Error(`Custom function must return a boolean, a finite number, or a GradingResult object. Got type ${typeof result}.`);
}

async function loadModule(file) {
  try {
    return require(path.resolve(file));
  } catch (err) {
    if (err && err.code === 'ERR_REQUIRE_ESM') return await import('file://' + path.resolve(file));
    throw err;
  }
}

// src/util/transform.ts: a file exports the named function (an own property), else is a
// function, else has a default function; inline code is new Function(inputType, 'context',
// 'process', body) with `return ` before single-line code; null/undefined is an error.
async function runTransform(job) {
  let fn;
  const label = job.file ? '[file transform]' : `[inline transform]: ${String(job.code).replace(/\s+/g, ' ').trim().slice(0, 80)}`;
  if (job.file) {
    const mod = await loadModule(job.file);
    if (job.function && Object.prototype.hasOwnProperty.call(mod, job.function) && typeof mod[job.function] === 'function') fn = mod[job.function];
    else if (typeof mod === 'function') fn = mod;
    else if (mod && typeof mod.default === 'function') fn = mod.default;
    else throw new Error(`Transform ${job.file} must export a function, have a default export as a function, or export the specified function "${job.function}"`);
  } else {
    fn = new Function(job.input_type || 'output', 'context', 'process', job.code.includes('\n') ? job.code : `return ${job.code}`);
  }
  let ret;
  try {
    ret = await Promise.resolve(fn(job.input, job.context, process));
  } catch (err) {
    throw new Error(`Transform failed (${label}): ${err && err.message ? err.message : String(err)}`);
  }
  if (ret === null || ret === undefined) throw new Error(`Transform function did not return a value\n\n${label}`);
  return { value: ret, text: typeof ret === 'string' ? ret : JSON.stringify(ret) };
}

// src/prompts/processors/javascript.ts + src/evaluatorHelpers.ts renderPrompt (promptfoo 0.121):
// the module imported as importModule does (ESM import, then default.default || default ||
// the namespace), the function (a named export, else the module itself) called with the
// context; a text result is the prompt, an object with `prompt` its prompt (JSON.stringify'd
// unless text) and `config`, any other object JSON.stringify(result); anything else throws.
async function runPrompt(job) {
  const imported = await import(require('url').pathToFileURL(path.resolve(job.file)).toString());
  const mod = (imported && imported.default && imported.default.default) || (imported && imported.default) || imported;
  const fn = job.function ? mod[job.function] : mod;
  if (typeof fn !== 'function') throw new Error(`promptFunction is not a function (${job.function ? `no function ${job.function} exported by` : 'no function exported as'} ${job.file})`);
  const ret = await fn(job.context);
  if (typeof ret === 'string') return { text: ret };
  if (typeof ret === 'object') {
    if ('prompt' in ret) {
      return { text: typeof ret.prompt === 'string' ? ret.prompt : JSON.stringify(ret.prompt),
               config: ret.config ? JSON.stringify(ret.config) : null };
    }
    return { text: JSON.stringify(ret) };
  }
  throw new Error(`Prompt function must return a string or object, got ${typeof ret}`);
}

async function runJob(job) {
  if (job.kind === 'transform') return runTransform(job);
  if (job.kind === 'prompt') return runPrompt(job);
  let result;
  if (job.file) {
    const mod = await loadModule(job.file);
    let fn = job.function ? mod[job.function] : (typeof mod === 'function' ? mod : mod.default);
    if (typeof fn !== 'function') throw new Error(`${job.file} exports no function ${job.function || '(default)'}`);
    result = await fn(job.output, job.context);
  } else {
    const code = job.code.trimEnd();
    const body = code.includes('\n') ? code : buildFunctionBody(code, job.strict);
    result = await new Function('output', 'context', body)(job.output, job.context);
  }
  if (job.strict) return normalizeStrict(result, Boolean(job.inverse), job.threshold);
  return normalize(result, Boolean(job.inverse), job.threshold);
}

function errorOf(job, err) {
  const message = err && err.message ? err.message : String(err);
  return { error: job && (job.kind === 'transform' || job.kind === 'prompt') ? message : `Custom function threw error: ${message}` };
}

function line(value) {
  try {
    return JSON.stringify(value) + '\n';
  } catch (err) {
    return JSON.stringify({ error: `the result cannot be sent: ${err.message}` }) + '\n';
  }
}

async function serve() {
  const rl = require('readline').createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const text of rl) {
    if (!text.trim()) continue;
    let job = null;
    let out;
    try {
      job = JSON.parse(text);
      out = await runJob(job);
    } catch (err) {
      out = errorOf(job, err);
    }
    await new Promise((resolve) => writeResult(line(out), resolve));
  }
}

async function once() {
  let input = '';
  for await (const chunk of process.stdin) input += chunk;
  const job = JSON.parse(input);
  try {
    writeResult(line(await runJob(job)));
  } catch (err) {
    writeResult(line(errorOf(job, err)));
  }
}

if (process.argv.includes('--serve')) serve();
else once();
