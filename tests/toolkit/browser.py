"""Report pages as a browser draws them: headless Chromium runs the page (and its script), then a probe
script measures what was laid out and writes it into the DOM, which `--dump-dom` prints (helpers, not tests).

Each call is one Chromium start (~1-2 s). The network is closed to the browser
(every host resolves to nothing), so a page that needed anything from outside
would show it. Skips with a clear message when no Chromium is installed.
"""
from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")

# Measures every element matching each selector (box, data-* attributes, text, hidden or not), then runs the
# test's own steps (`ACTIONS`: a function body receiving `measure`) and stores both as JSON in the DOM.
PROBE = """
<script>
(function () {
  function measure(selector) {
    return Array.prototype.map.call(document.querySelectorAll(selector), function (el) {
      var r = el.getBoundingClientRect();
      var data = {};
      Array.prototype.forEach.call(el.attributes, function (a) {
        if (a.name.indexOf("data-") === 0) { data[a.name.slice(5)] = a.value; }
      });
      return {x: r.x, y: r.y, width: r.width, height: r.height, data: data, hidden: el.closest("[hidden]") !== null,
              text: (el.textContent || "").trim().slice(0, 300), tag: el.tagName.toLowerCase(),
              cls: el.getAttribute("class") || "", fill: el.getAttribute("fill")};
    });
  }
  var out = {selectors: {}, actions: null, scripts: document.scripts.length, title: document.title};
  SELECTORS.forEach(function (s) { out.selectors[s] = measure(s); });
  try { out.actions = (function (measure) { ACTIONS })(measure); } catch (e) { out.error = String(e.stack || e); }
  var pre = document.createElement("pre");
  pre.id = "replog-probe";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>
"""


def chromium() -> str:
    for name in CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    reason = "no Chromium on this machine (install Debian's `chromium`): the report pages are not drawn"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"under CI=true every page test must run: {reason} (make test installs it as root)")
    pytest.skip(reason)


def probe(page: Path, selectors: list[str], actions: str = "return null;", width: int = 1280) -> dict[str, Any]:
    """Open a copy of `page` with the probe appended in headless Chromium; the probe's findings."""
    probed = page.with_name(page.stem + ".probe.html")
    inline = {"SELECTORS": json.dumps(selectors), "ACTIONS": actions}   # "</" would end the probe's <script>
    script = PROBE
    for name, code in inline.items():
        script = script.replace(name, code.replace("</", "<\\/"))
    text = page.read_text(encoding="utf-8")
    probed.write_text(text.replace("</body>", script + "</body>", 1), encoding="utf-8")
    out = subprocess.run(
        [chromium(), "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--mute-audio",
         "--host-resolver-rules=MAP * ~NOTFOUND", f"--window-size={width},900",
         f"--user-data-dir={page.parent / '.chromium'}",
         "--dump-dom", probed.as_uri()],
        capture_output=True, text=True, timeout=60, env={**os.environ, "HOME": str(page.parent)})
    found = re.search(r'<pre id="replog-probe">(.*?)</pre>', out.stdout, re.S)
    assert found, f"the probe did not run: {out.returncode}\n{out.stderr[-2000:]}"
    got = json.loads(html.unescape(found.group(1)))
    assert "error" not in got, got["error"]
    return got


class _Refs(HTMLParser):
    """Every URL an element would load or link to."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[tuple[str, str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in ("src", "href", "xlink:href", "action", "data", "poster") and value:
                self.urls.append((tag, name, value))


def assert_self_contained(page: str) -> None:
    """Nothing in the page is fetched at view time: no external script, style, image, font or frame."""
    refs = _Refs()
    refs.feed(page)
    outside = [r for r in refs.urls if not r[2].startswith("#")]
    assert not outside, outside
    assert "@import" not in page and "url(http" not in page
