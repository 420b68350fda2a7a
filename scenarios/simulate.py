"""The policy simulator of scenario systems, and the lifting of its walks.

:class:`Simulator` steps many rows of one state matrix together through the compiled model's
own next-state generator (:class:`statespace.next_state.SyncGenerator`), each process taking
the enabled transition a policy scores highest: a run of the model, not of a model of it.
:class:`Lift` turns a walk that comes back to a state only up to a renaming of interchangeable
clients into a concrete cycle (the renamings are :mod:`statespace.renaming`'s, the same as the
quotient's :func:`statespace.quotient.lift_walk` uses). :func:`scenarios.bounds.find_witness`
searches policies with both.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from dve import syntax as S

from .dsl import System

__all__ = ["Lift", "Simulator"]


def _walk(e: object, stop: Callable[[object], bool]) -> None:
    """Visit the syntax tree ``e`` depth first until ``stop(node)`` returns true."""
    stack = [e]
    while stack:
        x = stack.pop()
        if stop(x):
            return
        fields = getattr(x, "__dataclass_fields__", None)
        if fields is None:
            if isinstance(x, tuple):
                stack.extend(x)
            continue
        for name in fields:
            v = getattr(x, name)
            if isinstance(v, tuple) or hasattr(v, "__dataclass_fields__"):
                stack.append(v)


def _remote_processes(guard: tuple, most: int) -> set[str]:
    """The processes whose variables the guard reads (``P->v``), at most ``most + 1`` of
    them (the walk stops there)."""
    out: set[str] = set()

    def seen(x: object) -> bool:
        if isinstance(x, S.Remote):
            out.add(x.process.name)
        return len(out) > most

    _walk(guard, seen)
    return out


#: Operators whose evaluation cannot fault (no division, no index, no shift past the width).
_SAFE_OPS = frozenset({"and", "or", "==", "!=", "<", "<=", ">", ">=", "+", "-", "not", "imply"})


def _pre_tests(cm, proc: str, guard: tuple, consts: dict) -> tuple[tuple[int, int], ...]:
    """``((slot, value), ...)``: the top-level conjuncts ``v == c`` of ``guard`` (a transition
    of process ``proc``) with ``v`` a global variable's slot (not shadowed by a local of
    ``proc``) and ``c`` a literal or constant, when nothing in the guard can fault (then a
    false conjunct makes the guard false with no fault to report); else ()."""
    safe = [True]

    def check(x: object) -> bool:
        if isinstance(x, (S.Binary, S.Unary)) and x.op not in _SAFE_OPS:
            safe[0] = False
        elif isinstance(x, (S.Index, S.Remote)) and getattr(x, "index", None) is not None:
            safe[0] = False
        return not safe[0]

    _walk(guard, check)
    if not safe[0]:
        return ()
    out = []
    stack = list(guard)
    while stack:
        e = stack.pop()
        if isinstance(e, S.Binary) and e.op == "and":
            stack += [e.left, e.right]
        elif isinstance(e, S.Binary) and e.op == "==" and isinstance(e.left, S.Name):
            v = cm.variables.get(e.left.name)
            c = (e.right.value if isinstance(e.right, S.IntLit) else
                 consts.get(e.right.name) if isinstance(e.right, S.Name)
                 and f"{proc}.{e.right.name}" not in cm.variables else None)
            if v is not None and v.owner is None and not v.is_const and v.size is None \
                    and isinstance(c, int) and f"{proc}.{e.left.name}" not in cm.variables:
                out.append((v.base, c))
    return tuple(out)


def _ne_test(cm, proc: str, node) -> tuple[int, int] | None:
    """``(slot, value)`` when transition ``node`` (of process ``proc``) has no effect, no
    charge, no sync and the guard ``v != c`` alone, ``v`` a global variable's slot (not
    shadowed by a local of ``proc``), ``c`` a literal; else ``None``. Comparing two small
    integers cannot fault."""
    if node.effects or node.costs or node.sync is not None or len(node.guard) != 1:
        return None
    g = node.guard[0]
    if not (isinstance(g, S.Binary) and g.op == "!=" and isinstance(g.left, S.Name)
            and isinstance(g.right, S.IntLit)):
        return None
    v = cm.variables.get(g.left.name)
    if v is None or v.owner is not None or v.is_const or v.size is not None \
            or f"{proc}.{g.left.name}" in cm.variables:
        return None
    return (v.base, g.right.value)


def _names(e: object) -> list[str]:
    """The plain names (variables, constants) the syntax tree ``e`` reads."""
    out: list[str] = []
    _walk(e, lambda x: isinstance(x, S.Name) and out.append(x.name) is not None)
    return out


class Simulator:
    """Rows of one state matrix stepped together through the compiled model's own
    ``system sync`` successor code (:class:`statespace.next_state.SyncGenerator`: guards,
    effects, charges and faults as exploration computes them, one implementation of the
    model's semantics), each process taking the enabled transition a policy scores highest.

    Examples
    --------
    >>> from scenarios import Request, Scenario, Server, System, Think
    >>> user = Scenario("user", [Think(2), Request("job", service=1)])
    >>> sim = Simulator(System({user: 2}, server=Server()))
    >>> X = sim.initial(3)
    >>> Y, C, cost, dead = sim.step(X, lambda p, rows, tids: np.zeros(rows.shape[0]))
    >>> Y.shape == X.shape, dead.tolist()
    (True, [False, False, False])
    """

    def __init__(self, system: System) -> None:
        import dve
        from statespace import compile_model
        from statespace.next_state import SyncGenerator

        model = dve.load_model(system.to_model())     # the front door's checks
        cm = compile_model(model)
        if cm.system != "sync":
            raise ValueError("find_witness simulates 'system sync' models")
        self.cm = cm
        self.ex = SyncGenerator(cm)
        self.resource = system.resource
        self.procs = cm.system_processes
        index = {p.name: p.index for p in self.procs}
        # Each process's slots (its control state and its variables): it "stands still" on a
        # tick that changes none of them.
        self.local: list[np.ndarray] = []
        for p in self.procs:
            slots = [p.slot]
            for v in cm.variables.values():
                if v.owner == p.name and not v.is_const:
                    slots += range(v.base, v.base + (v.size or 1))
            self.local.append(np.array(sorted(slots), np.intp))
        # Per transition: the one other process its guard reads (an admission of that
        # client), or -1; and the work of the request it admits or sends (its constant
        # charge; a client's send: the request kind it writes), for ``heavy``.
        kinds = {i + 1: r.service * r.cost for i, r in enumerate(system.kinds())}
        consts = {v.name: v.const_value for v in cm.variables.values()
                  if v.is_const and v.owner is None}
        self.concerns = np.full(len(cm.transitions), -1, np.int64)
        self.weight = np.zeros(len(cm.transitions), np.int64)
        for t in cm.transitions:
            # (at most this process and one other: beyond, the walk stops)
            names = _remote_processes(t.node.guard, 2)
            others = {index[n] for n in names if n in index and index[n] != t.process}
            if len(others) == 1:
                self.concerns[t.id] = others.pop()
            charge = self.ex.tr.constant_charge(t.id)
            if charge is not None and self.resource in cm.resources:
                self.weight[t.id] = charge[0][cm.resources.index(self.resource)]
            for a in t.node.effects:
                if (isinstance(a.target, S.Name) and a.target.name == "req"
                        and isinstance(a.value, S.Name) and a.value.name in consts):
                    self.weight[t.id] = kinds.get(consts[a.value.name], 0)
        # A client's choice is made on the tick before the send (the branch's first state):
        # a transition into a state that sends weighs what it sends.
        sends: dict[tuple[int, int], int] = {}
        for t in cm.transitions:
            if self.concerns[t.id] < 0 and self.weight[t.id]:
                k = (t.process, t.src)
                sends[k] = max(sends.get(k, 0), int(self.weight[t.id]))
        for t in cm.transitions:
            if self.concerns[t.id] < 0:
                self.weight[t.id] = max(int(self.weight[t.id]), sends.get((t.process, t.dst), 0))
        for tid in range(len(cm.transitions)):
            q = self.concerns[tid]
            if q >= 0:
                # An admission's weight: the work of the request kinds it reads (its charge
                # is one tick's cost; the request brings service x cost).
                for n in _names(cm.transitions[tid].node.guard):
                    if consts.get(n) in kinds:
                        self.weight[tid] = max(self.weight[tid], kinds[consts[n]])
        self.k_res = cm.resources.index(self.resource) if self.resource in cm.resources else -1
        # Per transition, the conjuncts ``global == constant`` of a guard that cannot fault:
        # where no row meets them the guard is false in every row, and evaluating it is
        # skipped (a server's admission steps: ``phase == K`` leaves one step's transitions).
        self.pre: list[tuple[tuple[int, int], ...]] = [
            _pre_tests(cm, cm.processes[t.process].name, t.node.guard, consts)
            for t in cm.transitions]
        self.src = [t.src for t in cm.transitions]
        # Per process, its *holds*: transitions that leave everything as it is (same state, no
        # effect, no charge) under a guard ``global != constant`` alone (a client of a server
        # that admits several requests per tick, during the admission steps). Where every
        # candidate of a process in a step is a hold whose test is true in every row, its
        # choice is the hold of its state, without evaluating guards or scoring
        # (``hold_of[p]``: state -> transition, -1 where the state has none).
        self.hold_test: dict[int, tuple[int, int]] = {}
        self.hold_of: list[np.ndarray] = []
        for p in self.procs:
            table = np.full(max(1, len(cm.processes[p.index].states)), -1, np.int64)
            for tid in p.transitions:
                t = cm.transitions[tid]
                test = _ne_test(cm, cm.processes[t.process].name, t.node)
                if test is not None and t.src == t.dst and table[t.src] < 0:
                    self.hold_test[tid] = test
                    table[t.src] = tid
            self.hold_of.append(table)
        # Per process, its transitions by source state and first pre-test (None: none), in
        # the process's order: a step looks only at those whose first test some row meets
        # (the server's hundreds of admissions split by ``phase == K``).
        self.by_src: list[dict[tuple, list[int]]] = []
        for p in self.procs:
            by: dict[tuple, list[int]] = {}
            for tid in p.transitions:
                first = self.pre[tid][0] if self.pre[tid] else None
                by.setdefault((self.src[tid], first), []).append(tid)
            self.by_src.append(by)

    def initial(self, rows: int) -> np.ndarray:
        from statespace.evaluate import INT
        return np.repeat(np.asarray(self.cm.initial, INT).reshape(-1, 1), rows, axis=1)

    def step(self, X: np.ndarray, scores: Callable[[int, np.ndarray, np.ndarray], np.ndarray]):
        """One tick of every row: ``(Y, choices, cost, dead)``. ``scores(p, rows, tids)``
        gives, for the enabled pairs of process ``p``, a score each; each row takes the
        enabled transition of highest score. ``dead``: rows that deadlocked or faulted (their
        ``Y`` is meaningless)."""
        ex = self.ex
        R = X.shape[1]
        rows_cache: dict = {}
        C = np.zeros((R, len(self.procs)), np.int64)
        dead = np.zeros(R, bool)
        gerr = np.zeros(R, bool)
        # The processes that a process before this one in the tick chose a transition about
        # (a desk admitting a client): scores see it, so that two desks do not both take
        # the oldest client (a legal step, but one admission fewer).
        self.claimed = np.zeros((R, len(self.procs)), bool)
        met: dict[tuple[int, int], bool] = {}      # pre-tests, once per step

        def meets(test: tuple[int, int]) -> bool:
            got = met.get(test)
            if got is None:
                got = met[test] = bool((X[test[0]] == test[1]).any())
            return got

        holds: dict[tuple[int, int], bool] = {}     # hold tests true in every row

        def holds_everywhere(test: tuple[int, int]) -> bool:
            got = holds.get(test)
            if got is None:
                got = holds[test] = bool((X[test[0]] != test[1]).all())
            return got

        for i, p in enumerate(self.procs):
            here = set(np.unique(X[p.slot]).tolist())
            cands = []
            for (st, first), tids in self.by_src[i].items():
                if st in here and (first is None or meets(first)):
                    cands += [tid for tid in tids
                              if all(meets(t) for t in self.pre[tid][1:])]
            cands.sort()        # (in the process's order: the order of the tie-breaks)
            if cands and len(cands) == len(here) and all(
                    tid in self.hold_test and holds_everywhere(self.hold_test[tid])
                    for tid in cands):
                # Only holds, one per state present, each enabled in every row: no choice.
                C[:, i] = self.hold_of[i][X[p.slot]]
                continue
            rs, ts, gs = [], [], []
            for tid in cands:
                r, ge = ex.enabled(X, tid, rows_cache)
                if r.shape[0]:
                    rs.append(r)
                    ts.append(np.full(r.shape[0], tid, np.int64))
                    gs.append(ge if ge is not None else np.zeros(r.shape[0], bool))
            if not rs:
                dead[:] = True
                continue
            r, t, g = np.concatenate(rs), np.concatenate(ts), np.concatenate(gs)
            sc = scores(i, r, t)
            # Each row's best pair: sorted by row, then score (descending); the sort is
            # stable, so on equal scores the transition listed first wins.
            order = np.lexsort((-sc, r))
            rs_ = r[order]
            first = np.ones(rs_.shape[0], bool)
            first[1:] = rs_[1:] != rs_[:-1]
            pick = order[first]
            C[r[pick], i] = t[pick]
            gerr[r[pick]] = g[pick]
            has = np.zeros(R, bool)
            has[r[pick]] = True
            dead |= ~has
            q = self.concerns[C[:, i]]
            took = np.flatnonzero((q >= 0) & has)
            self.claimed[took, q[took]] = True
        live = np.flatnonzero(~dead)
        Y = X.copy()
        cost = np.zeros(R, np.int64)
        time = np.zeros(R, np.int64)
        if live.shape[0]:
            err = gerr[live].copy()
            Yl, err, costs, tm = ex.step(X, live, C[live], err)
            Y[:, live] = Yl
            cost[live] = costs[self.resource] if self.resource in costs else 0
            time[live] = tm
            dead[live[err]] = True
        self.time = time
        return Y, C, cost, dead

    def code(self, choice: np.ndarray) -> int:
        """The ``system sync`` step code of one row's choices (first process most
        significant), as :meth:`statespace.CompiledModel.sync_choice` reads it."""
        code = 0
        for p, tid in zip(self.procs, choice.tolist()):
            code = code * max(1, len(p.transitions)) + p.transitions.index(tid)
        return code


class Lift:
    """Walks that close up to a renaming of interchangeable clients, made concrete cycles.

    The model is invariant under the symmetry's groups (:func:`statespace.symmetry.
    detect_symmetry`): renaming the members of a group (``pi.s``, as
    :func:`statespace.renaming.apply_renaming` moves them) maps each step ``s -> t`` of the model
    to a step ``pi.s -> pi.t`` of the same cost and time, the members' transitions going to
    the member they are renamed to and the other processes' transitions to their images
    (:func:`statespace.symmetry.transition_image`). A walk ``s_i .. s_j`` with
    ``s_j = pi.s_i`` followed by its images through ``pi, pi^2, ...`` is therefore a run that
    is back at ``s_i`` after at most ``order(pi)`` rounds, each round of the walk's cost: a
    concrete cycle of the walk's mean. :meth:`extend` builds it step by step with the
    explorer's successor code and checks every step (guards true without a fault, the
    successor the renamed one), so nothing rests on the symmetry being right but speed.
    """

    def __init__(self, sim: Simulator, sym) -> None:
        from statespace.renaming import ChoiceRenaming
        self.sim, self.sym, self.cm = sim, sym, sim.cm
        self.renaming = ChoiceRenaming(sim.cm, sym)    # (ValueError: no lifting)

    @classmethod
    def of(cls, sim: Simulator) -> Lift | None:
        """The lifter of ``sim``'s model, or ``None`` where no group reduces (or a ``system
        sync`` model's members share what they write: :func:`statespace.quotient.
        sync_obstacle`)."""
        from statespace.quotient import sync_obstacle
        from statespace.symmetry import detect_symmetry

        sym = detect_symmetry(sim.cm)
        if not sym.reduces or sync_obstacle(sim.cm, sym) is not None:
            return None
        try:
            return cls(sim, sym)
        except ValueError:
            return None

    def canon(self, X: np.ndarray) -> np.ndarray:
        """The canonical forms of states ``X`` (slots x rows)."""
        from statespace.canonical import canonicalize
        return canonicalize(self.sym, X)

    def apply(self, X: np.ndarray, perm) -> np.ndarray:
        """``perm.X`` (:func:`statespace.renaming.apply_renaming`)."""
        from statespace.renaming import apply_renaming
        return apply_renaming(self.sym, X, perm)

    def between(self, a: np.ndarray, b: np.ndarray):
        """``pi`` (per group, an order as :meth:`apply` takes) with ``b == pi.a``, for two
        packed states of one orbit; ``None`` when the check fails
        (:func:`statespace.renaming.renaming_between`)."""
        from statespace.renaming import renaming_between
        X = self.sim.ex.layout.unpack(np.stack([a, b]), np, dtype=np.int64)
        return renaming_between(self.sym, X[:, 0], X[:, 1])

    @staticmethod
    def order(pi) -> int:
        """The order of the renaming (:func:`statespace.renaming.renaming_order`)."""
        from statespace.renaming import renaming_order
        return renaming_order(pi)

    def extend(self, K, Ch, Tm, Cs, i: int, pi):
        """One row's history (packed states ``K[0..j]``, choices, times and cumulative costs of
        its ``j`` steps) whose walk ``i..j`` closes up to ``pi`` (``s_j == pi.s_i``), extended by
        the walk's images through ``pi^2, pi^3, ...`` until it is back at ``s_i``. Raises
        ``AssertionError`` where a renamed step is not a step of the model."""
        from statespace.evaluate import INT
        from statespace.renaming import renaming_order
        sim, ex, lay = self.sim, self.sim.ex, self.sim.ex.layout
        j = K.shape[0] - 1
        S = lay.unpack(K[i:], np, dtype=np.int64)          # s_i .. s_j
        keys, chs, tms, costs = [K], [Ch], [Tm], [Cs]
        total = int(Cs[j])
        X, C = S, Ch[i:]
        images: dict[int, int] = {}
        for _ in range(renaming_order(pi) - 1):
            # Round m walks pi^m.s_i .. pi^m.s_j: the last round's states and choices renamed
            # by pi once more (pi's images of the server's transitions memoised).
            end = X[:, -1]
            X = self.apply(X, pi)
            if not np.array_equal(X[:, 0], end):
                raise AssertionError("a round does not start where the last one ended")
            C = self.renaming.rename(C, pi, images)
            L = C.shape[0]
            Xs = np.ascontiguousarray(X[:, :L].astype(INT))
            # Every renamed transition enabled, without a guard fault, where it is taken.
            for tid in np.unique(C).tolist():
                r = np.flatnonzero((C == tid).any(axis=1))
                en, ge = ex.enabled(np.ascontiguousarray(Xs[:, r]), tid)
                if en.shape[0] != r.shape[0] or (ge is not None and ge.any()):
                    raise AssertionError(f"a renamed step does not enable transition {tid}")
            Y, err, cost, tm = ex.step(Xs, np.arange(L), C, np.zeros(L, bool))
            if err.any() or not np.array_equal(np.asarray(Y, np.int64), X[:, 1:]):
                raise AssertionError("a renamed step does not reach the renamed state")
            c = np.asarray(cost[sim.resource], np.int64) if sim.resource in cost else \
                np.zeros(L, np.int64)
            keys.append(lay.pack(X[:, 1:], np))
            chs.append(C)
            tms.append(np.asarray(tm, np.int64))
            costs.append(total + np.cumsum(c))
            total = int(costs[-1][-1])
            if np.array_equal(X[:, -1], S[:, 0]):
                return (np.concatenate(keys), np.concatenate(chs), np.concatenate(tms),
                        np.concatenate(costs))
        raise AssertionError("the lifted walk did not close within the renaming's order")
