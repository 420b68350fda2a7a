"""Slow, independent oracles for the fuzzing harness: cycle values and a model explorer.

Nothing here imports dvecost, ``dve``, ``statespace`` or ``ocm``: the values it computes are
checked against theirs, so it must not share their code. Everything is plain Python integers
and :class:`fractions.Fraction`, written for obviousness, not speed (graphs of a few hundred
vertices).

- :func:`sccs` (iterative Tarjan), :func:`karp_max_mean` (Karp's theorem on every SCC),
  :func:`max_ratio` (Dinkelbach's iteration with a Bellman-Ford positive-cycle search),
  :func:`brute_force` (every simple cycle; tiny graphs only, to check the other two),
  :func:`cycle_value`: the value ``dvecost cycle`` / ``analyze`` must print, or the reason it
  must not print one.
- :class:`Model` and :func:`explore`: the semantics of the small models that
  :mod:`fuzz_gen` writes (a subset of DVE: see docs/language.md), evaluated
  directly from the generator's description, never from the DVE text. Guards and effects
  compute in 32 bits with wrap-around (C semantics, truncating division); costs and times
  exactly, every intermediate result checked to fit 64 bits, a result that does not fit or a
  negative time being a runtime fault (the step goes to the error state), as is a division by
  zero, an index or a value out of range, or both partners of a rendezvous assigning one
  global variable.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from itertools import product

__all__ = ["sccs", "karp_max_mean", "max_ratio", "brute_force", "cycle_value", "Model", "Proc",
           "Trans", "explore", "Fault", "INT64", "instantiate"]

#: The closed range an edge's cost or time must lie in (a signed 64-bit integer).
INT64 = (-(1 << 63), (1 << 63) - 1)

# ------------------------------------------------------------------------------------ graphs
# A graph is ``(n, edges)`` with ``edges`` a list of ``(u, v, cost, time)``, ids 0..n-1.


def sccs(n: int, edges) -> list[int]:
    """Strongly connected component label of every vertex (iterative Tarjan).

    >>> sccs(3, [(0, 1, 0, 0), (1, 0, 0, 0), (1, 2, 0, 0)]) in ([0, 0, 1], [1, 1, 0])
    True
    """
    adj = [[] for _ in range(n)]
    for u, v, *_ in edges:
        adj[u].append(v)
    index = [-1] * n
    low = [0] * n
    on = [False] * n
    comp = [-1] * n
    stack: list[int] = []
    counter = 0
    ncomp = 0
    for root in range(n):
        if index[root] >= 0:
            continue
        work = [(root, 0)]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on[root] = True
        while work:
            v, i = work[-1]
            if i < len(adj[v]):
                work[-1] = (v, i + 1)
                w = adj[v][i]
                if index[w] < 0:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on[w] = True
                    work.append((w, 0))
                elif on[w]:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                u = work[-1][0]
                low[u] = min(low[u], low[v])
            if low[v] == index[v]:
                while True:
                    w = stack.pop()
                    on[w] = False
                    comp[w] = ncomp
                    if w == v:
                        break
                ncomp += 1
    return comp


def _cyclic_parts(n, edges):
    """``[(vertices, inner edges)]`` for every SCC that holds a cycle."""
    comp = sccs(n, edges)
    inner: dict[int, list] = {}
    for e in edges:
        if comp[e[0]] == comp[e[1]]:
            inner.setdefault(comp[e[0]], []).append(e)
    parts = []
    for c, es in sorted(inner.items()):
        vs = sorted({e[0] for e in es} | {e[1] for e in es})
        parts.append((vs, es))
    return parts


def karp_max_mean(n: int, edges) -> Fraction | None:
    """Maximal cycle mean by Karp's theorem on each SCC; None when there is no cycle.

    With ``D_k(v)`` the heaviest walk of exactly ``k`` edges from a fixed vertex ``s`` of the
    SCC to ``v`` (``k`` = 0..K, K the SCC's size), the maximal mean is
    ``max_v min_k (D_K(v) - D_k(v)) / (K - k)`` over the ``v`` with ``D_K(v)`` defined.

    >>> karp_max_mean(2, [(0, 1, 3, 1), (1, 0, 1, 1), (1, 1, 1, 1)])
    Fraction(2, 1)
    """
    best = None
    for vs, es in _cyclic_parts(n, edges):
        pos = {v: i for i, v in enumerate(vs)}
        K = len(vs)
        NEG = None
        D = [[NEG] * K for _ in range(K + 1)]
        D[0][0] = 0
        for k in range(1, K + 1):
            prev, cur = D[k - 1], D[k]
            for u, v, c, _ in es:
                a = prev[pos[u]]
                if a is not None:
                    j = pos[v]
                    if cur[j] is None or a + c > cur[j]:
                        cur[j] = a + c
        for j in range(K):
            if D[K][j] is None:
                continue
            worst = None
            for k in range(K):
                if D[k][j] is not None:
                    q = Fraction(D[K][j] - D[k][j], K - k)
                    worst = q if worst is None or q < worst else worst
            if worst is not None and (best is None or worst > best):
                best = worst
    return best


def _positive_cycle(vs, es, p, q):
    """A simple cycle (list of edges) with ``q*cost - p*time > 0``, or None (Bellman-Ford)."""
    dist = {v: 0 for v in vs}
    pred: dict = {}
    last = None
    for _ in range(len(vs) + 1):
        last = None
        for e in es:
            u, v, c, t = e
            d = dist[u] + q * c - p * t
            if d > dist[v]:
                dist[v] = d
                pred[v] = e
                last = v
        if last is None:
            return None
    # A relaxation in round |V| + 1: walking |V| predecessors lands on a cycle of `pred`.
    v = last
    for _ in range(len(vs)):
        v = pred[v][0]
    cycle, w = [], v
    while True:
        e = pred[w]
        cycle.append(e)
        w = e[0]
        if w == v:
            break
    cycle.reverse()
    return cycle


def max_ratio(n: int, edges) -> Fraction | None:
    """Maximal cycle ratio ``sum cost / sum time``; None without cycles.

    Requires every cycle to have a positive total time (check :func:`zero_time_cycle` first).
    Dinkelbach: start below every cycle's ratio; while some cycle has ``cost - lam*time > 0``,
    move ``lam`` to that cycle's ratio (it strictly grows and there are finitely many cycles).

    >>> max_ratio(2, [(0, 1, 3, 1), (1, 0, 1, 3), (1, 1, 1, 1)])
    Fraction(1, 1)
    """
    best = None
    for vs, es in _cyclic_parts(n, edges):
        lam = Fraction(-(sum(abs(e[2]) for e in es) + 1))
        while True:
            cyc = _positive_cycle(vs, es, lam.numerator, lam.denominator)
            if cyc is None:
                break
            t = sum(e[3] for e in cyc)
            assert t > 0, "a zero-time cycle reached max_ratio"
            lam = Fraction(sum(e[2] for e in cyc), t)
        if best is None or lam > best:
            best = lam
    return best


def zero_time_cycle(n: int, edges) -> bool:
    """Whether some cycle has total time 0 (times are non-negative): a cycle of 0-time edges."""
    return bool(_cyclic_parts(n, [e for e in edges if e[3] == 0]))


def brute_force(n: int, edges, kind: str = "mean") -> Fraction | None:
    """The best value over every simple cycle, by enumeration (tiny graphs only).

    >>> brute_force(2, [(0, 1, 3, 1), (1, 0, 1, 3), (1, 1, 1, 1)], "ratio")
    Fraction(1, 1)
    """
    out = [[] for _ in range(n)]
    for e in edges:
        out[e[0]].append(e)
    best = None

    def walk(start, v, seen, c, t, k):
        nonlocal best
        for e in out[v]:
            w = e[1]
            if w == start:
                val = Fraction(c + e[2], k + 1) if kind == "mean" else Fraction(c + e[2], t + e[3])
                best = val if best is None or val > best else best
            elif w > start and w not in seen:
                seen.add(w)
                walk(start, w, seen, c + e[2], t + e[3], k + 1)
                seen.discard(w)

    for s in range(n):
        walk(s, s, {s}, 0, 0, 0)
    return best


def cycle_value(n: int, edges, kind: str = "mean", mode: str = "max"):
    """What the tool must answer for this graph: ``("value", Fraction)`` or ``("no-cycle",)``,
    ``("zero-time",)``, ``("negative-time",)`` (ratio only; these must not give exit 0)."""
    if mode == "min":
        edges = [(u, v, -c, t) for u, v, c, t in edges]
    if kind == "ratio":
        if any(e[3] < 0 for e in edges):
            return ("negative-time",)
        if zero_time_cycle(n, edges):
            return ("zero-time",)
        val = max_ratio(n, edges)
    else:
        val = karp_max_mean(n, edges)
    if val is None:
        return ("no-cycle",)
    return ("value", -val if mode == "min" else val)


# ------------------------------------------------------------------------------------ models
# Expressions are tuples: ("lit", v) | ("var", name) | ("idx", name, e) | ("bin", op, a, b)
# | ("not", a) | ("neg", a). Variable names are unique in the whole model (locals carry their
# process's number), so no scoping is needed.


class Fault(Exception):
    """A runtime fault: the step goes to the error state."""


@dataclass
class Trans:
    src: str
    dst: str
    guard: tuple | None = None
    sync: tuple | None = None  # (channel, "!", expr | None) or (channel, "?", target | None)
    effects: list = field(default_factory=list)  # [(target, expr)]; target ("var"/"idx", ...)
    cost: tuple | None = None
    time: tuple | None = None


@dataclass
class Proc:
    name: str
    states: list
    init: str
    trans: list
    local: list = field(default_factory=list)  # [(type, name, size | None, [init values])]
    commit: list = field(default_factory=list)  # committed states


@dataclass
class Model:
    system: str  # "async" | "sync"
    globals: list  # [(type, name, size | None, [init values])]
    channels: list  # [(name, valued)] rendezvous, or (name, True, item type, size) buffered
    procs: list
    #: ``(template Proc, keys)``: the last ``len(keys)`` processes are its instances (written
    #: as ``process T(key i)`` and a ``for`` loop); None when there is no template.
    template: tuple | None = None


def instantiate(tpl: Proc, key: int) -> Proc:
    """Instance ``key`` of a template: its locals renamed ``NAME_KEY``, ``("key",)`` replaced
    by the key's value."""
    import copy

    own = {d[1] for d in tpl.local}

    def ren(e):
        if not isinstance(e, tuple):
            return e
        if e == ("key",):
            return ("lit", key)
        if e[0] in ("var", "idx") and e[1] in own:
            return (e[0], f"{e[1]}_{key}", *map(ren, e[2:]))
        return tuple(ren(x) for x in e)

    p = copy.deepcopy(tpl)
    p.name = f"{tpl.name}_{key}"
    p.local = [(t, f"{n}_{key}", size, init) for t, n, size, init in tpl.local]
    for t in p.trans:
        t.guard, t.cost, t.time = ren(t.guard), ren(t.cost), ren(t.time)
        t.effects = [(ren(a), ren(e)) for a, e in t.effects]
        if t.sync is not None:
            t.sync = (t.sync[0], t.sync[1], ren(t.sync[2]))
    return p


RANGE = {"byte": (0, 255), "int": (-32768, 32767)}


def _wrap32(v: int) -> int:
    return ((v + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def _cdiv(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _check64(v: int) -> int:
    if not INT64[0] <= v <= INT64[1]:
        raise Fault  # a cost or time past 64 bits: a runtime fault of the step
    return v


def _binop(op, a, b, wide):
    """C semantics; ``wide`` (cost and time): exact integers, every result checked to fit 64
    bits (docs/language.md), else 32-bit wrap-around."""
    w = _check64 if wide else _wrap32
    if op == "+":
        return w(a + b)
    if op == "-":
        return w(a - b)
    if op == "*":
        return w(a * b)
    if op in ("&", "|", "^"):  # two's complement, as Python's integers behave
        return w(a & b if op == "&" else a | b if op == "|" else a ^ b)
    if op in ("/", "%"):
        if b == 0:
            raise Fault
        q = _cdiv(a, b)
        return w(q) if op == "/" else w(a - b * q)
    return int({"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b, "==": a == b,
                "!=": a != b}[op])


class _Eval:
    def __init__(self, model: Model):
        self.decl = {}
        self.globals = {d[1] for d in model.globals}
        for d in model.globals:
            self.decl[d[1]] = d
        for p in model.procs:
            for d in p.local:
                self.decl[d[1]] = d

    def is_global(self, name):
        return name in self.globals

    def ev(self, e, env, wide=False):
        k = e[0]
        if k == "lit":
            return e[1]
        if k == "var":
            return env[e[1]]
        if k == "idx":
            i = self.ev(e[2], env, False)
            arr = env[e[1]]
            if not 0 <= i < len(arr):
                raise Fault
            return arr[i]
        if k == "not":
            return int(self.ev(e[1], env, wide) == 0)
        if k == "neg":
            v = -self.ev(e[1], env, wide)
            return _check64(v) if wide else _wrap32(v)
        op = e[1]
        a = self.ev(e[2], env, wide)
        if op == "and":
            return int(a != 0 and self.ev(e[3], env, wide) != 0)
        if op == "or":
            return int(a != 0 or self.ev(e[3], env, wide) != 0)
        if op == "imply":
            return int(a == 0 or self.ev(e[3], env, wide) != 0)
        return _binop(op, a, self.ev(e[3], env, wide), wide)

    def assign(self, target, value, env):
        name = target[1]
        lo, hi = RANGE[self.decl[name][0]]
        if target[0] == "idx":
            i = self.ev(target[2], env)
            arr = list(env[name])
            if not 0 <= i < len(arr):
                raise Fault
            if not lo <= value <= hi:
                raise Fault
            arr[i] = value
            env[name] = tuple(arr)
        else:
            if not lo <= value <= hi:
                raise Fault
            env[name] = value


def _freeze(ctrl, env):
    return (tuple(ctrl), tuple(sorted(env.items())))


def explore(model: Model, limit: int = 600, resource: str = "cost"):
    """Reachable graph of ``model``: ``(n_states, n_transitions, edges)`` or None past ``limit``.

    ``edges`` are ``(u, v, cost, time)`` between non-error states (the error state and
    deadlocks have no successors, so they lie on no cycle and are left out), ``cost`` that of
    ``resource``; ``n_states`` counts the error state when it is reached, ``n_transitions``
    every generated successor.
    """
    E = _Eval(model)
    env0 = {}
    for typ, name, size, init in [*model.globals, *(d for p in model.procs for d in p.local)]:
        vals = list(init) + [0] * ((size or 1) - len(init))
        env0[name] = tuple(vals[:size]) if size else vals[0]
    for ch in model.channels:
        if len(ch) == 4:
            env0["#" + ch[0]] = ()  # a buffered channel's queue: the items it holds
    start = _freeze([p.init for p in model.procs], env0)
    ids = {start: 0}
    queue = [start]
    edges = []
    n_trans = 0
    error = False
    head = 0
    while head < len(queue):
        st = queue[head]
        head += 1
        for dst, c, t in _successors(model, E, st):
            n_trans += 1
            if dst is None:
                error = True
                continue
            if dst not in ids:
                if len(ids) >= limit:
                    return None
                ids[dst] = len(ids)
                queue.append(dst)
            edges.append((ids[st], ids[dst], c.get(resource, 0), t))
    return len(ids) + error, n_trans, edges


def _guard(E, tr, env):
    """1 enabled, 0 disabled, "err" faulting (an erroneous guard counts as enabled)."""
    if tr.guard is None:
        return 1
    try:
        return int(E.ev(tr.guard, env) != 0)
    except Fault:
        return "err"


def _charge(E, tr, env):
    """Costs (``{resource: value}``; a plain ``cost E`` is the resource ``cost``) and time of
    one transition; a negative time is a runtime fault."""
    if tr.cost is None:
        c = {}
    elif isinstance(tr.cost, dict):
        c = {r: E.ev(e, env, wide=True) for r, e in tr.cost.items()}
    else:
        c = {"cost": E.ev(tr.cost, env, wide=True)}
    t = 1 if tr.time is None else E.ev(tr.time, env, wide=True)
    if t < 0:
        raise Fault
    return c, t


def _add(a: dict, b: dict) -> dict:
    """Costs of the parts of one step, added per resource (checked: 64 bits)."""
    return {r: _check64(a.get(r, 0) + b.get(r, 0)) for r in a.keys() | b.keys()}


def _successors(model, E, st):
    """``[(next state or None for the error state, cost, time)]``; cost/time of a faulting
    step are unspecified (the edge leads to the error state, on no cycle)."""
    ctrl, items = st
    env = dict(items)
    procs = model.procs
    out = []
    if model.system == "sync":
        choices = []
        for p, s in zip(procs, ctrl):
            ch = [(tr, _guard(E, tr, env)) for tr in p.trans if tr.src == s]
            ch = [x for x in ch if x[1]]
            if not ch:
                return []
            choices.append(ch)
        for combo in product(*choices):
            if any(g == "err" for _, g in combo):
                out.append((None, 0, 0))
                continue
            try:
                c, t = {}, 0
                for tr, _ in combo:
                    ci, ti = _charge(E, tr, env)
                    c, t = _add(c, ci), max(t, ti)
                new = dict(env)
                for tr, _ in combo:  # locals only: the order of processes does not matter
                    for target, e in tr.effects:
                        E.assign(target, E.ev(e, new), new)
                out.append((_freeze([tr.dst for tr, _ in combo], new), c, t))
            except Fault:
                out.append((None, 0, 0))
        return out
    buffers = {ch[0]: ch for ch in model.channels if len(ch) == 4}
    committed = [ctrl[i] in p.commit for i, p in enumerate(procs)]
    # In a committed state only committed processes move (a rendezvous needs both).
    may = committed if any(committed) else [True] * len(procs)
    for i, p in enumerate(procs):
        if not may[i]:
            continue
        for tr in p.trans:
            if tr.src != ctrl[i]:
                continue
            g = _guard(E, tr, env)
            if not g:
                continue
            if tr.sync is None:
                out.append(_step(E, env, ctrl, [(i, tr, g)]))
            elif tr.sync[0] in buffers:
                ch = buffers[tr.sync[0]]
                queue = env["#" + ch[0]]
                if g == "err":  # an erroneous guard counts as enabled: the error state
                    out.append((None, 0, 0))
                elif (tr.sync[1] == "!" and len(queue) < ch[3]) or (tr.sync[1] == "?" and queue):
                    out.append(_buffered_step(E, env, ctrl, i, tr, ch))
            elif tr.sync[1] == "!":
                for j, q in enumerate(procs):
                    if j == i or not may[j]:
                        continue
                    for tq in q.trans:
                        if tq.src != ctrl[j] or tq.sync is None or tq.sync[1] != "?" \
                                or tq.sync[0] != tr.sync[0]:
                            continue
                        gq = _guard(E, tq, env)
                        if gq:
                            out.append(_step(E, env, ctrl, [(i, tr, g), (j, tq, gq)]))
    return out


def _cast(v, typ):
    """A value sent on a typed channel takes the item type (legacy DiVinE: wraps, no error)."""
    return v & 0xFF if typ == "byte" else ((v + 32768) & 0xFFFF) - 32768


def _buffered_step(E, env, ctrl, i, tr, ch):
    """A send to or receive from a buffered channel: one process moves, its effects run first,
    then the value is evaluated and queued (send) or the head is taken into the target
    (receive), as DiVinE 2 does (docs/language.md, "Transitions")."""
    try:
        c, t = _charge(E, tr, env)
        new = dict(env)
        ctrl = list(ctrl)
        ctrl[i] = tr.dst
        for target, e in tr.effects:
            E.assign(target, E.ev(e, new), new)
        key = "#" + ch[0]
        if tr.sync[1] == "!":
            new[key] = new[key] + (_cast(E.ev(tr.sync[2], new), ch[2]),)
        else:
            head, new[key] = new[key][0], new[key][1:]
            E.assign(tr.sync[2], head, new)
        return (_freeze(ctrl, new), c, t)
    except Fault:
        return (None, 0, 0)


def _global_writes(E, tr):
    return {target[1] for target, _ in tr.effects if E.is_global(target[1])}


def _step(E, env, ctrl, moves):
    """One async step: a local move, or a rendezvous ``[(sender), (receiver)]``."""
    if any(g == "err" for _, _, g in moves):
        return (None, 0, 0)
    try:
        c, t = {}, 0
        for _, tr, _ in moves:
            ci, ti = _charge(E, tr, env)
            c, t = _add(c, ci), max(t, ti)
        new = dict(env)
        ctrl = list(ctrl)
        if len(moves) == 2:
            (i, ts, _), (j, tq, _) = moves
            # Both partners assigning one global variable is an error (DiVinE's legacy rule).
            if _global_writes(E, ts) & _global_writes(E, tq):
                return (None, c, t)
            if ts.sync[2] is not None:
                E.assign(tq.sync[2], E.ev(ts.sync[2], new), new)
            ctrl[j] = tq.dst
            for target, e in tq.effects:
                E.assign(target, E.ev(e, new), new)
            ctrl[i] = ts.dst
            for target, e in ts.effects:
                E.assign(target, E.ev(e, new), new)
        else:
            i, tr, _ = moves[0]
            ctrl[i] = tr.dst
            for target, e in tr.effects:
                E.assign(target, E.ev(e, new), new)
        return (_freeze(ctrl, new), c, t)
    except Fault:
        return (None, 0, 0)
