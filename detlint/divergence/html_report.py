"""``detlint diverge --report report.html``: one self-contained page (no scripts, no fetches) with
the largest difference of every compared output in execution order (an SVG plot, log scale, the
first difference marked, the phases init / data / forward / backward / update shaded), the
first difference's details and the table of the outputs that differ most."""
from __future__ import annotations

import html
import math
from typing import Any, Optional

WIDTH, HEIGHT = 960, 320
LEFT, RIGHT, TOP, BOTTOM = 70, 20, 20, 50
FLOOR = 1e-12  # equal outputs are drawn here, below every real difference
PHASE_COLOURS = {"init": "#e8f0fe", "batch": "#fef7e0", "forward": "#e6f4ea", "backward": "#fce8e6",
                 "update": "#f3e8fd", "ops": "#f1f3f4"}
PHASE_NAMES = {"init": "init", "batch": "data", "forward": "forward", "backward": "backward", "update": "update",
               "ops": "ops"}
TOP_ROWS = 20
VERDICTS = {"differ": "the runs differ", "same": "no difference", "incomplete": "no verdict"}


def _y(value: float, low: float, high: float) -> float:
    span = (math.log10(high) - math.log10(low)) or 1.0
    return TOP + (HEIGHT - TOP - BOTTOM) * (1 - (math.log10(max(value, low)) - math.log10(low)) / span)


def plot(timeline: list[dict[str, Any]], first: Optional[int]) -> str:
    """The SVG: one point per output (x: execution order, y: log10 of the largest difference)."""
    if not timeline:
        return '<p class="empty">No outputs were compared.</p>'
    n = len(timeline)
    diffs = [p["diff"] for p in timeline if isinstance(p["diff"], (int, float)) and p["diff"] > 0]
    high = 10 ** math.ceil(math.log10(max(diffs))) if diffs else 1.0
    low = min(FLOOR, high / 1e3)
    x_of = lambda i: LEFT + (WIDTH - LEFT - RIGHT) * (i + 0.5) / n  # noqa: E731
    parts = [f'<svg id="plot" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
             f'viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="largest difference per output">']
    start = 0
    for i in range(1, n + 1):  # the phases, as shaded bands with their names
        if i == n or timeline[i]["phase"] != timeline[start]["phase"]:
            phase = timeline[start]["phase"]
            x0, x1 = x_of(start) - (WIDTH - LEFT - RIGHT) / n / 2, x_of(i - 1) + (WIDTH - LEFT - RIGHT) / n / 2
            parts.append(f'<rect class="phase" data-phase="{phase}" x="{x0:.1f}" y="{TOP}" width="{x1 - x0:.1f}" '
                         f'height="{HEIGHT - TOP - BOTTOM}" fill="{PHASE_COLOURS.get(phase, "#eee")}"/>')
            if x1 - x0 > 30:
                parts.append(f'<text class="phase-name" x="{(x0 + x1) / 2:.1f}" y="{HEIGHT - BOTTOM + 16}" '
                             f'text-anchor="middle">{PHASE_NAMES.get(phase, phase)}</text>')
            start = i
    exponent = int(math.log10(low))
    while 10 ** exponent <= high * 1.0001:  # the log axis: a line and a label per power of ten (every third)
        y = _y(10 ** exponent, low, high)
        parts.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>')
        if exponent % 3 == 0 or 10 ** (exponent + 1) > high * 1.0001:
            label = "equal" if 10 ** exponent <= FLOOR else f"1e{exponent}"
            parts.append(f'<text class="tick" x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{label}</text>')
        exponent += 1
    for point in timeline:
        diff = point["diff"]
        if diff is None:
            continue
        colour = "#d93025" if diff > 0 else "#5f6368"
        parts.append(f'<circle class="point{" differs" if diff > 0 else ""}" cx="{x_of(point["i"]):.1f}" '
                     f'cy="{_y(max(diff, FLOOR), low, high):.1f}" r="{2.5 if diff > 0 else 1.5}" fill="{colour}">'
                     f'<title>{html.escape(point["label"])}: {diff:.3g}</title></circle>')
    if first is not None and first < n:
        x = x_of(first)
        parts.append(f'<line id="first-marker" x1="{x:.1f}" x2="{x:.1f}" y1="{TOP}" y2="{HEIGHT - BOTTOM}" '
                     f'stroke="#d93025" stroke-dasharray="4 3"/>')
        parts.append(f'<text x="{min(x + 4, WIDTH - 120):.1f}" y="{TOP + 12}" fill="#d93025">first difference</text>')
    parts.append(f'<text x="{(LEFT + WIDTH - RIGHT) / 2:.1f}" y="{HEIGHT - 8}" text-anchor="middle">'
                 f'outputs in execution order ({n})</text>')
    parts.append(f'<text transform="rotate(-90)" x="{-(TOP + HEIGHT - BOTTOM) / 2:.1f}" y="14" '
                 f'text-anchor="middle">max |run 1 - run 2| (log)</text>')
    parts.append("</svg>")
    return "".join(parts)


def render(report: Any) -> str:
    """The page for a ``DivergeReport``."""
    timeline = report.timeline
    first_index = next((p["i"] for p in timeline if isinstance(p["diff"], (int, float)) and p["diff"] > 0), None)
    text = html.escape(str(report))
    top = sorted((p for p in timeline if isinstance(p["diff"], (int, float)) and p["diff"] > 0),
                 key=lambda p: -p["diff"])[:TOP_ROWS]
    rows = "".join(f'<tr><td>{p["i"]}</td><td>{html.escape(PHASE_NAMES.get(p["phase"], p["phase"]))}</td>'
                   f'<td>{html.escape(p["label"])}</td><td>{html.escape(p["where"] or "")}</td>'
                   f'<td class="num">{p["diff"]:.6g}</td></tr>' for p in top)
    table = (f'<table id="top"><thead><tr><th>#</th><th>phase</th><th>output</th><th>where</th>'
             f'<th>max |run 1 - run 2|</th></tr></thead><tbody>{rows}</tbody></table>') if rows else \
        '<p id="top">No output differs.</p>'
    verdict = VERDICTS[report.verdict]
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>detlint diverge: {html.escape(report.command)}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em; color: #202124; }}
pre {{ background: #f8f9fa; padding: 1em; white-space: pre-wrap; }}
table {{ border-collapse: collapse; }} td, th {{ border-bottom: 1px solid #ddd; padding: 4px 8px; text-align: left; }}
td.num {{ text-align: right; font-variant-numeric: tabular-nums; }}
text {{ font-size: 12px; fill: #3c4043; }}
</style></head><body>
<h1>detlint diverge: <span id="verdict">{verdict}</span></h1>
<p>{html.escape(report.command)}, {report.runs} runs</p>
<h2>Largest difference per output</h2>
{plot(timeline, first_index)}
<h2>First difference</h2>
<pre id="first">{text}</pre>
<h2>Outputs that differ most</h2>
{table}
</body></html>
"""
