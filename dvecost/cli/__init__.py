"""The command line: ``dvecost SUBCOMMAND ...``. The only layer that prints or exits.

Each subcommand lives in a module of this package exposing ``register(subparsers)``, which adds
its parser with :func:`dvecost.cli.subcommand.add_command` (help and description from the
module's docstring, ``func=run`` where ``run(args) -> int``), then its options. Exit codes:

- 0: success;
- 2: invalid input (syntax or semantic error, bad usage, unreadable file, backend unavailable);
- 3: no answer (no cycle, zero-time cycle, a state/memory/time limit reached, out of memory);
- 130 / 143: stopped by SIGINT / SIGTERM (what was found so far is printed first);
- 1: internal error (traceback with a "please report" line).

Shared machinery for subcommands
--------------------------------
:func:`dvecost.cli.subcommand.add_command`
    The one way a module's ``register`` makes its parser: help and description from the
    module's docstring, ``func=run``; the module then adds its options and :func:`add_common`.
:func:`add_limits`
    ``--max-states N``, ``--max-memory SIZE`` (``args.max_memory`` is a :class:`ByteSize`:
    an ``int`` of bytes whose ``str()`` is the text the user wrote) and ``--timeout SECONDS``.
    :func:`main` arms the timeout and the signal handlers for every command; a command only
    passes ``args.max_states`` / ``args.max_memory`` down to the explorer.
Stops
    SIGINT, SIGTERM and the ``--timeout`` clock raise :class:`runtime.errors.Interrupted` /
    :class:`runtime.errors.TimeLimitExceeded` (both :class:`runtime.errors.RunStopped`, a
    ``BaseException``) wherever the program is. The explorer attaches the graph found so far as
    ``exc.partial`` (a :class:`statespace.StateGraph` with ``complete`` false), like the
    limits (:class:`runtime.errors.ExplorationLimit`: states, memory, system sync steps). A
    command that has something to show catches them, prints it and returns
    :func:`stop_info(exc, args)["exit_code"] <stop_info>`; if it does not, :func:`main` prints
    the :func:`stop_info` message (and with ``--json`` a JSON object) and returns the exit
    code. A signal that comes while the modules load is remembered (:func:`_defer_stops`) and
    raised once the command's handlers are armed; a stop raised where Python cannot pass it on
    (a finalizer, an at-fork callback) is raised again 1 ms later.
Closed pipes
    :func:`printing` wraps a command's output: a reader gone (``| head``) ends the printing
    quietly and the command keeps its exit code; :func:`main` does the same for any other
    write (exit 0).
JSON
    :func:`emit_json`: one line, one object, ``status`` first (``ok``, ``limit``,
    ``timeout``, ``interrupted``, ``no_cycle``, ...), phase times under ``timings`` (seconds),
    ``peak_memory_bytes`` last (:func:`peak_memory_bytes`).

Examples
--------
A command using all of it::

    def run(args):
        try:
            graph = build_state_graph(cm, max_states=args.max_states,
                                      max_memory=args.max_memory)
        except (ExplorationLimit, RunStopped) as exc:
            info = stop_info(exc, args)
            print(info["message"], file=sys.stderr)
            if args.json:
                emit_json(info["status"], limit=info.get("limit"), n_states=...)
            return info["exit_code"]
        ...
        emit_json("ok", timings={"explore": 0.5}, n_states=graph.n_states)
"""

from __future__ import annotations

import signal
import sys

#: Signals (numbers) that came before the command armed its handlers; see :func:`_defer_stops`.
_EARLY: list[int] = []


def _defer_stops() -> None:
    """Run as the program, remember a SIGINT or SIGTERM that comes while the modules load (the
    first ~0.3 s): Python's own handler would raise KeyboardInterrupt in the middle of some
    import, or SIGTERM would end the process without a word. :func:`main` acts on it as soon as
    the command's handlers are armed (exit 130/143, a JSON object with ``--json``). Called at
    the very top of this module, before its imports, only when this is the ``dvecost`` program
    (a library user's or a test runner's SIGINT is left alone)."""
    import os
    import threading
    program = os.path.basename(sys.argv[0] if sys.argv else "")
    if (program not in ("dvecost", "__main__.py", "-m")
            or threading.current_thread() is not threading.main_thread()):
        return
    for num in (signal.SIGINT, signal.SIGTERM):
        if signal.getsignal(num) in (signal.default_int_handler, signal.SIG_DFL):
            signal.signal(num, lambda signum, frame: _EARLY.append(signum))


_defer_stops()

import argparse  # noqa: E402 - after the early signal handlers (see _defer_stops)
import contextlib
import importlib
import json
import math
import os
import re
import traceback
from fractions import Fraction
from typing import Any, Callable, Sequence

from dve.errors import ConfigurationError, DvecostError, ModelError, ModelErrors
from runtime.device import DeviceFallbackWarning
from runtime.errors import (AgreedOutOfMemory, ExplorationLimit, Interrupted,
                            MemoryLimitExceeded, OutOfMemory, RunStopped, StateLimitExceeded,
                            StateSpaceError, StepLimitExceeded, TimeLimitExceeded)
from ocm.errors import AnalysisError, BackendUnavailableError, InputError, OcmError

from .terminal import use_color

from .._version import __version__

__all__ = ["main", "command", "add_common", "add_backend", "add_defines", "add_limits",
           "parse_defines", "parse_size", "parse_seconds", "ByteSize", "Seconds", "emit_json",
           "peak_memory_bytes", "stop_info", "print_error", "result_is_final", "printing",
           "drop_closed_outputs", "not_a_scenario_file"]

#: Subcommand modules, in the order ``dvecost --help`` lists them.
COMMANDS = ("check", "explore", "cycle", "analyze", "saturate", "scenarios", "bench", "workers",
            "headroom")

_UNITS = {"": 1, "B": 1, "K": 2**10, "KB": 2**10, "KIB": 2**10, "M": 2**20, "MB": 2**20,
          "MIB": 2**20, "G": 2**30, "GB": 2**30, "GIB": 2**30, "T": 2**40, "TB": 2**40,
          "TIB": 2**40}


class _AsWritten:
    """A number that remembers how the user wrote it: ``str()`` gives that text back, so a
    limit is echoed as given (``--max-memory 1G`` reads ``1G``, not ``1073741824``)."""

    text: str

    def __new__(cls, value, text: str):
        obj = super().__new__(cls, value)
        obj.text = text
        return obj

    def __str__(self) -> str:
        return self.text


class ByteSize(_AsWritten, int):
    """A number of bytes that remembers how the user wrote it: ``str()`` gives that text.

    >>> s = ByteSize(2**30, "1G")
    >>> s == 1073741824, str(s), f"limit {s}"
    (True, '1G', 'limit 1G')
    """


class Seconds(_AsWritten, float):
    """A duration in seconds that remembers how the user wrote it (``str()``).

    >>> t = Seconds(120.0, "2m")
    >>> t == 120, str(t)
    (True, '2m')
    """


def parse_size(text: str) -> ByteSize:
    """``'512M'`` -> bytes (binary units ``K``, ``M``, ``G``, ``T``, optional ``B``/``iB``,
    case-insensitive); at least one byte.

    >>> parse_size("512M"), parse_size("2GiB"), parse_size("1000"), str(parse_size("1.5g"))
    (536870912, 2147483648, 1000, '1.5g')
    """
    m = re.fullmatch(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([A-Za-z]*)\s*", text)
    if not m or m.group(2).upper() not in _UNITS:
        raise ConfigurationError(f"bad size '{text}': expected a number with an optional unit, "
                                 "e.g. 512M or 4G")
    value = int(Fraction(m.group(1)) * _UNITS[m.group(2).upper()])
    if value < 1:
        raise ConfigurationError(f"bad size '{text}': must be at least one byte")
    return ByteSize(value, text.strip())


def parse_seconds(text: str) -> Seconds:
    """``'90'``, ``'1.5'``, ``'30s'``, ``'2m'``, ``'1h'`` -> seconds (more than 0).

    >>> parse_seconds("90"), parse_seconds("2m"), parse_seconds("0.5s")
    (90.0, 120.0, 0.5)
    """
    m = re.fullmatch(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([smh]?)\s*", text)
    if not m:
        raise ConfigurationError(f"bad duration '{text}': expected seconds, e.g. 90, 2.5, "
                                 "30s, 10m or 1h")
    value = float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[m.group(2)]
    if not 0 < value < 1e9:
        raise ConfigurationError(f"bad duration '{text}': must be more than 0 and finite")
    return Seconds(value, text.strip())


def _positive_int(text: str) -> int:
    try:
        value = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got '{text}'") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _arg_type(parse):
    """An argparse ``type=`` from a parser raising ConfigurationError (argparse then prints
    the subcommand's usage with the message, exit 2)."""
    def conv(text: str):
        try:
            return parse(text)
        except ConfigurationError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    conv.__name__ = parse.__name__
    return conv


def add_limits(p: argparse.ArgumentParser, *, states: bool = True) -> None:
    """``--max-states N`` (N >= 1), ``--max-memory SIZE`` and ``--timeout SECONDS``.

    Sets ``args.max_states`` (int or None), ``args.max_memory`` (:class:`ByteSize` or None)
    and ``args.timeout`` (:class:`Seconds`, a float, or None). :func:`main` enforces ``--timeout`` for the
    whole command (it raises :class:`runtime.errors.TimeLimitExceeded` where the run is); the two
    others are for the command to pass to ``build_state_graph``.
    """
    if states:
        p.add_argument("--max-states", type=_positive_int, metavar="N",
                       help="stop after more than N states (N >= 1); exit code 3")
    p.add_argument("--max-memory", type=_arg_type(parse_size), metavar="SIZE",
                   help="stop when the state graph would make the process use more than SIZE "
                        "of memory (e.g. 512M, 4G; binary units); exit code 3")
    p.add_argument("--timeout", type=_arg_type(parse_seconds), metavar="SECONDS",
                   help="stop after this much wall-clock time (e.g. 90, 2.5, 10m); exit "
                        "code 3 with what was found so far")


def peak_memory_bytes() -> int:
    """The peak resident memory (RSS) of this process so far, in bytes
    (:func:`runtime.memory.peak_rss`: this process's own, not what it inherited).

    >>> peak_memory_bytes() > 0
    True
    """
    from runtime.memory import peak_rss
    return peak_rss()


def _json_default(x: Any):
    if isinstance(x, Fraction):
        return str(x)
    for conv in (int, float):   # NumPy scalars
        try:
            v = conv(x)
        except (TypeError, ValueError):
            continue
        if v == x:
            return v
    if isinstance(x, (tuple, set, frozenset)):
        return list(x)
    return str(x)


def emit_json(status: str, *, timings: dict[str, float] | None = None, stream=None,
              **fields: Any) -> dict:
    """Print one JSON object on one line (stdout): ``status``, ``fields``, ``timings`` (phase
    name -> seconds, rounded to microseconds) and ``peak_memory_bytes``; returns the object.

    Fields that are None are left out. NumPy scalars become numbers, Fractions ``'p/q'``
    strings.

    >>> import io; f = io.StringIO()
    >>> o = emit_json("ok", timings={"explore": 0.25}, n_states=3, stream=f)
    >>> f.getvalue().count("\\n"), list(o)
    (1, ['status', 'n_states', 'timings', 'peak_memory_bytes'])
    """
    obj: dict[str, Any] = {"status": status}
    obj.update((k, v) for k, v in fields.items() if v is not None)
    obj["timings"] = {k: round(float(v), 6) for k, v in (timings or {}).items()}
    obj.setdefault("peak_memory_bytes", peak_memory_bytes())
    if "peak_memory_bytes" in fields:
        obj["peak_memory_bytes"] = obj.pop("peak_memory_bytes")
    print(json.dumps(obj, default=_json_default), file=stream or sys.stdout, flush=True)
    return obj


def _counts_of(exc: BaseException) -> dict[str, int]:
    counts = dict(getattr(exc, "counts", None) or {})
    part = getattr(exc, "partial", None)
    if part is not None and hasattr(part, "n_states"):
        counts.setdefault("states", part.n_states)
        counts.setdefault("transitions", part.n_edges)
        if getattr(part, "n_expanded", -1) >= 0:
            counts.setdefault("expanded", part.n_expanded)
    elif getattr(exc, "n_explored", None) is not None:
        counts.setdefault("states", exc.n_explored)
    return counts


#: The one-item words of the counts :func:`stop_info` names.
_SINGULAR = {"states": "state", "transitions": "transition", "vertices": "vertex",
             "edges": "edge"}


def stop_info(exc: BaseException, args: argparse.Namespace | None = None) -> dict:
    """How a run stopped by a limit or a signal is reported.

    Returns ``{'status', 'exit_code', 'message', 'counts'}`` plus ``'limit': {'name', 'value'}``
    for limits (the value as the user wrote it, from ``args``). ``message`` is the stderr
    line: ``dvecost: ... ; 1,234 states, 5,678 transitions found so far``.

    >>> from runtime.errors import Interrupted
    >>> e = Interrupted(15, "SIGTERM"); e.counts = {"states": 1200, "transitions": 3400}
    >>> i = stop_info(e); i["status"], i["exit_code"], i["message"]
    ('interrupted', 143, 'dvecost: interrupted by SIGTERM; 1,200 states, 3,400 transitions found so far')
    """
    counts = _counts_of(exc)
    info: dict[str, Any] = {"counts": counts}
    if isinstance(exc, RunStopped):
        info.update(status=exc.status, exit_code=exc.exit_code, message=str(exc))
        if isinstance(exc, TimeLimitExceeded):
            info["limit"] = {"name": "--timeout", "value": str(exc.seconds)}
    elif isinstance(exc, OutOfMemory):
        info.update(status="out_of_memory", exit_code=3, message="out of memory")
        if isinstance(exc, AgreedOutOfMemory):   # one process of several, agreed by all
            info["message"] = exc.summary
        elif exc.device:   # --backend gpu; auto would have continued on the CPU
            info["message"] = (f"out of GPU memory ({exc.why}; --backend auto continues on "
                               "the CPU)")
    elif isinstance(exc, (StateLimitExceeded, MemoryLimitExceeded)):
        if isinstance(exc, StateLimitExceeded):
            name, value = "--max-states", getattr(args, "max_states", None) or exc.limit
        else:
            name, value = "--max-memory", getattr(args, "max_memory", None) or exc.limit_bytes
        message = f"limit {name} {value} reached"
        if isinstance(exc, StateLimitExceeded) and counts.get("states", 0) > exc.limit + 1:
            # The explorer counts its states after each batch it expands (the next batch's
            # successors are found together), so it stops past the limit.
            message += " (checked after each batch of states expanded, hence more found)"
        info.update(status="limit", exit_code=3, message=message,
                    limit={"name": name, "value": str(value)})
    elif isinstance(exc, StepLimitExceeded):
        info.update(status="limit", exit_code=3, message=str(exc),
                    limit={"name": "system sync steps", "value": str(exc.limit)})
    else:
        info.update(status="error", exit_code=1, message=str(exc))
    if counts:
        found = ", ".join(f"{v:,} {_SINGULAR.get(k, k) if v == 1 else k}"
                          for k, v in counts.items() if k != "expanded")
        if "expanded" in counts:
            found += f" ({counts['expanded']:,} expanded)"
        info["message"] += f"; {found} found so far"
    info["message"] = "dvecost: " + info["message"]
    return info


def report_stop(exc: BaseException, args: argparse.Namespace) -> int:
    """Report a run stopped by a limit or a signal before it had anything to show: its
    :func:`stop_info` message on stderr, and with ``args.json`` one JSON object (``status``,
    ``limit``, ``counts``, ``message``) on stdout; returns the exit code.

    >>> import argparse, contextlib, io
    >>> from runtime.errors import TimeLimitExceeded
    >>> out, err = io.StringIO(), io.StringIO()
    >>> with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
    ...     code = report_stop(TimeLimitExceeded(0.3), argparse.Namespace(json=True))
    >>> code, err.getvalue().strip(), json.loads(out.getvalue())["status"]
    (3, 'dvecost: time limit of 0.3 s reached', 'timeout')
    """
    info = stop_info(exc, args)
    print(info["message"], file=sys.stderr, flush=True)
    if getattr(args, "json", False):
        emit_json(info["status"], limit=info.get("limit"), counts=info["counts"] or None,
                  message=info["message"])
    return info["exit_code"]


def partial_result(exc: BaseException, kind: type, args: argparse.Namespace):
    """What a search stopped by ``exc`` (a limit, a signal, ``--timeout``) leaves to print:
    ``(result, exit code)`` where ``exc`` carries a partial result of type ``kind``;
    ``(None, exit code)`` once a stop that came before any result is reported
    (:func:`report_stop`); ``exc`` itself again otherwise (a ``KeyboardInterrupt`` with nothing
    to show, or ``--debug``).

    >>> import argparse
    >>> from runtime.errors import Interrupted
    >>> stop = Interrupted(2, "SIGINT")
    >>> stop.partial = "the curve so far"
    >>> partial_result(stop, str, argparse.Namespace(debug=False))
    ('the curve so far', 130)
    """
    result = getattr(exc, "partial", None)
    if isinstance(result, kind):
        return result, getattr(exc, "exit_code", 130)
    if isinstance(exc, RunStopped) and not args.debug:
        return None, report_stop(exc, args)
    raise exc


_STOP_SIGNALS = ("SIGINT", "SIGTERM")


class _Stops:
    """SIGINT/SIGTERM and the ``--timeout`` clock raise a :class:`RunStopped` once; a second
    signal while the first is being reported ends the process at once (exit 128 + signum).

    After :meth:`hold` (see :func:`result_is_final`) a first signal raises nothing: the result
    is being printed and is printed whole. With ``keep`` (the process ends after the block)
    SIGINT and SIGTERM are ignored after the block instead of getting their old handlers."""

    def __init__(self, timeout: float | None, keep: bool = False) -> None:
        self.timeout = timeout
        self.keep = keep
        self.fired = False
        self.held = False
        self.saved: dict[int, Any] = {}
        self.again: RunStopped | None = None   # a stop to raise again (see _unraisable)
        self.hook: Any = None

    def _on_signal(self, signum, frame):
        if self.fired:
            os._exit(128 + signum)
        self.fired = True
        if not self.held:
            raise Interrupted(signum, signal.Signals(signum).name)

    def _on_alarm(self, signum, frame):
        if self.again is not None:   # a stop that was swallowed, raised again
            exc, self.again = self.again, None
            self.fired = True
            if not self.held:
                raise exc
            return
        if self.fired or not self.timeout:
            return
        self.fired = True
        if not self.held:
            raise TimeLimitExceeded(self.timeout)

    def _unraisable(self, unraisable) -> None:
        """``sys.unraisablehook`` while armed: a stop raised where Python cannot pass it on (a
        finalizer, an at-fork callback) is printed as "Exception ignored" and lost, and the run
        would go on as if no signal had come. Instead it is raised again a moment later (the
        clock's signal, 1 ms on), from wherever the program is then."""
        exc = unraisable.exc_value
        if isinstance(exc, RunStopped) and not self.held:
            self.again = type(exc)(exc.signum, exc.signal_name) if isinstance(
                exc, Interrupted) else TimeLimitExceeded(self.timeout)
            signal.setitimer(signal.ITIMER_REAL, 0.001)
            return
        self.hook(unraisable)

    def hold(self) -> None:
        self.held = True

    def early(self) -> None:
        """Raise the stop of a signal that came before the handlers were armed (while the
        modules loaded: :func:`_defer_stops`), now that the command can report it."""
        if _EARLY and not self.fired:
            signum = _EARLY[0]
            _EARLY.clear()
            self.fired = True
            raise Interrupted(signum, signal.Signals(signum).name)

    def __enter__(self):
        import threading
        if threading.current_thread() is not threading.main_thread():
            return self
        for name in _STOP_SIGNALS:
            num = getattr(signal, name)
            self.saved[num] = signal.signal(num, self._on_signal)
        self.saved[signal.SIGALRM] = signal.signal(signal.SIGALRM, self._on_alarm)
        if self.timeout:
            signal.setitimer(signal.ITIMER_REAL, self.timeout)
        self.hook, sys.unraisablehook = sys.unraisablehook, self._unraisable
        _ACTIVE.append(self)
        return self

    def __exit__(self, *exc):
        if self in _ACTIVE:
            _ACTIVE.remove(self)
        if self.hook is not None:
            sys.unraisablehook, self.hook = self.hook, None
        if signal.SIGALRM in self.saved:
            signal.setitimer(signal.ITIMER_REAL, 0)
        if self.keep:
            # The process ends next, with the command's exit code: a signal in that moment
            # (interpreter shutdown, where Python puts back the default handlers of the
            # signals it handles) must not turn a finished run into a killed one.
            for num in self.saved:
                if num != signal.SIGALRM:
                    signal.signal(num, signal.SIG_IGN)
            return False
        for num, handler in self.saved.items():
            signal.signal(num, handler)
        return False


#: The :class:`_Stops` of the command running now (none outside :func:`main`).
_ACTIVE: list[_Stops] = []


def result_is_final() -> None:
    """Say that the command has its result and only prints it from here on.

    A SIGINT, SIGTERM or ``--timeout`` that comes later stops nothing: the output is printed
    whole and the exit code is the result's, so what is printed always agrees with the exit
    code. (A second signal still ends the process at once.) Call it as the last statement of
    the work a signal may interrupt, inside its ``try``: a signal either arrives before it, and
    is handled there, or after it, and is ignored. Outside :func:`main` it does nothing.

    >>> result_is_final()   # no command running: nothing to hold
    """
    if _ACTIVE:
        _ACTIVE[-1].hold()


def add_common(p: argparse.ArgumentParser) -> None:
    """Options every subcommand takes."""
    p.add_argument("--debug", action="store_true", help="show Python tracebacks")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress display")


def add_backend(p: argparse.ArgumentParser) -> None:
    """``--backend auto|cpu|gpu``: where exploration and the cycle engine run."""
    p.add_argument("--backend", choices=("auto", "cpu", "gpu"), default="auto",
                   help="where exploration and the cycle engine run (default: auto, the GPU "
                        "when CuPy and a device are present; the cycle engine only for graphs "
                        "large enough to gain)")


def add_defines(p: argparse.ArgumentParser) -> None:
    """``-D NAME=VALUE`` (repeatable) into ``args.defines``; see :func:`parse_defines`."""
    p.add_argument("-D", "--define", action="append", dest="defines", default=[],
                   metavar="NAME=VALUE", help="set an 'input' declaration of the model "
                                              "(repeatable)")


def add_model_run(p: argparse.ArgumentParser, model_help: str) -> None:
    """What every command that explores a DVE model takes: the model, ``-D``, the backend,
    the limits and ``--json``."""
    p.add_argument("model", metavar="MODEL", help=model_help)
    add_defines(p)
    add_backend(p)
    add_limits(p)
    p.add_argument("--json", action="store_true",
                   help="print one JSON object on one line instead of text")


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


def not_a_scenario_file(path: str, command: str) -> None:
    """Refuse a Python scenario file where a DVE model is expected (it would get a DVE parse
    error about its first ``#``), saying which commands take it.

    >>> not_a_scenario_file("m.dve", "analyze")   # a model: nothing to say
    >>> not_a_scenario_file("shop.py", "analyze")
    Traceback (most recent call last):
    ...
    dve.errors.ConfigurationError: 'shop.py' is a Python scenario file, and analyze reads a DVE model (.dve); for a population of its clients run: dvecost headroom shop.py --clients NAME=COUNT,... (or saturate, workers), or write the model of N clients with: dvecost scenarios render shop.py N -o model.dve
    """
    if str(path).lower().endswith(".py"):
        raise ConfigurationError(
            f"'{path}' is a Python scenario file, and {command} reads a DVE model (.dve); for "
            f"a population of its clients run: dvecost headroom {path} --clients "
            f"NAME=COUNT,... (or saturate, workers), or write the model of N clients with: "
            f"dvecost scenarios render {path} N -o model.dve")


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


def _build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or with ``only`` of that command alone (what a run of
    it parses: the other commands' modules are not even imported)."""
    parser = argparse.ArgumentParser(
        prog="dvecost",
        description="Worst sustainable load of a DVE model: maximal cycle mean or ratio, "
                    "exact and certified.")
    parser.add_argument("--version", action="version", version=f"dvecost {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS if only is None else (only,):
        importlib.import_module(f"{__name__}.{name}").register(sub)
    return parser


#: The commands whose ``--backend gpu`` starts the device early (:func:`_start_device`) and
#: whose process ends without tearing CUDA down (:func:`main`).
_DEVICE_COMMANDS = ("analyze", "explore", "cycle")


def _command_of(words: Sequence[str]) -> str | None:
    """The command a command line runs when its first word names one, else None.

    >>> _command_of(["analyze", "m.dve"]), _command_of(["--help"]), _command_of(["nope"])
    ('analyze', None, None)
    """
    return words[0] if words and words[0] in COMMANDS else None


def _wants_gpu(words: Sequence[str]) -> bool:
    """True when the command line asks for ``--backend gpu`` (either spelling).

    >>> _wants_gpu(["analyze", "m.dve", "--backend", "gpu"]), _wants_gpu(["x", "--backend=cpu"])
    (True, False)
    """
    words = list(words)
    return "--backend=gpu" in words or any(
        w == "--backend" and words[i + 1:i + 2] == ["gpu"] for i, w in enumerate(words))


def _start_device(words: Sequence[str]) -> None:
    """For ``--backend gpu`` with a command of :data:`_DEVICE_COMMANDS`: start importing CuPy
    and the CUDA context (:func:`runtime.warmup.warm_up`) in a background thread now, so that
    they overlap the parsing and the first breadth-first chunks, which run on the host. The
    command finds them ready, or waits for them where it first needs the device (the import
    lock); a failure there is reported by the command, as without this."""
    if _command_of(words) in _DEVICE_COMMANDS and _wants_gpu(words):
        from runtime.warmup import warm_up
        warm_up()


def _end_process(code: int) -> None:
    """End a ``dvecost`` process that used the GPU at once, skipping the interpreter's and
    CUDA's teardown (0.3 s on an H100 machine, measured: freeing the context and CuPy's
    pools), after flushing what was printed. Not under a profiler or tracer (their reports
    are written at exit)."""
    if "cupy" not in sys.modules or sys.getprofile() is not None or sys.gettrace() is not None:
        return
    if "mpi4py.MPI" in sys.modules:
        # One of several processes (mpiexec, --gpus): MPI_Finalize runs at the interpreter's
        # exit, and Open MPI's mpiexec counts a process that skips it as failed.
        return
    monitoring = getattr(sys, "monitoring", None)   # Python 3.12's cProfile, coverage
    if monitoring is not None and any(monitoring.get_tool(i) is not None for i in range(6)):
        return
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):   # a closed pipe: nothing more can be shown
            pass
    os._exit(code)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (never calls ``sys.exit``). Run as the
    program (no ``argv``), ``--backend gpu`` starts the device early (:func:`_start_device`)
    and a command that used the GPU ends the process itself (:func:`_end_process`)."""
    words = sys.argv[1:] if argv is None else list(argv)
    if argv is None:   # the program itself: no thread outlives a call made in-process
        _start_device(words)
    code = _main(argv, words)
    if argv is None and _command_of(words) in _DEVICE_COMMANDS:
        _end_process(code)
    return code


def _main(argv: Sequence[str] | None, words: Sequence[str]) -> int:
    # Only the command named (when the first word names one) is imported and built.
    parser = _build_parser(_command_of(words))
    try:
        args, extra = parser.parse_known_args(argv)
        # argparse ends a `nargs="+"` list at the first option, so in `check A.dve -D N=3
        # B.dve` it leaves B.dve over: file names after an option belong to the same list.
        if isinstance(getattr(args, "files", None), list):
            args.files.extend(x for x in extra if not x.startswith("-"))
            extra = [x for x in extra if x.startswith("-")]
        if extra:
            # The error and usage of the subcommand the option was given to.
            owner = _subparsers(parser).get(getattr(args, "command", None), parser)
            owner.error(f"unrecognized arguments: {' '.join(extra)}")
    except SystemExit as exc:  # argparse exits on --help (0) and bad usage (2)
        return int(exc.code or 0)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return 2
    debug = getattr(args, "debug", False)
    try:
        # Run as the program itself (no argv given), SIGINT and SIGTERM are ignored once the
        # command has returned: a signal while the process exits changes nothing. Called
        # in-process with argv, the handlers that were there are restored.
        with _Stops(getattr(args, "timeout", None), keep=argv is None) as stops, \
                _device_warnings():
            stops.early()
            return int(args.func(args))
    except (ModelErrors, ModelError, ConfigurationError, InputError,
            BackendUnavailableError) as exc:
        if debug:
            raise
        print_error(exc)
        return 2
    except (AnalysisError, StateSpaceError) as exc:
        if debug:
            raise
        if isinstance(exc, ExplorationLimit):
            info = stop_info(exc, args)
            print(info["message"], file=sys.stderr)
            return info["exit_code"]
        print_error(exc)
        return 3
    except (DvecostError, OcmError) as exc:
        if debug:
            raise
        print_error(exc)
        return 1
    except RunStopped as exc:   # before the command had anything to show: the stop alone
        return report_stop(exc, args)
    except KeyboardInterrupt:   # SIGINT outside the main thread's handler
        return report_stop(Interrupted(signal.SIGINT, "SIGINT"), args)
    except BrokenPipeError:   # `dvecost ... | head`: the reader has seen enough
        drop_closed_outputs()
        return 0
    except MemoryError as exc:
        if debug:
            raise
        why = f": {exc}" if str(exc) else ""
        print(f"dvecost: error: out of memory{why}", file=sys.stderr)
        return 3
    except Exception:  # noqa: BLE001 - the last resort: never die silently
        if debug:
            raise
        traceback.print_exc()
        print("dvecost: internal error; please report it with the model and the command",
              file=sys.stderr)
        return 1


def drop_closed_outputs() -> None:
    """Point stdout and stderr, where their reader has gone (``dvecost ... | head``), at
    /dev/null, so that nothing more written, nor the flush at exit, fails on them.

    A pipe whose reader has closed it polls as an error on its write end (Linux, macOS);
    when neither stream says so, stdout is the one (what a command prints goes there)."""
    import select

    closed = []
    for stream in (sys.stdout, sys.stderr):
        try:
            fd = stream.fileno()
            poll = select.poll()
            poll.register(fd, select.POLLOUT)
            if any(ev & select.POLLERR for _, ev in poll.poll(0)):
                closed.append(fd)
        except (AttributeError, OSError, ValueError):   # not a real file (a test's StringIO)
            continue
    if not closed:
        try:
            closed = [sys.stdout.fileno()]
        except (AttributeError, OSError, ValueError):
            return
    null = os.open(os.devnull, os.O_WRONLY)
    for fd in closed:
        os.dup2(null, fd)
    os.close(null)


@contextlib.contextmanager
def printing():
    """Print a command's result: on a closed pipe (``dvecost saturate X | head -2``) stop
    printing quietly (:func:`drop_closed_outputs`) and go on, so that the command still
    returns its own exit code.

    >>> with printing():
    ...     print("shown")
    shown
    """
    try:
        yield
        sys.stdout.flush()
    except BrokenPipeError:
        drop_closed_outputs()


@contextlib.contextmanager
def _device_warnings():
    """Show the explorer's :class:`~runtime.device.DeviceFallbackWarning` (the GPU was
    full, exploration went on on the CPU) as one ``dvecost: warning: ...`` line on stderr,
    once per message; other warnings as Python shows them."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("once", DeviceFallbackWarning)
        shown = warnings.showwarning

        def show(message, category, filename, lineno, file=None, line=None):
            if issubclass(category, DeviceFallbackWarning):
                print(f"dvecost: warning: {message}", file=sys.stderr)
            else:
                shown(message, category, filename, lineno, file, line)

        warnings.showwarning = show
        yield


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}
