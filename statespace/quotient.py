"""Exploration of the quotient graph: one canonical state per orbit of the symmetry groups.

The breadth-first search of :mod:`statespace.search` runs unchanged over a generator that
wraps the model's own (:class:`~statespace.next_state.QuotientGenerator`); it differs from
the model's generator in these points:

- the initial state and every successor are replaced by their canonical representative
  (:func:`statespace.canonical.canonicalize`), so the visited set holds one state per orbit;
- a member that equals its neighbour in the canonical order, with neither referred to by a
  key-holding slot, takes no step of its own: the transposition of the two fixes the state and
  maps its steps onto the neighbour's, with equal (cost, time) and targets in the same orbit
  (skipped only when no rendezvous joins two members of one group, where that mapping would
  need both partners);
- every other edge is kept with the action that made it, so parallel edges between two classes
  keep their distinct (cost, time) labels;
- in ``system sync`` the members of a run of interchangeable members choose their transitions
  as a multiset: ``k + 1`` successors for ``k`` members and two branches, not ``2^k``.

The result is a :class:`~statespace.graph.StateGraph` over the classes: its cycles are the
images of the full graph's cycles and each of its cycles lifts to a cycle of the full graph
(:func:`lift_walk`), with the same totals per traversal, so the maximal and minimal cycle mean
and ratio are those of the full graph (docs/algorithms.md, "Symmetry reduction").

Examples
--------
Ten clients in lockstep, each either staying or moving on: 1,024 states, 11 classes (how
many clients stand in ``b``); from the initial class, 11 steps (how many of the ten move), not
1,024.

>>> src = '''
... process Client(key id) { state a, b; init a;
...     trans a -> a { cost 1; }, a -> b { cost 2; }, b -> a { time 2; }; }
... for (k : 1 .. 10) { process Client(k); }
... system sync;'''
>>> from dve import load_model
>>> q = build_quotient_graph(load_model(src))
>>> q.graph.n_states, q.full_size(), int(q.graph.indptr[1] - q.graph.indptr[0])
(11, 1024, 11)
>>> q.symmetry.describe()
'Client: 10 instances (keys 1..10)'

(:mod:`statespace.counting` shows an ``async`` server that keeps its client's key.)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .explore import as_compiled
from .graph import StateGraph
from .model import CompiledModel
from .counting import counted_orbit_total, explore_counted
from .next_state import QuotientGenerator, SyncGenerator, Transitions, generator_for
from .renaming import apply_renaming
from .search import BreadthFirstSearch
from .canonical import canonicalize, interchangeable
from .symmetry import NO_SYMMETRY, Symmetry, detect_symmetry, transition_image

__all__ = ["Quotient", "build_quotient_graph", "lift_walk", "orbit_size", "prime_walks",
           "witness_graph"]


@dataclass(frozen=True, eq=False)
class Quotient:
    """A graph over orbit representatives and the symmetry it was built with.

    ``graph`` is the full graph itself when ``symmetry.reduces`` is false (nothing to reduce;
    ``symmetry.reason`` says why).
    """

    graph: StateGraph
    symmetry: Symmetry
    model: CompiledModel
    #: The classes' counts when the quotient was explored by counting
    #: (:class:`statespace.counting.Counts`), else None.
    counts: object = None
    #: The guards, charges and effects the exploration generated for the full model
    #: (:class:`statespace.next_state.Transitions`, NumPy), kept so that lifting runs
    #: (:func:`walk_explorer`) steps with them instead of generating them again; or None.
    transitions: object = None

    @property
    def reduced(self) -> bool:
        return self.symmetry.reduces

    @property
    def counted(self) -> bool:
        """True when the classes were explored as counts of local states."""
        return self.counts is not None

    def representatives(self, ids=None) -> np.ndarray:
        """The canonical states (rows x slots) of classes ``ids`` (all by default): the rows
        of ``graph.states``, or, for a counted exploration too large to keep them in full
        (``graph.states`` then has no column), built from the counts."""
        if self.counts is not None:
            return self.counts.states(ids)
        return self.graph.states if ids is None else self.graph.states[np.asarray(ids)]

    def full_size(self) -> int:
        """The number of states of the full product: the sum of the orbits' sizes."""
        if not self.reduced:
            return self.graph.n_states
        if self.counts is not None:
            return counted_orbit_total(self.symmetry, self.counts)
        return orbit_size(self.symmetry, self.graph.states.T, error=self.graph.error_state)


def orbit_size(sym: Symmetry, X: np.ndarray, error: int = -1) -> int:
    """The total number of states in the orbits of canonical states ``X`` (slots x rows): for
    each group, ``n!`` divided by the product of the factorials of the sizes of the runs of
    interchangeable members (each orbit's size is the index of its stabiliser)."""
    total = 0
    X = np.asarray(X).astype(np.int64)
    rows = X.shape[1]
    if rows == 0:
        return 0
    size = np.ones(rows, dtype=object)
    red = interchangeable(sym, X)
    for g in sym.groups:
        run = np.ones(rows, np.int64)
        div = np.ones(rows, dtype=object)
        for i in range(1, g.size):
            r = red[g.processes[i]]
            run = np.where(r, run + 1, 1)
            # Dividing by the run length at each extension gives run! in the end.
            div = div * np.where(r, run, 1).astype(object)
        size = size * (math.factorial(g.size) // div)
    if 0 <= error < rows:
        size[error] = 1
    total = int(sum(size.tolist()))
    return total


def sync_code(cm: CompiledModel, choice) -> int:
    """The mixed-radix step code of a ``system sync`` choice (one transition id per system
    process, in order), as :meth:`CompiledModel.sync_choice` decodes it."""
    code = 0
    for p, tid in zip(cm.system_processes, choice):
        code = code * max(1, len(p.transitions)) + p.transitions.index(int(tid))
    return code


def sync_obstacle(cm: CompiledModel, sym: Symmetry) -> str | None:
    """Why a ``system sync`` model's groups may not be symmetric after all, or ``None``.

    In a sync step effects run process by process, each seeing the writes of the processes
    before it; renaming members changes that order. It does not matter when members write only
    their own variables and their own cells of key-indexed arrays, and nobody reads in an
    effect what members write."""
    from dve import syntax as S
    own = {}
    for g in sym.groups:
        for p, k in zip(g.processes, g.keys):
            own[p] = k
    written: set[str] = set()

    def qual(proc: str, name: str) -> str:
        q = f"{proc}.{name}"
        return q if q in cm.variables else name

    for p, k in own.items():
        pname = cm.processes[p].name
        for tid in cm.processes[p].transitions:
            for a in cm.transitions[tid].node.effects:
                q = qual(pname, a.target.name)
                if q.startswith(pname + "."):
                    continue
                if isinstance(a.target, S.Index) and isinstance(a.target.index, S.IntLit) \
                        and a.target.index.value == k:
                    written.add(q)
                    continue
                return (f"system sync: instance {pname} writes '{q}', which the other "
                        "instances share, so the order of the processes matters")
    if not written:
        return None

    def reads(e, proc, out):
        if isinstance(e, S.Name):
            out.append((qual(proc, e.name), None))
        elif isinstance(e, S.Index):
            out.append((qual(proc, e.name), e.index))
            reads(e.index, proc, out)
        elif isinstance(e, S.Remote):
            out.append((f"{e.process.name}.{e.name}", e.index))
        for f in ("left", "right", "operand"):
            if hasattr(e, f):
                reads(getattr(e, f), proc, out)

    for p in cm.system_processes:
        for tid in p.transitions:
            got: list = []
            for a in cm.transitions[tid].node.effects:
                reads(a.value, p.name, got)
                if isinstance(a.target, S.Index):
                    reads(a.target.index, p.name, got)
            for q, idx in got:
                if q not in written:
                    continue
                if p.index in own and isinstance(idx, S.IntLit) and idx.value == own[p.index]:
                    continue
                return (f"system sync: process {p.name} reads '{q}' in an effect while "
                        "instances write it in the same step")
    return None



def build_quotient_graph(model, *, symmetry: Symmetry | None = None,
                         property: bool = True,
                         max_states: int | None = None, max_memory: int | None = None,
                         progress: Callable[[int, int, float], None] | None = None,
                         chunk_size: int | None = None, xp=np,
                         counting: bool = True, on_device_full: str = "host") -> Quotient:
    """Explore one representative per orbit (see the module docstring).

    Parameters
    ----------
    model : CompiledModel or dve.syntax.Model
        As for :func:`statespace.build_state_graph`.
    symmetry : Symmetry, optional
        The groups to reduce; :func:`~statespace.symmetry.detect_symmetry` by default.
        :data:`~statespace.symmetry.NO_SYMMETRY` explores the full graph.
    property, max_states, max_memory, progress, chunk_size, xp, on_device_full
        As for :func:`statespace.build_state_graph`; the quotient itself (a symmetry that
        reduces) is explored with NumPy whatever ``xp`` is.
    counting : bool
        Explore the classes as counts of local states where :mod:`statespace.counting`
        applies (default: the same graph, faster for many members); false sorts the members
        of every successor.

    Returns
    -------
    Quotient
        The graph over canonical states (its ``states`` are the representatives), with the
        symmetry used. A ``system sync`` model whose members share what they write
        (:func:`sync_obstacle`) is explored in full, with the reason.
    """
    cm = as_compiled(model, property=property)
    sym = detect_symmetry(cm) if symmetry is None else symmetry
    if sym.reduces and cm.system == "sync":
        why = sync_obstacle(cm, sym)
        if why is not None:
            sym = Symmetry((), sym.refused + tuple((g.template, why) for g in sym.groups), why)
    if not sym.reduces:
        search = BreadthFirstSearch(generator_for(cm), xp, chunk_size, max_states, max_memory,
                                    progress, False, on_device_full=on_device_full)
        return Quotient(search.run(), sym, cm)
    args = (np, chunk_size, max_states, max_memory, progress, False)
    if counting:
        # A sync model's generator runs these (all generated, as one module): kept with the
        # quotient for lifting its runs.
        tr = Transitions(cm, np) if cm.system == "sync" else None
        got = explore_counted(cm, sym, args, transitions=tr)
        if got is not None:
            return Quotient(got[0], sym, cm, got[1], tr)
    gen = QuotientGenerator(generator_for(cm), sym)
    return Quotient(BreadthFirstSearch(gen, *args).run(), sym, cm)


def lift_walk(q: Quotient, edges, *, perm=None, close: bool = True, explorer=None,
              memo: dict | None = None):
    """A run of the full model following a walk of the quotient (repeated until it closes).

    Parameters
    ----------
    q : Quotient
    edges : sequence of int
        Edge ids of ``q.graph`` forming a walk (edge ``i`` ends where edge ``i + 1`` starts).
    perm : list of ndarray, optional
        Where the run starts: at ``perm·rep`` of the walk's first class (the identity by
        default: at the representative itself).
    close : bool
        Walk ``edges`` again until the run is back at its first state (``edges`` must then be a
        cycle); ``False`` walks them once.
    explorer : AsyncGenerator or SyncGenerator, optional
        The generator that computes the representatives' successors (:func:`walk_explorer`);
        built here when not given (a caller lifting several walks builds it once).
    memo : dict, optional
        What lifting a walk of ``q`` learns that does not depend on where the run stands (the
        representatives and their successors along each edge, the transitions' images under
        each renaming), kept for the next walk of the same ``q`` with the same ``explorer``
        (:func:`witness_graph` passes one for all its walks, after :func:`prime_walks`).

    Returns
    -------
    states : list of ndarray
        Concrete state vectors ``s_0, ..., s_L`` of the full model (``s_L == s_0`` when
        closing); a step into the error state ends in ``model.error_state``.
    actions : list of int
        The model's action ids of the ``L`` steps, with the real instances.
    edges : list of int
        The quotient edge of each step (its (cost, time) is the step's).
    perm : list of ndarray
        Where the run ends, relative to the representative of the last class.

    Notes
    -----
    The run is at ``π·rep`` while the quotient walk is at ``rep`` (``π·X`` puts member
    ``π[p]`` of ``X`` at position ``p``, renaming its key). An edge ``rep --a--> t`` with
    ``canon(t) = o·t`` is taken by the run as ``π(a)``, reaching ``π·t = (o⁻¹[π])·canon(t)``.
    Invariance of the model under the group makes each such step a step of the full model with
    the edge's (cost, time). A cycle is walked ``r`` times where ``r`` is the order of the
    permutation it closes with, so the lifted cycle has the same mean and ratio. A run that
    closes in one round is looked for first (:func:`_one_round`: interchangeable members of a
    representative may trade places, which leaves the state as it is and changes which member
    takes the later steps); the search tries the plain round first, so a walk whose plain
    round closes costs one round.
    """
    g = q.graph
    cm = q.model
    edges = [int(e) for e in edges]
    srcs = [int(np.searchsorted(g.indptr, e, side="right") - 1) for e in edges]
    sym = q.symmetry
    if perm is None:
        perm = [np.arange(gr.size) for gr in sym.groups]
    if not edges:
        return [], [], [], perm
    perm = perm0 = [np.asarray(p) for p in perm]
    ex = walk_explorer(cm, sym, q.transitions) if explorer is None else explorer
    memo = {} if memo is None else memo
    prime_walks(q, ex, memo, edges)
    where, table, action_of, column, digits = memo["tables"]
    process_of = [t.process for t in cm.transitions]
    rep_of, succ = memo["reps"], memo["succ"]
    inverse_perm: dict[tuple, list] = memo.setdefault("inverse", {})
    images: dict[tuple, int] = memo.setdefault("images", {})
    start = apply_renaming(sym, rep_of[srcs[0]].reshape(-1, 1), perm)[:, 0]

    def step(e, s, perm):
        """The run's step along quotient edge ``e`` from class ``s`` when it stands at
        ``perm·rep``: (concrete action, successor's concrete state or None for the error
        state, the permutation after)."""
        a = int(g.action[e])
        rep = rep_of[s]
        pkey = tuple(tuple(p.tolist()) for p in perm)
        inv = inverse_perm.get(pkey)
        if inv is None:
            inv = inverse_perm[pkey] = [np.argsort(p).tolist() for p in perm]

        def mapped(tid):
            w = where.get(tid)
            if w is None:
                key = (tid, pkey)
                m = images.get(key)
                if m is None:
                    # Member q of the representative is member inv[q] of the run: key k_q ->
                    # k_inv[q] (built only here: the images are kept by renaming).
                    ren = {gr.template: {gr.keys[q]: gr.keys[inv[gi][q]]
                                         for q in range(gr.size)}
                           for gi, gr in enumerate(sym.groups)}
                    m = images[key] = transition_image(cm, sym, tid, ren)
                return m
            gi, pos, j = w
            return table[gi][inv[gi][pos]][j]

        if cm.system == "sync":
            choice, t, order = succ[e]
            # Member q's transition is taken by member inv[q]: it goes to that column.
            conc = [0] * len(choice)
            for tid in choice:
                m = mapped(tid)
                conc[column[process_of[m]]] = m
            act = 0         # sync_code(cm, conc), on tables built once
            for (radix, digit), m in zip(digits, conc):
                act = act * radix + digit[m]
            if t is None:
                return act, None, perm
        else:
            t, err = _successor(ex, rep, a, cm)
            act = action_of[tuple(mapped(tid) for tid in cm.action_transitions(a))]
            if err:
                return act, None, perm
            order = [o[:, 0] for o in canonicalize(sym, t.reshape(-1, 1), return_perm=True)[1]]
        cur = apply_renaming(sym, t.reshape(-1, 1), perm)[:, 0]
        return act, cur, [np.argsort(o)[p] for p, o in zip(perm, order)]

    if (close and all(int(g.indices[e]) != g.error_state for e in edges)
            and (cm.system != "sync" or _may_close(edges, srcs, rep_of, sym, succ))):
        # The search's first try is the plain round: when it closes, it is the answer.
        one = _one_round(edges, srcs, start, perm0, rep_of, sym, step)
        if one is not None:
            return one
    cur = start.copy()
    states, acts, used = [cur.copy()], [], []
    for rounds in range(_MAX_ROUNDS):
        for e, s in zip(edges, srcs):
            act, nxt, perm = step(e, s, perm)
            acts.append(act)
            used.append(e)
            if nxt is None:
                states.append(np.asarray(cm.error_state, np.int64))
                return states, acts, used, perm
            cur = nxt
            states.append(cur.copy())
        if not close or np.array_equal(cur, start):
            return states, acts, used, perm
    raise AssertionError("the lifted walk did not close")


def prime_walks(q: Quotient, ex, memo: dict, edges) -> None:
    """Fill ``memo`` (see :func:`lift_walk`) for walks over quotient ``edges``: the lookup
    tables of the model's transitions, the representatives of the edges' sources and, for a
    ``system sync`` model, each edge's step from its representative with the canonical orders
    of the successor, for all edges not seen yet in one call of the explorer ``ex`` (what its
    steps run is generated once, as one module).

    The step from a representative along an edge and the canonical orders of its successor do
    not depend on where the run stands (only the renaming applied after does), so they are
    computed once per edge; the search of :func:`_one_round` steps along the same edges many
    times, and :func:`witness_graph` lifts several walks through the same classes."""
    g, cm, sym = q.graph, q.model, q.symmetry
    if "tables" not in memo:
        where = {}   # transition id -> (group, member position, index within the process)
        table = []   # group -> position -> transition ids
        for gi, gr in enumerate(sym.groups):
            table.append([cm.processes[p].transitions for p in gr.processes])
            for pos, p in enumerate(gr.processes):
                for j, tid in enumerate(cm.processes[p].transitions):
                    where[tid] = (gi, pos, j)
        action_of = ({a.transitions + ((a.property,) if a.property is not None else ()): i
                      for i, a in enumerate(cm.actions)} if cm.system != "sync" else {})
        sps = cm.system_processes
        column = {p.index: i for i, p in enumerate(sps)}
        # sync_code's mixed radix, by column: (radix, transition id -> digit).
        digits = [(max(1, len(p.transitions)), {t: j for j, t in enumerate(p.transitions)})
                  for p in sps]
        memo["tables"] = (where, table, action_of, column, digits)
        memo["reps"], memo["succ"] = {}, {}
    rep_of, succ = memo["reps"], memo["succ"]
    edges = sorted({int(e) for e in edges})
    srcs = [int(s) for s in np.searchsorted(g.indptr, edges, side="right") - 1] if edges else []
    ids = sorted(set(srcs) - rep_of.keys())
    if ids:
        rep_of.update(zip(ids, q.representatives(ids).astype(np.int64)))
    if cm.system != "sync":
        return
    todo = [(e, s) for e, s in zip(edges, srcs) if e not in succ]
    if not todo:
        return
    uniq = [e for e, _ in todo]
    cols = sorted({s for _, s in todo})
    col = {s: i for i, s in enumerate(cols)}
    choices = np.asarray([cm.sync_choice(g.model_action(int(g.action[e]))) for e in uniq],
                         np.int64).reshape(len(uniq), -1)
    X = np.stack([rep_of[s] for s in cols], axis=1)
    ex.tr.ev.prepare(choices.ravel(), guards=False)   # what the steps run, as one module
    Y, _, _, _ = ex.step(X, np.asarray([col[s] for _, s in todo], np.int64),
                         choices, np.zeros(len(uniq), bool))
    Y = Y.astype(np.int64)
    err = np.asarray([int(g.indices[e]) == g.error_state for e in uniq])
    ok = np.flatnonzero(~err)
    orders = canonicalize(sym, Y[:, ok], return_perm=True)[1] if ok.size else []
    for k, e in enumerate(uniq):
        succ[e] = (choices[k].tolist(), None, None)
    for j, k in enumerate(ok):
        succ[uniq[k]] = (choices[k].tolist(), Y[:, k], [o[:, j] for o in orders])


def walk_explorer(cm: CompiledModel, sym: Symmetry, transitions=None):
    """The generator :func:`lift_walk` steps representatives with (one row at a time): on
    ``transitions`` (:attr:`Quotient.transitions`, what the exploration generated) when
    given (a ``system sync`` model's), else with each guard and effect generated when first
    used."""
    if transitions is not None:
        return SyncGenerator(cm, np, transitions=transitions)
    return generator_for(cm, np, lazy=True)


#: Steps tried at most while looking for a lifted cycle that closes in one round.
_TWIST_STEPS = 4000


def _twists(sym: Symmetry, rep: np.ndarray) -> list[tuple[int, int, int]]:
    """The transpositions ``(group, i - 1, i)`` of neighbours that canonical state ``rep``
    holds interchangeable (each fixes it: :func:`~statespace.canonical.interchangeable`)."""
    red = interchangeable(sym, rep.reshape(-1, 1))
    return [(gi, i - 1, i) for gi, g in enumerate(sym.groups) for i in range(1, g.size)
            if red[g.processes[i]][0]]


def _may_close(edges, srcs, rep_of, sym: Symmetry, succ: dict) -> bool:
    """False when no choice of twists lets a ``system sync`` walk close in one round, so
    that :func:`_one_round` would search in vain; True when it may.

    A run along the walk ends at ``F∘perm`` where ``F = τ_L-1 h_L-1 ... τ_0 h_0``: ``τ_i``
    the renaming of edge ``i`` (the inverse of its successor's canonical order), ``h_i`` a
    product of the twists at step ``i`` (the stabiliser ``H_i`` of class ``i``'s
    representative). With ``U_i = τ_i-1 ... τ_0``, ``F = U_L ∘ g`` where ``g`` lies in the
    group ``G`` generated by the conjugates ``U_i⁻¹ H_i U_i``: transpositions, so ``G`` is the
    product of the symmetric groups on the components of the positions they join. The run
    closes when ``F`` fixes the first representative, i.e. lies in ``H_0`` (its whole
    stabiliser, whose size ``orbit_size`` counts), which ``G`` contains: so only if ``U_L``
    keeps every position in its component. The test is necessary, not sufficient (the search
    takes one twist per step); when it passes the search runs as before."""
    for gi, gr in enumerate(sym.groups):
        root = list(range(gr.size))

        def find(x):
            while root[x] != x:
                root[x] = root[root[x]]
                x = root[x]
            return x

        U = np.arange(gr.size)
        for e, s in zip(edges, srcs):
            inv = None
            for gj, x, y in _twists(sym, rep_of[s]):
                if gj == gi:
                    if inv is None:
                        inv = np.argsort(U)
                    root[find(int(inv[x]))] = find(int(inv[y]))
            U = np.argsort(succ[e][2][gi])[U]
        if any(find(int(U[z])) != find(z) for z in range(gr.size)):
            return False
    return True


def _one_round(edges, srcs, start, perm, rep_of, sym, step):
    """A run along ``edges`` from ``start`` (at ``perm·rep``) back to ``start`` in one round,
    or ``None``. Where the representative has interchangeable members, the run may stand at
    ``perm∘h·rep`` for a transposition ``h`` of two of them (the same state: ``h`` fixes the
    representative), which changes which concrete member takes each later step; a depth-first
    search over those choices (adjacent transpositions, which generate every permutation of a
    run), bounded by ``_TWIST_STEPS`` steps. Its first try is the plain round (no twist at
    any step); the run found returns where it ends: ``perm`` after a twist (back at the start
    state), the plain round's own end otherwise."""
    budget = [_TWIST_STEPS]
    if len(edges) > _TWIST_STEPS // 4:
        return None           # (and the search's depth stays far below Python's limit)

    def twists(s):
        return _twists(sym, rep_of[s])

    # (position, concrete state) pairs already searched. A run standing at the same concrete
    # state at the same position of the walk has (up to the twists still to come) the same
    # futures, so a second visit is skipped: the search stays a heuristic (one twist per step)
    # but no longer retries the same states along every order of its twists. A miss only
    # costs a longer lifted cycle, never a wrong one.
    seen: set = set()

    def go(i, perm, states, acts, plain):
        if i == len(edges):
            if not np.array_equal(states[-1], start):
                return None
            return states, acts, (perm if plain else None)
        key = (i, states[-1].tobytes())
        if key in seen:
            return None
        seen.add(key)
        # The twists are listed only when the plain step's subtree fails.
        options = [None]
        k = 0
        while k < len(options):
            tw = options[k]
            k += 1
            if budget[0] <= 0:
                return None
            p = perm
            if tw is not None:
                gi, x, y = tw
                h = np.arange(sym.groups[gi].size)
                h[x], h[y] = y, x
                p = [h[q] if k2 == gi else q for k2, q in enumerate(perm)]
            budget[0] -= 1
            act, nxt, p2 = step(edges[i], srcs[i], p)
            if nxt is not None:
                got = go(i + 1, p2, states + [nxt], acts + [act], plain and tw is None)
                if got is not None:
                    return got
            if tw is None:
                options += twists(srcs[i])
        return None

    found = go(0, perm, [start.copy()], [], True)
    if found is None:
        return None
    states, acts, perm_end = found
    if perm_end is None:
        perm_end = perm  # back at the start state: the run ends where it began
    return states, acts, list(edges), perm_end


def witness_graph(q: Quotient, cycle_edges, ends=()) -> tuple[StateGraph, list[int], list[int]]:
    """A small graph of the full model holding the lifted critical cycle and runs to it.

    The states are concrete states of the full model (real instance names): a shortest run of
    the quotient from the initial class to the cycle's first class, lifted; the cycle lifted
    from there until it closes; and, for each class in ``ends`` (deadlocks, the error state), a
    lifted shortest run to it. Each state has the breadth-first parent of its run, so
    :func:`~statespace.graph.shortest_edges` gives those runs back.

    Returns
    -------
    graph : StateGraph
        Over the lifted states (``model`` set, state 0 the initial state).
    cycle : list of int
        The lifted cycle's edges in ``graph``.
    end_states : list of int
        The state of ``graph`` standing for each of ``ends``.
    """
    from .graph import shortest_edges
    g = q.graph
    cm = q.model
    res = list(g.costs)
    st_rows: list[np.ndarray] = [q.representatives([0])[0].astype(np.int64)]
    parent, pact = [-1], [-1]
    out: list[list] = [[]]          # per state: [(target, action, quotient edge)]
    error_id = -1

    ex = walk_explorer(cm, q.symmetry, q.transitions)
    memo: dict = {}
    c0 = (int(np.searchsorted(g.indptr, int(cycle_edges[0]), side="right") - 1)
          if len(cycle_edges) else None)
    # Every walk is known before any is lifted: their edges' steps are computed in one call.
    walks = {int(d): shortest_edges(g, int(d))
             for d in ([c0] if c0 is not None else []) + [int(d) for d in ends]}
    prime_walks(q, ex, memo, [e for w in walks.values() for e in w] + list(cycle_edges))

    def path(to_class: int):
        states, acts, used, perm = lift_walk(q, walks[to_class], close=False, explorer=ex,
                                             memo=memo)
        prev = 0
        for k, (x, a, e) in enumerate(zip(states[1:], acts, used)):
            st_rows.append(x)
            parent.append(prev)
            pact.append(a)
            out.append([])
            out[prev].append((len(st_rows) - 1, a, e))
            prev = len(st_rows) - 1
        return prev, perm

    cyc_ids: list[int] = []
    if c0 is not None:
        head, perm = path(c0)
        states, acts, used, _ = lift_walk(q, cycle_edges, perm=perm, close=True, explorer=ex,
                                          memo=memo)
        prev = head
        for k, (x, a, e) in enumerate(zip(states[1:], acts, used)):
            last = k == len(acts) - 1
            nid = head if last else len(st_rows)
            if not last:
                st_rows.append(x)
                parent.append(prev)
                pact.append(a)
                out.append([])
            out[prev].append((nid, a, e))
            cyc_ids.append((prev, len(out[prev]) - 1))
            prev = nid
    end_ids = []
    for d in ends:
        sid, _ = path(int(d))
        if int(d) == g.error_state:
            error_id = sid
        end_ids.append(sid)
    n = len(st_rows)
    deg = np.array([len(r) for r in out], np.int64)
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(deg, out=indptr[1:])
    flat = [x for r in out for x in r]
    indices = np.array([t for t, _, _ in flat], np.int32)
    codes = None
    if cm.system == "sync":
        # Labels are dense ids of the lifted steps' codes (Python ints past 63 bits).
        uniq = sorted({a for _, a, _ in flat})
        label = {c: i for i, c in enumerate(uniq)}
        flat = [(t, label[a], e) for t, a, e in flat]
        pact = [label[a] if a != -1 else -1 for a in pact]
        codes = np.array(uniq, dtype=object if any(c >= 2**63 for c in uniq) else np.int64)
    action = np.array([a for _, a, _ in flat], np.int32)
    qe = np.array([e for _, _, e in flat], np.int64)
    # Element by element (StateGraph.peek): a compact graph's costs are not computed whole.
    costs = {r: np.asarray(g.peek("costs", qe, r), np.int64) if qe.size
             else np.zeros(0, np.int64) for r in res}
    tim = np.asarray(g.peek("time", qe), np.int64) if qe.size else np.zeros(0, np.int64)
    states_m = np.array(st_rows, dtype=np.int64).reshape(n, cm.n_slots)
    cycle = [int(indptr[s] + k) for s, k in cyc_ids]
    dead = np.array([i for i in end_ids if i != error_id], np.int64)
    wg = StateGraph(indptr=indptr, indices=indices, costs=costs, time=tim, action=action,
                    states=states_m, parent=np.array(parent, np.int64),
                    parent_action=np.array(pact, np.int32), deadlocks=dead,
                    error_state=error_id, action_codes=codes, model=cm, name=g.name)
    return wg, cycle, end_ids


#: A permutation of n members has order at most Landau's g(n) (g(100) is about 2.3e5 walks).
_MAX_ROUNDS = 1 << 20


def _successor(ex, rep: np.ndarray, action: int, cm: CompiledModel) -> np.ndarray:
    """The concrete successor of state ``rep`` by ``action`` (full semantics, one row)."""
    X = rep.reshape(-1, 1).astype(np.int32)
    keys = ex.layout.pack(X, np)
    s = ex.successors(keys, X.copy())
    act, nkeys, err = s.action, s.keys, s.error
    hit = np.flatnonzero(act == action)
    if hit.shape[0] == 0:
        raise AssertionError(f"action {action} is not enabled in the representative")
    if err[hit[0]]:
        return np.asarray(cm.error_state, np.int64), True
    return ex.layout.unpack(nkeys[hit[:1]], np, dtype=np.int64)[:, 0], False
