"""Time parsing every model of ``../shared/beem/models`` in one process (issue 2's benchmark).

Usage::

    python tools/parse_beem.py [BEEM_DIR] [--lark] [--skip=SUBSTRING]

Reads all files first (reading is not timed), then times :func:`dve.parser.parse_source` (what
:func:`dve.parse_model` runs after decoding) over all of them, and prints the wall-clock and CPU
time and the three slowest files. The CPU time is the figure to quote on a shared machine. ``--lark`` forces the Lark parser (no
fast path), for comparison; ``--skip=plc`` leaves out the files whose name contains ``plc``. The BEEM instances are the files ``MANIFEST.tsv`` lists as "BEEM
instance" or "BEEM property variant"; the DiVinE test models are timed separately.
"""

from __future__ import annotations

import gc
import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from dve.errors import Source
from dve.parser import get_parser, lark_parse, parse_source


def main(argv: list[str]) -> int:
    use_lark = "--lark" in argv
    skip = [a.split("=", 1)[1] for a in argv if a.startswith("--skip=")]
    args = [a for a in argv if not a.startswith("--")]
    beem = pathlib.Path(args[0]) if args else ROOT.parent / "shared" / "beem"
    manifest = (beem / "MANIFEST.tsv").read_text().splitlines()[1:]
    kinds = {row.split("\t")[0]: row.split("\t")[1] for row in manifest if row}
    groups: dict[str, list[Source]] = {"BEEM": [], "DiVinE tests": []}
    for path in sorted((beem / "models").glob("*.dve")):
        if any(x in path.name for x in skip):
            continue
        kind = kinds.get(f"models/{path.name}", "")
        group = "BEEM" if kind.startswith("BEEM") else "DiVinE tests"
        groups[group].append(Source(str(path), path.read_text()))
    get_parser()  # build the Lark tables outside the timing (about 0.2 s, once per process)
    if use_lark:
        def parse(src: Source) -> object:
            gc.disable()  # as parse_source does around either parser
            try:
                return lark_parse(src)
            finally:
                gc.enable()
    else:
        parse = parse_source
    for group, sources in groups.items():
        times = []
        t0, c0 = time.perf_counter(), time.process_time()
        for src in sources:
            t = time.perf_counter()
            parse(src)
            times.append((time.perf_counter() - t, src.name))
        total, cpu = time.perf_counter() - t0, time.process_time() - c0
        n_bytes = sum(len(src.text) for src in sources)
        print(f"{group}: {len(sources)} files, {n_bytes / 1e6:.1f} MB, {total:.2f} s wall, "
              f"{cpu:.2f} s CPU ({'lark only' if use_lark else 'fast path + lark fallback'})")
        for dt, name in sorted(times)[-3:]:
            print(f"    {dt:6.2f} s  {pathlib.Path(name).name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
