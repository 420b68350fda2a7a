"""Parsing: every BEEM model in one process, against Lark alone (target: all 757 in under 10 s).

The files are read first (reading is not timed); then :func:`dve.parser.parse_source` (the step
of ``dvecost check`` and :func:`dve.load_model` after the file is decoded: the fast parser, and
Lark for what it does not take) runs over every file of a group, one after the other in this
process, and its CPU time is summed per file. The reference, measured in the same run, is the
Lark parser alone on the same files, except the ones ``--lark-skip`` names (by default the
twelve 1.9 MB ``plc`` files, about 7.5 s each under Lark). Groups: the BEEM instances and
property variants (``MANIFEST.tsv`` of the BEEM folder), and DiVinE's own test models.

The Lark tables are built before the clock starts (about 0.2 s, once per process). Each model is
freed before the next is parsed, and that time counts.
"""

from __future__ import annotations

import argparse
import gc
import os
import pathlib
import platform
import time
from typing import Callable

from . import Report, shared_roots

__all__ = ["add_arguments", "run", "default_beem", "TARGET_S"]

#: Issue 2's target: all BEEM files parsed in one process in under this many CPU seconds.
TARGET_S = 10.0


def default_beem() -> pathlib.Path | None:
    """The BEEM folder: ``$DVECOST_SHARED/beem``, else ``../shared/beem`` next to the working
    directory or the source tree; ``None`` when none exists."""
    for r in shared_roots():
        if (r / "beem" / "MANIFEST.tsv").is_file():
            return r / "beem"
    return None


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--beem", type=pathlib.Path, metavar="DIR",
                   help="the BEEM folder, with MANIFEST.tsv and models/ (default: "
                        "../shared/beem, or $DVECOST_SHARED/beem)")
    p.add_argument("--repeat", type=int, default=1, metavar="K",
                   help="passes over all files; the best is reported (default 1)")
    p.add_argument("--lark-skip", default="plc", metavar="SUBSTRING",
                   help="leave files whose name holds SUBSTRING out of the Lark reference "
                        "(default plc; '' times Lark on every file, about 100 s)")
    p.add_argument("--no-lark", action="store_true", help="do not time the Lark reference")


def _groups(beem: pathlib.Path):
    from dve.errors import Source

    rows = (beem / "MANIFEST.tsv").read_text().splitlines()[1:]
    kinds = dict(row.split("\t")[:2] for row in rows if row.count("\t") >= 1)
    groups: dict[str, list[Source]] = {"BEEM": [], "DiVinE tests": []}
    for path in sorted((beem / "models").glob("*.dve")):
        kind = kinds.get(f"models/{path.name}", "")
        group = "BEEM" if kind.startswith("BEEM") else "DiVinE tests"
        groups[group].append(Source(str(path), path.read_text()))
    return groups


def _time_each(parse: Callable, sources, repeat: int) -> list[float]:
    """CPU seconds of ``parse`` per source: the best pass of ``repeat`` by total."""
    best: list[float] | None = None
    for _ in range(repeat):
        times = []
        for src in sources:
            c = time.process_time()
            parse(src)  # the model is freed here, inside the timing, as in a run over files
            times.append(time.process_time() - c)
        if best is None or sum(times) < sum(best):
            best = times
    return best or []


def run(args: argparse.Namespace, progress: Callable[[str], None] = lambda m: None) -> Report:
    from dve.errors import ConfigurationError
    from dve.parser import get_parser, lark_parse, parse_source

    beem = args.beem or default_beem()
    if beem is None or not (beem / "MANIFEST.tsv").is_file():
        raise ConfigurationError("BEEM folder not found: pass --beem DIR (it holds "
                                 "MANIFEST.tsv and models/) or set DVECOST_SHARED")
    groups = _groups(beem)
    get_parser()  # the Lark tables, outside the timing

    def lark_only(src):
        gc.disable()  # as parse_source does around either parser
        try:
            return lark_parse(src)
        finally:
            gc.enable()

    rows, notes = [], []
    for name, sources in groups.items():
        if not sources:
            continue
        progress(f"{name}: {len(sources)} files, fast path")
        fast = _time_each(parse_source, sources, args.repeat)
        total = sum(fast)
        mb = sum(len(s.text) for s in sources) / 1e6
        slowest = sorted(zip(fast, sources), key=lambda x: -x[0])[:3]
        notes.append(f"{name}: slowest " + ", ".join(
            f"{pathlib.Path(s.name).name} {t:.2f} s" for t, s in slowest))
        target = ("met" if total < TARGET_S else "NOT met") if name == "BEEM" else ""
        rows.append((name, len(sources), round(mb, 2), _sig(total), None, None, target))
        if args.no_lark:
            continue
        keep = [i for i, s in enumerate(sources)
                if not (args.lark_skip and args.lark_skip in pathlib.Path(s.name).name)]
        subset = [sources[i] for i in keep]
        label = f"{name}, without '{args.lark_skip}'" if len(subset) < len(sources) else name
        progress(f"{label}: {len(subset)} files, Lark alone")
        lark = sum(_time_each(lark_only, subset, args.repeat))
        fast_sub = sum(fast[i] for i in keep)
        mb_sub = sum(len(s.text) for s in subset) / 1e6
        if len(subset) < len(sources):
            rows.append((label, len(subset), round(mb_sub, 2), _sig(fast_sub),
                         _sig(lark), _sig(lark / max(fast_sub, 1e-9)), ""))
        else:
            rows[-1] = rows[-1][:4] + (_sig(lark), _sig(lark / max(total, 1e-9)), rows[-1][6])
    notes.append(f"fast_s: CPU seconds of parse_source over the files, one after the other "
                 f"(fast parser, Lark for what it does not take); lark_s: the Lark parser alone "
                 f"on the same files, in the same run; target: BEEM in under {TARGET_S:g} s")
    meta = {"python": platform.python_version(), "machine": platform.machine(),
            "cpus": os.cpu_count(), "repeat": args.repeat, "beem": str(beem)}
    return Report(title="Parsing all models in one process",
                  columns=("files", "n", "MB", "fast_s", "lark_s", "speedup", "target"),
                  rows=tuple(rows), notes=tuple(notes), meta=meta)


def _sig(x: float) -> float:
    """``x`` to three significant digits (a fixed number of decimals made the times of a few
    small files 0.0)."""
    return float(f"{x:.3g}")
