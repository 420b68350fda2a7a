"""A run of a ``system sync`` model tick by tick: who thinks, waits, is served, which worker is
busy (``--view ticks``, the chart, the HTML report).

:func:`tick_view` reads the steps of a run (the critical cycle, or the prefix reaching it) and
returns a :class:`TickView`: one row per process, one column per tick, a short symbol per cell,
the load of each tick. Nothing here prints; :func:`render_ticks` returns the text lines.

A **tick** is a run of steps ending in a step that takes time: in a scenario model every step
is a tick, except that a server admitting several requests per tick spends ``admissions``
steps of no time before the step in which everybody moves (:attr:`scenarios.System.
steps_per_tick`); its load is the tick's cost over its steps (the charges are multiplied to
match, so the load is the work of the tick).

Scenario models (the rendering of :mod:`scenarios.dsl`: clients with a local ``req``, a
server reading them through ``done`` or ``adm``) get a row per client with its phase:

======  ==============================================================================
``.``   think: no request pending (``req`` is 0 before and after the tick)
``>``   send: the request goes out (``req`` becomes non-zero)
``w``   wait: the request is pending and no worker serves it on this tick
``#``   in service: a worker serves the request on this tick
``<``   reply: the client takes the answer (``req`` goes back to 0)
======  ==============================================================================

and one row per worker (the workers of a pool have no variables: a request keeps the worker
that admitted it, a new one takes the lowest free worker), showing the scenario it serves
(its first letter) or ``-`` when idle. A hand-written model gets one row per process, its
local state after the tick as a short code (a legend gives the names).

Rows of interchangeable clients (one scenario) that do the same thing are folded into one
with a count (:meth:`TickView.folded`); the clients that wait on every tick of the cycle are
:attr:`TickView.starved`.

>>> from dvecost.analysis import analyze
>>> a = analyze('''byte x; process P { state a, b; init a; trans a -> b { cost 1; },
...     b -> a { effect x = 1 - x; }; } process Q { state c; init c; trans c -> c {}; }
...     system sync;''', backend="cpu")
>>> v = tick_view(a.cycle, a.cycle[-1].state)
>>> [(r.label, "".join(r.cells)) for r in v.rows], [int(x) for x in v.load]
([('P', 'baba'), ('Q', 'cccc')], [1, 0, 1, 0])
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Mapping, Sequence

__all__ = ["TickView", "Row", "PHASE_SYMBOLS", "tick_view", "render_ticks", "starved_line",
           "split_ticks", "legend_line", "scenario_of"]

#: Symbol -> phase of a scenario client.
PHASE_SYMBOLS = {".": "think", ">": "send", "w": "wait", "#": "in service", "<": "reply"}

#: The symbol of an idle worker, and the mark under a tick where some worker idles.
IDLE, IDLE_MARK = "-", "^"


@dataclass(frozen=True)
class Row:
    """One row of a :class:`TickView`.

    Attributes
    ----------
    label : str
        What the row shows: a process (``'browser_3'``), a worker (``'worker 1'``), or a folded
        group (``'browser x17'``).
    kind : str
        ``'client'``, ``'worker'`` or ``'process'``.
    members : tuple of str
        The processes the row stands for (one, unless folded; none for a worker).
    cells : tuple of str
        One symbol per tick.
    """

    label: str
    kind: str
    members: tuple[str, ...]
    cells: tuple[str, ...]

    def as_dict(self) -> dict:
        return {"label": self.label, "kind": self.kind, "members": list(self.members),
                "cells": "".join(self.cells) if all(len(c) == 1 for c in self.cells)
                else list(self.cells)}


@dataclass(frozen=True)
class TickView:
    """A run as a table of ticks (:func:`tick_view`).

    Attributes
    ----------
    scenario : bool
        Whether the model was read as a scenario model (phases) or per process (states).
    rows : tuple of Row
        Clients, then workers (scenario models), or the processes, in model order.
    load : tuple of Fraction
        The load of each tick (its cost per step).
    steps : tuple of int
        The number of model steps of each tick.
    workers : int or None
        The server's workers (scenario models with a server).
    busy : tuple of int
        Workers busy on each tick (scenario models with a server).
    starved : tuple of str
        The clients that wait on every tick of the run.
    legend : Mapping of str to str
        Symbol -> what it means.
    """

    scenario: bool
    rows: tuple[Row, ...]
    load: tuple[Fraction, ...]
    steps: tuple[int, ...]
    workers: int | None = None
    busy: tuple[int, ...] = ()
    starved: tuple[str, ...] = ()
    legend: Mapping[str, str] = field(default_factory=dict)

    @property
    def n_ticks(self) -> int:
        return len(self.load)

    @property
    def idle(self) -> tuple[bool, ...]:
        """Per tick: whether some worker idles."""
        if self.workers is None:
            return tuple(False for _ in self.load)
        return tuple(b < self.workers for b in self.busy)

    def folded(self) -> tuple[Row, ...]:
        """The rows with the clients of one scenario that do the same thing on every tick
        folded into one row labelled ``'NAME xK'`` (workers and processes as they are)."""
        out: list[Row] = []
        groups: dict[tuple, int] = {}
        for r in self.rows:
            if r.kind != "client":
                out.append(r)
                continue
            key = (scenario_of(r.members[0]), r.cells)
            if key in groups:
                i = groups[key]
                old = out[i]
                members = old.members + r.members
                out[i] = Row(f"{key[0]} x{len(members)}", "client", members, r.cells)
            else:
                groups[key] = len(out)
                out.append(r)
        return tuple(out)

    def as_dict(self) -> dict:
        return {"ticks": self.n_ticks, "scenario": self.scenario,
                "load": [_num(x) for x in self.load], "steps": list(self.steps),
                "workers": self.workers, "busy": list(self.busy),
                "idle": [i for i, x in enumerate(self.idle) if x],
                "starved": list(self.starved),
                "rows": [r.as_dict() for r in self.folded()], "legend": dict(self.legend)}


def _num(x: Fraction) -> int | str:
    return int(x) if x.denominator == 1 else f"{x.numerator}/{x.denominator}"


def scenario_of(process: str) -> str:
    """The scenario of a client process: its name without the instance number.

    >>> scenario_of("browser_12"), scenario_of("server")
    ('browser', 'server')
    """
    return re.sub(r"_\d+$", "", process)


def split_ticks(steps: Sequence) -> list[list]:
    """The steps grouped into ticks: each tick ends with a step that takes time (steps of no
    time, a server's admissions, join the tick after them; trailing ones form a last tick).

    >>> class S:
    ...     def __init__(self, t): self.time = t
    >>> [len(t) for t in split_ticks([S(0), S(0), S(1), S(1), S(0)])]
    [3, 1, 1]
    """
    ticks, cur = [], []
    for s in steps:
        cur.append(s)
        if s.time > 0:
            ticks.append(cur)
            cur = []
    if cur:
        ticks.append(cur)
    return ticks


def tick_view(steps: Sequence, before: Mapping[str, Any], model=None) -> TickView:
    """The run ``steps`` (:class:`~statespace.witness.Step`, of a ``system sync`` model)
    tick by tick.

    Parameters
    ----------
    steps : sequence of Step
        Consecutive steps (a cycle, or the prefix that reaches it).
    before : Mapping
        The state before the first step (for a cycle, the state after its last step).
    model : CompiledModel, optional
        The model (for a scenario model's constants ``WORKERS``, ``BUSY``, ``SERVED``); else
        the workers are one, and ``BUSY``/``SERVED`` are the values of ``req`` above every
        request kind met.

    Returns
    -------
    TickView
    """
    ticks = split_ticks(steps)
    states = [dict(before)] + [dict(t[-1].state) for t in ticks]
    load = tuple(Fraction(sum(s.cost for s in t), len(t)) for t in ticks)
    nsteps = tuple(len(t) for t in ticks)
    procs = _processes(steps, before)
    clients = [p for p in procs if f"{p}.req" in before]
    server = any(k in before for k in ("adm", "done")) or any(
        re.fullmatch(r"adm\d+", k) for k in before)
    if not clients or not server:
        return _by_process(procs, ticks, states, load, nsteps)
    return _by_phase(procs, clients, ticks, states, load, nsteps, model)


def _processes(steps, before) -> list[str]:
    """Process names in model order: those moving in the steps, else the state's keys."""
    if steps and steps[0].moves:
        return [m.process for m in steps[0].moves]
    return [k for k, v in before.items() if isinstance(v, str) and "." not in k]


def _by_process(procs, ticks, states, load, nsteps) -> TickView:
    """Each process's local state after each tick, as a short code."""
    names = sorted({str(st.get(p, "?")) for st in states[1:] for p in procs})
    codes = _codes(names)
    rows = tuple(Row(p, "process", (p,), tuple(codes[str(st.get(p, "?"))] for st in states[1:]))
                 for p in procs)
    return TickView(False, rows, load, nsteps,
                    legend={c: n for n, c in codes.items() if c != n})


def _codes(names: list[str]) -> dict[str, str]:
    """Short codes for state names: the name itself when every name is one character, else
    the first letter, then two, then a number, so that no two names share a code."""
    if all(len(n) <= 1 for n in names):
        return {n: n for n in names}
    out: dict[str, str] = {}
    used: set[str] = set()
    for n in names:
        for c in (n[:1], n[:2], n[:3]):
            if c and c not in used:
                break
        else:
            c = str(len(used))
        out[n] = c
        used.add(c)
    return out


def _admitted(states_of_tick: Sequence[Mapping[str, Any]]) -> set[int]:
    """Client numbers in ``adm`` / ``admK`` after any step of a tick (admitted on it)."""
    out = set()
    for st in states_of_tick:
        for k, v in st.items():
            if (k == "adm" or re.fullmatch(r"adm\d+", k)) and isinstance(v, int) and v:
                out.add(v)
    return out


def _by_phase(procs, clients, ticks, states, load, nsteps, model) -> TickView:
    consts = {}
    if model is not None:
        consts = {n: v.const_value for n, v in model.variables.items()
                  if v.is_const and isinstance(v.const_value, int)}
    workers = int(consts.get("WORKERS", 1))
    busy_v, served_v = consts.get("BUSY"), consts.get("SERVED")
    single = "done" in states[0] and "server.left" in states[0]
    number = {c: j for j, c in enumerate(clients, 1)}
    cells: dict[str, list[str]] = {c: [] for c in clients}
    serving: list[list[str]] = []      # per tick, the clients in service
    for k, tick in enumerate(ticks):
        s0, s1 = states[k], states[k + 1]
        adm = _admitted([st.state for st in tick])
        now = []
        for c in clients:
            r0, r1 = s0[f"{c}.req"], s1[f"{c}.req"]
            j = number[c]
            if r0 == 0 and r1 == 0:
                sym = "."
            elif r0 == 0:
                sym = ">"
            elif r1 == 0:
                sym = "<"
            elif single:
                left0, cur0 = s0["server.left"], s0["server.cur"]
                served = (left0 > 0 and cur0 == j) or (
                    left0 == 0 and ((s1["server.cur"] == j and s1["server.left"] > 0)
                                    or (s1["done"] == j and s0["done"] != j)))
                sym = "#" if served else "w"
            else:
                served = j in adm or r1 in (busy_v, served_v)
                sym = "#" if served else "w"
            cells[c].append(sym)
            if sym == "#":
                now.append(c)
        serving.append(now)
    workers = max(workers, max((len(x) for x in serving), default=0))
    worker_cells = _assign_workers(serving, workers)
    letters = _scenario_letters(clients)
    rows = [Row(c, "client", (c,), tuple(cells[c])) for c in clients]
    rows += [Row(f"worker {w + 1}", "worker", (),
                 tuple(IDLE if x is None else letters[scenario_of(x)] for x in worker_cells[w]))
             for w in range(workers)]
    starved = tuple(c for c in clients if cells[c] and all(x == "w" for x in cells[c]))
    legend = {**PHASE_SYMBOLS, IDLE: "idle worker",
              **{v: f"worker serving {s}" for s, v in letters.items()}}
    return TickView(True, tuple(rows), load, nsteps, workers,
                    tuple(len(x) for x in serving), starved, legend)


def _assign_workers(serving: list[list[str]], workers: int) -> list[list[str | None]]:
    """Which client each worker serves on each tick: a request keeps its worker from one tick
    to the next (around the cycle too), a new one takes the lowest free worker."""
    out: list[list[str | None]] = [[None] * len(serving) for _ in range(workers)]
    held: dict[str, int] = {}
    # Start from the assignment at the cycle's end, so that a request served across the
    # cycle's boundary keeps its worker: two passes, the second one kept.
    for _ in range(2):
        for k, now in enumerate(serving):
            held = {c: w for c, w in held.items() if c in now}
            free = [w for w in range(workers) if w not in held.values()]
            for c in now:
                if c not in held:
                    held[c] = free.pop(0)
            for w in range(workers):
                out[w][k] = None
            for c, w in held.items():
                out[w][k] = c
    return out


def _scenario_letters(clients: Sequence[str]) -> dict[str, str]:
    """One letter per scenario for the worker rows: its first letter, else its first letter
    upper case, else a digit."""
    out: dict[str, str] = {}
    for sc in dict.fromkeys(scenario_of(c) for c in clients):
        for c in (sc[:1].lower(), sc[:1].upper(), *"123456789"):
            if c not in out.values() and c not in PHASE_SYMBOLS and c != IDLE:
                out[sc] = c
                break
    return out


def starved_line(view: TickView, what: str = "cycle") -> str | None:
    """``'17 browsers wait forever on this cycle'``, or ``None`` when no client starves.

    >>> v = TickView(True, (), (), (), starved=("b_1", "b_2", "c_1"))
    >>> starved_line(v)
    '2 b and 1 c wait forever on this cycle: b_1, b_2, c_1'
    """
    if not view.starved:
        return None
    counts: dict[str, int] = {}
    for c in view.starved:
        counts[scenario_of(c)] = counts.get(scenario_of(c), 0) + 1
    parts = [f"{k} {s}{'s' * (k != 1 and not s.endswith('s') and len(s) > 1)}"
             for s, k in counts.items()]
    words = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    verb = "waits" if len(view.starved) == 1 else "wait"
    names = ", ".join(view.starved) if len(view.starved) <= 12 else \
        ", ".join(view.starved[:12]) + f", ... ({len(view.starved) - 12} more)"
    return f"{words} {verb} forever on this {what}: {names}"


def render_ticks(view: TickView, width: int = 100, *, start: int = 1,
                 indent: str = "  ") -> list[str]:
    """The view as text: rows folded, wrapped to ``width`` columns, the load of each tick
    under the rows, ``^`` under the ticks where a worker idles, then the legend.

    >>> v = TickView(True, (Row("a_1", "client", ("a_1",), tuple(">w#<")),
    ...                     Row("a_2", "client", ("a_2",), tuple(">w#<")),
    ...                     Row("worker 1", "worker", (), tuple("--a-"))),
    ...              tuple(map(Fraction, (0, 0, 1, 0))), (1, 1, 1, 1), 1, (0, 0, 1, 0))
    >>> for line in render_ticks(v): print(line)
      tick      1
      a x2      >w#<
      worker 1  --a-
      load      0010
      idle      ^^ ^
    """
    rows = view.folded()
    loads = [str(_num(x)) for x in view.load]
    colw = max([1] + [len(x) for x in loads] + [len(c) for r in rows for c in r.cells])
    extra = [("load", loads)]
    if view.workers is not None:
        extra.append(("idle", [IDLE_MARK if i else "" for i in view.idle]))
    labels = [r.label for r in rows] + [x for x, _ in extra] + ["tick"]
    lw = max(len(x) for x in labels)
    sep = "" if colw == 1 else " "
    per = max(1, (width - len(indent) - lw - 2) // (colw + len(sep)))
    out: list[str] = []
    n = view.n_ticks
    for lo in range(0, max(n, 1), per):
        hi = min(n, lo + per)
        if lo:
            out.append("")
        # tick numbers: the first tick of the block and every 10th after it
        head = [" " * colw] * (hi - lo)
        marks = [lo] + [k for k in range(lo + 1, hi) if (k + start) % 10 == 0]
        line = list(sep.join(head))
        for k in marks:
            txt = str(k + start)
            pos = (k - lo) * (colw + len(sep))
            if pos + len(txt) <= len(line) or k == lo:
                line[pos:pos + len(txt)] = txt
        out.append(f"{indent}{'tick':<{lw}}  {''.join(line)}".rstrip())
        for r in rows:
            cells = sep.join(c.rjust(colw) for c in r.cells[lo:hi])
            out.append(f"{indent}{r.label:<{lw}}  {cells}".rstrip())
        for name, vals in extra:
            cells = sep.join(v.rjust(colw) for v in vals[lo:hi])
            out.append(f"{indent}{name:<{lw}}  {cells}".rstrip())
    return out


def legend_line(view: TickView) -> str:
    """The symbols used, in one line.

    >>> legend_line(TickView(False, (), (), (), legend={"t": "think", "w": "wait"}))
    'symbols: t think, w wait'
    """
    return "symbols: " + ", ".join(f"{k} {v}" for k, v in view.legend.items())
