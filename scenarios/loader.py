"""Scenario files: a user's Python file that describes a system, loaded with errors that point
into the file.

A scenario file is ordinary Python that defines ``system(n)``, returning the system with ``n``
clients: a :class:`~scenarios.dsl.System`, or a dict ``{scenario: count}`` (then a module-level
``server = Server(...)`` is the server, if there is one, and ``composition = 'async'`` may
choose the interleaved product)::

    from scenarios import Scenario, Think, Request, Server, apportion

    reader = Scenario("reader", [Think(8), Request("open", service=2)])
    writer = Scenario("writer", [Think(3), Request("save", service=4)])
    server = Server(workers=1)

    def system(n):
        return apportion({reader: 3, writer: 1}, n)

Anything that goes wrong in the file (a syntax error, an exception raised by its code or by the
DSL called from it, a missing or ill-typed ``system``) becomes a
:class:`~dve.errors.ModelError` with code ``scenario-error`` whose position is the line of the
user's file where it happened, so the CLI shows it like any model error, with no traceback
(``--debug`` shows the Python traceback, chained).
"""

from __future__ import annotations

import linecache
import pathlib
import sys
import traceback
from contextlib import contextmanager, redirect_stdout
from types import TracebackType
from typing import Any, Callable, Iterator, Mapping

from dve.errors import ConfigurationError, DvecostError, ModelError, Source, SourcePos
from runtime.errors import RunStopped

from .dsl import Scenario, Server, System

__all__ = ["load_spec", "as_family", "SCENARIO_ERROR", "MAX_CLIENTS"]

#: The diagnostic code of every problem found while loading or running a scenario file.
SCENARIO_ERROR = "scenario-error"

#: The most clients a family is asked for: far beyond what can be explored (a server serves at
#: most 255), and small enough that building the system cannot hang (10^20 did).
MAX_CLIENTS = 10_000

# What user code may raise and still be reported as its error: everything but the stops that
# belong to the run (Ctrl-C, a signal, the --timeout clock). `sys.exit()` in a scenario file is
# an error of the file, not the end of dvecost.
_PASS_THROUGH = (KeyboardInterrupt, RunStopped)


def load_spec(path: str | pathlib.Path) -> Callable[[int], System]:
    """Run a scenario file and return its family ``n -> System``.

    Parameters
    ----------
    path : str or pathlib.Path
        A Python file defining ``system(n)``.

    Returns
    -------
    callable
        ``family(n)`` calls the file's ``system(n)`` and returns a :class:`System`; errors in
        that call are reported at their line in the file too.

    Raises
    ------
    dve.errors.ConfigurationError
        The file cannot be read.
    dve.errors.ModelError
        Code ``scenario-error``: a syntax error, an exception while running the file, no
        ``system`` function; later, from ``family(n)``, an exception inside ``system(n)`` or a
        result that is not a system.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "bad.py").write_text("from scenarios import *\\nu = Think(-1)\\n")
    >>> try:
    ...     load_spec(d / "bad.py")
    ... except ModelError as exc:
    ...     print(exc.pos.line, exc.code)
    2 scenario-error
    """
    path = pathlib.Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise ConfigurationError(f"cannot read scenario file '{path}': {reason.lower()}") from None
    source = Source(str(path), text)
    filename = str(path.resolve())
    try:
        code = compile(text, filename, "exec", dont_inherit=True)
    except SyntaxError as exc:
        line = exc.lineno or 1
        col = exc.offset or 1
        end_col = exc.end_offset if exc.end_lineno == exc.lineno and exc.end_offset else col + 1
        raise ModelError(SourcePos.at(source, line, col, line, max(end_col, col + 1)),
                         SCENARIO_ERROR, f"python syntax error: {exc.msg}") from None
    namespace: dict[str, Any] = {"__name__": f"dvecost_scenario_{path.stem}",
                                 "__file__": filename, "__builtins__": __builtins__}
    # Tracebacks and inspect look lines up through linecache: make the file's text available
    # even if it changes on disk afterwards.
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    try:
        # The file's print() goes to stderr: it must not mix with a model written on stdout.
        with redirect_stdout(sys.stderr), _importable_beside(filename):
            exec(code, namespace)
    except _PASS_THROUGH:
        raise
    except BaseException as exc:  # noqa: BLE001 - any failure of user code is reported
        raise _positioned(exc, source, filename, "while running the file") from exc
    fn = namespace.get("system")
    if not callable(fn):
        raise ModelError(SourcePos(source, 0, 1), SCENARIO_ERROR,
                         "the scenario file defines no function 'system'",
                         hint="add 'def system(n):' returning a System or a dict "
                              "{scenario: count} for n clients")
    def_pos = _def_pos(fn, source, filename)
    return as_family(fn, str(path), namespace=namespace, source=source, filename=filename,
                     def_pos=def_pos)


def as_family(fn: Callable[[int], Any], name: str, *, namespace: Mapping[str, Any] | None = None,
              source: Source | None = None, filename: str | None = None,
              def_pos: SourcePos | None = None) -> Callable[[int], System]:
    """Wrap ``fn(n)`` (a :class:`System` or a dict of counts) as a family ``n -> System``.

    A dict is completed from ``namespace`` (the scenario file's ``server`` and
    ``composition``, if any). With ``source`` and ``filename``, errors are positioned in that
    file; otherwise they are :class:`~dve.errors.ConfigurationError`.

    >>> from scenarios import Scenario, Request
    >>> u = Scenario("u", Request("r", 1))
    >>> as_family(lambda n: {u: n}, "f")(3).n_clients
    3
    """
    ns = namespace or {}

    def family(n: int) -> System:
        if not isinstance(n, int) or not 0 <= n <= MAX_CLIENTS:
            raise ConfigurationError(f"{name}: cannot build a system of {n} clients "
                                     f"(at most {MAX_CLIENTS:,})")
        try:
            with redirect_stdout(sys.stderr), _importable_beside(filename):
                out = fn(n)
        except _PASS_THROUGH:
            raise
        except BaseException as exc:  # noqa: BLE001 - user code: report it where it happened
            if source is None or filename is None:
                if isinstance(exc, Exception):
                    raise
                raise ConfigurationError(f"{name}: system({n}) raised "
                                         f"{type(exc).__name__}: {exc}") from exc
            raise _positioned(exc, source, filename, f"in system({n})") from exc
        try:
            return _as_system(out, ns, name)
        except (_NotASystem, DvecostError) as exc:
            message = f"system({n}): {exc.message if isinstance(exc, ModelError) else exc}"
            if def_pos is not None:
                raise ModelError(def_pos, SCENARIO_ERROR, message) from None
            raise ConfigurationError(message) from None
        except _PASS_THROUGH:
            raise
        except Exception as exc:  # noqa: BLE001 - the user's mapping failed when read
            # (its items(), keys() or __getitem__, say): reported like an error of system(n).
            if source is None or filename is None:
                raise ConfigurationError(f"{name}: reading what system({n}) returned raised "
                                         f"{type(exc).__name__}: {exc}") from exc
            raise _positioned(exc, source, filename,
                              f"reading what system({n}) returned") from exc

    family.__name__ = getattr(fn, "__name__", "system")
    return family


@contextmanager
def _importable_beside(filename: str | None) -> Iterator[None]:
    """The folder of ``filename`` first on ``sys.path`` meanwhile (a scenario file imports a
    helper module beside it as a script would), ``sys.path`` as it was afterwards."""
    if filename is None:
        yield
        return
    folder = str(pathlib.Path(filename).parent)
    sys.path.insert(0, folder)
    try:
        yield
    finally:
        # Ours is the first entry of that folder (unless the file removed it).
        if folder in sys.path:
            sys.path.remove(folder)


class _NotASystem(Exception):
    pass


def _as_system(out: Any, ns: Mapping[str, Any], name: str) -> System:
    if isinstance(out, System):
        return out
    if isinstance(out, Mapping):
        server = ns.get("server")
        if server is not None and not isinstance(server, Server):
            raise _NotASystem(f"module-level 'server' must be a Server, not {server!r}")
        if not all(isinstance(k, Scenario) for k in out):
            raise _NotASystem("system(n) returned a dict whose keys are not all Scenario "
                              "objects")
        composition = ns.get("composition", "sync")
        return System(out, server=server, composition=composition,
                      name=pathlib.Path(name).stem or "system")
    raise _NotASystem(f"system(n) must return a System or a dict {{scenario: count}}, "
                      f"not {type(out).__name__}")


def _def_pos(fn: Any, source: Source, filename: str) -> SourcePos:
    code = getattr(fn, "__code__", None)
    line = code.co_firstlineno if code is not None and code.co_filename == filename else 1
    return _line_pos(source, line)


def _line_pos(source: Source, line: int, col: int | None = None,
              end_col: int | None = None) -> SourcePos:
    text = source.line(line)
    if col is None:
        col = len(text) - len(text.lstrip()) + 1
        end_col = len(text.rstrip()) + 1
    end = end_col if end_col is not None and end_col > col else col + 1
    return SourcePos.at(source, line, col, line, end)


def _positioned(exc: BaseException, source: Source, filename: str, when: str) -> ModelError:
    """A ``scenario-error`` at the innermost line of the user's file in ``exc``'s traceback."""
    frame = _innermost_user_frame(exc.__traceback__, filename)
    if frame is None:
        pos = _line_pos(source, 1)
    else:
        col = getattr(frame, "colno", None)
        end = getattr(frame, "end_colno", None)
        same_line = getattr(frame, "end_lineno", frame.lineno) == frame.lineno
        pos = _line_pos(source, frame.lineno or 1,
                        None if col is None else col + 1,
                        None if end is None or not same_line else end + 1)
    hint = "run with --debug to see the Python traceback"
    if isinstance(exc, (DvecostError,)):
        detail = str(exc.message if isinstance(exc, ModelError) else exc)
    elif isinstance(exc, SystemExit):
        detail = f"the file called exit({exc.code!r})"
        hint = "a scenario file defines system(n) and returns; it must not exit"
    else:
        detail = f"{type(exc).__name__}: {exc}"
    return ModelError(pos, SCENARIO_ERROR, f"{when}: {detail}", hint=hint)


def _innermost_user_frame(tb: TracebackType | None, filename: str):
    found = None
    for frame in traceback.extract_tb(tb):
        if frame.filename == filename:
            found = frame
    return found
