"""One self-contained HTML report (``--html FILE``): the answer, the model summary, the chart
of the critical cycle (inline SVG), the clients starved on it, the run step by step, and for
``saturate``/``headroom`` the curve or the capacity figures given by the caller.

:func:`render_report` returns the page as text; nothing is fetched when it is opened (no
script, no style sheet, no image outside it). The numbers it shows are those of ``--json``,
each in an element with a ``data-key`` naming the JSON field, so a test reads them back.

>>> from dvecost.result import demo
>>> page = render_report(demo(), "demo")
>>> page.startswith("<!DOCTYPE html>") and 'data-key="exact">3/2<' in page
True
"""

from __future__ import annotations

import html
from typing import Sequence

__all__ = ["render_report", "render_frontier"]

_STYLE = """
body { font-family: sans-serif; margin: 2em; max-width: 110em; }
table { border-collapse: collapse; font-size: 0.85em; }
td, th { border: 1px solid #ccc; padding: 2px 6px; text-align: left; }
pre { background: #f6f6f6; padding: 0.5em; overflow-x: auto; }
.answer { font-size: 1.3em; }
"""


def _kv(key: str, value) -> str:
    return f'<span data-key="{html.escape(key)}">{html.escape(str(value))}</span>'


def render_report(a, title: str, *, facts: Sequence[tuple[str, str, object]] = (),
                  curve: Sequence[tuple[int, str, float]] = (), chart: bool = True) -> str:
    """The HTML page of an :class:`~dvecost.result.Analysis`.

    Parameters
    ----------
    a : Analysis
        The analysis whose critical cycle the page shows.
    title : str
        The page's title (the command line, say).
    facts : sequence of (label, json key, value)
        Figures of the command above the analysis (headroom's capacity, saturate's answer),
        each under ``data-key="result.KEY"`` (the command's JSON field; the analysis's own
        fields are under their ``--json`` names of ``analysis``).
    curve : sequence of (clients, exact load, load)
        The load against the number of clients (``saturate``), drawn as an inline SVG.
    chart : bool
        Draw the tick chart (needs matplotlib) for a ``system sync`` model.
    """
    from .report import render_steps, summary_lines
    from .ticks import legend_line, render_ticks, starved_line
    e = html.escape
    out = ["<!DOCTYPE html>", "<html><head><meta charset='utf-8'>",
           f"<title>{e(title)}</title><style>{_STYLE}</style></head><body>",
           f"<h1>{e(title)}</h1>"]
    if facts:
        out.append("<table class='facts'>")
        for label, key, value in facts:
            out.append(f"<tr><th>{e(label)}</th><td>{_kv('result.' + key, value)}</td></tr>")
        out.append("</table>")
    out.append(f"<p class='answer'>{e(a.label)} = {_kv('exact', a.exact)} = "
               f"{_kv('value', float(a.value))} "
               f"({_kv('certified', 'certified' if a.certified else 'NOT certified')})</p>")
    out.append("<h2>Model</h2><ul>")
    out += [f"<li>{e(line)}</li>" for line in summary_lines(a)]
    out.append(f"<li>states {_kv('n_states', a.n_states)}, transitions "
               f"{_kv('n_transitions', a.n_transitions)}</li></ul>")
    if curve:
        out.append("<h2>Load against clients</h2>")
        out.append(_curve_svg(curve))
        out.append("<table><tr><th>clients</th><th>load</th></tr>")
        out += [f"<tr><td data-key='curve.clients'>{n}</td><td data-key='curve.exact'>"
                f"{e(ex)}</td></tr>" for n, ex, _ in curve]
        out.append("</table>")
    if a.witness and a.cycle:
        n = len(a.cycle)
        out.append(f"<h2>Critical cycle</h2><p>{_kv('cycle_steps', n)} steps, cost "
                   f"{_kv('cycle_cost', sum(s.cost for s in a.cycle))}, time "
                   f"{_kv('cycle_time', sum(s.time for s in a.cycle))}</p>")
        tv = a.ticks()
        if tv is not None:
            starved = starved_line(tv)
            if starved:
                out.append(f"<p class='starved' data-key='starved'>{e(starved)}</p>")
            if chart:
                from .chart import chart_svg
                svg = chart_svg(tv, a.model)
                out.append("<div class='chart'>" + svg[svg.index("<svg"):] + "</div>")
            out.append("<pre class='ticks'>" + e("\n".join(render_ticks(tv, 160))) + "\n"
                       + e(legend_line(tv)) + "</pre>")
        out.append("<h3>Step by step</h3>")
        out.append("<pre class='steps'>" + e("\n".join(render_steps(a.cycle))) + "</pre>")
        if a.prefix:
            out.append(f"<h3>Run reaching it ({len(a.prefix)} steps)</h3>")
            out.append("<pre class='prefix'>" + e("\n".join(render_steps(a.prefix))) + "</pre>")
    for w in a.warnings:
        out.append(f"<p><b>warning</b>: {e(w)}</p>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def _curve_svg(curve: Sequence[tuple[int, str, float]], w: int = 480, h: int = 240) -> str:
    """The load against clients as a small inline SVG (points and a staircase)."""
    xs = [n for n, _, _ in curve]
    ys = [y for _, _, y in curve]
    x0, x1 = min(xs), max(xs)
    y1 = max(ys + [1e-9]) * 1.1
    pad = 36

    def px(x):
        return pad + (x - x0) / max(x1 - x0, 1) * (w - 2 * pad)

    def py(y):
        return h - pad - y / y1 * (h - 2 * pad)

    pts = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in zip(xs, ys))
    dots = "".join(f"<circle cx='{px(x):.1f}' cy='{py(y):.1f}' r='3'/>"
                   f"<text x='{px(x):.1f}' y='{h - pad + 14}' font-size='10' "
                   f"text-anchor='middle'>{x}</text>" for x, y in zip(xs, ys))
    dots += (f"<text x='{pad - 4}' y='{py(max(ys)) + 4:.1f}' font-size='10' text-anchor='end'>"
             f"{max(ys):.3g}</text><text x='{pad - 4}' y='{h - pad + 4}' font-size='10' "
             "text-anchor='end'>0</text>")
    return (f"<svg xmlns='http://www.w3.org/2000/svg' width='{w}' height='{h}'>"
            f"<line x1='{pad}' y1='{h - pad}' x2='{w - pad}' y2='{h - pad}' stroke='black'/>"
            f"<line x1='{pad}' y1='{pad}' x2='{pad}' y2='{h - pad}' stroke='black'/>"
            f"<polyline fill='none' stroke='#4c9be8' points='{pts}'/>{dots}"
            f"<text x='{w / 2}' y='{h - 6}' font-size='11'>clients</text>"
            f"<text x='4' y='{pad - 8}' font-size='11'>load (max {max(ys):.3g})</text></svg>")


def render_frontier(result, title: str) -> str:
    """The HTML page of a saturation frontier (:class:`scenarios.capacity.FrontierResult`):
    the staircase as an inline SVG, then the staircase and the evaluated points as tables
    (``data-key`` ``stair.a``, ``stair.b``; ``point.a``, ``point.b``, ``point.exact``).

    >>> from fractions import Fraction
    >>> from scenarios.capacity import FrontierPoint, FrontierResult
    >>> r = FrontierResult("s", "x", "y", (), Fraction(1), 2, 2, ((0, 2), (1, 1), (2, None)),
    ...                    (FrontierPoint(1, 2, Fraction(3, 2), True, 9, 0.1),), True, ())
    >>> page = render_frontier(r, "demo")
    >>> "<svg" in page and "data-key='stair.b'>1<" in page
    True
    """
    e = html.escape
    out = ["<!DOCTYPE html>", "<html><head><meta charset='utf-8'>",
           f"<title>{e(title)}</title><style>{_STYLE}</style></head><body>",
           f"<h1>{e(title)}</h1>",
           f"<p class='answer'>the largest count of {e(result.b)} that does not saturate the "
           f"server, for each count of {e(result.a)} (capacity "
           f"{_kv('result.capacity', result.capacity)})</p>"]
    if result.fixed:
        out.append("<p>held fixed: " + e(", ".join(f"{k}={v}" for k, v in result.fixed))
                   + "</p>")
    out.append(_stair_svg(result))
    out.append(f"<table><tr><th>{e(result.a)}</th><th>largest {e(result.b)}</th></tr>")
    for a, b in result.stair:
        shown = "none (saturates at 0)" if b is None else b
        out.append(f"<tr><td data-key='stair.a'>{a}</td><td data-key='stair.b'>{shown}</td></tr>")
    out.append("</table><h2>Points evaluated</h2>")
    out.append(f"<table><tr><th>{e(result.a)}</th><th>{e(result.b)}</th><th>load</th>"
               "<th>saturated</th></tr>")
    for p in result.points:
        out.append(f"<tr><td data-key='point.a'>{p.n_a}</td><td data-key='point.b'>{p.n_b}</td>"
                   f"<td data-key='point.exact'>{e(str(p.exact))}</td>"
                   f"<td>{'yes' if p.saturated else 'no'}</td></tr>")
    out.append("</table></body></html>")
    return "\n".join(out) + "\n"


def _stair_svg(result, w: int = 420, h: int = 320) -> str:
    """The staircase: for each count of ``a`` a bar up to the largest count of ``b``."""
    pad = 40
    na, nb = max(result.max_a, 1), max(result.max_b, 1)

    def px(x):
        return pad + x / (na + 1) * (w - 2 * pad)

    def py(y):
        return h - pad - y / (nb + 1) * (h - 2 * pad)

    bars = "".join(
        f"<rect x='{px(a):.1f}' y='{py(b + 1):.1f}' width='{px(a + 1) - px(a):.1f}' "
        f"height='{py(0) - py(b + 1):.1f}' fill='#5cb85c' stroke='white'/>"
        for a, b in result.stair if b is not None)
    return (f"<svg xmlns='http://www.w3.org/2000/svg' width='{w}' height='{h}'>{bars}"
            f"<line x1='{pad}' y1='{h - pad}' x2='{w - pad}' y2='{h - pad}' stroke='black'/>"
            f"<line x1='{pad}' y1='{pad}' x2='{pad}' y2='{h - pad}' stroke='black'/>"
            f"<text x='{w / 2}' y='{h - 8}' font-size='11'>{html.escape(result.a)}</text>"
            f"<text x='4' y='{pad - 10}' font-size='11'>{html.escape(result.b)} "
            f"(green: does not saturate)</text></svg>")
