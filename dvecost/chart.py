"""The tick view (:mod:`dvecost.ticks`) as a Gantt chart (``--chart FILE.svg|png``, the HTML
report): one bar row per client (folded rows with their count) and per worker, one colour per
phase, the load of each tick as a line below, idle-worker ticks shaded, starved clients named
in the title.

Needs matplotlib (the ``plot`` extra); :func:`chart_figure` builds the figure, :func:`chart_svg`
returns it as SVG text (what the HTML report inlines). Nothing here writes or prints.

>>> from dvecost.ticks import Row, TickView
>>> from fractions import Fraction
>>> v = TickView(True, (Row("a_1", "client", ("a_1",), tuple(">w#<")),
...                     Row("worker 1", "worker", (), tuple("--a-"))),
...              tuple(map(Fraction, (0, 0, 1, 0))), (1, 1, 1, 1), 1, (0, 0, 1, 0))
>>> svg = chart_svg(v, "demo")
>>> svg.lstrip().startswith("<?xml") and "</svg>" in svg
True
>>> bars(v)[0]    # row, first tick, length, symbol
(0, 0, 1, '>')
"""

from __future__ import annotations

import io

from dve.errors import ConfigurationError

from .ticks import IDLE, PHASE_SYMBOLS, TickView, starved_line

__all__ = ["chart_figure", "chart_svg", "bars", "PHASE_COLOURS"]

#: Colour of each phase of a client, and of a busy worker.
PHASE_COLOURS = {".": "#dddddd", ">": "#4c9be8", "w": "#f2b134", "#": "#d9534f",
                 "<": "#5cb85c", "worker": "#8e6bbf"}


def bars(view: TickView) -> list[tuple[int, int, int, str]]:
    """The chart's bars: ``(row, first tick, ticks, symbol)``, runs of one symbol in a row of
    :meth:`TickView.folded` (a worker's idle ticks and a process row's cells included)."""
    out = []
    for i, r in enumerate(view.folded()):
        k = 0
        while k < len(r.cells):
            j = k
            while j < len(r.cells) and r.cells[j] == r.cells[k]:
                j += 1
            out.append((i, k, j - k, r.cells[k]))
            k = j
    return out


def chart_figure(view: TickView, title: str = ""):
    """The Gantt chart of ``view`` as a matplotlib figure."""
    try:
        import matplotlib
    except ImportError:
        raise ConfigurationError("a chart needs matplotlib, which is not installed; install "
                                 "it with: pip install 'dvecost[plot]'") from None
    matplotlib.use("Agg")
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    rows = view.folded()
    n = view.n_ticks
    h = 0.35 * len(rows) + 2.2
    fig = Figure(figsize=(min(16, 3 + 0.12 * n + 2), h))
    ax, axl = fig.subplots(2, 1, sharex=True,
                           gridspec_kw={"height_ratios": [max(1, len(rows)), 2]})
    codes: dict[str, str] = {}
    for i, k, length, sym in bars(view):
        r = rows[i]
        if r.kind == "worker":
            if sym == IDLE:
                continue
            colour = PHASE_COLOURS["worker"]
        elif r.kind == "client":
            colour = PHASE_COLOURS.get(sym, "#999999")
        else:
            palette = ["#4c9be8", "#f2b134", "#d9534f", "#5cb85c", "#8e6bbf", "#aaaaaa"]
            colour = codes.setdefault(sym, palette[len(codes) % len(palette)])
        ax.broken_barh([(k, length)], (i - 0.4, 0.8), facecolors=colour, edgecolor="white",
                       linewidth=0.5)
        if r.kind != "client" and length >= 2:
            ax.text(k + length / 2, i, sym, ha="center", va="center", fontsize=7)
    for k, idle in enumerate(view.idle):
        if idle:
            ax.axvspan(k, k + 1, color="#000000", alpha=0.06, linewidth=0)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([r.label for r in rows], fontsize=8)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_xlim(0, max(n, 1))
    handles = [Patch(color=PHASE_COLOURS[s], label=PHASE_SYMBOLS[s]) for s in PHASE_SYMBOLS] \
        if view.scenario else [Patch(color=c, label=f"{s} {view.legend.get(s, s)}")
                               for s, c in codes.items()]
    if view.scenario and view.workers is not None:
        handles.append(Patch(color=PHASE_COLOURS["worker"], label="busy worker"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7,
              frameon=False)
    xs = [k + 0.5 for k in range(n)]
    axl.step([0] + [k + 1 for k in range(n)], [float(view.load[0]) if n else 0] +
             [float(x) for x in view.load], where="pre", color="#333333")
    axl.plot(xs, [float(x) for x in view.load], "o", markersize=2, color="#333333")
    if view.workers is not None:
        axl.axhline(view.workers, color="#d9534f", linestyle=":", linewidth=1)
    axl.set_ylabel("load", fontsize=8)
    axl.set_xlabel("tick", fontsize=8)
    axl.set_ylim(bottom=0)
    full = title
    starved = starved_line(view)
    if starved:
        full = (full + "\n" if full else "") + starved.split(":")[0]
    if full:
        ax.set_title(full, fontsize=9)
    fig.tight_layout()
    return fig


def chart_svg(view: TickView, title: str = "") -> str:
    """The chart as SVG text."""
    fig = chart_figure(view, title)
    buf = io.StringIO()
    fig.savefig(buf, format="svg")
    return buf.getvalue()
