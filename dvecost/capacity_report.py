"""Render the capacity results as text tables, Markdown and CSV: one place for all of them.

The capacity questions (:mod:`scenarios.saturation`, :mod:`scenarios.capacity`) return plain
values; what a user reads of them is written here, by pure functions returning strings
(only the CLI prints them):

- :func:`saturation_text`, :func:`saturation_markdown`: the curve of a
  :class:`~scenarios.saturation.SaturationResult` and its answer, short (the command's own
  report is :mod:`dvecost.cli.saturate`'s);
- :func:`workers_text`, :func:`workers_markdown`: ``dvecost workers``'s table
  (:class:`~scenarios.capacity.WorkersResult`);
- :func:`headroom_text`, :func:`headroom_markdown`: ``dvecost headroom``'s two lines
  (:class:`~scenarios.capacity.HeadroomResult`);
- :func:`frontier_text`, :func:`frontier_markdown`, :func:`frontier_csv`: the frontier's
  staircase (:class:`~scenarios.capacity.FrontierResult`).

>>> print(text_table(["a", "b"], [["1", "22"]]))
a   b
-  --
1  22
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

__all__ = ["text_table", "md_table", "range_cell", "saturation_text", "saturation_markdown",
           "workers_text", "workers_markdown", "headroom_text", "headroom_markdown",
           "frontier_text", "frontier_markdown", "frontier_csv", "WORKERS_HEAD",
           "answer_cycle", "cycle_json", "not_monotone"]


def text_table(head: list[str], rows: list[list[str]]) -> str:
    """A table of right-aligned columns under a rule of dashes."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h)
              for i, h in enumerate(head)]
    def line(cells: list[str]) -> str:
        return "  ".join(c.rjust(w) for c, w in zip(cells, widths)).rstrip()

    return "\n".join([line(head), line(["-" * w for w in widths])] + [line(r) for r in rows])


def md_table(head: list[str], rows: list[list[str]]) -> str:
    """A Markdown table.

    >>> print(md_table(["a"], [["1"]]))
    | a |
    |---|
    | 1 |
    """
    return "\n".join(["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
                     + ["| " + " | ".join(r) + " |" for r in rows])


# ---------------------------------------------------------------------------- the answer's run

def answer_cycle(a: Any) -> tuple[int, int, int] | None:
    """``(steps, time, cost)`` of the critical cycle of the answer's analysis ``a`` (a
    scenario search's or a DVE sweep's ``witness``), or ``None`` without one.

    >>> from dvecost.result import demo
    >>> answer_cycle(demo()), answer_cycle(None)
    ((2, 2, 3), None)
    """
    if a is None or not getattr(a, "cycle", None):
        return None
    return len(a.cycle), sum(s.time for s in a.cycle), sum(s.cost for s in a.cycle)


def not_monotone(what: str, pairs: str, why: str = "") -> str:
    """The warning line of a curve whose load falls somewhere as ``N`` grows.

    >>> not_monotone("N", "N=2: 1 > N=3: 1/2")
    'warning: the load is not monotone in N (N=2: 1 > N=3: 1/2)'
    """
    return f"warning: the load is not monotone in {what} ({pairs}){why}"


def cycle_json(a: Any) -> dict[str, Any]:
    """The JSON of a critical cycle beside a capacity answer: ``cycle_steps``,
    ``cycle_cost``, ``cycle_time``, ``cycle`` (each step's :meth:`as_dict`)."""
    steps, ticks, cost = answer_cycle(a)
    return {"cycle_steps": steps, "cycle_cost": cost, "cycle_time": ticks,
            "cycle": [s.as_dict() for s in a.cycle]}


# ---------------------------------------------------------------------------- saturate

def _saturation_table(result: Any) -> tuple[list[str], list[list[str]]]:
    from scenarios.saturation import mix_text

    def load(p: Any) -> str:
        if p.exact is not None:
            return str(p.exact)
        return f"<= {p.upper}" if p.lower is None else f"{p.lower}..{p.upper}"

    return (["clients", "mix", "load", "decided"],
            [[str(p.clients), mix_text(p.mix), load(p), p.how] for p in result.curve])


def _saturation_answer(result: Any) -> str:
    n = result.saturating_clients
    if n is not None:
        sure = "" if result.certified else " (not certified)"
        return f"saturation: {n} clients reach the capacity {result.capacity}{sure}"
    if result.partial:
        return f"no answer: stopped ({result.stopped})"
    return f"no saturation up to {result.max_clients} clients"


def saturation_text(result: Any) -> str:
    """A :class:`~scenarios.saturation.SaturationResult` in short: the curve and the answer.

    >>> from scenarios.saturation import SaturationPoint, SaturationResult
    >>> r = SaturationResult("demo", Fraction(1), 2, (
    ...     SaturationPoint(1, Fraction(1, 2), 8, 0.01, mix=(("a", 1),)),
    ...     SaturationPoint(2, Fraction(1), 40, 0.02, mix=(("a", 2),))),
    ...     True, (), 64, None, "busy")
    >>> print(saturation_text(r))
    demo: load of 'busy' against the number of clients, capacity 1
    clients  mix  load  decided
    1        1 a  1/2   exact
    2        2 a  1     exact
    saturation: 2 clients reach the capacity 1
    """
    head, rows = _saturation_table(result)
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(head)]
    table = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()
             for r in [head, *rows]]
    return "\n".join([f"{result.spec}: load of '{result.resource}' against the number of "
                      f"clients, capacity {result.capacity}", *table,
                      _saturation_answer(result)])


def saturation_markdown(result: Any) -> str:
    """The same as Markdown (for a notebook)."""
    head, rows = _saturation_table(result)
    return "\n".join([f"**{result.spec}: {_saturation_answer(result)}**", "",
                      md_table(head, rows)])


# ---------------------------------------------------------------------------- workers

#: The columns of ``dvecost workers``'s table.
WORKERS_HEAD = ["workers", "load", "≈", "capacity", "used", "saturated", "states"]


def _workers_rows(result: Any) -> list[list[str]]:
    return [[str(p.workers), str(p.exact), f"{float(p.exact):.4f}", str(p.capacity),
             f"{float(p.utilisation):.1%}", "yes" if p.saturated else "no",
             f"{p.n_states:,}"] for p in result.tried]


def _workers_summary(result: Any) -> str:
    who = ", ".join(f"{k} {n}" for n, k in result.clients)
    if result.policy != "any":
        who += f" ({result.policy_words})"
    if result.workers is not None:
        return f"{who}: {result.workers} worker{'s' * (result.workers != 1)} needed"
    if result.status != "ok":
        return f"{who}: stopped ({result.stopped})"
    return f"{who}: saturates every server up to {result.max_workers} workers"


def _workers_judged(result: Any) -> list[str]:
    """What the load column is, and the cost load beside occupancy."""
    if result.resource != "busy":
        return [f"load: the worst load of '{result.resource}' per tick, against "
                f"{result.per_worker} per worker"]
    out = ["load: the worst number of busy workers per tick (occupancy); saturated: "
           "some run keeps every worker busy on every tick"]
    if result.cost_load is not None:
        w = result.workers
        out.append(f"cost: with {w} worker{'s' * (w != 1)} the worst load of "
                   f"'{result.cost_resource}' (the requests' cost per tick) is "
                   f"{result.cost_load} ({float(result.cost_load):.4f})")
    return out


def workers_text(result: Any) -> str:
    """``dvecost workers``'s report of a :class:`~scenarios.capacity.WorkersResult`: the
    answer, the table of the workers tried, what the load is, the warnings."""
    loose = [str(p.workers) for p in result.tried if not p.certified]
    return "\n".join([_workers_summary(result), text_table(WORKERS_HEAD, _workers_rows(result))]
                     + _workers_judged(result)
                     + [f"not monotone: the load drops between workers {a} and {b}"
                        for a, b in result.violations]
                     + ([f"not certified (the exact check failed; values as computed): "
                         f"workers {', '.join(loose)}"] if loose else []))


def workers_markdown(result: Any) -> str:
    """The answer and the table as Markdown."""
    return f"**{_workers_summary(result)}**\n\n" + md_table(WORKERS_HEAD, _workers_rows(result))


# ---------------------------------------------------------------------------- headroom

def headroom_text(result: Any) -> str:
    """Two lines of a :class:`~scenarios.capacity.HeadroomResult` (three with the worst cost
    load): the population and server, then the load against the capacity.

    >>> from scenarios.capacity import HeadroomResult
    >>> print(headroom_text(HeadroomResult("s", (("u", 4),), 2, Fraction(2), Fraction(4, 3),
    ...                                    10, 0.1)))
    s: 4 u on a server with 2 workers, capacity 2
    worst busy workers per tick 4/3 (1.3333): 66.7% of capacity, headroom 2/3 (0.6667)
    """
    who = ", ".join(f"{n} {k}" for k, n in result.clients)
    state = ("saturated: no headroom" if result.saturated
             else f"headroom {result.headroom} ({float(result.headroom):.4f})")
    what = ("busy workers per tick" if result.resource == "busy"
            else f"load of '{result.resource}'")
    cost = ("" if result.cost_load is None else
            f"\nworst cost load ('{result.cost_resource}' per tick, its own worst case): "
            f"{result.cost_load} ({float(result.cost_load):.4f})")
    served = "" if result.policy == "any" else f" ({result.policy_words})"
    return (f"{result.spec}: {who} on a server with {result.workers} worker"
            f"{'s' * (result.workers != 1)}{served}, capacity {result.capacity}\n"
            f"worst {what} {result.exact} ({float(result.exact):.4f}): "
            f"{float(result.used):.1%} of capacity, {state}"
            + ("" if result.certified else " (not certified: the exact check failed)")
            + cost)


def headroom_markdown(result: Any) -> str:
    """The same as Markdown, the first line bold."""
    return "**" + headroom_text(result).replace("\n", "**\n\n")


# ---------------------------------------------------------------------------- frontier

def range_cell(low: Fraction | None, high: Fraction | None) -> str:
    """A table cell for a load known only by bounds, marked ``*``.

    >>> range_cell(Fraction(1, 2), Fraction(1, 2)), range_cell(None, Fraction(3, 4))
    ('1/2*', '≤ 3/4*')
    >>> range_cell(Fraction(1, 2), Fraction(3, 4)), range_cell(None, None)
    ('1/2..3/4*', '')
    """
    if high is None:  # no analysed point bounds it (nothing was analysed)
        return ""
    if low == high:
        return f"{high}*"
    return f"≤ {high}*" if low is None else f"{low}..{high}*"


def _frontier_head(result: Any) -> list[str]:
    return [result.a, f"largest {result.b} below capacity", "load there", "load at +1"]


def _frontier_rows(result: Any) -> list[list[str]]:
    rows = []
    for a, b in result.stair:
        here = None if b is None else result.point(a, b)
        # The point that shows b + 1 saturates: (a, b + 1) itself, or, by monotonicity,
        # the one evaluated at (a', b + 1) with the largest a' < a.
        nb = 0 if b is None else b + 1
        above = max((p for p in result.points if p.n_b == nb and p.n_a <= a and p.saturated),
                    key=lambda p: p.n_a, default=None)
        rows.append([str(a),
                     "none" if b is None else (f"≥ {b}" if b == result.max_b else str(b)),
                     "" if b is None else str(here.exact) if here is not None
                     else range_cell(*result.load_range(a, b)),
                     "" if above is None else str(above.exact) if above.n_a == a
                     else f"{above.exact} at ({above.n_a},{above.n_b})"])
    return rows


def _frontier_summary(result: Any) -> str:
    """One line: what was computed and how cheaply."""
    fixed = "".join(f", {k} {n} fixed" for n, k in result.fixed)
    return (f"{result.spec}: frontier of {result.a} x {result.b} (0..{result.max_a} x "
            f"0..{result.max_b}{fixed}), capacity {result.capacity}; {result.analyses} "
            f"analyses of {(result.max_a + 1) * (result.max_b + 1)} grid points")


def _frontier_notes(result: Any, rows: list[list[str]]) -> list[str]:
    notes = [f"not monotone: load({p.n_a},{p.n_b}) = {p.exact} > load({q.n_a},{q.n_b}) = "
             f"{q.exact}" for p, q in result.violations]
    loose = [f"({p.n_a},{p.n_b})" for p in result.points if p.n_states and not p.certified]
    if loose:
        notes.append("not certified (the exact check failed; values as computed): "
                     + ", ".join(loose))
    if any(row[2].endswith("*") for row in rows):
        notes.append("* not analysed: below capacity since a point to its right on the "
                     "same level is (the load grows with each count); its load lies "
                     "between the loads of analysed points around it")
    for name, c, top in ((result.a, result.cutoff_a, result.max_a),
                         (result.b, result.cutoff_b, result.max_b)):
        if c is not None and c < top:
            notes.append(f"{name} from {c} on: the load of {c} {name} (one more always "
                         "waits and changes nothing; not analysed again)")
    if result.note:
        notes.append(f"why: {result.note}")
    if result.stopped:
        notes.append(f"stopped: {result.stopped}")
    return notes


def frontier_text(result: Any) -> str:
    """The frontier's report of a :class:`~scenarios.capacity.FrontierResult`: what was
    computed, the staircase (a load known only by bounds marked ``*``), the notes."""
    rows = _frontier_rows(result)
    return "\n".join([_frontier_summary(result), text_table(_frontier_head(result), rows)]
                     + _frontier_notes(result, rows))


def frontier_markdown(result: Any) -> str:
    """The same as Markdown."""
    rows = _frontier_rows(result)
    return "\n\n".join([f"**{_frontier_summary(result)}**",
                        md_table(_frontier_head(result), rows)]
                       + _frontier_notes(result, rows))


def frontier_csv(result: Any) -> str:
    """Every evaluated point, one a line: ``A,B,exact,value,saturated,n_states``.

    >>> from scenarios.capacity import FrontierPoint, FrontierResult
    >>> r = FrontierResult("s", "x", "y", (), Fraction(1), 1, 1, ((0, 1), (1, 0)),
    ...                    (FrontierPoint(0, 1, Fraction(1, 2), False, 5, 0.1),), True, ())
    >>> print(frontier_csv(r), end="")
    x,y,exact,value,saturated,n_states
    0,1,1/2,0.5,0,5
    """
    lines = [f"{result.a},{result.b},exact,value,saturated,n_states"]
    lines += [f"{p.n_a},{p.n_b},{p.exact},{float(p.exact):.6g},{int(p.saturated)},"
              f"{p.n_states}" for p in sorted(result.points, key=lambda p: (p.n_a, p.n_b))]
    return "\n".join(lines) + "\n"
