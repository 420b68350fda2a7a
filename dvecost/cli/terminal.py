"""What the command line needs of a terminal: is it one, colour, a progress line.

Lower layers never print, so this lives with the command line. (An exact value is shown as
``str(fraction)``: ``'7/2'``, or ``'4'`` for an integer.)
"""

from __future__ import annotations

import os
import threading
import time
from typing import TextIO

__all__ = ["is_terminal", "use_color", "ProgressLine", "LiveLines"]


def is_terminal(stream: object) -> bool:
    """Whether ``stream`` is a terminal (has ``isatty`` and it says so).

    >>> import io
    >>> is_terminal(io.StringIO())
    False
    """
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def use_color(stream: object) -> bool:
    """Colour only on a TTY and never when ``NO_COLOR`` is set.

    >>> import io
    >>> use_color(io.StringIO())
    False
    """
    return is_terminal(stream) and "NO_COLOR" not in os.environ


class ProgressLine:
    r"""A one-line progress display on a terminal.

    Called as ``progress(phase, done, total, message)`` (the protocol of
    :func:`dvecost.analyze`). The line is redrawn at most every ``interval`` seconds, and every
    ``tick`` seconds by a background thread so that the elapsed time keeps moving through
    phases that report nothing while they run (the cycle engine); nothing is drawn during the
    first ``delay`` seconds, so quick runs do not flicker. :meth:`close` stops the thread and
    erases the line.

    >>> import io
    >>> out = io.StringIO()
    >>> p = ProgressLine(out, delay=0, tick=0)
    >>> p("explore", None, None, "1,000 states, 2,000 edges")
    >>> out.getvalue().startswith("\r\x1b[Kexplore 1,000 states, 2,000 edges")
    True
    >>> p.close(); out.getvalue().endswith("\r\x1b[K")
    True
    """

    def __init__(self, stream: TextIO, interval: float = 0.1, delay: float = 0.5,
                 tick: float = 0.5) -> None:
        self.stream = stream
        self.interval = interval
        self.delay = delay
        self._created = time.perf_counter()
        self._last = 0.0
        self._phase = ""
        self._text = ""
        self._start = self._created
        self._shown = False
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = None
        if tick > 0:
            self._thread = threading.Thread(target=self._tick, args=(tick,), daemon=True)
            self._thread.start()

    def _tick(self, every: float) -> None:
        while not self._stop.wait(every):
            self._draw(force=True)

    def __call__(self, phase: str, done: float | None = None, total: float | None = None,
                 message: str = "") -> None:
        now = time.perf_counter()
        frac = f" {100.0 * done / total:5.1f}%" if done is not None and total else ""
        with self._lock:
            if phase != self._phase:
                self._phase, self._start = phase, now
            self._text = f"{phase}{frac} {message}".rstrip()
        self._draw()

    def _draw(self, force: bool = False) -> None:
        with self._lock:
            now = time.perf_counter()
            if self._stop.is_set() or not self._text or now - self._created < self.delay:
                return
            if not force and now - self._last < self.interval:
                return
            self._last = now
            line = f"{self._text}  [{now - self._start:.1f} s]"
            self.stream.write("\r\x1b[K" + line[:200])
            self.stream.flush()
            self._shown = True

    def states(self, n_states: int, n_edges: int, rate: float) -> None:
        r"""The explorer's ``progress(n_states, n_edges, edges_per_second)`` as phase ``explore``.

        >>> import io
        >>> out = io.StringIO()
        >>> p = ProgressLine(out, delay=0, tick=0)
        >>> p.states(1000, 2500, 3.5e6)
        >>> out.getvalue().split("  [")[0]
        '\r\x1b[Kexplore 1,000 states, 2,500 edges, 3.50 M edges/s'
        >>> p.close()
        """
        self("explore", None, None,
             f"{n_states:,} states, {n_edges:,} edges, {rate / 1e6:.2f} M edges/s")

    def close(self) -> None:
        """Stop redrawing and erase the line (idempotent)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        with self._lock:
            if self._shown:
                self.stream.write("\r\x1b[K")
                self.stream.flush()
                self._shown = False


class LiveLines:
    r"""Lines of progress on ``stream``, and under them, with ``live`` (a terminal) and not
    ``quiet``, one line of what is being done now, rewritten in place (:meth:`phase`) and wiped
    before the next line (:meth:`line`) or on :meth:`clear`, so that a terminal ends up
    showing the same lines as a file would.

    >>> import io
    >>> out = io.StringIO(); lines = LiveLines(out, live=True)
    >>> lines.phase("explore", "1,000 states"); lines.line("N = 2: done")
    >>> out.getvalue()
    '\r\x1b[K  explore: 1,000 states\r\x1b[KN = 2: done\n'
    """

    def __init__(self, stream: TextIO, *, live: bool = False, quiet: bool = False) -> None:
        self.stream, self.live, self.quiet = stream, live, quiet
        self.showing = False    # whether a live line is on the terminal now

    def clear(self) -> None:
        """Wipe the live line, if one is shown."""
        if self.showing:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.showing = False

    def line(self, text: str) -> None:
        """One line of progress, the live line wiped first."""
        self.clear()
        print(text, file=self.stream, flush=True)

    def phase(self, name: str, message: str) -> None:
        """Show ``name: message`` on the live line (nothing unless live and not quiet)."""
        if self.live and not self.quiet:
            self.stream.write(f"\r\x1b[K  {name}: {message}")
            self.stream.flush()
            self.showing = True
