"""An independent replay of the runs that ``dvecost analyze`` prints.

Given the model (its syntax tree, as ``dve.load_model`` returns it) and the JSON object of
``dvecost analyze --json`` (``Analysis.as_dict()``), :func:`replay_analysis` re-executes every
printed step from the printed initial state:

- each move names a transition of the model (process, ``from -> to``, source line) whose
  process is in ``from`` in the state before, whose guard holds there, and whose sync fits the
  step's kind (one process alone, a rendezvous pair, every process in ``system sync`` with
  every sync label ignored, a property move paired with a system step);
- running the moves' effects (and channel operations) on the state before gives exactly the
  printed state after, and the printed ``changed`` entries are the differences;
- a step printed as going to the error state faults when replayed, and only then;
- the step's cost (sum of the moves) and time (their maximum) are the printed ones; a step into
  the error state is charged nothing and takes no time (its charge may be the fault itself);
- the critical cycle closes, its printed totals add up, and its mean or ratio is the exact value.

Nothing here comes from the code under test: expressions, arithmetic (32-bit C semantics),
ranges, channel casts and the step rules are written out again from docs/language.md and the
DVE reference. Only the parsed model is shared (the parser is tested on its own).
"""

from __future__ import annotations

import itertools
from fractions import Fraction
from typing import Any, Iterable, Mapping

from dve import syntax as S

__all__ = ["Fault", "ReplayError", "Replayer", "replay_analysis", "replay_run"]

RANGES = {"byte": (0, 255), "int": (-32768, 32767)}


class Fault(Exception):
    """A runtime error of the model: the step goes to the error state."""


class ReplayError(AssertionError):
    """The printed run is not a run of the model."""


def _i32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v & 0x80000000 else v


def _i64(v: int) -> int:
    """Costs and times are exact: a value outside 64 bits is a fault, never wrapped."""
    if not -(1 << 63) <= v < (1 << 63):
        raise Fault(f"{v} does not fit 64 bits")
    return v


def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _cast(v: int, ty: str | None) -> int:
    if ty == "byte":
        return v % 256
    if ty == "int":
        return (v + 32768) % 65536 - 32768
    return v


def _plain(x: Any) -> Any:
    """JSON-like values compared structurally: tuples become lists."""
    if isinstance(x, Mapping):
        return {str(k): _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    return x


class Replayer:
    """The model's step rules over decoded states (``{process: state, var: value, ...}``)."""

    def __init__(self, model: S.Model, resource: str = "cost"):
        self.model = model
        self.resource = resource
        self.kind = model.system.kind
        prop = model.system.property
        procs = model.processes
        # A property process takes part in 'system async' only.
        self.prop = prop if self.kind == "async" else None
        self.procs = {p.name: p for p in procs if self.kind == "async" or p.name != prop}
        self.order = list(self.procs)
        self.consts: dict[str, Any] = {}
        self.types: dict[str, tuple[str, int | None]] = {}   # var key -> (type, size)
        self.chans: dict[str, tuple[tuple[str, ...] | None, int]] = {}
        self.init: dict[str, Any] = {}
        for d in model.globals:
            self._declare(d, None)
        for p in self.procs.values():
            for d in p.decls:
                self._declare(d, p.name)

    # -------------------------------------------------------------- declarations
    def _declare(self, d, owner: str | None) -> None:
        key = d.name if owner is None else f"{owner}.{d.name}"
        if isinstance(d, S.ChannelDecl):
            size = 0 if d.size is None else self.ev(d.size, {}, owner)
            self.chans[key] = (d.types, size)
            if d.types is not None and size > 0:
                self.init[key] = []
            return
        size = None if d.size is None else self.ev(d.size, {}, owner)
        if size is None:
            value: Any = 0 if d.init is None else self.ev(d.init, {}, owner)
        else:
            items = d.init.items if isinstance(d.init, S.ArrayInit) else ()
            value = [self.ev(e, {}, owner) for e in items[:size]]
            value += [0] * (size - len(value))
        if d.const or d.input:
            self.consts[key] = value
        else:
            self.types[key] = (d.type, size)
            self.init[key] = value

    def initial(self) -> dict[str, Any]:
        out = {name: p.init.name for name, p in self.procs.items()}
        out.update(self.init)
        return _plain(out)

    # -------------------------------------------------------------- expressions
    def _key(self, name: str, owner: str | None, st: Mapping) -> str:
        if owner is not None:
            local = f"{owner}.{name}"
            if local in self.types or local in self.consts:
                return local
        return name

    def _read(self, key: str, index: int | None, st: Mapping) -> int:
        v = self.consts[key] if key in self.consts else st[key]
        if index is None:
            return v
        if not 0 <= index < len(v):
            raise Fault(f"index {index} out of range of {key}")
        return v[index]

    def ev(self, e, st: Mapping, owner: str | None, wide: bool = False) -> int:
        """``e`` in 32-bit C arithmetic, or (``wide``, for costs and times) exact and checked
        to 64 bits."""
        fix = _i64 if wide else _i32
        shift = 63 if wide else 31
        ev = (lambda x: self.ev(x, st, owner, wide))
        if isinstance(e, S.IntLit):
            return fix(e.value)
        if isinstance(e, S.BoolLit):
            return 1 if e.value else 0
        if isinstance(e, S.Name):
            return self._read(self._key(e.name, owner, st), None, st)
        if isinstance(e, S.Index):
            return self._read(self._key(e.name, owner, st), self.ev(e.index, st, owner), st)
        if isinstance(e, S.StateTest):
            return 1 if st[e.process.name] == e.state else 0
        if isinstance(e, S.Remote):
            key = f"{e.process.name}.{e.name}"
            idx = None if e.index is None else self.ev(e.index, st, owner)
            return self._read(key, idx, st)
        if isinstance(e, S.Unary):
            v = ev(e.operand)
            return {"-": lambda: fix(-v), "~": lambda: fix(~v), "not": lambda: int(v == 0)}[e.op]()
        if isinstance(e, S.Binary):
            op = e.op
            a = ev(e.left)
            if op == "and":
                return int(a != 0 and ev(e.right) != 0)
            if op == "or":
                return int(a != 0 or ev(e.right) != 0)
            if op == "imply":
                return int(a == 0 or ev(e.right) != 0)
            b = ev(e.right)
            if op in ("/", "%"):
                if b == 0:
                    raise Fault("division by zero")
                q = _trunc_div(a, b)
                return fix(q if op == "/" else a - b * q)
            table = {
                "+": lambda: fix(a + b), "-": lambda: fix(a - b), "*": lambda: fix(a * b),
                "<<": lambda: fix(a << (b & shift)), ">>": lambda: a >> (b & shift),
                "&": lambda: a & b, "|": lambda: a | b, "^": lambda: a ^ b,
                "==": lambda: int(a == b), "!=": lambda: int(a != b), "<": lambda: int(a < b),
                "<=": lambda: int(a <= b), ">": lambda: int(a > b), ">=": lambda: int(a >= b),
            }
            return table[op]()
        raise TypeError(f"cannot evaluate {e!r}")

    def assign(self, st: dict, target, value: int, owner: str | None) -> None:
        key = self._key(target.name, owner, st)
        if key not in self.types:
            raise ReplayError(f"assignment to '{target.name}', which is no variable")
        ty, size = self.types[key]
        lo, hi = RANGES[ty]
        if not lo <= value <= hi:
            raise Fault(f"{value} out of the range of {ty} {key}")
        if isinstance(target, S.Index):
            i = self.ev(target.index, st, owner)
            if not 0 <= i < size:
                raise Fault(f"index {i} out of range of {key}")
            arr = list(st[key])
            arr[i] = value
            st[key] = arr
        else:
            st[key] = value

    # -------------------------------------------------------------- transitions
    def find(self, move: Mapping) -> list[S.Transition]:
        """The model's transitions a printed move can stand for."""
        p = self.procs.get(move["process"])
        if p is None:
            raise ReplayError(f"move of an unknown process {move['process']!r}")
        out = [t for t in p.transitions
               if t.src.name == move["from"] and t.dst.name == move["to"]
               and (move.get("line") is None or t.pos is None or t.pos.line == move["line"])]
        if not out:
            raise ReplayError(f"{move['process']} has no transition {move['from']} -> "
                              f"{move['to']} at line {move.get('line')}")
        return out

    def _chan(self, t: S.Transition, owner: str):
        sync = t.sync
        if sync.process is not None:
            return f"{sync.process.name}.{sync.channel}"
        local = f"{owner}.{sync.channel}"
        return local if local in self.chans else sync.channel

    def _buffered(self, t: S.Transition, owner: str) -> bool:
        # In system sync every sync label is ignored: no values pass, no queue changes.
        if t.sync is None or self.kind == "sync":
            return False
        types, size = self.chans[self._chan(t, owner)]
        return types is not None and size > 0

    def guard(self, t: S.Transition, st: Mapping, owner: str) -> bool:
        """Whether ``t`` may fire in ``st`` (an erroneous guard counts as enabled: it raises
        Fault for the caller to turn into the error state)."""
        if st[owner] != t.src.name:
            return False
        for g in t.guard:
            if self.ev(g, st, owner) == 0:
                return False
        if self._buffered(t, owner):
            _, size = self.chans[self._chan(t, owner)]
            n = len(st[self._chan(t, owner)])
            if (t.sync.op == "!" and n >= size) or (t.sync.op == "?" and n == 0):
                return False
        return True

    def charge(self, t: S.Transition, st: Mapping, owner: str) -> tuple[int, int]:
        """(cost, time) of one transition, exact; a negative time is a fault."""
        cost = _i64(sum(self.ev(c.amount, st, owner, wide=True) for c in t.costs
                        if c.resource == self.resource))
        time = 1 if t.time is None else self.ev(t.time, st, owner, wide=True)
        if time < 0:
            raise Fault(f"negative time {time}")
        return cost, time

    def effects(self, t: S.Transition, st: dict, owner: str) -> None:
        for a in t.effects:
            self.assign(st, a.target, self.ev(a.value, st, owner), owner)

    def buffered_op(self, t: S.Transition, st: dict, owner: str) -> None:
        ch = self._chan(t, owner)
        types, _ = self.chans[ch]
        queue = [list(x) if isinstance(x, (list, tuple)) else [x] for x in st[ch]]
        if t.sync.op == "!":
            queue.append([_cast(self.ev(v, st, owner), ty)
                          for v, ty in zip(t.sync.values, types)])
        else:
            head = queue.pop(0)
            for target, v in zip(t.sync.values, head):
                self.assign(st, target, v, owner)
        st[ch] = [q[0] if len(q) == 1 else q for q in queue]

    def _writes(self, t: S.Transition, owner: str) -> set[str]:
        return {self._key(a.target.name, owner, {}) for a in t.effects} - \
            {k for k in self.types if "." in k}

    def committed(self, st: Mapping) -> set[str]:
        return {name for name, p in self.procs.items() if name != self.prop
                and any(c.name == st[name] for c in p.commit)}

    # -------------------------------------------------------------- one step
    def step(self, before: Mapping, picks: list[tuple[str, S.Transition]]):
        """Run one global step. Returns ``(after or None for the error state, cost, time)``;
        raises ReplayError when the moves are not a step of the model in ``before``."""
        after, cost, time = self._step(before, picks)
        return (None, 0, 0) if after is None else (after, cost, time)

    def _step(self, before: Mapping, picks: list[tuple[str, S.Transition]]):
        st = dict(before)
        system = [(o, t) for o, t in picks if o != self.prop]
        props = [(o, t) for o, t in picks if o == self.prop]
        fault = False
        for o, t in picks:
            try:
                if not self.guard(t, st, o):
                    raise ReplayError(f"{o}: {t.src.name} -> {t.dst.name} is not enabled")
            except Fault:
                fault = True
        try:
            charges = [self.charge(t, st, o) for o, t in (system or props)]
            cost = _i64(sum(c for c, _ in charges))
            time = max(tm for _, tm in charges)
            # A property move paired with a system step adds its own charge; its time counts
            # only where it states one.
            for o, t in props if system else ():
                if t.costs or t.time is not None:
                    c, tm = self.charge(t, st, o)
                    cost = _i64(cost + c)
                    time = max(time, tm) if t.time is not None else time
        except Fault:
            cost, time, fault = 0, 1, True
        if self.kind == "sync":
            if sorted(o for o, _ in picks) != sorted(self.order):
                raise ReplayError("a system sync step moves every process once")
            seen: set[str] = set()
            for o, t in picks:
                w = self._writes(t, o)
                fault |= bool(w & seen)
                seen |= w
            if fault:
                return None, cost, time
            try:
                for o, t in sorted(picks, key=lambda x: self.order.index(x[0])):
                    self.effects(t, st, o)
                    if self._buffered(t, o):
                        self.buffered_op(t, st, o)
                    st[o] = t.dst.name
            except Fault:
                return None, cost, time
            return st, cost, time
        # system async
        if len(props) > 1:
            raise ReplayError("more than one property move in a step")
        com = self.committed(before)
        if com and any(o not in com for o, _ in system):
            raise ReplayError("a committed state lets only committed processes move")
        if not system:
            if not props:
                raise ReplayError("a step without moves")
            if self.has_system_step(before):
                raise ReplayError("the property moved alone while the system could move")
        elif self.prop is not None and not props:
            raise ReplayError("the property process moves in every system step")
        if len(system) == 1:
            o, t = system[0]
            if t.sync is not None and not self._buffered(t, o):
                raise ReplayError(f"{o} uses rendezvous channel {t.sync.channel} alone")
            if not fault:
                try:
                    st[o] = t.dst.name
                    self.effects(t, st, o)
                    if self._buffered(t, o):
                        self.buffered_op(t, st, o)
                except Fault:
                    fault = True
        elif len(system) == 2:
            (o1, t1), (o2, t2) = system
            if t1.sync is None or t2.sync is None or {t1.sync.op, t2.sync.op} != {"!", "?"}:
                raise ReplayError("two processes move together only by a rendezvous")
            (so, ts), (ro, tr) = system if t1.sync.op == "!" else system[::-1]
            if so == ro or self._chan(ts, so) != self._chan(tr, ro) or self._buffered(ts, so):
                raise ReplayError("a rendezvous pairs a send and a receive of two processes "
                                  "on one rendezvous channel")
            types, _ = self.chans[self._chan(ts, so)]
            fault |= bool(self._writes(ts, so) & self._writes(tr, ro))
            if not fault:
                try:
                    for k, (v, target) in enumerate(zip(ts.sync.values, tr.sync.values)):
                        val = self.ev(v, st, so)
                        if types is not None and k < len(types):
                            val = _cast(val, types[k])
                        self.assign(st, target, val, ro)
                    st[ro] = tr.dst.name
                    self.effects(tr, st, ro)
                    st[so] = ts.dst.name
                    self.effects(ts, st, so)
                except Fault:
                    fault = True
        elif system:
            raise ReplayError(f"{len(system)} processes cannot move together in system async")
        if fault:
            return None, cost, time
        for o, t in props:
            st[o] = t.dst.name
        return st, cost, time

    def has_system_step(self, st: Mapping) -> bool:
        """Whether some system process (or rendezvous pair) could move in ``st``."""
        com = self.committed(st)
        sends, recvs = [], []
        for o, p in self.procs.items():
            if o == self.prop or (com and o not in com):
                continue
            for t in p.transitions:
                try:
                    ok = self.guard(t, st, o)
                except Fault:
                    ok = True
                if not ok:
                    continue
                if t.sync is None or self._buffered(t, o):
                    return True
                (sends if t.sync.op == "!" else recvs).append((o, self._chan(t, o)))
        return any(so != ro and sc == rc for so, sc in sends for ro, rc in recvs)


def _differences(before: Mapping, after: Mapping, procs: Iterable[str], chans) -> dict:
    out = {}
    for k, new in after.items():
        if k in procs or before.get(k) == new:
            continue
        old = before.get(k)
        if isinstance(old, list) and isinstance(new, list) and len(old) == len(new) \
                and k not in chans:
            out.update({f"{k}[{i}]": [a, b] for i, (a, b) in enumerate(zip(old, new)) if a != b})
        else:
            out[k] = [old, new]
    return out


def replay_run(rp: Replayer, start: Mapping, steps: list[Mapping], *, where: str = "run",
               start_id: int | None = None) -> tuple[dict, int, int]:
    """Replay ``steps`` (dicts of ``Step.as_dict()``) from the decoded state ``start``.

    Returns the state reached, the summed cost and the summed time."""
    state = _plain(dict(start))
    total_cost = total_time = 0
    prev_id = start_id
    for k, s in enumerate(steps, 1):
        label = f"{where} step {k}"
        if prev_id is not None and s["from"] != prev_id:
            raise ReplayError(f"{label}: starts in state {s['from']}, the run is in {prev_id}")
        if not s["moves"]:
            raise ReplayError(f"{label}: no moves printed")
        if state is None:
            raise ReplayError(f"{label}: the run already ended in the error state")
        choices = [[(m["process"], t) for t in rp.find(m)] for m in s["moves"]]
        # Every move's guard is read in the state before the step, so a candidate whose guard
        # is false there fails in every combination: dropping it first changes no verdict and
        # keeps the product small (a sync step of 40 clients, each with a few transitions
        # between the same two locations, would otherwise try millions of combinations).
        # Where no candidate of a move is left, all are kept, for the error's message.
        choices = [[(o, t) for o, t in c if _enabled(rp, t, dict(state), o)] or c
                   for c in choices]
        problems = []
        ok = None
        for picks in itertools.product(*choices):
            try:
                after, cost, time = rp.step(state, list(picks))
            except ReplayError as exc:
                problems.append(str(exc))
                continue
            if (after is None) != bool(s["error"]):
                problems.append("the error state " + ("not " if after is not None else "")
                                + "reached on replay")
                continue
            if after is not None and _plain(after) != _plain(s["state"]):
                diff = {k2: (after.get(k2), s["state"].get(k2))
                        for k2 in set(after) | set(s["state"])
                        if _plain(after.get(k2)) != _plain(s["state"].get(k2))}
                problems.append(f"state after differs (replayed, printed): {diff}")
                continue
            if (cost, time) != (s["cost"], s["time"]):
                problems.append(f"cost/time {cost}/{time} replayed, {s['cost']}/{s['time']} "
                                "printed")
                continue
            ok = after
            break
        else:
            raise ReplayError(f"{label} ({s['transition']}): " + "; ".join(problems))
        if ok is not None:
            changed = _differences(state, ok, rp.procs, rp.chans)
            if _plain(changed) != _plain(s["changed"]):
                raise ReplayError(f"{label}: printed changes {s['changed']}, replayed {changed}")
        state = ok
        total_cost += s["cost"]
        total_time += s["time"]
        prev_id = s["to"]
    return state, total_cost, total_time


def replay_analysis(model: S.Model, d: Mapping, *, check_traces: bool = True) -> int:
    """Replay everything ``analyze --json`` printed; returns the number of steps checked.

    Raises
    ------
    ReplayError
        On the first step that is not a step of the model, or on totals that do not add up.
    """
    rp = Replayer(model, d["cost"])
    init = rp.initial()
    if _plain(d["initial"]) != init:
        raise ReplayError(f"initial state printed {d['initial']}, the model's is {init}")
    state, _, _ = replay_run(rp, init, d["prefix"], where="prefix", start_id=0)
    cycle = d["cycle"]
    if not cycle:
        raise ReplayError("no critical cycle printed")
    start_id = cycle[0]["from"]
    if d["prefix"] and d["prefix"][-1]["to"] != start_id:
        raise ReplayError("the prefix does not end where the cycle starts")
    if not d["prefix"] and start_id != 0:
        raise ReplayError("no prefix printed but the cycle does not start in state 0")
    end, cost, time = replay_run(rp, state, cycle, where="cycle", start_id=start_id)
    if end != state or cycle[-1]["to"] != start_id:
        raise ReplayError("the critical cycle does not close")
    if (cost, time) != (d["cycle_cost"], d["cycle_time"]):
        raise ReplayError(f"cycle totals {d['cycle_cost']}/{d['cycle_time']} printed, "
                          f"{cost}/{time} replayed")
    den = time if d["kind"] == "ratio" else len(cycle)
    if Fraction(cost, den) != Fraction(d["exact"]):
        raise ReplayError(f"the cycle's {d['kind']} is {Fraction(cost, den)}, printed value "
                          f"{d['exact']}")
    n = len(d["prefix"]) + len(cycle)
    if check_traces:
        for key in ("deadlock_trace", "error_trace"):
            if d.get(key) is not None:
                n += check_trace(model, d["cost"], init, d[key], key=key)
    return n


def check_trace(model: S.Model, resource: str, init: Mapping, steps: list[Mapping], *,
                key: str) -> int:
    """Replay a deadlock or error trace; its end must be a deadlock / the error state."""
    rp = Replayer(model, resource)
    end, _, _ = replay_run(rp, init, steps, where=key, start_id=0)
    if key == "error_trace":
        if end is not None:
            raise ReplayError("the error trace does not end in the error state")
    elif key == "deadlock_trace":
        if end is None or rp_has_step(rp, end):
            raise ReplayError("the deadlock trace ends in a state with a successor")
    return len(steps)


def rp_has_step(rp: Replayer, st: Mapping) -> bool:
    """Whether any global step is possible in ``st`` (deadlock check)."""
    if rp.kind == "sync":
        for o, p in rp.procs.items():
            if not any(_enabled(rp, t, st, o) for t in p.transitions):
                return False
        return True
    if rp.prop is not None:
        # Every step moves the property process, paired with a system step or alone.
        return any(_enabled(rp, t, st, rp.prop) for t in rp.procs[rp.prop].transitions)
    return rp.has_system_step(st)


def _enabled(rp: Replayer, t, st, o) -> bool:
    try:
        return rp.guard(t, st, o)
    except Fault:
        return True
