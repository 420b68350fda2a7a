"""The command line: ``dvecost SUBCOMMAND ...``. The only layer that prints or exits.

Each subcommand lives in a module of this package exposing ``register(subparsers)``, which adds
its parser and sets ``func=run`` where ``run(args) -> int``. Exit codes:

- 0: success;
- 2: invalid input (syntax or semantic error, bad usage, backend unavailable);
- 3: no answer (no cycle, zero-time cycle, a state/memory limit reached);
- 1: internal error (traceback with a "please report" line).
"""

from __future__ import annotations

import argparse
import importlib
import sys
import traceback
from typing import Sequence

from dve.errors import (AnalysisError, BackendUnavailableError, ConfigurationError,
                        DvecostError, ModelError, ModelErrors, StateSpaceError, use_color)

from .._version import __version__

__all__ = ["main", "add_common", "add_backend", "add_defines", "parse_defines", "print_error"]

#: Subcommand modules, in the order ``dvecost --help`` lists them.
COMMANDS = ("check", "explore", "cycle", "analyze", "saturate", "scenarios", "bench")


def add_common(p: argparse.ArgumentParser) -> None:
    """Options every subcommand takes."""
    p.add_argument("--debug", action="store_true", help="show Python tracebacks")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress display")


def add_backend(p: argparse.ArgumentParser) -> None:
    """``--backend auto|cpu|gpu``: where the cycle engine runs."""
    p.add_argument("--backend", choices=("auto", "cpu", "gpu"), default="auto",
                   help="where the cycle engine runs (default: auto, the GPU when CuPy and a "
                        "device are present and the graph is large enough to gain)")


def add_defines(p: argparse.ArgumentParser) -> None:
    """``-D NAME=VALUE`` (repeatable) into ``args.defines``; see :func:`parse_defines`."""
    p.add_argument("-D", "--define", action="append", dest="defines", default=[],
                   metavar="NAME=VALUE", help="set an 'input' declaration of the model "
                                              "(repeatable)")


def parse_defines(items: Sequence[str] | None) -> dict[str, int]:
    """``['N=3', 'x=-1']`` -> ``{'N': 3, 'x': -1}``; malformed items raise ConfigurationError.

    >>> parse_defines(["N=3", "x=-1"])
    {'N': 3, 'x': -1}
    """
    out: dict[str, int] = {}
    for item in items or ():
        name, eq, value = item.partition("=")
        name = name.strip()
        try:
            if not eq or not name.isidentifier():
                raise ValueError
            out[name] = int(value.strip(), 0)
        except ValueError:
            raise ConfigurationError(
                f"bad definition '{item}': expected NAME=INTEGER, e.g. -D N=3") from None
    return out


def print_error(exc: BaseException, stream=None) -> None:
    """Render a dvecost error on ``stream`` (stderr), with caret snippets for model errors."""
    stream = stream or sys.stderr
    color = use_color(stream)
    if isinstance(exc, (ModelErrors, ModelError)):
        print(exc.render(color), file=stream)
        if isinstance(exc, ModelErrors) and len(exc) > 1:
            n_err = sum(e.severity == "error" for e in exc)
            print(f"{n_err} error{'s' * (n_err != 1)}", file=stream)
    else:
        print(f"dvecost: error: {exc}", file=stream)


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dvecost",
        description="Worst sustainable load of a DVE model: maximal cycle mean or ratio, "
                    "exact and certified.")
    parser.add_argument("--version", action="version", version=f"dvecost {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        try:
            module = importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:  # a subcommand not built yet
            if exc.name != f"{__name__}.{name}":
                raise
            continue
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (never calls ``sys.exit``)."""
    parser = _build_parser()
    try:
        args, extra = parser.parse_known_args(argv)
        # argparse ends a `nargs="+"` list at the first option, so in `check A.dve -D N=3
        # B.dve` it leaves B.dve over: file names after an option belong to the same list.
        if isinstance(getattr(args, "files", None), list):
            args.files.extend(x for x in extra if not x.startswith("-"))
            extra = [x for x in extra if x.startswith("-")]
        if extra:
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
    except SystemExit as exc:  # argparse exits on --help (0) and bad usage (2)
        return int(exc.code or 0)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return 2
    debug = getattr(args, "debug", False)
    try:
        return int(args.func(args))
    except (ModelErrors, ModelError, ConfigurationError, BackendUnavailableError) as exc:
        if debug:
            raise
        print_error(exc)
        return 2
    except (AnalysisError, StateSpaceError) as exc:
        if debug:
            raise
        print_error(exc)
        return 3
    except DvecostError as exc:
        if debug:
            raise
        print_error(exc)
        return 1
    except KeyboardInterrupt:
        print("dvecost: interrupted", file=sys.stderr)
        return 130
    except Exception:  # noqa: BLE001 - the last resort: never die silently
        if debug:
            raise
        traceback.print_exc()
        print("dvecost: internal error; please report it with the model and the command",
              file=sys.stderr)
        return 1
