// Runs one promptfoo-style JavaScript assertion (scoreboard's `javascript` grader).
// stdin: {code?, file?, function?, output, context, threshold?, inverse?}
// stdout: one line of JSON {pass, score, reason, named_scores?} or {error}.
// The rules are promptfoo's (src/assertions/javascript.ts, scriptResultNormalization.ts):
// a single-line expression is returned (after a leading const/let/var statement list, the
// last expression is), a multi-line value is a function body; a file exports a function
// (module.exports, a named export, or default) called with (output, context).
'use strict';
const path = require('path');

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

function buildFunctionBody(code) {
  const trimmed = code.trim().replace(/;+\s*$/, '');
  if (/^(const|let|var)\s/.test(trimmed)) {
    const semi = lastTopLevelSemicolon(trimmed);
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

async function main() {
  let input = '';
  for await (const chunk of process.stdin) input += chunk;
  const job = JSON.parse(input);
  let result;
  if (job.file) {
    let mod;
    try {
      mod = require(path.resolve(job.file));
    } catch (err) {
      if (err && err.code === 'ERR_REQUIRE_ESM') mod = await import('file://' + path.resolve(job.file));
      else throw err;
    }
    let fn = job.function ? mod[job.function] : (typeof mod === 'function' ? mod : mod.default);
    if (typeof fn !== 'function') throw new Error(`${job.file} exports no function ${job.function || '(default)'}`);
    result = await fn(job.output, job.context);
  } else {
    const code = job.code.trimEnd();
    const body = code.includes('\n') ? code : buildFunctionBody(code);
    result = await new Function('output', 'context', body)(job.output, job.context);
  }
  return normalize(result, Boolean(job.inverse), job.threshold);
}

main().then(
  (r) => process.stdout.write(JSON.stringify(r) + '\n'),
  (err) => process.stdout.write(JSON.stringify({ error: `Custom function threw error: ${err && err.message ? err.message : String(err)}` }) + '\n'),
);
