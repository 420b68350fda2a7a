"""What the command line shows on a terminal: the progress line and when colour is used."""

from __future__ import annotations

import io

from dvecost.cli.terminal import ProgressLine, is_terminal, use_color


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_colour_only_on_a_terminal_without_no_color(monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert use_color(Tty()) and is_terminal(Tty())
    assert not use_color(io.StringIO()) and not is_terminal(object())
    monkeypatch.setenv("NO_COLOR", "1")
    assert not use_color(Tty())


def test_progress_line_shows_phase_share_and_elapsed_time_then_erases():
    out = io.StringIO()
    p = ProgressLine(out, interval=0, delay=0, tick=0)
    p("explore", 25, 100, "2,000 states")
    first = out.getvalue()
    assert first.startswith("\r\x1b[Kexplore  25.0% 2,000 states  [") and first.endswith(" s]")
    p.states(3000, 7000, 1.25e6)
    last = out.getvalue()[len(first):]
    assert last.startswith("\r\x1b[Kexplore 3,000 states, 7,000 edges, 1.25 M edges/s  [")
    p.close()
    assert out.getvalue().endswith("\r\x1b[K")
    p("howard")  # after close: nothing more is drawn
    assert out.getvalue().endswith("\r\x1b[K")


def test_quick_runs_draw_nothing():
    out = io.StringIO()
    p = ProgressLine(out, delay=60, tick=0)
    p("explore", None, None, "10 states")
    p.close()
    assert out.getvalue() == ""
