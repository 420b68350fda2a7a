"""The next-state generator of ``system async`` models, in array form.

One step is one action of the model (a local transition, a rendezvous pair, or either with a
transition of the property process): :class:`AsyncGenerator` evaluates, for a whole chunk of
states at once, every transition's guard over the rows whose process is in its source state,
and gives the enabled rows of every action their successor keys (the source key plus the
change of each written slot) and charges.
"""

from __future__ import annotations


import numpy as np

from dve import arith

from ..evaluate import add_costs
from ..model import CompiledModel
from .base import ModelGenerator
from .record import Successors
from .transitions import Transitions, as_mask

__all__ = ["AsyncGenerator", "charge_table"]

_EMPTY = np.zeros(0, np.int64)


def charge_table(cm: CompiledModel, const_charge):
    """Per-action costs and time when every transition charges constants (async models
    without a property process), else None: ``(costs[resource][action], time[action])``.
    Same rules as the per-edge computation: a rendezvous charges the sum of the costs and
    the maximum of the times.

    >>> from dve import load_model
    >>> from statespace import compile_model
    >>> cm = compile_model(load_model("process P { state a; init a; trans a -> a { cost 4; "
    ...     "time 2; }; } system async;"))
    >>> [a.tolist() for a in charge_table(cm, [((4,), 2)])]
    [[[4]], [2]]
    """
    if cm.system != "async" or cm.property_process is not None or not cm.actions:
        return None
    if any(c is None for c in const_charge):
        return None
    res = cm.resources
    costs = np.zeros((len(res), len(cm.actions)), np.int64)
    tim = np.zeros(len(cm.actions), np.int64)
    for a_id, a in enumerate(cm.actions):
        parts = [const_charge[t] for t in a.transitions]
        for k in range(len(res)):
            total = sum(p[0][k] for p in parts)
            if not arith.INT64[0] <= total <= arith.INT64[1]:
                return None  # the per-edge path marks the overflowing step as a fault
            costs[k, a_id] = total
        tim[a_id] = max(p[1] for p in parts)
    return costs, tim


class AsyncGenerator(ModelGenerator):
    """The successors of ``system async`` states (interleaving, rendezvous, committed states,
    the product with a property process), computed as array operations over a chunk.

    Parameters
    ----------
    cm : CompiledModel
        A ``system async`` model.
    xp, lazy, transitions
        As for :class:`~statespace.next_state.ModelGenerator`.

    Attributes
    ----------
    charge_table : tuple or None
        ``(costs[resource][action], time[action])`` when every action charges constants
        (:func:`charge_table`): then :meth:`successors` computes no costs.
    """

    kind = "async"

    def __init__(self, cm: CompiledModel, xp=np, *, lazy: bool = False,
                 transitions: Transitions | None = None) -> None:
        super().__init__(cm, xp, lazy=lazy, transitions=transitions)
        self.has_commit = any(p.commit for p in cm.system_processes)
        # System actions by their first transition (with a property process: the system
        # step's index and the action of its first pairing), in ascending order.
        self.actions_of: dict[int, list] = {t.id: [] for t in cm.transitions}
        nq = (len(cm.processes[cm.property_process].transitions)
              if cm.property_process is not None else 0)
        n_sys = (len(cm.actions) - nq) // nq if nq else len(cm.actions)
        for i in range(n_sys):
            a = cm.actions[i * nq] if nq else cm.actions[i]
            self.actions_of[a.transitions[0]].append((i, a))
        self.charge_table = charge_table(cm, self.tr.const_charge)

    def n_actions(self) -> int:
        """The number of action ids (the radix of (source, action) ranks)."""
        return self.cm.n_actions

    def action_codes(self):
        """None: an action id is an index into ``CompiledModel.actions``."""
        return None

    def mark(self) -> int:
        """Nothing changes between chunks here (see :meth:`SyncGenerator.mark
        <statespace.next_state.SyncGenerator.mark>`)."""
        return 0

    def rewind(self, mark: int) -> None:
        """Nothing to undo."""

    def successors(self, keys, X, *, still=frozenset(), skip=None) -> Successors:
        """Every step of every state of the chunk: ``keys`` (states x words) and ``X`` (slots
        x states, the same states unpacked), in (action, source row) order.

        ``still`` (process indices) take no step; ``skip`` (process index -> row mask) takes
        none in the masked rows. A wrapper that reaches the steps of some processes otherwise
        (:class:`~statespace.next_state.QuotientGenerator`) leaves them out this way.
        A row whose process 0 is in control state -1 has no steps.

        Examples
        --------
        >>> from dve import load_model
        >>> from statespace import compile_model
        >>> gen = AsyncGenerator(compile_model(load_model(
        ...     "byte x; process P { state a; init a; trans a -> a { guard x < 2; "
        ...     "effect x = x + 1; cost 5; }; } system async;")))
        >>> X = np.array([[0, 0, 0], [0, 1, 2]])      # three states: x = 0, 1, 2
        >>> s = gen.successors(gen.layout.pack(X, np), X)
        >>> s.source.tolist(), gen.layout.unpack(s.keys, np)[1].tolist(), s.costs
        ([0, 1], [1, 2], None)
        """
        cm, xp = self.cm, self.xp
        tr = self.tr
        ev = tr.ev

        def enabled(tid, allowed):
            proc = cm.transitions[tid].process
            if proc in still:
                return _EMPTY, None
            r, gerr = tr.enabled(X, tid, rows_cache, allowed)
            mask = skip.get(proc) if skip else None
            if mask is not None and r.shape[0]:
                keep = ~mask[r]
                if not keep.all():
                    r = r[keep]
                    gerr = gerr[keep] if gerr is not None else None
            return r, gerr
        F = X.shape[1]
        allowed = None
        if self.has_commit:
            com = {p.index: xp.isin(X[p.slot], xp.asarray(sorted(p.commit)))
                   for p in cm.system_processes}
            anyc = xp.zeros(F, bool)
            for v in com.values():
                anyc |= v
            if anyc.any():
                allowed = {i: (~anyc) | v for i, v in com.items()}
        rows_cache: dict = {}
        G, live, full = tr.live(X, cm.system_processes, lambda tid: enabled(tid, allowed))

        prop = cm.property_process
        if prop is not None:
            pp = cm.processes[prop]
            PG = [enabled(q, None) for q in pp.transitions]
            pen, perr = [], []
            for R, ge in PG:
                en = xp.zeros(F, bool)
                en[R] = True
                pen.append(en)
                er = xp.zeros(F, bool)
                if ge is not None:
                    er[R] = ge
                perr.append(er)
            has_sys = xp.zeros(F, bool)
            nq = len(pp.transitions)

        out_src, out_act, out_key, out_err, out_time = [], [], [], [], []
        out_cost = [[] for _ in self.res]

        def emit(R, a, nk, err, costs, tm):
            out_src.append(R)
            # (The actions' column is made once, by one repeat, in collect.)
            out_act.append((a, R.shape[0]))
            out_key.append(nk)
            out_err.append(err)
            for lst, c in zip(out_cost, costs):
                lst.append(c)
            out_time.append(tm)

        if prop is not None:
            n_sys = (len(cm.actions) - nq) // nq if nq else 0
        # System actions in ascending id: those led by a live transition (actions are numbered
        # by their first transition), so emission order is action order.
        sys_list = [x for tid in live for x in self.actions_of[tid]]
        for ai, a in sys_list:
            R, gerr = tr.action_rows(G, full, a)
            if R.shape[0] == 0:
                continue
            writes, eerr = ev.effect(a.transitions)(X, R)
            # With a charge table, the search reads every edge's charge from its action.
            costs, tm, cerr = (tr.charge_action(a, X, R) if self.charge_table is None
                               else ((), None, None))
            nk = tr.apply(keys, X, R, writes, deltas=tr.move_deltas(a))
            if prop is None:
                # No fault: None, the chunk's mask made once (see Transitions.collect).
                emit(R, ai, nk, tr.step_faults(a, R, gerr, eerr, cerr, none=True), costs, tm)
                continue
            err = tr.step_faults(a, R, gerr, eerr, cerr)
            has_sys[R] = True
            for qi, qid in enumerate(pp.transitions):
                sel = xp.flatnonzero(pen[qi][R])
                if sel.shape[0] == 0:
                    continue
                Rq = R[sel]
                qt = cm.transitions[qid]
                nkq = tr.shift_pc(nk[sel], pp.slot, qt.src, qt.dst)
                pc_, pt_, pe_ = tr.charge(qid, X, Rq) if qt.node.costs or qt.time is not None \
                    else (None, None, None)
                cst = [c[sel] for c in costs]
                tmq = tm[sel]
                ovf = None
                if pc_ is not None:
                    cst, ovf = add_costs(cst, pc_)
                    if qt.time is not None:
                        tmq = xp.maximum(tmq, pt_)
                emit(Rq, ai * nq + qi, nkq,
                     err[sel] | perr[qi][Rq] | as_mask(pe_, Rq.shape[0], xp)
                     | as_mask(ovf, Rq.shape[0], xp), cst, tmq)
        if prop is not None:
            # The property process moves alone where the system has no step.
            for qi, qid in enumerate(pp.transitions):
                Rq = xp.flatnonzero(pen[qi] & ~has_sys)
                if Rq.shape[0] == 0:
                    continue
                qt = cm.transitions[qid]
                nkq = tr.shift_pc(keys[Rq], pp.slot, qt.src, qt.dst)
                cst, tmq, pe_ = tr.charge(qid, X, Rq)
                emit(Rq, n_sys * nq + qi, nkq, perr[qi][Rq] | as_mask(pe_, Rq.shape[0], xp),
                     cst, tmq)
        return tr.collect(out_src, out_act, out_key, out_err, out_cost, out_time,
                          charges=self.charge_table is None)
