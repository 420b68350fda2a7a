"""``dvecost check FILE...``: parse, expand and check models; a summary or diagnostics per file.

Each file is read, parsed, expanded (``-D name=value`` overrides ``input`` declarations) and
checked in this one process. Per file, either

- ``path: ok: 3 processes, 12 states, 20 transitions, 4 variables, 2 channels, 9 slots`` on
  stdout, and its warnings (if any) rendered on stderr; or
- its diagnostics rendered on stderr (``path:line:col: error[code]: message``, the source line,
  a caret, a hint), and nothing on stdout.

With ``--json``, one JSON object per file and line on stdout instead (nothing on stderr)::

    {"path": ..., "ok": true, "n_processes": 3, ..., "n_slots": 9,
     "diagnostics": [{"code", "severity", "line", "column", "end_line", "end_column",
                      "message", "hint"}, ...]}

Summary fields are ``null`` for a file that failed. Exit code 0 when every file is fine
(warnings allowed), else 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from dve.errors import (ConfigurationError, DvecostError, DveSyntaxError, ModelError,
                        ModelErrors, use_color)

from . import add_common, parse_defines, print_error

__all__ = ["register", "run", "check_file", "SUMMARY_FIELDS"]

#: The summary fields of a ``--json`` record, in order.
SUMMARY_FIELDS = ("n_processes", "n_states", "n_transitions", "n_variables", "n_channels",
                  "n_slots")


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``check`` subcommand to the ``dvecost`` parser."""
    p = sub.add_parser(
        "check", help="parse and check models, without exploring them",
        description="Parse, expand and statically check DVE models. Prints one summary line "
                    "per correct file, and compiler-style diagnostics for the others. Exit "
                    "code 0 when all files are correct, 2 otherwise.")
    p.add_argument("files", nargs="+", metavar="FILE", help="DVE model files")
    p.add_argument("--json", action="store_true",
                   help="print one JSON object per file and line instead of text")
    p.add_argument("-D", "--define", action="append", dest="defines", default=[],
                   metavar="NAME=VALUE", help="override an 'input' declaration (repeatable)")
    add_common(p)
    p.set_defaults(func=run)


def check_file(path: str, defines: dict[str, int]) -> tuple[Any, tuple[ModelError, ...],
                                                            DvecostError | None]:
    """Read, parse, expand and check one file.

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
    from dve.check import check_model
    from dve.expand import expand_model
    from dve.loader import read_source
    from dve.parser import parse_model
    from dve.summary import summarize

    try:
        text = read_source(path)
        model = expand_model(parse_model(text, path), defines)
        warnings = check_model(model)
        return summarize(model), warnings, None
    except DvecostError as exc:
        return None, (), exc
    except RecursionError:  # as dve.load_model does
        return None, (), DveSyntaxError(None, "too-deep",
                                        f"{path} nests expressions too deeply to be analysed")


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
    failed = 0
    for path in args.files:
        summary, warnings, exc = check_file(path, defines)
        if exc is not None and args.debug:
            raise exc  # dvecost.cli.main shows the traceback
        failed += exc is not None
        if args.json:
            record: dict[str, Any] = {"path": path, "ok": exc is None}
            for name in SUMMARY_FIELDS:
                record[name] = getattr(summary, name) if summary is not None else None
            record["diagnostics"] = _diagnostics(exc, warnings)
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
    return 2 if failed else 0
