"""Render an :class:`~dvecost.result.Analysis` as text, JSON, Markdown, HTML or Graphviz DOT.

Renderers are pure functions that return strings; only the CLI prints them.

- :func:`render_text`: the report ``dvecost analyze`` prints: the model, the state space, the
  optimum (exact fraction, decimal, certified), the critical cycle as a run of the model, the
  run that reaches it (``trace=True``), warnings with a shortest run each, timings.
- :func:`render_json`: one JSON object on one line (:meth:`Analysis.as_dict`).
- :func:`render_dot`: the critical cycle and its prefix, states labelled with their variable
  values, plus the whole state graph when it has at most :data:`DOT_FULL_LIMIT` states.
- :func:`render_markdown`, :func:`render_html`: for notebooks.
- :func:`explore_message`: the progress line of exploration.

This module reads :class:`Analysis` values and never imports their module (which imports
this one to render itself in notebooks), so the two do not form a circle.

>>> from dvecost.result import demo
>>> print(render_text(demo()).splitlines()[2])
maximal cycle mean of 'cost' = 3/2 = 1.5 (certified)
"""

from __future__ import annotations

import html
import json
from typing import Any, Mapping, Sequence

# ``Analysis`` (dvecost.result) and ``Step`` (statespace.witness) appear in annotations only,
# which are never evaluated here: dvecost.result imports this module to render itself, so
# importing it back would make a circle.

__all__ = ["render_text", "render_json", "render_dot", "render_markdown", "render_html",
           "render_steps", "explore_message", "summary_lines", "DOT_FULL_LIMIT"]

#: The whole state graph goes into the DOT output when it has at most this many states.
DOT_FULL_LIMIT = 2000

#: Longest list of changed variables shown on one step of the text report.
_MAX_CHANGES = 8


# ---------------------------------------------------------------------------- text

def explore_message(n_states: int, n_edges: int, rate: float | None = None, *rest) -> str:
    """The progress message of exploration, from the explorer's progress call.

    >>> explore_message(12345, 67890, 2.5e6)
    '12,345 states, 67,890 edges, 2.50 M edges/s'
    """
    msg = f"{n_states:,} states, {n_edges:,} edges"
    if rate:
        msg += f", {rate / 1e6:.2f} M edges/s"
    return msg


def count(n: int, word: str) -> str:
    """``n`` and ``word``, in the plural unless ``n`` is 1.

    >>> count(1, "state"), count(0, "state"), count(12, "iteration")
    ('1 state', '0 states', '12 iterations')
    """
    return f"{n} {word}{'s' * (n != 1)}"


def _decimal(x) -> str:
    return format(float(x), ".10g")


def _value_line(a: Analysis) -> str:
    cert = "certified" if a.certified else "NOT certified: treat the value as approximate"
    exact = a.exact
    dec = _decimal(a.value)
    shown = exact if exact == dec else f"{exact} = {dec}"
    return f"{a.label} = {shown} ({cert})"


def summary_lines(a: Analysis) -> list[str]:
    """The model and state-space lines at the head of the report.

    >>> from dvecost.result import demo
    >>> summary_lines(demo())[1]
    'state space: 2 states, 2 transitions, no deadlock, error state not reached'
    """
    return _summary_lines(a)


def _summary_lines(a: Analysis) -> list[str]:
    procs = ", ".join(a.processes)
    n_p = len(a.processes)
    model = (f"{a.model}: system {a.system}, {n_p} process{'es' * (n_p != 1)} ({procs}), "
             f"{a.n_variables} variable{'s' * (a.n_variables != 1)}, "
             f"{a.n_channels} channel{'s' * (a.n_channels != 1)}")
    dead = ("no deadlock" if not a.n_deadlocks
            else f"{a.n_deadlocks} deadlock{'s' * (a.n_deadlocks != 1)}")
    err = "error state reached" if a.error_state_reached else "error state not reached"
    sym = a.symmetry or {}
    if sym.get("reduced"):
        full = sym.get("full_states")
        groups = "; ".join(f"{g['template']} x{g['instances']}" for g in sym.get("groups", ()))
        classes = "class" if a.n_states == 1 else "classes"
        space = (f"state space: {a.n_states} {classes} of interchangeable {groups} "
                 f"(the full product has {full if full is not None else 'more'} states), "
                 f"{count(a.n_transitions, 'transition')} between classes, {dead}, {err}")
        return [model, space]
    space = (f"state space: {count(a.n_states, 'state')}, "
             f"{count(a.n_transitions, 'transition')}, {dead}, {err}")
    lines = [model, space]
    if sym.get("requested") == "auto" and sym.get("not_reduced"):
        lines.append("symmetry: not reduced: " + "; ".join(
            f"{r['template']}: {r['reason']}" for r in sym["not_reduced"]))
    return lines


def _format_changes(changed: Sequence[tuple[str, Any, Any]]) -> str:
    parts = [f"{name}: {_short(b)} -> {_short(c)}" for name, b, c in changed[:_MAX_CHANGES]]
    if len(changed) > _MAX_CHANGES:
        parts.append(f"... ({len(changed) - _MAX_CHANGES} more)")
    return ", ".join(parts)


def _short(v: Any) -> str:
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(str(x) for x in v) + "]"
    return str(v)


def render_steps(steps: Sequence[Step], *, start: int = 1, indent: str = "  ") -> list[str]:
    """A run of the model as table lines: step, process, transition, sync, cost, time, changes.

    A step in which several processes move (a rendezvous, ``system sync``) takes one line per
    process that changes (its local state or one of its variables); cost, time and changes
    sit on its first line, and a last line says how many others took a self-loop changing
    nothing (``N others unchanged``).

    >>> from dvecost.result import demo
    >>> for line in render_steps(demo().cycle): print(line)
      step  process  transition  sync  cost  time  changes
         1  P        a -> b               1     1  x: 0 -> 1
         2  P        b -> a               2     1  x: 1 -> 0
    """
    header = ("step", "process", "transition", "sync", "cost", "time", "changes")
    rows: list[tuple[str, ...]] = []
    for k, step in enumerate(steps, start):
        moves = step.moves or ()
        changes = _format_changes(step.changed)
        if step.error:
            changes = ("-> ERROR STATE" + (f"; {changes}" if changes else ""))
        # A step into the error state faulted: it has no cost or time to show.
        cost, time = ("-", "-") if step.error else (str(step.cost), str(step.time))
        if not moves:
            rows.append((str(k), "?", "?", "", cost, time, changes))
            continue
        if len(moves) > 2:
            # system sync: every process moves; keep those that change something.
            owners = {name.split(".", 1)[0].split("[", 1)[0] for name, _, _ in step.changed}
            shown = [m for m in moves if m.source != m.target or m.process in owners or m.sync]
            hidden = len(moves) - len(shown)
            moves = shown or moves[:1]
            if hidden:
                moves = [*moves, None]
        for i, m in enumerate(moves):
            if m is None:
                rows.append(("", f"({hidden} other{'s' * (hidden != 1)} unchanged)", "", "",
                             "", "", ""))
                continue
            first = i == 0
            rows.append((str(k) if first else "", m.process, m.transition, m.sync or "",
                         cost if first else "", time if first else "",
                         changes if first else ""))
    widths = [max(len(header[c]), *(len(r[c]) for r in rows)) if rows else len(header[c])
              for c in range(len(header))]
    right = {0, 4, 5}

    def fmt(r: Sequence[str]) -> str:
        cells = [r[c].rjust(widths[c]) if c in right else r[c].ljust(widths[c])
                 for c in range(len(header) - 1)]
        return (indent + "  ".join(cells) + "  " + r[-1]).rstrip()

    # What made a step fault, with its model line (the explorer's own finding).
    faults = [f"{indent}step {k} faults: {step.fault}" for k, step in enumerate(steps, start)
              if step.error and step.fault]
    return [fmt(header), *(fmt(r) for r in rows), *faults]


def _run_block(title: str, steps: Sequence[Step] | None, indent: str = "  ") -> list[str]:
    if steps is None:
        return []
    if not steps:
        return [f"{title}: the initial state itself"]
    return [f"{title} ({len(steps)} step{'s' * (len(steps) != 1)}):",
            *render_steps(steps, indent=indent)]


def _initial_line(a: Analysis) -> str:
    items = ", ".join(f"{k}={_short(v)}" for k, v in a.initial.items())
    return f"initial state: {items}" if items else "initial state: (empty)"


def render_text(a: Analysis, *, trace: bool = False, peak_memory: int | None = None,
                view: str = "steps", width: int = 100) -> str:
    """The human-readable report of ``dvecost analyze``.

    Parameters
    ----------
    a : Analysis
    trace : bool
        Also show the run from the initial state to the cycle (``--trace``).
    peak_memory : int, optional
        The process's peak memory in bytes, added to the timings line.
    view : {'steps', 'ticks'}
        The runs step by step, or (``system sync``) tick by tick (:mod:`dvecost.ticks`),
        wrapped to ``width`` columns.

    Returns
    -------
    str
        Lines separated by ``\\n``, no trailing newline.

    Examples
    --------
    >>> from dvecost.result import demo
    >>> print(render_text(demo()))  # doctest: +NORMALIZE_WHITESPACE
    <demo>: system async, 1 process (P), 1 variable, 0 channels
    state space: 2 states, 2 transitions, no deadlock, error state not reached
    maximal cycle mean of 'cost' = 3/2 = 1.5 (certified)
    <BLANKLINE>
    critical cycle: 2 steps, cost 3, time 2, from state 0 (the initial state)
      step  process  transition  sync  cost  time  changes
         1  P        a -> b               1     1  x: 0 -> 1
         2  P        b -> a               2     1  x: 1 -> 0
    <BLANKLINE>
    timings: parse 0.001 s, explore 0.002 s; total 0.003 s; backend cpu
    """
    out = _summary_lines(a)
    out.append(_value_line(a))
    out.append("")
    out.extend(_cycle_block(a, trace, view, width) if a.witness
               else ["critical cycle: not decoded (value only)"])
    for w in a.warnings:
        out.append("")
        out.append(f"warning: {w}")
        if w.startswith(f"{a.n_deadlocks} deadlock") and a.deadlock_trace is not None:
            out.extend(_run_block("  shortest run to a deadlock", a.deadlock_trace, "    "))
        elif w.startswith("the error state") and a.error_trace is not None:
            out.extend(_run_block("  shortest run to the error state", a.error_trace, "    "))
    out.append("")
    out.append(_timings_line(a, peak_memory))
    return "\n".join(out)


def _cycle_block(a: Analysis, trace: bool, view: str = "steps", width: int = 100) -> list[str]:
    """The critical cycle as a table, with the run reaching it (``trace``) or a hint."""
    from .ticks import legend_line, render_ticks, starved_line
    n = len(a.cycle)
    c_cost = sum(s.cost for s in a.cycle)
    c_time = sum(s.time for s in a.cycle)
    start = a.cycle[0].source if a.cycle else 0
    where = "the initial state" if start == 0 else \
        f"reached in {len(a.prefix)} step{'s' * (len(a.prefix) != 1)}"
    tv = a.ticks()
    by_tick = view == "ticks" and tv is not None
    head = (f"critical cycle: {n} step{'s' * (n != 1)}, cost {c_cost}, time {c_time}, "
            f"from state {start} ({where})")
    if by_tick:
        out = [f"{head}; {tv.n_ticks} tick{'s' * (tv.n_ticks != 1)}:",
               *render_ticks(tv, width), "  " + legend_line(tv)]
    else:
        out = [head, *render_steps(a.cycle)]
    starved = starved_line(tv) if tv is not None else None
    if starved:
        out.append(f"  {starved}")
    if trace:
        out.append("")
        out.append(_initial_line(a))
        if a.prefix and by_tick:
            pv = a.ticks(prefix=True)
            out.append(f"run from the initial state to state {start} ({len(a.prefix)} steps, "
                       f"{pv.n_ticks} tick{'s' * (pv.n_ticks != 1)}):")
            out.extend(render_ticks(pv, width))
        elif a.prefix:
            out.extend(_run_block(f"run from the initial state to state {start}", a.prefix))
        else:
            out.append("the cycle starts in the initial state")
    elif a.prefix:
        out.append(f"  (--trace shows the {len(a.prefix)}-step run that reaches it)")
    return out


def _timings_line(a: Analysis, peak_memory: int | None = None) -> str:
    parts = [f"{k} {v:.3f} s" for k, v in a.seconds.items()]
    total = sum(a.seconds.values())
    it = f", {a.iterations} iteration{'s' * (a.iterations != 1)}" if a.iterations else ""
    mem = f"; peak memory {_mebibytes(peak_memory)}" if peak_memory is not None else ""
    return f"timings: {', '.join(parts)}; total {total:.3f} s; backend {a.backend}{it}{mem}"


def _mebibytes(n: int) -> str:
    """Bytes as ``'12.3 MiB'``.

    >>> _mebibytes(3 * 2**20 // 2)
    '1.5 MiB'
    """
    return f"{n / 2**20:.1f} MiB"


# ---------------------------------------------------------------------------- JSON

def render_json(a: Analysis, *, indent: int | None = None) -> str:
    """``a.as_dict()`` as JSON text.

    >>> from dvecost.result import demo
    >>> json.loads(render_json(demo()))["exact"]
    '3/2'
    """
    return json.dumps(a.as_dict(), indent=indent)


# ---------------------------------------------------------------------------- DOT

def _dot_quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _state_label(sid: int, state: Mapping[str, Any] | None, error: bool = False) -> str:
    if error:
        return f"#{sid}\nERROR"
    if not state:
        return f"#{sid}"
    return f"#{sid}\n" + "\n".join(f"{k}={_short(v)}" for k, v in state.items())


def render_dot(a: Analysis, *, full_limit: int = DOT_FULL_LIMIT) -> str:
    """Graphviz DOT of the critical cycle (red) and the run reaching it (blue).

    States on the cycle and the prefix are labelled with their variable values. When the
    analysis carries its state graph and that has at most ``full_limit`` states, every other
    state and edge is drawn too, in grey.

    >>> from dvecost.result import demo
    >>> dot = render_dot(demo())
    >>> dot.startswith("digraph dvecost {") and dot.rstrip().endswith("}")
    True
    >>> 's0 -> s1 [' in dot
    True
    """
    states: dict[int, Mapping[str, Any]] = {0: a.initial}
    errors: set[int] = set()
    for s in (*a.prefix, *a.cycle):
        states[s.target] = s.state
        if s.error:
            errors.add(s.target)
    lines = ["digraph dvecost {",
             f"  label={_dot_quote(f'{a.model}: {a.label} = {a.exact}')};",
             "  labelloc=t;",
             '  node [shape=box, fontname="monospace", fontsize=10];',
             '  edge [fontname="monospace", fontsize=9];']
    cycle_edges = {s.edge for s in a.cycle if s.edge >= 0}
    prefix_edges = {s.edge for s in a.prefix if s.edge >= 0}
    on_cycle = {s.source for s in a.cycle}
    on_prefix = {s.source for s in a.prefix} | {0}
    g = a.graph
    full = g is not None and g.n_states <= full_limit
    drawn: set[int] = set(states) | on_cycle
    if full:
        drawn |= set(range(g.n_states))
        if g.error_state >= 0:
            errors.add(g.error_state)
    for sid in sorted(drawn):
        st = states.get(sid)
        if st is None and a.decode is not None:
            st = a.decode(sid)
        err = sid in errors
        attrs = [f"label={_dot_quote(_state_label(sid, _visible(st), bool(err)))}"]
        if sid in on_cycle:
            attrs.append('color=red, penwidth=2')
        elif sid in on_prefix:
            attrs.append('color=blue')
        elif full:
            attrs.append('color=gray60, fontcolor=gray40')
        if sid == 0:
            attrs.append("peripheries=2")
        if err:
            attrs.append("style=filled, fillcolor=mistyrose")
        lines.append(f"  s{sid} [{', '.join(attrs)}];")
    for kind, steps in (("prefix", a.prefix), ("cycle", a.cycle)):
        for s in steps:
            label = f"{s.process}\n{_move_text(s)}\ncost {s.cost} time {s.time}"
            colour = "red, penwidth=2" if kind == "cycle" else "blue"
            lines.append(f"  s{s.source} -> s{s.target} [label={_dot_quote(label)}, "
                         f"color={colour}];")
    if full:
        import numpy as np
        indptr, indices = np.asarray(g.indptr), np.asarray(g.indices)
        cost, tm = np.asarray(g.cost(a.cost)), np.asarray(g.time)
        for u in range(len(indptr) - 1):
            for e in range(int(indptr[u]), int(indptr[u + 1])):
                if e in cycle_edges or e in prefix_edges:
                    continue
                lab = [f"c{int(cost[e])}", f"t{int(tm[e])}"]
                lines.append(f"  s{u} -> s{int(indices[e])} [label={_dot_quote(' '.join(lab))}, "
                             "color=gray60, fontcolor=gray40];")
    elif g is not None:
        lines.append(f"  // whole graph left out: {g.n_states} states > {full_limit}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _visible(st: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    if st is None:
        return None
    return {k: v for k, v in st.items() if not str(k).startswith("__")}


def _move_text(s: Step) -> str:
    return "\n".join(f"{m.transition}" + (f" [{m.sync}]" if m.sync else "") for m in s.moves)


# ---------------------------------------------------------------------------- notebooks

def render_markdown(a: Analysis) -> str:
    """Markdown for notebooks: the summary and the critical cycle as a table.

    >>> from dvecost.result import demo
    >>> "| 1 | P | a -> b |" in render_markdown(demo())
    True
    """
    out = [f"**{a.label}** = `{a.exact}` = {_decimal(a.value)} "
           f"({'certified' if a.certified else 'not certified'})", "",
           *(f"- {line}" for line in _summary_lines(a)), ""]
    out.append(f"Critical cycle ({len(a.cycle)} steps):")
    out.append("")
    out.append("| step | process | transition | sync | cost | time | changes |")
    out.append("|---:|---|---|---|---:|---:|---|")
    for k, s in enumerate(a.cycle, 1):
        for i, m in enumerate(s.moves or ()):
            first = i == 0
            out.append(f"| {k if first else ''} | {m.process} | {m.transition} | "
                       f"{m.sync or ''} | {s.cost if first else ''} | {s.time if first else ''}"
                       f" | {_format_changes(s.changed) if first else ''} |")
    for w in a.warnings:
        out.append("")
        out.append(f"> warning: {w}")
    out.append("")
    out.append(_timings_line(a))
    return "\n".join(out)


def render_html(a: Analysis) -> str:
    """HTML for notebooks: the summary and the critical cycle as a table.

    >>> from dvecost.result import demo
    >>> "<td>a -&gt; b</td>" in render_html(demo())
    True
    """
    e = html.escape
    out = [f"<p><b>{e(a.label)}</b> = <code>{e(a.exact)}</code> = {_decimal(a.value)} "
           f"({'certified' if a.certified else 'not certified'})</p>",
           "<ul>", *(f"<li>{e(line)}</li>" for line in _summary_lines(a)), "</ul>",
           f"<p>Critical cycle ({len(a.cycle)} steps):</p>",
           "<table><thead><tr><th>step</th><th>process</th><th>transition</th><th>sync</th>"
           "<th>cost</th><th>time</th><th>changes</th></tr></thead><tbody>"]
    for k, s in enumerate(a.cycle, 1):
        for i, m in enumerate(s.moves or ()):
            first = i == 0
            cells = [str(k) if first else "", m.process, m.transition, m.sync or "",
                     str(s.cost) if first else "", str(s.time) if first else "",
                     _format_changes(s.changed) if first else ""]
            out.append("<tr>" + "".join(f"<td>{e(c)}</td>" for c in cells) + "</tr>")
    out.append("</tbody></table>")
    for w in a.warnings:
        out.append(f"<p><b>warning</b>: {e(w)}</p>")
    out.append(f"<p><small>{e(_timings_line(a))}</small></p>")
    return "\n".join(out)
