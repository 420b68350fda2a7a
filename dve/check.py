"""Static checks on an expanded model: everything a careful user wants caught before a long run.

:func:`check_model` walks an expanded :class:`~dve.syntax.Model` once, gathers every problem it
finds (the miniwdl ``multi_context`` pattern, so a user fixes all of them in one pass), raises
one :class:`~dve.errors.ModelErrors` when any is an error, and returns the warnings otherwise.

Scopes
------
A model has one global scope (variables, constants, inputs, channels and processes share it) and
one scope per process (its local variables and channels, and its states). A local name may not
repeat a state name of its process; it may hide a global name (a warning: BEEM's
``pgm_protocol`` does it). A state name may repeat a global name (DiVinE's own test models name a
state after its process). Names in expressions resolve to the process's locals first, then to
the globals.

Codes
-----
Errors (the model is refused):

=============================  ====================================================================
``undefined-name``             a variable, channel, process or macro that is not declared
``duplicate-name``             a name declared twice in one scope, or a local repeating a state
                               name of its process
``unknown-state``              a state that its process does not declare (transitions, ``init``,
                               ``commit``, ``accept``, ``assert``, ``P.s``)
``missing-init``               a process without ``init``
``assign-to-const``            an assignment (or a receive) into a constant or an input
``assign-to-channel``          an assignment (or a receive) into a channel
``channel-as-value``           a channel read as a value
``not-a-variable``             a process used where a variable is expected
``not-a-channel``              ``sync x!...`` where ``x`` is not a channel
``not-an-array``               an index applied to a scalar
``index-out-of-range``         a constant index outside ``0..size-1`` (where it is evaluated)
``division-by-zero``           ``/`` or ``%`` by a constant zero (where it is evaluated: not in the
                               right operand of ``0 and ...``, ``1 or ...``, ``0 imply ...``)
``literal-out-of-range``       an integer literal beyond 2147483647 (32-bit guards, effects,
                               initialisers), or beyond 9223372036854775807 in a cost or time
``cost-overflow``              a constant cost or time whose value leaves 64 bits
``array-size-invalid``         an array size that is not a constant, or is not above 0
``channel-size-invalid``       a channel buffer size that is not a constant, or is below 0
``buffered-untyped``           an untyped channel declared with a buffer
``initializer-kind``           a scalar initialised with ``{...}`` or an array with a single value
``init-out-of-range``          an initial value outside its type (byte 0..255, int -32768..32767)
``sync-arity``                 a number of values that does not match the channel's item types, or
                               (untyped channels) differs between two uses of one channel
``sync-kind``                  a receive into something that is not a variable
``negative-time``              a constant ``time`` below 0
``duplicate-resource``         one resource charged twice on one transition
``duplicate-clause``           two plain ``cost`` clauses on one transition
``cost-resource-inconsistent`` plain ``cost e;`` mixed with named resources in one model
``property-not-found``         ``system ... property P`` where ``P`` is not declared
``property-not-process``       ``system ... property P`` where ``P`` is not a process
``declaration-too-large``      an impossible declaration: an array or a buffered channel that
                               takes the state vector past :data:`MAX_STATE_SLOTS` slots
=============================  ====================================================================

Warnings (reported, the model is accepted):

=============================  ====================================================================
``unpaired-sync``              a channel that is sent on but never received from (or the reverse),
                               or a rendezvous channel used by one process only: those syncs can
                               never fire
``array-without-index``        an array used without an index (BEEM's ``train-gate`` does this)
``shadowed-name``              a local variable or channel with the name of a global one (BEEM's
                               ``pgm_protocol`` does this)
``unreachable-state``          a state no transition path from ``init`` reaches (guards ignored)
``dead-transition``            a transition whose guard is constant and false
``value-out-of-range``         a constant assigned to a variable whose type cannot hold it (the
                               step would lead to the error state), or sent on a typed channel
                               whose item type cannot hold it (DiVinE 2 wraps it)
``initializer-too-long``       an array initialiser with more values than the array has cells
                               (DiVinE drops the rest)
``cost-resource-typo``         a named resource charged once whose name is close to another
                               resource
``sync-ignored``               a ``sync`` under ``system sync``, which ignores channels
``ltl-not-analysed``           a ``property ltl``: parsed, not analysed
``property-without-accept``    a property process (``system ... property P``) with no ``accept``
``property-ignored``           ``system sync property P``: the property process is left out (the
                               product is defined for ``system async`` only)
=============================  ====================================================================

The size of a state
-------------------
Every state is stored whole: one *slot* per process (its control state), per scalar variable,
per array cell, and per buffered channel (its count, and one per field of each item). The
explorer keeps a state it has yet to expand unpacked, 4 bytes a slot, beside its packed key
(a byte takes 8 bits of it, an int 16), and the graph keeps every state's slots; the compiler
builds one record per slot. At :data:`MAX_STATE_SLOTS` (2**20) slots a single state already
takes 4 MiB unpacked and 1 to 2 MiB packed, so a graph of a few thousand states fills a
machine's memory; a declaration that takes the state past it (``byte a[2000000000];``, or
``channel {byte, int} c[1000000];``) cannot describe an explorable model and is refused here,
before anything is allocated for it.

The cost rule
-------------
``cost e;`` charges the resource named ``cost`` (docs/language.md, "Cost and time"). A model
that names resources (``cost cpu: 5, net: 2;``) and also uses the plain form almost certainly
meant the plain charges for one of its named resources, and ``--cost cpu`` would silently read
them as 0. So a model uses either the plain form only or named resources only (``cost cost: e``
counts as named). One transition charges each resource at most once.

Where the checks live
---------------------
This module walks the model (processes, transitions, channels, the ``system`` line) and holds
the codes; the checks of one declaration are :mod:`dve.declcheck`'s, those of one expression
:mod:`dve.exprcheck`'s, and the table of names they share is :mod:`dve.symbols`.

Examples
--------
>>> from dve.parser import parse_model
>>> check_model(parse_model("process P { state a; init a; trans a -> a {}; } system async;"))
()
>>> text = "byte x; process P { state a; init a; trans a -> a { effect y = 1; }; } system async;"
>>> try:
...     check_model(parse_model(text, "m.dve"))
... except ModelErrors as exc:
...     print(exc)
m.dve:1:60: error[undefined-name]: unknown variable 'y'
"""

from __future__ import annotations

from . import syntax as s
from .arith import TYPE_RANGE
from .declcheck import MAX_STATE_SLOTS, Declarations
from .errors import ModelError, ModelErrors, SourcePos
from .exprcheck import ExprChecker, const_value
from .symbols import ChanUse, ProcScope, Symbol, SymbolTable, name_span, at_line

__all__ = ["check_model", "CODES", "WARNING_CODES", "TYPE_RANGES", "MAX_STATE_SLOTS"]

#: Value range of each variable type (legacy DiVinE: byte = uint8, int = int16).
TYPE_RANGES: dict[str, tuple[int, int]] = TYPE_RANGE

#: Every code :func:`check_model` can report as an error.
CODES: tuple[str, ...] = (
    "undefined-name", "duplicate-name", "unknown-state", "missing-init", "assign-to-const",
    "assign-to-channel", "channel-as-value", "not-a-variable", "not-a-channel", "not-an-array",
    "index-out-of-range", "division-by-zero", "literal-out-of-range", "cost-overflow",
    "array-size-invalid", "channel-size-invalid",
    "buffered-untyped", "initializer-kind", "init-out-of-range", "sync-arity", "sync-kind",
    "negative-time", "duplicate-resource", "duplicate-clause", "cost-resource-inconsistent",
    "property-not-found", "property-not-process", "declaration-too-large",
)

#: Every code :func:`check_model` can report as a warning.
WARNING_CODES: tuple[str, ...] = (
    "unpaired-sync", "array-without-index", "shadowed-name", "unreachable-state",
    "dead-transition", "value-out-of-range", "initializer-too-long", "cost-resource-typo",
    "sync-ignored", "ltl-not-analysed", "property-without-accept", "property-ignored",
)


# ---------------------------------------------------------------------------- the checker

class _Checker:
    """One walk over the model: declarations first (every process's scope, since ``P.s`` and
    ``P->v`` may name a process declared later), then each process's body, then what only the
    whole model shows (channels, cost resources, the ``system`` line)."""

    def __init__(self, model: s.Model) -> None:
        self.model = model
        self.table = SymbolTable()
        self.p = self.table.p
        self.globals = self.table.globals
        self.env = self.table.env
        self.scopes = self.table.scopes
        self.chan_uses = self.table.chan_uses
        self.chan_syms = self.table.chan_syms
        self.exprs = ExprChecker(self.table)
        self.decls = Declarations(self.table, self.exprs)
        self.costs: list[s.Cost] = []
        self.first_sync: s.Sync | None = None

    # -- processes ---------------------------------------------------------------------------

    def process_decls(self, proc: s.Process) -> ProcScope:
        sc = ProcScope(proc, env=dict(self.env))
        self.decls.occupy(1, f"process '{proc.name}'", name_span(proc.pos, proc.name))
        for st in proc.states:
            if st.name in sc.states:
                first = sc.states[st.name]
                self.p.error(name_span(st.pos, st.name), "duplicate-name",
                             f"state '{st.name}' is already declared",
                             "first declared at "
                             + at_line(name_span(first.pos, st.name), column=True))
            else:
                sc.states[st.name] = st
        for d in proc.decls:
            if isinstance(d, s.ChannelDecl):
                sym = self.decls.channel_symbol(d, sc.env, proc.name)
            else:
                sym = self.decls.var_symbol(d, sc.env, sc)
            self.decls.declare(sc.locals, sym, (self.globals, sc.states))
        return sc

    def state_ref(self, ref: s.StateRef | None, sc: ProcScope) -> None:
        if ref is not None and ref.name not in sc.states:
            self.p.error(ref.pos, "unknown-state",
                         f"unknown state '{ref.name}' of process '{sc.process.name}'",
                         self.p.did_you_mean(ref.name, sc.states))

    def process_body(self, sc: ProcScope) -> None:
        proc = sc.process
        if proc.init is None:
            self.p.error(name_span(proc.pos, proc.name, last=False), "missing-init",
                         f"process '{proc.name}' has no initial state",
                         f"add 'init {proc.states[0].name};' after the state list"
                         if proc.states else "declare states and an 'init' state")
        else:
            self.state_ref(proc.init, sc)
        for ref in proc.commit:
            self.state_ref(ref, sc)
        for acc in proc.accept:
            for group in acc.sets:
                for ref in group:
                    self.state_ref(ref, sc)
        for a in proc.asserts:
            self.state_ref(a.state, sc)
            with self.p.attempt():
                self.exprs.expr(a.expr, sc.env, sc)
        for t in proc.transitions:
            with self.p.attempt():
                self.transition(t, sc)
        self.reachability(sc)

    def transition(self, t: s.Transition, sc: ProcScope) -> None:
        env = sc.env
        if t.src is not None:
            self.state_ref(t.src, sc)
        self.state_ref(t.dst, sc)
        for g in t.guard:
            self.exprs.expr(g, env, sc)
            if const_value(g, env) == 0:
                self.p.warning(g.pos or t.pos, "dead-transition",
                               "guard is always false: this transition can never fire")
        if t.sync is not None:
            self.sync(t.sync, sc)
        for a in t.effects:
            sym = self.exprs.lvalue(a.target, env, sc)
            self.exprs.expr(a.value, env, sc)
            value = const_value(a.value, env)
            if sym is not None and value is not None and sym.type in TYPE_RANGE:
                lo, hi = TYPE_RANGE[sym.type]
                if not lo <= value <= hi:
                    self.p.warning(a.value.pos or a.pos, "value-out-of-range",
                                   f"value {value} does not fit {sym.type} '{sym.name}': "
                                   f"expected {lo}..{hi}",
                                   "this step would always lead to the error state")
        seen: dict[str, s.Cost] = {}
        for c in t.costs:
            self.exprs.expr(c.amount, env, sc, wide=True)
            self.exprs.overflow(c.amount, env, "cost")
            self.costs.append(c)
            prev = seen.get(c.resource)
            if prev is None:
                seen[c.resource] = c
            elif not c.named and not prev.named:
                self.p.error(c.pos, "duplicate-clause",
                             "expected one 'cost' clause per transition, found a second",
                             "add the amounts: 'cost a + b;'")
            elif c.named and prev.named:
                self.p.error(name_span(c.pos, c.resource), "duplicate-resource",
                             f"resource '{c.resource}' is charged twice on one transition",
                             "add the amounts into one charge")
        if t.time is not None:
            self.exprs.expr(t.time, env, sc, wide=True)
            self.exprs.overflow(t.time, env, "time")
            value = const_value(t.time, env, wide=True)
            if value is not None and value < 0:
                self.p.error(t.time.pos or t.pos, "negative-time",
                             f"expected a time of 0 or more, found {value}")

    def sync(self, sync: s.Sync, sc: ProcScope) -> None:
        env = sc.env
        if self.first_sync is None:
            self.first_sync = sync
        if sync.process is not None:
            owner = self.table.process_scope(sync.process, sc)
            if owner is None:
                chan = None
            else:
                chan = owner.locals.get(sync.channel)
                if chan is None:
                    self.p.error(name_span(sync.pos, sync.channel, last=True), "undefined-name",
                                 f"unknown channel '{sync.channel}' of process "
                                 f"'{owner.process.name}'",
                                 self.p.did_you_mean(sync.channel,
                                                     [n for n, x in owner.locals.items()
                                                      if x.kind == "channel"]))
        else:
            chan = self.table.lookup(sync.channel, sc)
            if chan is None:
                self.table.undefined(name_span(sync.pos, sync.channel), sync.channel, sc,
                               ("channel",), "channel")
        if chan is not None and chan.kind != "channel":
            self.p.error(name_span(sync.pos, sync.channel, last=sync.process is not None),
                         "not-a-channel", f"expected a channel, found {chan.describe()}")
            chan = None
        if sync.op == "!":
            for v in sync.values:
                self.exprs.expr(v, env, sc)
        else:
            for v in sync.values:
                self.exprs.lvalue(v, env, sc, verb="receive into")
        if chan is None:
            return
        n = len(sync.values)
        if chan.types is not None and n != len(chan.types):
            types = ", ".join(chan.types)
            self.p.error(self.values_pos(sync), "sync-arity",
                         f"wrong number of values for channel '{chan.name}': expected "
                         f"{len(chan.types)} ({types}), found {n}",
                         f"'{chan.name}' is declared 'channel {{{types}}}' at {at_line(chan.pos)}")
        elif chan.types is not None and sync.op == "!":
            for k, (v, ty) in enumerate(zip(sync.values, chan.types)):
                value = const_value(v, env)
                lo, hi = TYPE_RANGE.get(ty, (value, value))
                if value is not None and not lo <= value <= hi:
                    self.p.warning(v.pos or sync.pos, "value-out-of-range",
                                   f"value {value} does not fit item {k + 1} ({ty}) of channel "
                                   f"'{chan.name}': expected {lo}..{hi}",
                                   "DiVinE 2 wraps it silently into the item type")
        self.chan_uses[id(chan)].append(ChanUse(sync.op, n, sc.process.name, sync))

    @staticmethod
    def values_pos(sync: s.Sync) -> SourcePos | None:
        if sync.values and sync.values[0].pos is not None and sync.values[-1].pos is not None:
            return sync.values[0].pos.to(sync.values[-1].pos)
        return sync.pos

    def reachability(self, sc: ProcScope) -> None:
        proc = sc.process
        if proc.init is None or proc.init.name not in sc.states:
            return
        succ: dict[str, list[str]] = {}
        for t in proc.transitions:
            if t.src is not None:
                succ.setdefault(t.src.name, []).append(t.dst.name)
        seen = {proc.init.name}
        todo = [proc.init.name]
        while todo:
            for nxt in succ.get(todo.pop(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        for name, st in sc.states.items():
            if name not in seen:
                self.p.warning(name_span(st.pos, name), "unreachable-state",
                               f"state '{name}' of process '{proc.name}' is unreachable from "
                               f"its initial state '{proc.init.name}'",
                               "add a transition into it, or remove it")

    # -- the whole model ---------------------------------------------------------------------

    def channels(self) -> None:
        for key, uses in self.chan_uses.items():
            chan = self.chan_syms[key]
            if not uses:
                continue
            if chan.types is None:
                self.untyped_arity(chan, uses)
            sends = [u for u in uses if u.op == "!"]
            recvs = [u for u in uses if u.op == "?"]
            if sends and not recvs:
                for u in sends:
                    self.p.warning(name_span(u.sync.pos, chan.name, last=True), "unpaired-sync",
                                   f"no process receives on channel '{chan.name}': this send "
                                   "can never happen", f"add 'sync {chan.name}?...' to a partner")
            elif recvs and not sends:
                for u in recvs:
                    self.p.warning(name_span(u.sync.pos, chan.name, last=True), "unpaired-sync",
                                   f"no process sends on channel '{chan.name}': this receive "
                                   "can never happen", f"add 'sync {chan.name}!...' to a partner")
            elif not chan.buffered:
                procs = {u.process for u in uses}
                if len(procs) == 1:
                    (only,) = procs
                    for u in uses:
                        self.p.warning(name_span(u.sync.pos, chan.name, last=True),
                                       "unpaired-sync",
                                       f"only process '{only}' uses rendezvous channel "
                                       f"'{chan.name}': a rendezvous needs two processes")

    def untyped_arity(self, chan: Symbol, uses: list[ChanUse]) -> None:
        counts: dict[int, int] = {}
        for u in uses:
            counts[u.n_values] = counts.get(u.n_values, 0) + 1
        if len(counts) <= 1:
            return
        # The most frequent arity is taken as intended (ties: the first use's).
        usual = max(counts, key=lambda n: (counts[n], n == uses[0].n_values))
        first = next(u for u in uses if u.n_values == usual)
        for u in uses:
            if u.n_values != usual:
                self.p.error(self.values_pos(u.sync) if u.sync.values else
                             name_span(u.sync.pos, chan.name, last=True), "sync-arity",
                             f"wrong number of values for channel '{chan.name}': expected "
                             f"{usual} as at {at_line(first.sync.pos)}, found {u.n_values}",
                             "every use of an untyped channel must pass the same number of values")

    def cost_resources(self) -> None:
        named = sorted({c.resource for c in self.costs if c.named})
        if named:
            for c in self.costs:
                if not c.named:
                    self.p.error(c.pos, "cost-resource-inconsistent",
                                 "plain 'cost' mixed with named resources "
                                 + ", ".join(f"'{r}'" for r in named),
                                 f"name the resource here too, e.g. 'cost {named[0]}: ...'")
        uses: dict[str, list[s.Cost]] = {}
        for c in self.costs:
            if c.named:
                uses.setdefault(c.resource, []).append(c)
        for name, cs in uses.items():
            if len(cs) != 1:
                continue
            others = [r for r, o in uses.items() if r != name and len(o) > 1]
            hint = self.p.did_you_mean(name, others)
            if hint:
                self.p.warning(name_span(cs[0].pos, name), "cost-resource-typo",
                               f"resource '{name}' is charged on one transition only", hint)

    def system(self) -> None:
        sysd = self.model.system
        if sysd.property is not None:
            pos = name_span(sysd.pos, sysd.property, last=True)
            sym = self.globals.get(sysd.property)
            if sym is None:
                self.p.error(pos, "property-not-found",
                             f"unknown property process '{sysd.property}'",
                             self.p.did_you_mean(sysd.property, self.scopes))
            elif sym.kind != "process":
                self.p.error(pos, "property-not-process",
                             f"expected a process as property, found {sym.describe()}")
            elif sysd.kind == "sync":
                # The state space of a synchronous system leaves the property out (the
                # reference defines the product for asynchronous systems only): say so.
                self.p.warning(pos, "property-ignored",
                               f"'system sync' leaves the property process '{sym.name}' out: "
                               "the state space is that of the other processes",
                               f"write 'system async property {sym.name};' for the product "
                               "with a property automaton")
            elif not any(group for acc in self.scopes[sym.name].process.accept
                         for group in acc.sets):
                self.p.warning(pos, "property-without-accept",
                               f"property process '{sym.name}' has no accepting state: "
                               "it accepts no run",
                               f"mark its accepting states with 'accept s;' in '{sym.name}'")
        if sysd.kind == "sync" and self.first_sync is not None:
            self.p.warning(name_span(self.first_sync.pos, self.first_sync.channel),
                           "sync-ignored", "'system sync' ignores channels: this sync and "
                           "every other one only label transitions", "use 'system async' "
                           "for rendezvous and buffered channels")

    def run(self) -> list[ModelError]:
        procs: list[s.Process] = []
        for item in self.model.items:
            if isinstance(item, s.VarDecl):
                self.decls.declare(self.globals, self.decls.var_symbol(item, self.env, None))
            elif isinstance(item, s.ChannelDecl):
                self.decls.declare(self.globals, self.decls.channel_symbol(item, self.env, None))
            elif isinstance(item, s.Process):
                sym = Symbol("process", item.name, item)
                if item.name in self.globals:
                    self.decls.declare(self.globals, sym)
                else:
                    self.globals[item.name] = sym
                    procs.append(item)
            elif isinstance(item, s.LtlProperty):
                self.p.warning(name_span(item.pos, item.name), "ltl-not-analysed",
                               f"LTL property '{item.name}' is parsed but not analysed")
            else:
                raise ValueError(f"check_model needs an expanded model; found "
                                 f"{type(item).__name__} (call dve.expand_model first)")
        # Scopes of all processes first: P.s and P->v may name a process declared later.
        for proc in procs:
            self.scopes[proc.name] = self.process_decls(proc)
        for proc in procs:
            self.process_body(self.scopes[proc.name])
        self.channels()
        self.cost_resources()
        self.system()
        return self.p.items


def _dedupe(problems: list[ModelError]) -> list[ModelError]:
    """Drop repeats: each instance of a template reports the template's problems again."""
    seen: set[tuple] = set()
    out = []
    for p in problems:
        key = (p.sort_key(), p.severity, p.message)
        if key not in seen:
            seen.add(key)
            out.append(p)
    return out


def check_model(model: s.Model) -> tuple[ModelError, ...]:
    """Check an expanded model; raise on errors, return the warnings.

    Parameters
    ----------
    model : dve.syntax.Model
        An expanded model (:func:`dve.expand_model`): only variable, channel, process and LTL
        property items.

    Returns
    -------
    tuple of ModelError
        The warnings (``severity == 'warning'``), sorted by position; empty when there are none.

    Raises
    ------
    ModelErrors
        When any check finds an error; it holds every error and warning found, sorted by position.
    ValueError
        When ``model`` still holds templates, instances, loops, ``if`` blocks or macros.

    See Also
    --------
    dve.load_model : read, parse, expand and check in one call.

    Examples
    --------
    >>> from dve.parser import parse_model
    >>> text = '''
    ... channel c;
    ... process P { state a; init a; trans a -> a { sync c!1; }; }
    ... system async;'''
    >>> [w.code for w in check_model(parse_model(text))]
    ['unpaired-sync']
    """
    problems = _dedupe(_Checker(model).run())
    if any(p.severity == "error" for p in problems):
        raise ModelErrors(problems)
    return tuple(sorted(problems, key=ModelError.sort_key))
