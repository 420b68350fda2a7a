"""``dvecost check FILE...``: parse and check models, without exploring them.

Parse, expand and statically check DVE models. Prints one summary line per correct file,
and compiler-style diagnostics for the others. Exit code 0 when all files are correct, 2
otherwise.

In detail: parse, expand and check models; a summary or diagnostics per file.

Each file is read, parsed, expanded (``-D name=value`` overrides ``input`` declarations) and
checked in this one process, by :func:`dve.loader.load_checked` (the front door of
:func:`dve.load_model`, keeping the warnings). With several files, each gets the defines that
name one of its inputs, and a define that no file declares is an error. Per file, either

- ``path: ok: 3 processes, 12 states, 20 transitions, 4 variables, 2 channels, 9 slots`` on
  stdout, and its warnings (if any) rendered on stderr; or
- its diagnostics rendered on stderr (``path:line:col: error[code]: message``, the source line,
  a caret, a hint), and nothing on stdout.

With ``--json``, one JSON object per file and line on stdout instead (nothing on stderr)::

    {"status": "ok" | "error", "path": ..., "ok": true, "n_processes": 3, ..., "n_slots": 9,
     "diagnostics": [{"code", "severity", "line", "column", "end_line", "end_column",
                      "message", "hint"}, ...], "timings": {"check": 0.01},
     "peak_memory_bytes": ...}

Summary fields are ``null`` for a file that failed. Exit code 0 when every file is fine
(warnings allowed), else 2.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from dve.errors import ConfigurationError, DvecostError, ModelError, ModelErrors
from dve.loader import load_checked, read_source
from dve.summary import ModelSummary, summarize

from . import (add_common, add_defines, not_a_scenario_file, parse_defines, peak_memory_bytes,
               print_error)
from .subcommand import add_command
from .terminal import use_color

__all__ = ["register", "run", "check_file", "SUMMARY_FIELDS"]

#: The summary fields of a ``--json`` record, in order.
SUMMARY_FIELDS = ("n_processes", "n_states", "n_transitions", "n_variables", "n_channels",
                  "n_slots")


def check_file(path: str, defines: dict[str, int], *, only_inputs: bool = False,
               used: set[str] | None = None
               ) -> tuple[ModelSummary | None, tuple[ModelError, ...], DvecostError | None]:
    """Read, parse, expand and check one file (:func:`dve.loader.load_checked`).

    Parameters
    ----------
    path : str
        The model file.
    defines : dict of str to int
        ``-D`` values for ``input`` declarations.
    only_inputs : bool
        Pass on only the defines that name an input of this model (``dvecost check`` on several
        files, where a define may be meant for some of them); else a define the model does not
        declare is an ``unknown-define`` error.
    used : set of str, optional
        Receives the names of the defines this model declares.

    Returns
    -------
    summary : dve.summary.ModelSummary or None
        ``None`` when the file has errors.
    warnings : tuple of ModelError
        Warnings of a correct file (empty when it failed: they are part of ``error``).
    error : DvecostError or None
        What made the file fail (a :class:`ModelErrors`, a :class:`ModelError`, or another
        :class:`DvecostError` such as an unreadable file).
    """
    # The front door as for every command; the file is read first so that ``path`` is taken
    # as a path whatever characters it holds.
    try:
        not_a_scenario_file(path, "check")
        source = read_source(path)
    except DvecostError as exc:
        return None, (), exc
    result = load_checked(source, defines=defines, only_inputs=only_inputs)
    if used is not None:
        used.update(result.inputs & set(defines))
    if result.error is not None:
        return None, (), result.error
    return summarize(result.model), result.warnings, None


def _diagnostics(exc: DvecostError | None, warnings: tuple[ModelError, ...]) -> list[dict]:
    if isinstance(exc, ModelErrors):
        items: list[ModelError] = list(exc.errors)
    elif isinstance(exc, ModelError):
        items = [exc]
    elif exc is not None:
        return [{"code": "unreadable-file" if isinstance(exc, ConfigurationError) else "error",
                 "severity": "error", "line": None, "column": None, "end_line": None,
                 "end_column": None, "message": str(exc), "hint": None}]
    else:
        items = list(warnings)
    out = []
    for e in items:
        pos = e.pos
        out.append({"code": e.code, "severity": e.severity,
                    "line": pos.line if pos else None, "column": pos.column if pos else None,
                    "end_line": pos.end_line if pos else None,
                    "end_column": pos.end_column if pos else None,
                    "message": e.message, "hint": e.hint})
    return out


def run(args: argparse.Namespace) -> int:
    """Check every file of ``args.files``; returns the exit code (0 all fine, else 2)."""
    defines = parse_defines(args.defines)
    several = len(args.files) > 1
    used: set[str] = set()
    failed = 0
    for path in args.files:
        t0 = time.perf_counter()
        summary, warnings, exc = check_file(path, defines, only_inputs=several, used=used)
        if exc is not None and args.debug:
            raise exc  # dvecost.cli.main shows the traceback
        failed += exc is not None
        if args.json:
            # The shape every command's JSON has: status first, timings, the peak last.
            record: dict[str, Any] = {"status": "ok" if exc is None else "error",
                                      "path": path, "ok": exc is None}
            for name in SUMMARY_FIELDS:
                record[name] = getattr(summary, name) if summary is not None else None
            record["diagnostics"] = _diagnostics(exc, warnings)
            record["timings"] = {"check": round(time.perf_counter() - t0, 6)}
            record["peak_memory_bytes"] = peak_memory_bytes()
            print(json.dumps(record), flush=True)
            continue
        if exc is not None:
            sys.stdout.flush()
            print_error(exc, sys.stderr)
            continue
        if not args.quiet:
            color = use_color(sys.stderr)
            for w in warnings:
                print(w.render(color), file=sys.stderr)
            print(f"{path}: ok: {summary.describe()}", flush=True)
    unused = sorted(set(defines) - used) if several else []
    if unused:
        names = ", ".join(f"'{n}'" for n in unused)
        print(f"dvecost: error: -D {names}: no model given declares such an input",
              file=sys.stderr)
    return 2 if failed or unused else 0


def _options(p: argparse.ArgumentParser) -> None:
    p.add_argument("files", nargs="+", metavar="FILE", help="DVE model files")
    p.add_argument("--json", action="store_true",
                   help="print one JSON object per file and line instead of text")
    add_defines(p)



def register(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``check`` subcommand to ``sub``."""
    p = add_command(sub, "check", __doc__, run)
    _options(p)
    add_common(p)
    return p
