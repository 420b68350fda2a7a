"""The views of a critical cycle that ``analyze``, ``headroom``, ``workers`` and ``saturate``
share: ``--view steps|ticks``, ``--chart FILE.svg|png`` and ``--html FILE``."""

from __future__ import annotations

import argparse
import shutil
from typing import Sequence

from dve.errors import ConfigurationError

from .files import check_output_files, save_figure, write_atomic

__all__ = ["add_view_options", "check_view_files", "write_views", "text_width", "render_cycle"]


def add_view_options(p: argparse.ArgumentParser) -> None:
    """Add ``--view``, ``--chart`` and ``--html`` to ``p``."""
    p.add_argument("--view", choices=("steps", "ticks"), default="steps",
                   help="show the critical cycle step by step (default), or, for a system "
                        "sync model, tick by tick: a row per client and worker (per process "
                        "for a hand-written model), a column per tick, wrapped to the "
                        "terminal")
    p.add_argument("--chart", metavar="FILE.svg",
                   help="write the critical cycle of a system sync model as a Gantt chart "
                        "(svg, png, ...; needs matplotlib: pip install 'dvecost[plot]')")
    p.add_argument("--html", metavar="FILE",
                   help="write one self-contained HTML report: the answer, the model, the "
                        "chart, the run step by step")


def check_view_files(args: argparse.Namespace) -> None:
    """Refuse, before the analysis, a chart or report that could not be written."""
    check_output_files(getattr(args, "html", None), getattr(args, "chart", None))


def text_width() -> int:
    """The terminal's width (100 when not a terminal)."""
    return max(40, shutil.get_terminal_size((100, 24)).columns)


def write_views(args: argparse.Namespace, a, title: str, *,
                facts: Sequence[tuple[str, str, object]] = (),
                curve: Sequence[tuple[int, str, float]] = ()) -> list[str]:
    """Write ``--chart`` and ``--html`` for the analysis ``a``; returns what was written."""
    written = []
    if getattr(args, "chart", None):
        tv = a.ticks() if a is not None else None
        if tv is None:
            raise ConfigurationError("--chart needs the critical cycle of a system sync model "
                                     "(decoded: not with --no-witness)")
        from ..chart import chart_figure
        written.append(save_figure(chart_figure(tv, title), args.chart))
    if getattr(args, "html", None):
        if a is None:
            raise ConfigurationError("--html needs the critical cycle (not with --no-witness)")
        from ..html import render_report
        written.append(write_atomic(args.html, render_report(a, title, facts=facts,
                                                             curve=curve)))
    return written


def render_cycle(a, width: int = 100) -> str:
    """The critical cycle of ``a`` tick by tick, with its legend and starved clients (what
    ``saturate --view ticks`` adds under its answer)."""
    from ..ticks import legend_line, render_ticks, starved_line
    tv = a.ticks()
    lines = [f"critical cycle tick by tick ({tv.n_ticks} ticks):", *render_ticks(tv, width),
             "  " + legend_line(tv)]
    starved = starved_line(tv)
    if starved:
        lines.append("  " + starved)
    return "\n".join(lines)
