"""Scripts the renderer injects into every page before the page's own scripts run."""

from __future__ import annotations

# mulberry32: a small seeded generator; the same seed gives every page the same numbers.
SEED_SCRIPT = """(() => {
  let s = %d >>> 0;
  const next = () => { s = (s + 0x6D2B79F5) >>> 0; let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1); t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296; };
  Math.random = next;
  if (self.crypto && self.crypto.getRandomValues) {
    self.crypto.getRandomValues = (a) => { const b = new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
      for (let i = 0; i < b.length; i++) b[i] = Math.floor(next() * 256); return a; };
  }
  if (self.crypto && self.crypto.randomUUID) {  // drawn natively, not from getRandomValues
    const hex = (n) => Array.from({length: n}, () => Math.floor(next() * 16).toString(16)).join("");
    self.crypto.randomUUID = () => `${hex(8)}-${hex(4)}-4${hex(3)}-${"89ab"[Math.floor(next() * 4)]}${hex(3)}-${hex(12)}`;
  }
})();"""

#: history entries a page may push or replace; past them the calls do nothing. Each one is a
#: navigation event the driver sends this process: a page that pushed 200,000 (a loop) kept the
#: run's event loop busy for a minute after its render timed out, and every page rendered in that
#: minute timed out with it.
HISTORY_CALLS = 1000

HISTORY_SCRIPT = """(() => {
  const H = self.History && self.History.prototype;
  if (!H) return;
  let left = %d;
  for (const name of ["pushState", "replaceState"]) {
    const real = H[name];
    H[name] = function (...args) { if (left <= 0) return; left -= 1; return real.apply(this, args); };
  }
})();""" % HISTORY_CALLS

#: run before each shot with the page-clock moment in seconds: SVG (SMIL) animations run on the
#: document's own timeline (real time, not the page clock, and screenshot(animations="disabled")
#: leaves them alone), so an animated SVG was shot at whatever instant the shot happened to come;
#: each one is paused and set to the moment. Whatever a page broke, the shot is still taken.
SMIL_SCRIPT = """(t) => { try {
  for (const s of document.querySelectorAll('svg')) {
    try { s.pauseAnimations(); s.setCurrentTime(t); } catch (e) {}
  }
} catch (e) {} return true; }"""

#: what a refused window.open says on the console; the renderer lists it under `blocked`
POPUP_REFUSED = "scoreboard-renderer: window.open refused: "

#: window.open returns null (a blocked popup, as a browser's popup blocker answers), and a click on a
#: link that would open a new window (target=_blank or a named one) does nothing: each popup was a
#: page of its own in the render's context, and a page opening 400 took 28 s to shoot (a page
#: opening more timed out). Each refusal is said on the console, where the record's `blocked` list
#: picks it up.
POPUP_SCRIPT = """(() => {
  const say = console.error.bind(console);
  const refused = function (url) {
    try { say(%s + String(url === undefined ? "" : url).slice(0, 300)); } catch (e) {}
    return null;
  };
  try { Object.defineProperty(self, "open", {value: refused, writable: false, configurable: false}); }
  catch (e) { self.open = refused; }
  const popup = (event) => {
    try {
      const link = event.target && event.target.closest ? event.target.closest("a[target], area[target]") : null;
      const where = link ? String(link.target).toLowerCase() : "_self";
      if (!["", "_self", "_parent", "_top"].includes(where)) { event.preventDefault(); refused(link.href); }
    } catch (e) {}
  };
  self.addEventListener("click", popup, true);
  self.addEventListener("auxclick", popup, true);
})();""" % repr(POPUP_REFUSED)

#: what a refused navigation says on the console; the renderer lists it under `blocked`
NAVIGATION_REFUSED = "scoreboard-renderer: navigation refused: "

#: a top-level navigation to a URL no request is made for (about:blank, a blob: URL) is cancelled
#: through the Navigation API and said on the console: the renderer's route (which keeps the page on
#: screen for any http(s) URL elsewhere) never saw one, so a page moving to about:blank was shot
#: blank and one moving to a blob: page failed to render ('Execution context was destroyed'),
#: neither counted as blocked. The output's own files (http) still load as before.
NAVIGATION_SCRIPT = """(() => {
  if (self !== self.top || !self.navigation) return;
  const say = console.error.bind(console);
  let loaded = false;
  self.addEventListener("load", () => { loaded = true; }, {once: true});
  self.navigation.addEventListener("navigate", (event) => {
    try {
      const url = String(event.destination.url);
      // once loaded, the page is shot as itself: a move to its own files (a meta refresh, a timer
      // setting location, a form sent to itself) is refused, as one elsewhere is answered 204
      const own = loaded && new URL(url).origin === self.location.origin;
      if ((/^https?:/i.test(url) && !own) || !event.cancelable || event.downloadRequest != null) return;
      event.preventDefault();
      say(%s + url.slice(0, 300));
    } catch (e) {}
  });
})();""" % repr(NAVIGATION_REFUSED)

#: Chromium's console message for a file:, chrome:, view-source: ... load it refused
LOCAL_REFUSED = "Not allowed to load local resource: "
#: Chromium's console message for a top-level navigation to a data: URL it refused
DATA_REFUSED = "Not allowed to navigate top frame to data URL: "
#: console messages saying the renderer or Chromium refused something, and how each is listed
#: under the record's `blocked` (before the URL the message names)
REFUSALS = ((LOCAL_REFUSED, ""), (POPUP_REFUSED, "popup "), (NAVIGATION_REFUSED, "navigation "),
            (DATA_REFUSED, "navigation "))

#: the page's whole scrollable size in CSS pixels
SIZE_SCRIPT = ("() => { const d = document.documentElement, b = document.body, w = [0, 0]; "
               "for (const e of [d, b]) if (e) { if (e.scrollWidth > w[0]) w[0] = e.scrollWidth; "
               "if (e.scrollHeight > w[1]) w[1] = e.scrollHeight; } return w; }")

LOADED_SCRIPT = ("() => document.readyState === 'complete' || new Promise(done => "
                 "window.addEventListener('load', () => done(true), {once: true}))")
TEXT_SCRIPT = ("() => document.body ? document.body.innerText : "
               "(document.documentElement ? document.documentElement.textContent : '')")
