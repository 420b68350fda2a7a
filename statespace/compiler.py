"""Syntax to :class:`~statespace.model.CompiledModel`: slot layout, initial state, actions.

The compiler expects an expanded model (only :class:`~dve.syntax.VarDecl`,
:class:`~dve.syntax.ChannelDecl`, :class:`~dve.syntax.Process` and
:class:`~dve.syntax.LtlProperty` items; :func:`dve.expand_model` produces one). Constant
expressions (array sizes, initialisers, channel sizes) are evaluated here by
:func:`dve.consteval.eval_const`, with the 32-bit arithmetic of :mod:`dve.arith`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dve import syntax
from dve.check import MAX_STATE_SLOTS
from dve.consteval import eval_const
from dve.errors import EvaluationError, ModelSemanticError

from .model import (
    TYPE_RANGE,
    Action,
    ChannelInfo,
    CompiledModel,
    CompiledTransition,
    ProcessInfo,
    Slot,
    VarInfo,
)

__all__ = ["compile_model"]


def _assigned_names(tr: syntax.Transition) -> list[str]:
    return [a.target.name for a in tr.effects]


def compile_model(model: syntax.Model, *, property: bool = True,
                  name: str | None = None) -> CompiledModel:
    """Compile an expanded model into a :class:`~statespace.model.CompiledModel`.

    Parameters
    ----------
    model : dve.syntax.Model
        An expanded model (templates, loops and inputs already resolved).
    property : bool
        With ``system async property P``, explore the product with ``P`` (default). When
        false the property process is left out altogether (plain reachability, as DiVinE's
        ``deadlock`` check does).
    name : str, optional
        The model's name for reports; defaults to the source file name.

    Returns
    -------
    CompiledModel

    Raises
    ------
    ValueError
        When ``model`` still has DiVinE 3 constructs (templates, loops, macros): the front end
        (:func:`dve.load_model`) expands and checks a model; the compiler does neither.
    dve.errors.EvaluationError
        When an initialiser or a size does not evaluate, or an initial value is out of its
        type's range.
    dve.errors.ModelSemanticError
        On names that do not resolve, or a state vector of more than
        :data:`dve.check.MAX_STATE_SLOTS` slots (``declaration-too-large``; a model that
        passed :func:`dve.check_model` has neither).

    Examples
    --------
    >>> from dve.parser import parse_model
    >>> m = compile_model(parse_model(
    ...     "channel c; process P { byte v = 3; state a; init a; trans a -> a { sync c!v; }; }"
    ...     "process Q { byte w; state a; init a; trans a -> a { sync c?w; }; } system async;",
    ...     "<doc>"))
    >>> m.initial          # control states of P and Q, then P.v, Q.w
    (0, 0, 3, 0)
    >>> m.describe_action(0)
    'P: a -> a (c!) | Q: a -> a (c?)'
    """
    S = syntax
    if any(not isinstance(i, (S.VarDecl, S.ChannelDecl, S.Process, S.LtlProperty))
           for i in model.items):
        raise ValueError("compile_model takes an expanded model (dve.load_model returns one); "
                         "expand templates, loops and inputs with dve.expand_model first")
    if name is None:
        pos = model.pos
        name = pos.source.name if pos is not None else "<model>"

    procs_syn = [i for i in model.items if isinstance(i, S.Process)]
    prop_name = model.system.property
    if prop_name is not None and not property:
        procs_syn = [p for p in procs_syn if p.name != prop_name]
        prop_name = None

    slots: list[Slot] = []
    initial: list[int] = []
    variables: dict[str, VarInfo] = {}
    channels: dict[str, ChannelInfo] = {}
    const_env: dict[str, dict[str, Any]] = {"": {}}

    # Control-state slots first, one per process; process 0's range has room for the
    # error-state marker (one past its last state).
    for k, p in enumerate(procs_syn):
        hi = len(p.states) - 1 + (1 if k == 0 else 0)
        slots.append(Slot(p.name, 0, max(hi, 0), "pc"))
        names = [s.name for s in p.states]
        if p.init is None:
            raise ModelSemanticError(p.pos, "missing-init", f"process '{p.name}' has no init state")
        initial.append(names.index(p.init.name))

    def room(n: int, d, what: str, table: bool = False) -> None:
        # Checked before anything is built: a billion-cell array is refused, not allocated.
        # A constant array (``table``) is no part of the state, but a table of as many values.
        total = n if table else len(slots) + n
        if total > MAX_STATE_SLOTS:
            pos = d.size.pos if d.size is not None and d.size.pos is not None else d.pos
            grows = "" if table else f" takes the state vector to {total:,} slots"
            raise ModelSemanticError(pos, "declaration-too-large",
                                     f"impossible declaration: {what}{grows}; the explorer "
                                     f"holds at most {MAX_STATE_SLOTS:,}")

    def declare(decls, owner: str | None) -> None:
        env = dict(const_env[""])
        if owner is not None:
            env.update(const_env.setdefault(owner, {}))
        for d in decls:
            qual = d.name if owner is None else f"{owner}.{d.name}"
            if isinstance(d, S.ChannelDecl):
                size = 0 if d.size is None else eval_const(d.size, env)
                ch = ChannelInfo(qual, owner, d.types, size)
                if ch.buffered:
                    room(1 + size * len(d.types), d, f"buffered channel '{qual}'")
                    count = len(slots)
                    slots.append(Slot(f"{qual}.count", 0, size, "count"))
                    initial.append(0)
                    for i in range(size):
                        for f, ty in enumerate(d.types):
                            lo, hi = TYPE_RANGE[ty]
                            slots.append(Slot(f"{qual}[{i}].{f}", lo, hi, "item"))
                            initial.append(0)
                    ch = ChannelInfo(qual, owner, d.types, size, count, count + 1)
                channels[qual] = ch
                continue
            lo, hi = TYPE_RANGE[d.type]
            if d.size is not None:
                n = eval_const(d.size, env)
                room(n, d, f"array '{qual}' of {n:,} cells", table=d.const or d.input)
                vals = [0] * n
                if d.init is not None:
                    items = d.init.items if isinstance(d.init, S.ArrayInit) else (d.init,)
                    # Shorter initialisers pad with 0; longer ones are cut (as DiVinE).
                    for i, it in enumerate(items[:n]):
                        vals[i] = eval_const(it, env)
            else:
                n = None
                vals = [0 if d.init is None else eval_const(d.init, env)]
            for v in vals:
                if not lo <= v <= hi:
                    raise EvaluationError(d.pos, "init-out-of-range",
                                          f"initial value {v} of '{qual}' is out of the range "
                                          f"of {d.type} ({lo}..{hi})")
            if d.const or d.input:
                cv = tuple(vals) if n is not None else vals[0]
                variables[qual] = VarInfo(qual, owner, d.type, -1, n, cv)
                env[d.name] = cv
                (const_env[""] if owner is None else const_env[owner])[d.name] = cv
                continue
            base = len(slots)
            if n is None:
                slots.append(Slot(qual, lo, hi, "var"))
            else:
                slots.extend(Slot(f"{qual}[{i}]", lo, hi, "var") for i in range(n))
            initial.extend(vals)
            variables[qual] = VarInfo(qual, owner, d.type, base, n)

    declare(model.globals, None)
    for p in procs_syn:
        declare(p.decls, p.name)

    # Transitions, in (process, declaration) order; a missing source (legacy shorthand) reuses
    # the previous transition's source.
    transitions: list[CompiledTransition] = []
    processes: list[ProcessInfo] = []
    prop_index = None
    for k, p in enumerate(procs_syn):
        names = [s.name for s in p.states]
        idx = {n: i for i, n in enumerate(names)}
        tids = []
        prev_src = None
        for tr in p.transitions:
            src = tr.src.name if tr.src is not None else prev_src
            prev_src = src
            sync_kind = channel = None
            if tr.sync is not None and model.system.kind == "async":
                channel = _resolve_channel(tr.sync, p.name, channels)
                buffered = channels[channel].buffered
                sync_kind = ("b" if buffered else "") + ("send" if tr.sync.op == "!" else "recv")
            writes = frozenset(n if f"{p.name}.{n}" not in variables else f"{p.name}.{n}"
                               for n in _assigned_names(tr))
            t = CompiledTransition(len(transitions), k, idx[src], idx[tr.dst.name], tr,
                                   sync_kind, channel, writes, pos=tr.pos)
            transitions.append(t)
            tids.append(t.id)
        accept = set()
        for a in p.accept:
            for s in a.sets:
                accept.update(idx[r.name] for r in s)
        is_prop = p.name == prop_name
        if is_prop:
            prop_index = k
        processes.append(ProcessInfo(p.name, k, k, tuple(names), initial[k],
                                     frozenset(idx[r.name] for r in p.commit),
                                     frozenset(accept), tuple(tids), is_prop))

    actions: list[Action] = []
    if model.system.kind == "async":
        sys_actions: list[Action] = []
        for p in processes:
            if p.is_property:
                continue
            for tid in p.transitions:
                t = transitions[tid]
                if t.sync_kind in (None, "bsend", "brecv"):
                    sys_actions.append(Action("local", (tid,)))
                elif t.sync_kind == "send":
                    for q in processes:
                        if q.index == p.index or q.is_property:
                            continue
                        for rid in q.transitions:
                            r = transitions[rid]
                            if r.sync_kind == "recv" and r.channel == t.channel:
                                conflict = bool({w for w in t.writes if "." not in w}
                                                & {w for w in r.writes if "." not in w})
                                sys_actions.append(Action("rendezvous", (tid, rid),
                                                          error=conflict))
        if prop_index is None:
            actions = sys_actions
        else:
            ptids = processes[prop_index].transitions
            actions = [Action(a.kind, a.transitions, q, a.error) for a in sys_actions
                       for q in ptids]
            actions += [Action("property", (), q) for q in ptids]

    resources = sorted({c.resource for t in transitions for c in t.node.costs})
    if not resources:
        resources = [syntax.DEFAULT_COST_RESOURCE]
    error_state = [0] * len(slots)
    if slots:
        error_state[0] = slots[0].hi  # one past process 0's last state
    return CompiledModel(name=name, system=model.system.kind, slots=tuple(slots),
                         processes=tuple(processes), variables=variables, channels=channels,
                         transitions=tuple(transitions), actions=tuple(actions),
                         property_process=prop_index, resources=tuple(resources),
                         initial=tuple(initial), error_state=tuple(error_state), syntax=model)


def _resolve_channel(sync: syntax.Sync, proc: str, channels: Mapping[str, ChannelInfo]) -> str:
    if sync.process is not None:
        qual = f"{sync.process.name}.{sync.channel}"
    elif f"{proc}.{sync.channel}" in channels:
        qual = f"{proc}.{sync.channel}"
    else:
        qual = sync.channel
    if qual not in channels:
        raise ModelSemanticError(sync.pos, "undefined-name", f"unknown channel '{sync.channel}'")
    return qual
