"""`detlint diverge --report`: the HTML page, loaded in a real headless Chromium (the system
package), shows the plot (a point per compared output, the first difference marked, the phases),
the first difference and the table of the outputs that differ most."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

pytest.importorskip("torch")
BROWSER = next((shutil.which(name) for name in ("chromium", "chromium-browser", "google-chrome") if shutil.which(name)),
               None)
if BROWSER is None:
    pytest.skip("no Chromium: install the system package (apt-get install chromium)", allow_module_level=True)


def browser(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", *args],
                          capture_output=True, text=True, timeout=120)


def test_the_report_page_shows_plot_first_difference_and_table(tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    proc = subprocess.run([sys.executable, "-m", "detlint", "diverge", "--report", str(page), "--", sys.executable,
                           "dropout.py"], capture_output=True, text=True, timeout=600, cwd=ROOT / "tests" / "realtorch",
                          env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
    assert proc.returncode == 1, proc.stderr[-2000:]
    dom = browser("--dump-dom", page.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    shown = dom.stdout
    assert '<span id="verdict">the runs differ</span>' in shown
    points = re.findall(r'<circle class="point( differs)?"', shown)
    assert len(points) > 50 and sum(1 for p in points if p) > 10  # equal and differing outputs
    assert 'id="first-marker"' in shown
    assert {"init", "batch", "forward", "backward", "update"} <= set(re.findall(r'data-phase="(\w+)"', shown))
    first = re.search(r'<pre id="first">(.*?)</pre>', shown, re.S).group(1)
    assert "aten.bernoulli_.float (in Net.drop)" in first and "dropout.py:16" in first and "DET601" in first
    rows = re.findall(r"<tr><td>(\d+)</td><td>(\w+)</td><td>(.*?)</td><td>(.*?)</td><td class=\"num\">(\S+)</td></tr>",
                      shown)
    assert 5 <= len(rows) <= 20
    diffs = [float(r[4]) for r in rows]
    assert diffs == sorted(diffs, reverse=True) and diffs[0] > 0
    shot = tmp_path / "report.png"
    taken = browser("--window-size=1100,1000", f"--screenshot={shot}", page.as_uri())
    assert taken.returncode == 0 and shot.stat().st_size > 20000  # a page with a drawn plot, not a blank one
