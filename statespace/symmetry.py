"""Groups of interchangeable processes, found statically, and canonical representatives.

A *group* is a set of processes that are instances of one template (expanded names ``T_k``,
see :func:`dve.instance_name`) such that the model is invariant under every permutation of
their keys: renaming instance ``T_i`` to ``T_π(i)``, moving the cells ``a[i]`` of arrays indexed
by keys to ``a[π(i)]``, and replacing every key value ``i`` held elsewhere (the server's ``who``,
a channel field) by ``π(i)``. :func:`detect_symmetry` decides this on the expanded model,
conservatively:

1. *Instances are equal up to their key.* Walking two instances' syntax trees side by side,
   the only differences allowed are the instance's own name (a reference to itself) and an
   integer literal that is the instance's key in one and the other's key in the other (the
   template's ``id``). Those literals are *key positions*.
2. *Keys are only stored, compared for equality and used as indices.* A unification over the
   whole model gives every variable, array index, channel field and expression a sort: data,
   or keys of one group. Key positions have the key sort; ``==``/``!=`` unify their operands;
   an assignment, an initialiser and a channel value unify both sides; every other operator,
   guard, cost and time needs data. A literal that ends up with the key sort must not be a key
   value (``who = 0`` is fine when the keys are ``1..N``; ``who == 3`` is not). A variable
   declared without a value starts at the literal 0, checked the same way.
3. *Keys live in one place.* An instance's own variables must not hold keys; an array indexed
   by keys must cover every key, start with equal cells at the keys, and hold data; another
   process must not name an instance (``T_3->x``, ``T_3.s``); a buffered channel carrying keys
   needs ``0`` not to be a key (its freed cells hold 0).

Whatever is not shown this way is not reduced, and the reason is kept for the report.

:func:`statespace.canonical.canonicalize` maps states to one representative per orbit: the members of each group
are sorted by ``(which key-holding slots refer to it, its local vector)``, which does not depend
on the members' names, and the key values held elsewhere are renamed accordingly. Members that
tie have equal local vectors and nobody refers to them, so their order does not matter.

Examples
--------
>>> from dve.parser import parse_model
>>> from dve.expand import expand_model
>>> from statespace import compile_model
>>> src = '''
... channel req;
... process Server { byte who; state idle, busy; init idle;
...     trans idle -> busy { sync req?who; }, busy -> idle { effect who = 0; }; }
... process Client(key id) { state a, b; init a;
...     trans a -> b { sync req!id; }, b -> a { guard Server->who != id; }; }
... for (k : 1 .. 3) { process Client(k); }
... system async;'''
>>> cm = compile_model(expand_model(parse_model(src, "<doc>")))
>>> sym = detect_symmetry(cm)
>>> [(g.template, g.keys) for g in sym.groups]
[('Client', (1, 2, 3))]
>>> sym.describe()
'Client: 3 instances (keys 1..3)'
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
import weakref
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from dve import syntax as S

from .model import CompiledModel

__all__ = ["SymmetryGroup", "Symmetry", "detect_symmetry", "NO_SYMMETRY", "transition_image"]

_INSTANCE = re.compile(r"^(?P<t>[A-Za-z_][A-Za-z0-9_]*?)_(?P<k>m?\d+)$")


@dataclass(frozen=True)
class SymmetryGroup:
    """One group of interchangeable processes.

    Attributes
    ----------
    template : str
        The template's name.
    processes : tuple of int
        The members' process indices, in increasing key order.
    keys : tuple of int
        The members' key values (same order).
    member_slots : tuple of tuple of int
        Per member, the slots that move with it under a permutation: its control state, its
        variables and channels, and its cell of each array indexed by keys. Row ``i`` and row
        ``j`` list corresponding slots in the same order.
    key_slots : tuple of int
        Slots outside the members that hold key values of this group (or a non-key sentinel).
    """

    template: str
    processes: tuple[int, ...]
    keys: tuple[int, ...]
    member_slots: tuple[tuple[int, ...], ...]
    key_slots: tuple[int, ...]

    @property
    def size(self) -> int:
        return len(self.processes)


@dataclass(frozen=True)
class Symmetry:
    """The result of :func:`detect_symmetry`: the groups reduced, and why others were not.

    ``refused`` lists ``(template, reason)`` for candidate groups that were not shown to be
    symmetric; ``reason`` is set when nothing at all can be reduced.
    """

    groups: tuple[SymmetryGroup, ...] = ()
    refused: tuple[tuple[str, str], ...] = ()
    reason: str | None = None
    #: (process index, template, ids of its literals that are keys of the template): processes
    #: outside the groups whose transitions come in families, one per key (a server's
    #: ``req[3] == LIGHT and done != 3``); a permutation of the keys permutes those
    #: transitions (:func:`transition_image`).
    families: tuple = field(default=(), compare=False, repr=False)

    @property
    def reduces(self) -> bool:
        return bool(self.groups)

    def describe(self) -> str:
        """One line per group reduced, e.g. ``'Client: 3 instances (keys 1..3)'``."""
        out = []
        for g in self.groups:
            ks = g.keys
            rng = (f"{ks[0]}..{ks[-1]}" if list(ks) == list(range(ks[0], ks[-1] + 1))
                   else ", ".join(map(str, ks)))
            out.append(f"{g.template}: {g.size} instances (keys {rng})")
        return "; ".join(out)

    def orbit_bound(self) -> int:
        """The largest orbit: the product of the groups' factorials (a state's orbit has at
        most this many states, so ``classes * orbit_bound()`` bounds the full product)."""
        b = 1
        for g in self.groups:
            b *= math.factorial(g.size)
        return b

    def to_json(self) -> dict:
        return {"groups": [{"template": g.template, "instances": g.size, "keys": list(g.keys)}
                           for g in self.groups],
                "not_reduced": [{"template": t, "reason": r} for t, r in self.refused],
                "reason": self.reason}


NO_SYMMETRY = Symmetry(reason="symmetry reduction is off")


class _Refuse(Exception):
    """A candidate group is not provably symmetric (message: the reason)."""


# ------------------------------------------------------------------------------ side by side

def _diff(a, b, na: str, nb: str, keys: dict, path: tuple, keypos: set) -> None:
    """Walk two instances' trees side by side; record key positions; refuse any other
    difference. ``keys`` maps instance names to their keys: the number in the name, or, when
    ``keys[name]`` is ``None``, the literal first found where the two differ (the scenario DSL
    numbers clients across scenarios: ``writer_1`` may be client 4)."""
    if type(a) is not type(b):
        raise _Refuse(f"instances {na} and {nb} differ in shape")
    if isinstance(a, S.IntLit):
        if a.value == b.value:
            return
        for n, v in ((na, a.value), (nb, b.value)):
            if keys.get(n) is None:
                keys[n] = v
        if a.value == keys[na] and b.value == keys[nb]:
            keypos.add(path)
            return
        raise _Refuse(f"instances {na} and {nb} differ in a literal ({a.value} vs {b.value})")
    if isinstance(a, str):
        if a == b and na in (a, b):
            # The same name is the first instance itself in one and another instance in the
            # other (``a(1)->x`` in the template).
            raise _Refuse(f"the template names its instance {a} (a reference that is not "
                          "to itself in every instance)")
        if a == b or (a == na and b == nb):
            return
        raise _Refuse(f"instances {na} and {nb} differ ('{a}' vs '{b}')")
    if isinstance(a, tuple):
        if len(a) != len(b):
            raise _Refuse(f"instances {na} and {nb} differ in shape")
        for i, (x, y) in enumerate(zip(a, b)):
            _diff(x, y, na, nb, keys, path + (i,), keypos)
        return
    if dataclasses.is_dataclass(a):
        for f in dataclasses.fields(a):
            if f.name == "pos":
                continue
            _diff(getattr(a, f.name), getattr(b, f.name), na, nb, keys, path + (f.name,),
                  keypos)
        return
    if a != b:
        raise _Refuse(f"instances {na} and {nb} differ ({a!r} vs {b!r})")


# ------------------------------------------------------------------------------ sorts

class _Sorts:
    """Union-find over sort variables; a root may carry a tag: ``'data'`` or the frozenset of
    the groups whose keys it holds."""

    def __init__(self) -> None:
        self.parent: dict = {}
        self.tag: dict = {}
        self.n = 0
        self.conflicts: list[tuple[str, str]] = []  # (tag involved, reason)

    def fresh(self, tag=None):
        self.n += 1
        k = ("_", self.n)
        self.parent[k] = k
        if tag is not None:
            self.tag[k] = tag
        return k

    def node(self, name):
        if name not in self.parent:
            self.parent[name] = name
        return name

    def find(self, k):
        while self.parent[k] != k:
            self.parent[k] = self.parent[self.parent[k]]
            k = self.parent[k]
        return k

    def union(self, a, b, where: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return
        ta, tb = self.tag.get(ra), self.tag.get(rb)
        self.parent[rb] = ra
        if ta is None or tb is None or ta == tb:
            if ta is None and tb is not None:
                self.tag[ra] = tb
            return
        if "data" in (ta, tb):
            for t in (ta if ta != "data" else tb):
                self.conflicts.append((t, f"keys of {t} are used as data {where}"))
            # Keep going with one tag so that every conflict gets reported once per place.
            return
        # Keys of several groups in one place (a server's 'done' for readers and writers):
        # each group's renaming touches only its own keys, which must then be disjoint.
        self.tag[ra] = ta | tb

    def get(self, k):
        return self.tag.get(self.find(k)) if k in self.parent else None


def _where(node) -> str:
    pos = getattr(node, "pos", None)
    if pos is None:
        return ""
    try:
        return f"at {pos.source.name}:{pos.line}:{pos.column}"
    except Exception:
        return ""


class _Checker:
    def __init__(self, cm: CompiledModel, groups: dict[str, list[tuple[int, int, str]]],
                 keypos: dict[str, set]) -> None:
        self.cm = cm
        self.groups = groups          # template -> [(key, process index, name)] by key
        self.keypos = keypos          # template -> key positions in member 0's process node
        self.member_of: dict[str, str] = {}
        for t, ms in groups.items():
            for _, _, name in ms:
                self.member_of[name] = t
        self.rep = {t: ms[0][2] for t, ms in groups.items()}   # representative instance
        self.sorts = _Sorts()
        self.literals: list[tuple] = []   # (sort node, value, syntax node, process)
        self.products: list = []          # sort nodes multiplied by a condition
        self.bad: dict[str, str] = {}     # template -> first reason
        self.proc_syn = {p.name: p for p in cm.syntax.processes}
        self.cm_index = {p.name: p.index for p in cm.processes}
        self.families: list = []
        self.named: dict = {}            # (process, template) -> set(): names instances
        self.zero_needed: set = set()    # templates whose keys are multiplied by 0/1

    def refuse(self, template: str, reason: str) -> None:
        self.bad.setdefault(template, reason)

    # names ------------------------------------------------------------------
    def owner_name(self, proc: str) -> str:
        """Members of a group share one set of sort variables (the representative's)."""
        t = self.member_of.get(proc)
        return self.rep[t] if t is not None else proc

    def var(self, proc: str, name: str):
        """(qualified name, VarInfo) of ``name`` as seen from process ``proc``."""
        q = f"{proc}.{name}"
        v = self.cm.variables.get(q)
        if v is None:
            q, v = name, self.cm.variables.get(name)
        return q, v

    def sortname(self, q: str) -> str:
        if "." in q:
            owner, rest = q.split(".", 1)
            return f"{self.owner_name(owner)}.{rest}"
        return q

    def other_member(self, here: str, target: str, node) -> bool:
        """True (and the target's group refused) when ``here`` names a member other than
        itself."""
        t = self.member_of.get(target)
        if t is not None and target != here:
            if here and here not in self.member_of:
                # A process outside the groups may name instances if its transitions come in
                # families that renaming permutes (checked with the literals, in run()).
                self.named.setdefault((here, t), set())
                return False
            self.refuse(t, f"process {here} names the instance {target} {_where(node)}".strip())
            return True
        return False

    # expressions -------------------------------------------------------------
    def lit(self, value: int, node, proc: str | None = None):
        k = self.sorts.fresh()
        self.literals.append((k, value, node, proc))
        return k

    def expr(self, e, proc: str, path: tuple | None):
        """The sort node of expression ``e`` in process ``proc``; ``path`` locates ``e`` in the
        representative member's tree (``None`` elsewhere)."""
        s = self.sorts

        def sub(field, *idx):
            return None if path is None else path + (field,) + idx

        if isinstance(e, S.IntLit):
            t = self.member_of.get(proc)
            if path is not None and t is not None and path in self.keypos[t]:
                return s.fresh(frozenset((t,)))
            return self.lit(e.value, e, proc or None)
        if isinstance(e, S.BoolLit):
            return s.fresh("data")
        if isinstance(e, S.Name):
            q, v = self.var(proc, e.name)
            if v is None:
                return s.fresh("data")
            if v.is_const:
                return (self.lit(v.const_value, e) if not isinstance(v.const_value, tuple)
                        else s.fresh("data"))
            return s.node(("var", self.sortname(q)))
        if isinstance(e, S.Index):
            q, v = self.var(proc, e.name)
            ik = self.expr(e.index, proc, sub("index"))
            if v is None:
                return s.fresh("data")
            if v.is_const:
                s.union(ik, s.fresh("data"), f"as an index of the constant '{e.name}' "
                        + _where(e))
                return s.fresh("data")
            s.union(s.node(("idx", self.sortname(q))), ik, f"as an index of '{e.name}' "
                    + _where(e))
            return s.node(("var", self.sortname(q)))
        if isinstance(e, S.Remote):
            target = e.process.name
            if self.other_member(proc, target, e):
                return s.fresh()
            ik = self.expr(e.index, proc, sub("index")) if e.index is not None else None
            q = f"{target}.{e.name}"
            v = self.cm.variables.get(q)
            if v is None:
                return s.fresh("data")
            if ik is not None:
                s.union(s.node(("idx", self.sortname(q))), ik, "as an index " + _where(e))
            if v.is_const:
                return s.fresh("data")
            return s.node(("var", self.sortname(q)))
        if isinstance(e, S.StateTest):
            self.other_member(proc, e.process.name, e)
            return s.fresh("data")
        if isinstance(e, S.Unary):
            k = self.expr(e.operand, proc, sub("operand"))
            s.union(k, s.fresh("data"), f"under '{e.op}' " + _where(e))
            return s.fresh("data")
        if isinstance(e, S.Binary):
            a = self.expr(e.left, proc, sub("left"))
            b = self.expr(e.right, proc, sub("right"))
            if e.op in ("==", "!="):
                s.union(a, b, f"in '{e.op}' " + _where(e))
            elif e.op == "*" and (_boolean(e.left) or _boolean(e.right)):
                # k * (condition) is k or 0: it commutes with renaming the keys as long as 0
                # is not a key (checked in run()); the product has the other factor's sort.
                flag, other = (a, b) if _boolean(e.left) else (b, a)
                s.union(flag, s.fresh("data"), "as a condition " + _where(e))
                self.products.append(other)
                return other
            else:
                s.union(a, s.fresh("data"), f"under '{e.op}' " + _where(e))
                s.union(b, s.fresh("data"), f"under '{e.op}' " + _where(e))
            return s.fresh("data")
        # Anything else (calls are expanded away): data, conservatively.
        return s.fresh("data")

    def channel(self, sync: S.Sync, proc: str) -> str | None:
        if sync.process is not None:
            if self.other_member(proc, sync.process.name, sync):
                return None
            q = f"{sync.process.name}.{sync.channel}"
        elif f"{proc}.{sync.channel}" in self.cm.channels:
            q = f"{proc}.{sync.channel}"
        else:
            q = sync.channel
        return self.sortname(q)

    # whole model ---------------------------------------------------------------
    def decl(self, d, owner: str | None, path: tuple | None) -> None:
        s = self.sorts
        if not isinstance(d, S.VarDecl) or d.const or d.input:
            return
        proc = owner if owner is not None else ""
        q = d.name if owner is None else f"{self.owner_name(owner)}.{d.name}"
        target = s.node(("var", q))
        if d.init is None:
            # No initial value: every cell starts at 0, a literal like a written one. When
            # the variable holds keys and 0 is one of them, the initial state singles out
            # that instance (run() refuses the group: the literal has no process).
            s.union(target, self.lit(0, d, None), "")
            return
        items = d.init.items if isinstance(d.init, S.ArrayInit) else (d.init,)
        for i, it in enumerate(items):
            p = None if path is None else (path + ("init", "items", i)
                                           if isinstance(d.init, S.ArrayInit) else path + ("init",))
            s.union(target, self.expr(it, proc, p), f"in the initial value of '{d.name}' "
                    + _where(d))

    def process(self, p: S.Process, path: tuple | None) -> None:
        s = self.sorts
        for i, d in enumerate(p.decls):
            self.decl(d, p.name, None if path is None else path + ("decls", i))
        for i, tr in enumerate(p.transitions):
            tp = None if path is None else path + ("transitions", i)

            def sub(*x):
                return None if tp is None else tp + x

            for j, g in enumerate(tr.guard):
                s.union(self.expr(g, p.name, sub("guard", j)), s.fresh("data"),
                        "as a guard " + _where(g))
            if tr.sync is not None:
                ch = self.channel(tr.sync, p.name)
                for j, v in enumerate(tr.sync.values):
                    k = self.expr(v, p.name, sub("sync", "values", j))
                    if ch is not None:
                        s.union(s.node(("chan", ch, j)), k, f"on channel '{tr.sync.channel}' "
                                + _where(tr.sync))
            for j, a in enumerate(tr.effects):
                tk = self.expr(a.target, p.name, sub("effects", j, "target"))
                vk = self.expr(a.value, p.name, sub("effects", j, "value"))
                s.union(tk, vk, "in an assignment " + _where(a))
            for j, c in enumerate(tr.costs):
                s.union(self.expr(c.amount, p.name, sub("costs", j, "amount")), s.fresh("data"),
                        "as a cost " + _where(c))
            if tr.time is not None:
                s.union(self.expr(tr.time, p.name, sub("time")), s.fresh("data"),
                        "as a time " + _where(tr.time))

    def run(self) -> None:
        cm = self.cm
        for d in cm.syntax.globals:
            self.decl(d, None, None)
        reps = set(self.rep.values())
        for p in cm.syntax.processes:
            if p.name in self.member_of and p.name not in reps:
                continue   # equal to the representative up to keys (checked by _diff)
            self.process(p, () if p.name in reps else None)
        s = self.sorts
        for t, reason in s.conflicts:
            if t in self.groups:
                self.refuse(t, reason)
        keys = {t: {k for k, _, _ in ms} for t, ms in self.groups.items()}
        for tag in set(s.tag.values()):
            if tag == "data" or len(tag) < 2:
                continue
            ts = sorted(tag)
            if any(keys[a] & keys[b] for a in ts for b in ts if a < b):
                for t in ts:
                    self.refuse(t, f"one variable holds keys of {', '.join(ts)}, which overlap")
        keyed: dict = {}
        for k, value, node, proc in self.literals:
            tag = s.get(k)
            for t in (tag if tag not in (None, "data") else ()):
                if value not in keys[t]:
                    continue
                if isinstance(node, S.VarDecl):
                    self.refuse(t, f"'{node.name}' holds keys of {t} and starts at 0 (it has "
                                f"no initial value), which is a key of {t} " + _where(node))
                elif (proc is None or proc in self.member_of or not isinstance(node, S.IntLit)):
                    self.refuse(t, f"the key value {value} of {t} is written as a literal "
                                + _where(node))
                else:
                    keyed.setdefault((proc, t), set()).add(id(node))
        for k in self.products:
            tag = s.get(k)
            for t in (tag if tag not in (None, "data") else ()):
                if 0 in keys[t]:
                    self.refuse(t, f"keys of {t} are multiplied by a condition and 0 is a key")
        for pt in self.named:
            keyed.setdefault(pt, set())
        self.families = []
        for (proc, t), ids in sorted(keyed.items(), key=lambda x: x[0]):
            if t in self.bad:
                continue
            names = {k: n for k, _, n in self.groups[t]}
            why = _invariant(self.proc_syn[proc], ids, sorted(keys[t]), names)
            if why is not None:
                self.refuse(t, f"process {proc} {why}")
            else:
                self.families.append((self.cm_index[proc], t, frozenset(ids),
                                      tuple(sorted(names.items()))))


def _rewrite(node, ids, ren: dict, names: dict | None = None, memo: dict | None = None):
    """``node`` with the literals whose ``id`` is in ``ids`` renamed by ``ren`` (old key ->
    new key) and, with ``names`` (key -> instance name), references to instances too.

    ``memo`` (for one ``ids, ren, names``) keeps each rewritten node by the ``id`` of the
    original, so a subtree that several transitions share (the scenario DSL's count of busy
    workers, in every guard of its server) is rewritten once and stays shared."""
    if isinstance(node, S.IntLit):
        return S.IntLit(ren[node.value]) if id(node) in ids else node
    if isinstance(node, S.ProcRef) and names:
        for k, n in names.items():
            if node.name == n:
                return dataclasses.replace(node, name=names[ren[k]])
        return node
    if isinstance(node, tuple):
        return tuple(_rewrite(x, ids, ren, names, memo) for x in node)
    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        if memo is not None:
            hit = memo.get(id(node))
            if hit is not None and hit[0] is node:
                return hit[1]
        out = dataclasses.replace(node, **{f.name: _rewrite(getattr(node, f.name), ids, ren,
                                                            names, memo)
                                           for f in dataclasses.fields(node)
                                           if f.name != "pos" and f.init})
        if memo is not None:
            memo[id(node)] = (node, out)      # the original kept alive: its id stays its own
        return out
    return node


def _boolean(e) -> bool:
    """An expression whose value is 0 or 1: a comparison, a logical operator, a truth value."""
    return (isinstance(e, S.BoolLit) or (isinstance(e, S.Unary) and e.op == "not")
            or (isinstance(e, S.Binary) and e.op in ("==", "!=", "<", "<=", ">", ">=", "and",
                                                      "or", "imply")))


def _chain(x) -> list:
    """The operands of a chain of ``x.op`` (``a op b op c`` however it is bracketed)."""
    ops, stack = [], [x]
    while stack:
        y = stack.pop()
        if isinstance(y, S.Binary) and y.op == x.op:
            stack += [y.left, y.right]
        else:
            ops.append(y)
    return ops


def _norm(x, memo: dict | None = None, swap=None):
    """A hashable form of a syntax tree in which ``and``/``or`` chains and the operands of
    ``==``/``!=`` are sorted (they commute), so that a family of transitions written for keys in
    one order equals its image under a renaming of the keys.

    ``memo`` keeps the form of each node by its ``id`` and the sort key (``repr``) of each
    form, so that a subtree shared by many transitions is normalised and printed once (without
    it, a server with a guard over all ``n`` clients in each of its ``n`` transitions costs
    ``n^2`` and more).

    ``swap`` (node -> node or None): the form of the tree with the nodes it answers for
    replaced by its answers, as if rewritten first (:func:`_rewrite` replaces leaves only, and
    rebuilds every node above them: this walks the tree once and builds nothing). ``memo``
    then holds the forms under that ``swap`` only."""
    if memo is not None and not isinstance(x, (int, str, type(None))):
        hit = memo.get(id(x))
        if hit is not None and hit[0] is x:
            return hit[1]
    y = swap(x) if swap is not None else None
    out = _norm1(x, memo, swap) if y is None else _norm1(y, None, None)
    if memo is not None and dataclasses.is_dataclass(x):
        memo[id(x)] = (x, out)
    return out


def _sort_key(y, memo: dict | None) -> str:
    if memo is None:
        return repr(y)
    hit = memo.get(("repr", id(y)))
    if hit is not None and hit[0] is y:
        return hit[1]
    r = repr(y)
    memo[("repr", id(y))] = (y, r)
    return r


def _norm1(x, memo: dict | None, swap=None):
    def norms(ys):
        return sorted((_norm(y, memo, swap) for y in ys), key=lambda y: _sort_key(y, memo))

    if isinstance(x, S.Binary) and x.op in ("and", "or"):
        return (x.op, tuple(norms(_chain(x))))
    if isinstance(x, S.Binary) and x.op == "+":
        # A sum of conditions (a count, as the scenario DSL's pool of workers writes it):
        # each term is 0 or 1, so no order of the terms overflows and the order is free.
        ops = _chain(x)
        if all(_boolean(y) for y in ops):
            return ("+", tuple(norms(ops)))
    if isinstance(x, S.Binary) and x.op in ("==", "!="):
        return (x.op, tuple(norms((x.left, x.right))))
    if isinstance(x, S.Transition):
        return ("trans", _norm(x.src, memo, swap), _norm(x.dst, memo, swap),
                tuple(norms(x.guard)), _norm(x.sync, memo, swap), _norm(x.effects, memo, swap),
                _norm(x.costs, memo, swap), _norm(x.time, memo, swap))
    if isinstance(x, tuple):
        return tuple(_norm(y, memo, swap) for y in x)
    names = _field_names(type(x))
    if names is not None:
        return (type(x).__name__,) + tuple(_norm(getattr(x, f), memo, swap) for f in names)
    return x


def _literal_ids(node, out: set) -> set:
    if isinstance(node, S.IntLit):
        out.add(id(node))
    elif isinstance(node, tuple):
        for x in node:
            _literal_ids(x, out)
    elif dataclasses.is_dataclass(node) and not isinstance(node, type):
        for f in dataclasses.fields(node):
            if f.name != "pos":
                _literal_ids(getattr(node, f.name), out)
    return out


def _invariant(proc: S.Process, ids: set, keys: list, names: dict | None = None) -> str | None:
    """Why renaming the key literals ``ids`` of process ``proc`` does not map its transitions
    onto themselves (as a multiset, up to commuting operands), or ``None`` when every
    permutation of ``keys`` does (checked on a transposition and an n-cycle, which generate
    them all)."""
    if _literal_ids(proc.decls, set()) & ids or _rewrite(proc.decls, set(), {}, None) != \
            _rewrite(proc.decls, set(), {k: k for k in keys}, names):
        return "starts with a key value in a variable"
    if any(t.src is None for t in proc.transitions):
        return "uses the shorthand ', -> dst' with key values"
    memo: dict = {}        # one for the normal forms: a rewritten tree is a tree like any
    base = Counter(_norm(t, memo) for t in proc.transitions)
    gens = [dict(zip(keys, keys[1:] + keys[:1]))]
    if len(keys) > 2:
        gens.append({**{k: k for k in keys}, keys[0]: keys[1], keys[1]: keys[0]})
    for ren in gens:
        again: dict = {}   # one per renaming
        if Counter(_norm(_rewrite(t, ids, ren, names, again), memo)
                   for t in proc.transitions) != base:
            return ("writes key values or names instances in transitions that a renaming of "
                    "the keys does not map onto one another")
    return None


def transition_image(cm: CompiledModel, sym: Symmetry, tid: int, ren: dict) -> int:
    """The transition a permutation of keys maps transition ``tid`` of a process outside the
    groups to (``ren``: template -> {old key: new key}); ``tid`` itself when its process has no
    family of transitions."""
    t = cm.transitions[tid]
    fams = [(tpl, ids, dict(names)) for p, tpl, ids, names in sym.families if p == t.process]
    if not fams:
        return tid
    memo = _by_norm(cm, "images")
    key = (tid,) + tuple(tuple(sorted(ren[tpl].items())) for tpl, _, _ in fams)
    if key in memo:
        return memo[key]
    # The image's keys are the renamed keys of ``tid``: when one transition of the process
    # alone has them (with the same local states and shape), it is the image, found without
    # rewriting and normalising the transition (a server's guards count over every client:
    # rewriting one is thousands of nodes).
    sigs = memo.get(("keys", t.process))
    if sigs is None:
        sigs = memo[("keys", t.process)] = _KeySignatures(cm, t.process, fams)

    def renamed(part):     # (key counts per family, shape) under the renaming
        return tuple(tuple(sorted(Counter({ren[tpl].get(k, k): c for k, c in counts}).items()))
                     for (tpl, _, _), counts in zip(fams, part[:-1])) + (part[-1],)

    # The head (local states, sync and effects) first: transitions whose heads differ from
    # the image's cannot be it, and when one alone has that head it is the image (there is
    # one: detect_symmetry proved the family invariant). Only transitions alike in their
    # heads (a client's light and heavy request differ there) need their guards' conjuncts.
    keys = sigs.keys(tid)
    cands = sigs.by_keys((keys[0], keys[1], renamed(keys[2])))
    if len(cands) > 1:
        head = sigs.head(tid)
        want = (head[0], head[1], renamed(head[2]))
        cands = [c for c in cands if sigs.head(c) == want]
    if len(cands) == 1:
        memo[key] = cands[0]
        return cands[0]
    mine = sigs.signature(tid)
    want = (t.src, t.dst, renamed(mine[2]),
            tuple(sorted((renamed(x) for x in mine[3]), key=repr)))
    hits = [c for c in cands if sigs.signature(c) == want]
    if len(hits) == 1:
        memo[key] = hits[0]
        return hits[0]
    node = t.node
    for tpl, ids, names in fams:
        node = _rewrite(node, ids, ren[tpl], names)
    other = _by_norm(cm, t.process).get(_norm(node))
    if other is None:
        raise KeyError(f"no image of transition {tid}")
    memo[key] = other
    return other


class _KeySignatures:
    """For each transition of ``process`` (outside the groups), what a renaming of the keys
    maps onto its image's: its local states; for its sync and effects, per family the
    multiset of the keys they name (literals among the family's ``ids``, instance names) and
    their shape (every key renamed to one); the same for each small conjunct of its guard,
    as a multiset (conjuncts commute). A signature that one transition alone holds names the
    image.

    Large conjuncts are left out: a server's guards count over every client (thousands of
    nodes) while what tells its transitions apart (the client admitted, the kind of its
    request) is small; transitions alike without them fall back on the full rewrite. Leaving
    a part out in every transition keeps the signature a function that renaming commutes
    with.

    Computed as asked, coarse to fine: the keys that the sync and effects of every transition
    name when the first image is asked; the *heads* (local states, sync and effects, shape
    included) only of the transitions whose keys tie; the guards' conjuncts only of those
    whose heads tie (lifting a run asks for a few images). Each stage is a part of the
    signature that renaming commutes with, so the image is among the transitions that match
    at every stage, and when one alone matches, it is the image (there is one:
    detect_symmetry proved the family invariant)."""

    def __init__(self, cm: CompiledModel, process: int, fams) -> None:
        self.cm, self.process, self.fams = cm, process, fams
        self.by_name = [{n: k for k, n in names.items()} for _, _, names in fams]
        self.norms: dict = {}                            # the shapes' forms (under swap)
        self.key_heads: dict | None = None  # tid -> keys (the head without its shape)
        self.by: dict = {}                 # keys -> [tids], in order
        self.heads: dict = {}              # tid -> head
        self.full: dict = {}               # tid -> signature

    def part(self, node):
        """Per family the keys ``node`` names, counted, and its shape: its normal form with
        every key of each family renamed to the family's smallest (``_norm`` of
        ``_rewrite``, in one walk: :meth:`swap`)."""
        return self.counts(node) + (self.shape(node),)

    def counts(self, node) -> tuple:
        """Per family, the keys ``node`` names with their counts (sorted pairs)."""
        return tuple(tuple(sorted(_count_keys(node, ids, by_name).items()))
                     for (_, ids, _), by_name in zip(self.fams, self.by_name))

    def shape(self, node):
        """The normal form of ``node`` with every key renamed to its family's smallest."""
        return _norm(node, self.norms, self.swap)

    def swap(self, node):
        """The leaf :func:`_rewrite` would put in place of ``node`` when renaming every key
        to its family's smallest (a key literal, an instance's name), or None where it would
        walk on. The families'
        literals and names are disjoint (a literal's value is a key of one template only), so
        renaming the families one after the other, as ``_rewrite`` would, changes each leaf
        once."""
        if isinstance(node, S.IntLit):
            for _, ids, names in self.fams:
                if id(node) in ids:
                    return S.IntLit(min(names))
            return None
        if isinstance(node, S.ProcRef):
            for _, _, names in self.fams:
                for k, n in names.items():
                    if node.name == n:
                        return dataclasses.replace(node, name=names[min(names)])
            return node       # as _rewrite: kept whole (its keys are not walked)
        return None

    def keys(self, tid: int) -> tuple:
        """``(src, dst, (key counts per family of (sync, effects)..., None))``: the head
        without its shape (what tells a family's transitions apart is mostly which keys they
        name), computed for every transition when first asked."""
        if self.key_heads is None:
            self.key_heads = {}
            for t_id in self.cm.processes[self.process].transitions:
                t = self.cm.transitions[t_id]
                k = (t.src, t.dst, self.counts((t.node.sync, t.node.effects)) + (None,))
                self.key_heads[t_id] = k
                self.by.setdefault(k, []).append(t_id)
        return self.key_heads[tid]

    def by_keys(self, keys: tuple) -> list:
        """The transitions (in order) whose :meth:`keys` are ``keys``."""
        return self.by.get(keys, [])

    def head(self, tid: int) -> tuple:
        """``(src, dst, part of (sync, effects))`` of transition ``tid``."""
        h = self.heads.get(tid)
        if h is None:
            src, dst, counts = self.keys(tid)
            t = self.cm.transitions[tid]
            h = self.heads[tid] = (src, dst, counts[:-1] + (self.shape((t.node.sync,
                                                                         t.node.effects)),))
        return h

    def signature(self, tid: int) -> tuple:
        """The head of ``tid`` and the sorted parts of its guard's small conjuncts."""
        sig = self.full.get(tid)
        if sig is None:
            t = self.cm.transitions[tid]
            small = [c for g in t.node.guard for c in _conjuncts(g)
                     if _size(c, _SMALL) <= _SMALL]
            sig = self.full[tid] = self.head(tid) + (
                tuple(sorted((self.part(c) for c in small), key=repr)),)
        return sig


#: Conjuncts of a guard with at most this many nodes enter a transition's key signature.
_SMALL = 64


def _conjuncts(e) -> list:
    """The operands of a chain of ``and`` (``e`` itself when it is none)."""
    if isinstance(e, S.Binary) and e.op == "and":
        return _chain(e)
    return [e]


def _size(node, limit: int) -> int:
    """The nodes of ``node``, counted up to ``limit + 1`` (then it stops)."""
    n, stack = 0, [node]
    while stack and n <= limit:
        x = stack.pop()
        if isinstance(x, tuple):
            stack.extend(x)
        else:
            names = _field_names(type(x))
            if names is not None:
                n += 1
                stack.extend(getattr(x, f) for f in names)
    return n


#: Per class: the names of its dataclass fields but ``pos``, or None when not a dataclass.
_FIELDS: dict[type, tuple[str, ...] | None] = {}


def _field_names(cls: type) -> tuple[str, ...] | None:
    """The fields a syntax walk reads (``dataclasses.fields`` is slow called per node)."""
    try:
        return _FIELDS[cls]
    except KeyError:
        names = (tuple(f.name for f in dataclasses.fields(cls) if f.name != "pos")
                 if dataclasses.is_dataclass(cls) else None)
        _FIELDS[cls] = names
        return names


def _count_keys(node, ids, by_name: dict) -> dict:
    """What :func:`_key_counts` counts, in one walk without a memo (for the small trees of a
    transition's head and conjuncts: a Counter per node costs more than the walk)."""
    out: dict = {}
    stack = [node]
    while stack:
        x = stack.pop()
        if isinstance(x, S.IntLit):
            if id(x) in ids:
                out[x.value] = out.get(x.value, 0) + 1
        elif isinstance(x, S.ProcRef):
            k = by_name.get(x.name)
            if k is not None:
                out[k] = out.get(k, 0) + 1
        elif isinstance(x, tuple):
            stack.extend(x)
        else:
            names = _field_names(type(x))
            if names is not None:
                stack.extend(getattr(x, f) for f in names)
    return out


def _key_counts(node, ids, by_name: dict, memo: dict) -> Counter:
    """How often each key appears in ``node`` as a literal among ``ids`` or an instance name."""
    if isinstance(node, S.IntLit):
        return Counter({node.value: 1}) if id(node) in ids else Counter()
    if isinstance(node, S.ProcRef):
        k = by_name.get(node.name)
        return Counter() if k is None else Counter({k: 1})
    if isinstance(node, tuple):
        out = Counter()
        for x in node:
            out.update(_key_counts(x, ids, by_name, memo))
        return out
    names = _field_names(type(node))
    if names is not None:
        hit = memo.get(id(node))
        if hit is not None and hit[0] is node:
            return hit[1]
        out = Counter()
        for f in names:
            out.update(_key_counts(getattr(node, f), ids, by_name, memo))
        memo[id(node)] = (node, out)
        return out
    return Counter()


#: id of a live CompiledModel -> process index -> {normal form of a transition: its first id}
#: (by id: a compiled model is not hashable; the entry goes when the model does).
_NORMS: dict[int, dict] = {}


def _by_norm(cm: CompiledModel, process) -> dict:
    """The transitions of ``process`` by normal form (:func:`_norm`), the first of equal ones;
    computed once per model and process (lifting a run looks up several per step).
    ``process="images"``: :func:`transition_image`'s answers so far."""
    per = _NORMS.get(id(cm))
    if per is None:
        per = _NORMS[id(cm)] = {"images": {}}
        weakref.finalize(cm, _NORMS.pop, id(cm), None)
    if process not in per:
        table: dict = {}
        for tid in cm.processes[process].transitions:
            table.setdefault(_norm(cm.transitions[tid].node), tid)
        per[process] = table
    return per[process]


def _candidates(cm: CompiledModel) -> dict[str, list[tuple[int, int, str]]]:
    out: dict[str, list] = {}
    for p in cm.processes:
        m = _INSTANCE.match(p.name)
        if m is None or p.is_property:
            continue
        k = m.group("k")
        key = -int(k[1:]) if k.startswith("m") else int(k)
        out.setdefault(m.group("t"), []).append((key, p.index, p.name))
    return {t: sorted(ms) for t, ms in out.items() if len(ms) >= 2}


def detect_symmetry(cm: CompiledModel) -> Symmetry:
    """Find the groups of interchangeable processes of a compiled model (see the module
    docstring for what is checked). Pure; never raises on a well-formed model.

    Returns
    -------
    Symmetry
        The groups shown symmetric (each with at least two members), the candidates refused
        with a reason, and an overall reason when nothing is reduced.
    """
    cands = _candidates(cm)
    if not cands:
        return Symmetry(reason="no process template with two or more instances")
    syn = {p.name: p for p in cm.syntax.processes}
    refused: dict[str, str] = {}
    keypos: dict[str, set] = {}
    for t, ms in list(cands.items()):
        n0 = ms[0][2]
        kp: set = set()
        keys: dict = {n: None for _, _, n in ms}
        try:
            for _, _, n in ms[1:]:
                _diff(syn[n0], syn[n], n0, n, keys, (), kp)
        except _Refuse as e:
            refused[t] = str(e)
            del cands[t]
            continue
        if kp:
            if None in keys.values() or len(set(keys.values())) < len(ms):
                refused[t] = "the instances' keys cannot be told apart"
                del cands[t]
                continue
            ms = sorted((keys[n], i, n) for _, i, n in ms)
            cands[t] = ms
            # Key positions were recorded against the first instance compared; walk that one.
            if ms[0][2] != n0:
                kp2: set = set()
                for _, _, n in ms[1:]:
                    _diff(syn[ms[0][2]], syn[n], ms[0][2], n, dict(keys), (), kp2)
                kp = kp2
        keypos[t] = kp
    if cands:
        chk = _Checker(cm, cands, keypos)
        chk.run()
        refused.update(chk.bad)
        for t in chk.bad:
            cands.pop(t, None)
        groups = []
        for t, ms in cands.items():
            try:
                groups.append(_layout(cm, chk, t, ms))
            except _Refuse as e:
                refused[t] = str(e)
    else:
        groups = []
    reason = None
    if not groups:
        reason = "; ".join(f"{t}: {r}" for t, r in sorted(refused.items())) or \
            "no symmetric group"
    fams = tuple(f for f in (chk.families if cands else ()) if f[1] in {g.template for g in groups})
    return Symmetry(tuple(groups), tuple(sorted(refused.items())), reason, fams)


def _layout(cm: CompiledModel, chk: _Checker, t: str, ms) -> SymmetryGroup:
    """Slots of the members and key-holding slots of group ``t`` (refuses what the sort
    analysis allows but the canonical form cannot handle)."""
    s = chk.sorts
    keys = [k for k, _, _ in ms]
    rep = chk.rep[t]
    members = [name for _, _, name in ms]
    # Variables and channels by owner, in slot order.
    own_vars = {n: sorted((v for v in cm.variables.values() if v.owner == n and not v.is_const),
                          key=lambda v: v.base) for n in members}
    own_chans = {n: sorted((c for c in cm.channels.values() if c.owner == n and c.buffered),
                           key=lambda c: c.count_slot) for n in members}
    for v in own_vars[rep]:
        sn = ("var", v.name)
        if s.get(sn) not in (None, "data"):
            raise _Refuse(f"the instance variable '{v.name.split('.', 1)[1]}' holds keys")
        if v.size is not None and s.get(("idx", v.name)) not in (None, "data"):
            raise _Refuse(f"the instance array '{v.name.split('.', 1)[1]}' is indexed by keys")
    for c in own_chans[rep]:
        for f in range(c.arity):
            if s.get(("chan", c.name, f)) not in (None, "data"):
                raise _Refuse(f"the instance channel '{c.name}' carries keys")
    key_slots: list[int] = []
    indexed: list = []
    for v in cm.variables.values():
        if v.is_const or (v.owner is not None and v.owner in chk.member_of):
            continue
        sv = s.get(("var", v.name))
        si = s.get(("idx", v.name)) if v.size is not None else None
        sv = t if sv not in (None, "data") and t in sv else None
        si = t if si not in (None, "data") and t in si else None
        if sv == t:
            if si is not None:
                raise _Refuse(f"the array '{v.name}' is indexed by keys and holds keys")
            key_slots.extend(range(v.base, v.base + (v.size or 1)))
        if si == t:
            if min(keys) < 0 or max(keys) >= v.size:
                raise _Refuse(f"the array '{v.name}' does not cover every key")
            init = cm.initial
            if len({init[v.base + k] for k in keys}) > 1:
                raise _Refuse(f"the array '{v.name}' starts with different values at the keys")
            indexed.append(v)
    for c in cm.channels.values():
        if c.owner is not None and c.owner in chk.member_of:
            continue
        for f in range(c.arity if c.buffered else 0):
            tag = s.get(("chan", c.name, f))
            if tag not in (None, "data") and t in tag:
                if 0 in keys:
                    raise _Refuse(f"the buffered channel '{c.name}' carries keys and 0 is a key")
                key_slots.extend(c.items + i * c.arity + f for i in range(c.size))
    for j in sorted(set(key_slots)):
        # A renaming may put any key where one was: the slot must hold every key.
        if min(keys) < cm.slots[j].lo or max(keys) > cm.slots[j].hi:
            raise _Refuse(f"the slot '{cm.slots[j].name}' holds keys of {t} but not every "
                          f"key fits its type ({cm.slots[j].lo}..{cm.slots[j].hi})")
    rows = []
    for k, pidx, name in ms:
        row = [cm.processes[pidx].slot]
        for v in own_vars[name]:
            row.extend(range(v.base, v.base + (v.size or 1)))
        for c in own_chans[name]:
            row.extend(range(c.count_slot, c.items + c.size * c.arity))
        for v in indexed:
            row.append(v.base + k)
        rows.append(tuple(row))
    if len({len(r) for r in rows}) != 1:
        raise _Refuse("instances have different layouts")
    return SymmetryGroup(t, tuple(p for _, p, _ in ms), tuple(keys), tuple(rows),
                         tuple(sorted(set(key_slots))))


# ------------------------------------------------------------------------------ canonical form
