"""A slow, plain interpreter of the same semantics, one state at a time, for cross-checks.

It uses the compiled model only for the slot layout and the action list (so that it numbers
states the same way); every guard, effect, cost and time is evaluated here by walking the
syntax tree with Python integers, with an arithmetic of its own (it imports nothing of
``dve.arith``, so a bug there cannot hide in both): 32-bit values wrap through ``ctypes``,
division truncates through exact fractions, and costs and times are exact integers checked
against the 64-bit range after every operation.
"""

from __future__ import annotations

import ctypes
import math
from collections import deque
from fractions import Fraction

from dve import syntax as S

TYPE_RANGE = {"byte": (0, 255), "int": (-32768, 32767)}


class Fault(Exception):
    pass


def _int32(v):
    return ctypes.c_int32(v & 0xFFFFFFFF).value


def _fits64(v):
    if not -(1 << 63) <= v < (1 << 63):
        raise Fault
    return v


def _apply(op, a, b, wide):
    """A binary operator on exact operands; 32-bit results wrap, 64-bit ones must fit."""
    if op in ("/", "%"):
        if b == 0:
            raise Fault
        q = math.trunc(Fraction(a, b))
        v = q if op == "/" else a - b * q
    elif op in ("<<", ">>"):
        k = b % (64 if wide else 32)
        v = a * 2 ** k if op == "<<" else math.floor(Fraction(a, 2 ** k))
    elif op in ("==", "!=", "<", "<=", ">", ">="):
        return int({"==": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b,
                    ">=": a >= b}[op])
    else:
        v = {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b, "&": lambda: a & b,
             "|": lambda: a | b, "^": lambda: a ^ b}[op]()
    return _fits64(v) if wide else _int32(v)


class Interp:
    def __init__(self, cm):
        self.cm = cm
        self.pidx = {p.name: p.index for p in cm.processes}

    # ------------------------------------------------------------ variables
    def var(self, proc, name):
        cm = self.cm
        if proc is not None:
            q = f"{cm.processes[proc].name}.{name}"
            if q in cm.variables:
                return cm.variables[q]
        return cm.variables[name]

    def read(self, st, vi, i=None):
        if vi.is_const:
            if i is None:
                return vi.const_value
            if not 0 <= i < vi.size:
                raise Fault
            return vi.const_value[i]
        if i is None:
            return st[vi.base]
        if not 0 <= i < vi.size:
            raise Fault
        return st[vi.base + i]

    def write(self, st, vi, i, v):
        lo, hi = TYPE_RANGE[vi.type]
        if i is not None and not 0 <= i < vi.size:
            raise Fault
        if not lo <= v <= hi:
            raise Fault
        st[vi.base + (i or 0)] = v

    def ev(self, e, st, proc, wide=False):
        """``e`` in the state ``st``: 32-bit, or with ``wide`` the checked 64 bits of costs."""
        if isinstance(e, S.IntLit):
            assert e.value < (1 << (63 if wide else 31))  # the check refuses other literals
            return e.value
        if isinstance(e, S.BoolLit):
            return int(e.value)
        if isinstance(e, S.Name):
            return self.read(st, self.var(proc, e.name))
        if isinstance(e, S.Index):
            return self.read(st, self.var(proc, e.name), self.ev(e.index, st, proc, wide))
        if isinstance(e, S.Remote):
            pi = self.pidx[e.process.name]
            vi = self.var(pi, e.name)
            return self.read(st, vi, None if e.index is None else
                             self.ev(e.index, st, proc, wide))
        if isinstance(e, S.StateTest):
            p = self.cm.processes[self.pidx[e.process.name]]
            return int(st[p.slot] == p.states.index(e.state))
        if isinstance(e, S.Unary):
            if e.op == "-" and isinstance(e.operand, S.IntLit):
                return -e.operand.value
            v = self.ev(e.operand, st, proc, wide)
            if e.op == "not":
                return int(v == 0)
            return _apply("-", 0, v, wide) if e.op == "-" else _apply("^", v, -1, wide)
        if isinstance(e, S.Binary):
            a = self.ev(e.left, st, proc, wide)
            if e.op == "and":
                return int(a != 0 and self.ev(e.right, st, proc, wide) != 0)
            if e.op == "or":
                return int(a != 0 or self.ev(e.right, st, proc, wide) != 0)
            if e.op == "imply":
                return int(a == 0 or self.ev(e.right, st, proc, wide) != 0)
            return _apply(e.op, a, self.ev(e.right, st, proc, wide), wide)
        raise TypeError(e)

    def assign(self, st, target, v, proc):
        vi = self.var(proc, target.name)
        i = None if isinstance(target, S.Name) else self.ev(target.index, st, proc)
        self.write(st, vi, i, v)

    # ------------------------------------------------------------ transitions
    def enabled(self, st, tid):
        """None if disabled, else True (fine) / 'err' (erroneous guard)."""
        t = self.cm.transitions[tid]
        p = self.cm.processes[t.process]
        if st[p.slot] != t.src:
            return None
        try:
            for g in t.node.guard:
                if self.ev(g, st, t.process) == 0:
                    return None
        except Fault:
            return "err"
        if t.sync_kind in ("bsend", "brecv"):
            ch = self.cm.channels[t.channel]
            c = st[ch.count_slot]
            if (t.sync_kind == "bsend" and c >= ch.size) or (t.sync_kind == "brecv" and c == 0):
                return None
        return True

    def charge(self, st, tid):
        """(costs, time) of one transition in 64 bits; Fault when one faults or time < 0."""
        t = self.cm.transitions[tid]
        costs = {r: 0 for r in self.cm.resources}
        for c in t.node.costs:
            costs[c.resource] = self.ev(c.amount, st, t.process, wide=True)
        tm = 1 if t.time is None else self.ev(t.time, st, t.process, wide=True)
        if tm < 0:
            raise Fault
        return costs, tm

    def charges(self, st, tids, times_of=None):
        """(costs, time) of one global step: costs add up (and must fit 64 bits), the time is
        the largest; ``times_of`` limits the time to those transitions (default: all)."""
        costs = {r: 0 for r in self.cm.resources}
        tm = 0
        for tid in tids:
            c, t_ = self.charge(st, tid)
            for r in costs:
                costs[r] = _fits64(costs[r] + c[r])
            if times_of is None or tid in times_of:
                tm = max(tm, t_)
        return costs, tm

    def cast(self, v, ty):
        if ty is None:
            return v
        return v & 0xFF if ty == "byte" else ((v + 32768) & 0xFFFF) - 32768

    def effects(self, st, tid):
        t = self.cm.transitions[tid]
        for a in t.node.effects:
            self.assign(st, a.target, self.ev(a.value, st, t.process), t.process)
        if t.sync_kind == "bsend":
            ch = self.cm.channels[t.channel]
            c = st[ch.count_slot]
            vals = [self.cast(self.ev(e, st, t.process), ch.types[f])
                    for f, e in enumerate(t.node.sync.values[:ch.arity])]
            for f, v in enumerate(vals):
                st[ch.items + c * ch.arity + f] = v
            st[ch.count_slot] = c + 1
        elif t.sync_kind == "brecv":
            ch = self.cm.channels[t.channel]
            head = [st[ch.items + f] for f in range(ch.arity)]
            for f, target in enumerate(t.node.sync.values[:ch.arity]):
                self.assign(st, target, head[f], t.process)
            n = ch.size * ch.arity
            items = st[ch.items:ch.items + n]
            st[ch.items:ch.items + n] = items[ch.arity:] + [0] * ch.arity
            st[ch.count_slot] -= 1

    def step_local(self, st, tid):
        t = self.cm.transitions[tid]
        new = list(st)
        new[self.cm.processes[t.process].slot] = t.dst
        self.effects(new, tid)
        return new

    def step_rendezvous(self, st, s, q):
        cm = self.cm
        ts, tq = cm.transitions[s], cm.transitions[q]
        new = list(st)
        types = cm.channels[ts.channel].types
        for k, (ve, target) in enumerate(zip(ts.node.sync.values, tq.node.sync.values)):
            v = self.ev(ve, new, ts.process)
            v = self.cast(v, types[k] if types is not None and k < len(types) else None)
            self.assign(new, target, v, tq.process)
        new[cm.processes[tq.process].slot] = tq.dst
        for a in tq.node.effects:
            self.assign(new, a.target, self.ev(a.value, new, tq.process), tq.process)
        new[cm.processes[ts.process].slot] = ts.dst
        for a in ts.node.effects:
            self.assign(new, a.target, self.ev(a.value, new, ts.process), ts.process)
        return new


def explore(cm):
    """BFS: returns (states, edges) with edges (src, dst, action, costs dict, time) in the
    engine's order (rows by source, then by (target, action))."""
    it = Interp(cm)
    ERR = tuple(cm.error_state)
    init = tuple(cm.initial)
    ids = {init: 0}
    states = [init]
    edges = []
    queue = deque([init])
    while queue:
        st = queue.popleft()
        sid = ids[st]
        succ = [] if st == ERR else successors(it, cm, list(st))
        row = []
        for act, new, costs, tm in succ:
            new = ERR if new is None else tuple(new)
            if new not in ids:
                ids[new] = len(states)
                states.append(new)
                queue.append(new)
            row.append((sid, ids[new], act, costs, tm))
        row.sort(key=lambda e: (e[1], e[2]))
        edges.extend(row)
    return states, edges


def _committed_ok(cm, st):
    procs = cm.system_processes
    com = {p.index: st[p.slot] in p.commit for p in procs}
    if not any(com.values()):
        return lambda i: True
    return lambda i: com[i]


def successors(it, cm, st):
    """[(action, new state or None for the error state, costs, time)] in action order."""
    if cm.system == "sync":
        return _sync_successors(it, cm, st)
    ok = _committed_ok(cm, st)
    sys_succ = []
    n_sys = len([a for a in cm.actions if a.property is None or a.kind != "property"])
    prop = cm.property_process
    if prop is not None:
        nq = len(cm.processes[prop].transitions)
        n_sys = (len(cm.actions) - nq) // nq
        acts = [cm.actions[i * nq] for i in range(n_sys)]
    else:
        acts = list(cm.actions)
    for ai, a in enumerate(acts):
        tids = a.transitions
        ens = []
        for tid in tids:
            if not ok(cm.transitions[tid].process):
                ens = None
                break
            e = it.enabled(st, tid)
            if e is None:
                ens = None
                break
            ens.append(e)
        if ens is None:
            continue
        try:
            costs, tm = it.charges(st, tids)
        except Fault:
            costs, tm = {r: 0 for r in cm.resources}, 1
            ens.append("err")
        new = None
        if "err" not in ens and not a.error:
            try:
                new = it.step_local(st, tids[0]) if len(tids) == 1 else \
                    it.step_rendezvous(st, *tids)
            except Fault:
                new = None
        sys_succ.append((ai, new, costs, tm))
    if prop is None:
        return sys_succ
    pp = cm.processes[prop]
    pen = [it.enabled(st, q) for q in pp.transitions]
    out = []
    for ai, new, costs, tm in sys_succ:
        for qi, q in enumerate(pp.transitions):
            if pen[qi] is None:
                continue
            n2 = None
            c2, t2 = costs, tm
            if new is not None and pen[qi] is True:
                n2 = list(new)
                n2[pp.slot] = cm.transitions[q].dst
                # The property's own charge adds to the step's (its time counts if it has one).
                qt = cm.transitions[q]
                try:
                    pc, pt = it.charges(st, [q], times_of=() if qt.time is None else (q,))
                    c2 = {r: _fits64(costs[r] + pc[r]) for r in costs}
                    t2 = max(tm, pt)
                except Fault:
                    n2 = None
            out.append((ai * nq + qi, n2, c2, t2))
    if not sys_succ:
        for qi, q in enumerate(pp.transitions):
            if pen[qi] is None:
                continue
            n2 = None
            c, t_ = {r: 0 for r in cm.resources}, 1
            if pen[qi] is True:
                n2 = list(st)
                n2[pp.slot] = cm.transitions[q].dst
                try:
                    c, t_ = it.charge(st, q)
                except Fault:
                    n2 = None
            out.append((n_sys * nq + qi, n2, c, t_))
    return out


def _sync_successors(it, cm, st):
    import itertools
    procs = cm.system_processes
    choices = []
    for p in procs:
        ch = [(d, tid, it.enabled(st, tid)) for d, tid in enumerate(p.transitions)]
        ch = [c for c in ch if c[2] is not None]
        if not ch:
            return []
        choices.append(ch)
    out = []
    for combo in itertools.product(*choices):
        code = 0
        for p, (d, tid, e) in zip(procs, combo):
            code = code * max(1, len(p.transitions)) + d
        bad = any(e == "err" for _, _, e in combo)
        try:
            costs, tm = it.charges(st, [tid for _, tid, _ in combo])
        except Fault:
            costs, tm, bad = {r: 0 for r in cm.resources}, 1, True
        seen = set()
        for _, tid, _ in combo:
            w = {x for x in cm.transitions[tid].writes if "." not in x}
            if w & seen:
                bad = True
            seen |= w
        new = None
        if not bad:
            try:
                new = list(st)
                for p, (_, tid, _) in zip(procs, combo):
                    it.effects(new, tid)
                    new[p.slot] = cm.transitions[tid].dst
            except Fault:
                new = None
        out.append((code, new, costs, tm))
    return out
