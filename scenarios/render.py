"""The DVE model of a :class:`~scenarios.dsl.System`, built as an AST (never text): the
server process (one worker, a pool, or a tick of several admission steps), one process per
client from its scenario's automaton, and the policy's ranks (:mod:`scenarios.policy`). The
semantics and their invariants are described in :mod:`scenarios.dsl`.

>>> from scenarios import Scenario, Server, System, Think, Request
>>> u = Scenario("u", [Think(1), Request("r", 1)])
>>> m = ModelBuilder(System({u: 2}, server=Server())).build()
>>> [p.name for p in m.processes]
['server', 'u_1', 'u_2']
"""

from __future__ import annotations

from typing import Sequence

from dve import syntax as s
from dve.errors import ConfigurationError, SourcePos, synthetic_pos

from .automaton import Automaton, Tick, automaton, unique_names
from .policy import RANK, PolicyRendering
from .steps import MAX_BYTE, OCCUPANCY_RESOURCE, Request, Scenario

__all__ = ["ModelBuilder", "TIMER", "REQ"]

#: A client's local counter of the ticks spent in a Think (or, with no server, a Request).
TIMER = "timer"
#: The variable in which a client keeps the kind of its pending request (0: none).
REQ = "req"


class ModelBuilder(PolicyRendering):
    """Builds the model of one :class:`~scenarios.dsl.System` (which imports this module, so
    it is not named in annotations here); every node gets the same synthetic position."""

    def __init__(self, system) -> None:
        self.sys = system
        self.pos: SourcePos = synthetic_pos(f"<scenario {system.name}>")
        self.kinds = system.kinds()
        # clients: (number from 1, process name, scenario)
        self.clients: list[tuple[int, str, Scenario]] = []
        for sc, k in system.counts:
            for i in range(1, k + 1):
                self.clients.append((len(self.clients) + 1, f"{sc.name}_{i}", sc))
        # A kind's constant is its name in capitals, clear of the processes' names (request
        # 'a_1' beside scenario 'A' would name both A_1); the kinds' names differ in more
        # than case (System.kinds), so their capitals are distinct.
        procs = {p for _, p, _ in self.clients} | {"server"}
        uppers = {r.name.upper() for r in self.kinds}
        self.kind_const: dict[str, str] = {}
        for r in self.kinds:
            name = r.name.upper()
            if name in procs:
                while name in procs or name in uppers or name in self.kind_const.values():
                    name += "_"
            self.kind_const[r.name] = name
        self.server = system.server
        self.workers = system.server.workers if system.server else 0
        # Several workers form a pool (server_pool): the names of its constants and of the
        # admission variable, clear of the request kinds' constants.
        kinds = set(self.kind_const.values())

        def clear(name: str) -> str:
            while name in kinds:
                name += "_"
            return name

        self.n_workers, self.busy, self.served, self.adm = (
            clear("WORKERS"), clear("BUSY"), clear("SERVED"), clear("adm"))
        # Several admissions per tick (server_phased): a tick is ``A + 1`` steps, the server's
        # ``A`` admission steps (``phase`` 1..A, the K-th writing ``admK``) and one step in
        # which everybody moves (``phase`` 0); charges are multiplied by ``A + 1`` (``mult``).
        self.admissions = system.server.admissions if system.server else 0
        self.phased = self.admissions > 1
        self.mult = self.admissions + 1 if self.phased else 1
        self.phase, self.nbusy = clear("phase"), clear("nbusy")
        self.adm_k = {k: clear(f"adm{k}") for k in range(1, self.admissions + 1)}
        # A server policy other than 'any' (scenarios.policy): ranks of arrival.
        self.setup_policy(clear)

    # -- expression helpers -----------------------------------------------------------------
    def lit(self, v: int) -> s.Expr:
        return s.IntLit(v, pos=self.pos)

    def var(self, name: str) -> s.Expr:
        return s.Name(name, pos=self.pos)

    def bin(self, op: str, a: s.Expr, b: s.Expr) -> s.Expr:
        return s.Binary(op, a, b, pos=self.pos)

    def all_of(self, xs: Sequence[s.Expr]) -> s.Expr:
        out = xs[0]
        for x in xs[1:]:
            out = self.bin("and", out, x)
        return out

    def any_of(self, xs: Sequence[s.Expr]) -> s.Expr:
        out = xs[0]
        for x in xs[1:]:
            out = self.bin("or", out, x)
        return out

    def assign(self, name: str, value: s.Expr) -> s.Assign:
        return s.Assign(s.Name(name, pos=self.pos), value, pos=self.pos)

    def cost(self, amount: s.Expr) -> tuple[s.Cost, ...]:
        """The charges of one tick of work: ``amount`` to the cost resource and, with a
        server, ``mult`` (one busy worker, on a tick of ``mult`` steps) to the occupancy
        resource. Every tick of service charges both, a request of cost 0 included."""
        costs = (s.Cost(self.sys.cost_resource, amount, named=True, pos=self.pos),)
        if self.server is not None:
            costs += (s.Cost(OCCUPANCY_RESOURCE, self.lit(self.mult), named=True,
                             pos=self.pos),)
        return costs

    def ref(self, name: str) -> s.StateRef:
        return s.StateRef(name, pos=self.pos)

    def trans(self, a: str, b: str, guard: Sequence[s.Expr] = (), effects: Sequence[s.Assign] = (),
              costs: Sequence[s.Cost] = (), time: int | None = None) -> s.Transition:
        return s.Transition(self.ref(a), self.ref(b), guard=tuple(guard), effects=tuple(effects),
                            costs=tuple(costs), pos=self.pos,
                            time=None if time is None else self.lit(time))

    def byte(self, name: str, init: int | None = None, const: bool = False) -> s.VarDecl:
        return s.VarDecl("byte", name, init=None if init is None else self.lit(init),
                         const=const, pos=self.pos)

    def req(self, proc: str) -> s.Expr:
        """The client's request, read by the server: ``proc->req``. Each client keeps it in a
        variable of its own, so the clients of one scenario are copies of one another up to
        their number (the symmetry reduction of docs/algorithms.md sees them as instances)."""
        return s.Remote(s.ProcRef(proc, pos=self.pos), REQ, pos=self.pos)

    # -- the model --------------------------------------------------------------------------
    def build(self) -> s.Model:
        items: list[s.Item] = []
        self.autos: dict[str, Automaton] = {}
        for _, _, sc in self.clients:
            if sc.name not in self.autos:
                self.autos[sc.name] = automaton(sc, self.server is not None)
        if self.server is not None:
            items += [self.byte(self.kind_const[r.name], i + 1, const=True)
                      for i, r in enumerate(self.kinds)]
            if self.workers == 1:
                items.append(self.byte("done"))
            else:
                nk = len(self.kinds)
                if nk + 2 > MAX_BYTE:
                    raise ConfigurationError(f"at most {MAX_BYTE - 2} kinds of request with "
                                             f"several workers, not {nk}")
                items += [self.byte(self.n_workers, self.workers, const=True),
                          self.byte(self.busy, nk + 1, const=True),
                          self.byte(self.served, nk + 2, const=True)]
                if self.phased:
                    items += [self.byte(self.phase), self.byte(self.nbusy)]
                    items += [self.byte(self.adm_k[k]) for k in self.adm_k]
                else:
                    items.append(self.byte(self.adm))
            items += self.policy_globals()
        # (the server of a policy reads the clients' states by name: known before it is built)
        self.global_names = {d.name for d in items if isinstance(d, s.VarDecl)}
        if self.server is not None:
            items.append(self.server_process())
        for j, proc, sc in self.clients:
            items.append(self.client_process(j, proc, self.autos[sc.name], sc))
        return s.Model(tuple(items), s.SystemDecl(self.sys.composition, pos=self.pos),
                       pos=self.pos)

    def state_names(self, sc: Scenario) -> list[str]:
        """The names of the states of a client of ``sc`` (its automaton's, made distinct and
        clear of the variables it sees)."""
        taken = self.global_names | {TIMER, REQ} | ({RANK} if self.ranked else set())
        return unique_names(self.autos[sc.name].states, frozenset(taken))

    def client_process(self, j: int, proc: str, auto: Automaton, sc: Scenario) -> s.Process:
        taken = self.global_names | {TIMER, REQ} | ({RANK} if self.ranked else set())
        names = self.state_names(sc)
        req = REQ
        done_any = self.bin("==", self.var("done"), self.lit(j))
        done_none = self.bin("!=", self.var("done"), self.lit(j))
        trans = []
        v, n = self.var, self.lit
        extra: dict[str, str] = {}      # states of a pooled request's service
        self.taken = taken
        timer = False
        for a, b, t in auto.edges:
            src, dst = names[a], names[b]
            if t.kind in ("think", "work"):
                costs = (self.cost(n(t.request.cost)) if t.kind == "work" and t.request
                         and t.request.cost else ())
                last = n(t.count - 1)
                if t.phase == "once":
                    trans.append(self.trans(src, dst, costs=costs))
                elif t.phase == "loop":  # timer < k - 1: one more tick here
                    trans.append(self.trans(
                        src, dst, guard=[self.bin("<", v(TIMER), last)],
                        effects=[self.assign(TIMER, self.bin("+", v(TIMER), n(1)))],
                        costs=costs))
                else:  # timer == k - 1: the last tick, on to the next step
                    trans.append(self.trans(
                        src, dst, guard=[self.bin("==", v(TIMER), last)],
                        effects=[self.assign(TIMER, n(0))], costs=costs))
            elif t.kind == "send":
                assert t.request is not None
                trans.append(self.trans(src, dst, effects=[
                    self.assign(req, self.var(self.kind_const[t.request.name]))]))
            elif self.phased:
                timer |= self.pooled_phased(j, src, dst, t, names, trans, extra)
            elif self.workers > 1:
                timer |= self.pooled(j, src, dst, t, names, trans, extra)
            elif t.kind == "wait":
                trans.append(self.trans(src, dst, guard=[done_none]))
            else:  # reply
                trans.append(self.trans(src, dst, guard=[done_any],
                                        effects=[self.assign(req, self.lit(0))]))
        decls = ((self.byte(TIMER),) if auto.uses_timer or timer else ()) + \
            ((self.byte(REQ),) if self.server is not None else ()) + \
            ((self.byte(RANK),) if self.ranked else ())
        trans = self.ranked_client(j, sc, trans)
        if self.phased:
            trans = self.phased_client(trans, names + list(extra.values()))
        return s.Process(proc, decls, tuple(s.StateDecl(x, pos=self.pos)
                                            for x in names + list(extra.values())),
                         self.ref(names[auto.init]), transitions=tuple(trans), pos=self.pos)

    def pooled(self, j: int, src: str, dst: str, t: Tick, names: list[str],
               trans: list[s.Transition], extra: dict[str, str]) -> bool:
        """The wait and reply ticks of client ``j`` on a pool of workers (see
        :meth:`server_pool`): the client learns from ``adm`` that it was admitted on the tick
        before, and its request's other ticks of service are its own, charged to the server's
        resource (``req`` is ``BUSY`` while more are to come, ``SERVED`` on the tick of the
        reply). True when the client's ``timer`` counts them."""
        v, n = self.var, self.lit
        r = t.request
        assert r is not None
        admitted = self.bin("==", v(self.adm), n(j))
        costs = self.cost(n(r.cost))
        if t.kind == "wait":
            trans.append(self.trans(src, src, guard=[self.bin("!=", v(self.adm), n(j))]))
            if r.service == 1:
                return False
            # (the admission's tick was the one before: the first tick here is the second)
            return self.serve_request(src, admitted, costs, r.service - 2, names, trans, extra)
        # the reply: straight from waiting when one tick of service was all, else after it
        if r.service == 1:
            trans.append(self.trans(src, dst, guard=[admitted],
                                    effects=[self.assign(REQ, n(0))]))
        else:
            trans.append(self.trans(self.fresh(f"{src}_served", names, extra), dst,
                                    effects=[self.assign(REQ, n(0))]))
        return False

    def fresh(self, base: str, names: list[str], extra: dict[str, str]) -> str:
        """The client's state named after ``base`` (``base`` itself, or with a suffix when
        that is taken), made once: ``extra`` maps the bases to the names given."""
        if base not in extra:
            name, k = base, 1
            while name in names or name in extra.values() or name in self.taken:
                k += 1
                name = f"{base}_{k}"
            extra[base] = name
        return extra[base]

    def server_process(self) -> s.Process:
        if self.workers == 1:
            decls = (self.byte("cur"), self.byte("left"), self.byte("cpt"))
            trans = self.server_single()
        elif self.phased:
            decls, trans = (), self.server_phased()
        else:
            decls, trans = (), self.server_pool()
        return s.Process("server", decls, (s.StateDecl("serve", pos=self.pos),),
                         self.ref("serve"), transitions=tuple(trans), pos=self.pos)

    def admissible(self, j: int, proc: str) -> s.Expr:
        """Client ``j`` has a request waiting that the worker has not just finished (one
        worker; the server keeps the client it serves in ``cur`` and never admits it twice)."""
        return self.all_of([self.bin("!=", self.req(proc), self.lit(0)),
                            self.bin("!=", self.var("done"), self.lit(j))])

    def requests_of(self, sc: Scenario) -> tuple[Request, ...]:
        """The requests a client of ``sc`` can send: those of its automaton's ``send`` ticks
        (a request only in ``Loop(..., times=0)`` is never sent; the server's transitions
        about it would read state the client does not keep, such as its ``timer``)."""
        sent = {t.request for _, _, t in self.autos[sc.name].edges if t.kind == "send"}
        return tuple(r for r in sc.requests() if r in sent)     # (in the scenario's order)

    def server_single(self) -> list[s.Transition]:
        """One worker: a transition per case, readable as it stands."""
        cur, left, cpt, done = "cur", "left", "cpt", "done"
        v, n = self.var, self.lit
        free = self.bin("==", v(left), n(0))
        out = [
            # serving, more ticks to go
            self.trans("serve", "serve", guard=[self.bin(">", v(left), n(1))],
                       effects=self.keep_groups()
                       + [self.assign(left, self.bin("-", v(left), n(1)))],
                       costs=self.cost(v(cpt))),
            # serving the last tick: tell the client
            self.trans("serve", "serve", guard=[self.bin("==", v(left), n(1))],
                       effects=self.keep_groups()
                       + [self.assign(done, v(cur)), self.assign(cur, n(0)),
                          self.assign(left, n(0)), self.assign(cpt, n(0))],
                       costs=self.cost(v(cpt))),
            # free and nobody waiting
            self.trans("serve", "serve", guard=[self.all_of([free, s.Unary(
                "not", self.any_of([self.admissible(j, p) for j, p, _ in self.clients]),
                pos=self.pos)])], effects=self.keep_groups() + [self.assign(done, n(0))]),
        ]
        for j, proc, sc in self.clients:
            for r in self.requests_of(sc):
                last = r.service == 1
                guard = self.all_of([free, self.bin("==", self.req(proc),
                                                    v(self.kind_const[r.name])),
                                     self.bin("!=", v(done), n(j))])
                effects = ([self.assign(done, n(j))] if last else
                           [self.assign(cur, n(j)), self.assign(left, n(r.service - 1)),
                            self.assign(cpt, n(r.cost)), self.assign(done, n(0))])
                if self.ranked:
                    guard = self.bin("and", guard, self.best(j, proc, sc))
                    effects = self.admit_groups(j, proc) + effects
                out.append(self.trans("serve", "serve", guard=[guard], effects=effects,
                                      costs=self.cost(n(r.cost))))
        return out

    def holds_worker(self, j: int, proc: str, sc: Scenario) -> s.Expr:
        """Client ``j``'s request holds a worker during this tick: admitted on the tick before
        (``adm == j``) with more than one tick of service, or ``BUSY``."""
        v, n = self.var, self.lit
        held = self.bin("==", self.req(proc), v(self.busy))
        long = [self.bin("==", self.req(proc), v(self.kind_const[r.name]))
                for r in self.requests_of(sc) if r.service > 1]
        if not long:
            return held
        return self.bin("or", self.bin("and", self.bin("==", v(self.adm), n(j)),
                                       self.any_of(long)), held)

    def server_pool(self) -> list[s.Transition]:
        """Several workers, as a pool: the server admits at most one waiting request per tick
        while fewer than ``WORKERS`` requests are in service, serving its first tick (and
        charging it) and telling the client in ``adm``; the client serves the request's other
        ticks itself (:meth:`pooled`). No worker has a name, so the clients of a scenario stay
        the only processes that renaming permutes, and the workers need no reduction of their
        own: which worker serves a request never shows in the state.

        Any free worker taking the request is the same run up to naming the workers, so the
        loads are those of a server whose lowest free worker takes each request."""
        v, n = self.var, self.lit
        in_service = self.holds_worker(*self.clients[0])
        for j, proc, sc in self.clients[1:]:
            in_service = self.bin("+", in_service, self.holds_worker(j, proc, sc))
        free = self.bin("<", in_service, v(self.n_workers))

        def waiting(j: int, proc: str) -> s.Expr:
            return self.all_of([self.bin("!=", self.req(proc), n(0)),
                                self.bin("<", self.req(proc), v(self.busy)),
                                self.bin("!=", v(self.adm), n(j))])

        idle = s.Unary("not", self.all_of([free, self.any_of(
            [waiting(j, p) for j, p, _ in self.clients])]), pos=self.pos)
        out = [self.trans("serve", "serve", guard=[idle],
                          effects=self.keep_groups() + [self.assign(self.adm, n(0))])]
        for j, proc, sc in self.clients:
            for r in self.requests_of(sc):
                guard = self.all_of([free, self.bin("==", self.req(proc),
                                                    v(self.kind_const[r.name])),
                                     self.bin("!=", v(self.adm), n(j))])
                effects = [self.assign(self.adm, n(j))]
                if self.ranked:
                    guard = self.bin("and", guard, self.best(j, proc, sc))
                    effects = self.admit_groups(j, proc) + effects
                out.append(self.trans("serve", "serve", guard=[guard], effects=effects,
                                      costs=self.cost(n(r.cost))))
        return out

    # -- several admissions per tick: a tick of A + 1 steps -----------------------------------
    #
    # Server(workers=W, admissions=A), A > 1. Invariants, in every reachable state:
    # (1) ``phase`` is 0 before the step in which every process moves (the tick proper) and
    #     K (1..A) before the server's K-th admission step of the tick; the server alone
    #     writes it, going 0, 1, ..., A, 0, ... whatever else happens, so every tick is
    #     exactly A + 1 steps and every cycle of the state graph has A + 1 steps per tick.
    # (2) During the admission steps nobody but the server moves (each client takes its
    #     self-loop guarded ``phase != 0``). ``admK`` (K < the phase) is the client the
    #     server admitted at step K of this tick, 0 when it admitted none; all ``admK`` are
    #     0 at phase 1 (the move step clears them after the clients have read them).
    # (3) The requests in service during a tick are the clients whose ``req`` is ``BUSY``
    #     (admitted on an earlier tick, more ticks to serve: their number is ``nbusy``,
    #     which the server writes at the move step before the tick) and those admitted
    #     in this tick's admission steps. Step K admits only while ``nbusy + K <= WORKERS``
    #     and only a client that is waiting and not already in some ``admI``, I < K: so at
    #     most ``min(A, WORKERS - nbusy, waiting)`` distinct requests are admitted per tick,
    #     never more than ``WORKERS`` are in service, and, as the server admits whenever
    #     the guard lets it, exactly that many (it is work conserving, and it may take any
    #     waiting client at each step: the worst case is a maximum over every choice).
    # (4) Costs: only a client's own move steps charge, ``(A + 1) * cost`` for each tick
    #     of service of its request (its admission tick included: at the move step of that
    #     tick the client reads its number in some ``admK``). So a move step costs
    #     ``(A + 1) x`` the work of its tick, the admission steps cost 0, and a cycle's mean
    #     cost per step is exactly the work per tick: the load.
    # (5) Time: the admission steps take no time (``time 0`` on the server's admission
    #     transitions and the clients' self-loops), the move step the default 1, so a run's
    #     time is its number of ticks (the cycle ratio is ``A + 1`` times the load).

    def busy_next(self) -> s.Expr:
        """At the move step: the number of clients whose ``req`` will be ``BUSY`` on the next
        tick, i.e. whose request still has a tick of service then: ``BUSY`` now with more
        than one tick left (``timer > 1``), or admitted on this tick (in some ``admK``) for
        two ticks or more."""
        v, n = self.var, self.lit
        ks = range(1, self.admissions + 1)
        terms = []
        for j, p, sc in self.clients:
            long = [r for r in self.requests_of(sc) if r.service > 1]
            if not long:
                continue            # never BUSY
            timer = s.Remote(s.ProcRef(p, pos=self.pos), TIMER, pos=self.pos)
            terms.append(self.bin("or", self.all_of([
                self.bin("==", self.req(p), v(self.busy)), self.bin(">", timer, n(1))]),
                self.all_of([self.any_of([self.bin("==", v(self.adm_k[k]), n(j)) for k in ks]),
                             self.any_of([self.bin("==", self.req(p), v(self.kind_const[r.name]))
                                          for r in long])])))
        if not terms:
            return n(0)
        out = terms[0]
        for x in terms[1:]:
            out = self.bin("+", out, x)
        return out

    def server_phased(self) -> list[s.Transition]:
        """The server of a tick of ``A + 1`` steps (invariants (1)-(3) above): at ``phase``
        0 it counts the requests ``BUSY`` on the next tick into ``nbusy`` (:meth:`busy_next`:
        one sum over the clients, written once, which every admission step reads), clears
        the ``admK`` and moves on; at step ``K`` it admits one waiting
        client not yet admitted this tick while ``nbusy + K <= WORKERS``, or idles when it
        may not or nobody waits, in no time (invariant (5)). It charges nothing (the clients
        do)."""
        v, n = self.var, self.lit
        A = self.admissions
        ph, busy = self.phase, v(self.nbusy)
        out = [self.trans("serve", "serve", guard=[self.bin("==", v(ph), n(0))],
                          effects=[self.assign(ph, n(1)), self.assign(self.nbusy, self.busy_next())]
                          + [self.assign(self.adm_k[k], n(0)) for k in range(1, A + 1)])]
        for k in range(1, A + 1):
            at = self.bin("==", v(ph), n(k))
            nxt = self.assign(ph, n(k + 1 if k < A else 0))
            free = self.bin("<=", self.bin("+", busy, n(k)), v(self.n_workers))

            def fresh(j: int) -> list[s.Expr]:
                return [self.bin("!=", v(self.adm_k[i]), n(j)) for i in range(1, k)]

            waiting = [self.all_of([self.bin("!=", self.req(p), n(0)),
                                    self.bin("<", self.req(p), v(self.busy))] + fresh(j))
                       for j, p, _ in self.clients]
            out.append(self.trans("serve", "serve", guard=[self.bin("and", at, s.Unary(
                "not", self.all_of([free, self.any_of(waiting)]), pos=self.pos))],
                effects=[nxt], time=0))
            for j, proc, sc in self.clients:
                for r in self.requests_of(sc):
                    guard = self.all_of([at, free, self.bin("==", self.req(proc),
                                                            v(self.kind_const[r.name]))]
                                        + fresh(j))
                    out.append(self.trans("serve", "serve", guard=[guard], time=0,
                                          effects=[self.assign(self.adm_k[k], n(j)), nxt]))
        return out

    def pooled_phased(self, j: int, src: str, dst: str, t: Tick, names: list[str],
                      trans: list[s.Transition], extra: dict[str, str]) -> bool:
        """The wait and reply ticks of client ``j`` when the server admits several requests
        per tick (:meth:`server_phased`): at the move step of a tick the client reads whether
        one of this tick's ``admK`` holds its number; if so it serves its request's first
        tick then and there, and its other ticks on the following ones (``req`` is ``BUSY``
        while more are to come, ``SERVED`` before the reply), each charged ``(A + 1) *
        cost`` on its own transition. True when the client's ``timer`` counts them."""
        v, n = self.var, self.lit
        r = t.request
        assert r is not None
        if t.kind == "reply":
            trans.append(self.trans(self.fresh(f"{src}_served", names, extra), dst,
                                    effects=[self.assign(REQ, n(0))]))
            return False
        ks = range(1, self.admissions + 1)
        admitted = self.any_of([self.bin("==", v(self.adm_k[k]), n(j)) for k in ks])
        costs = self.cost(n(self.mult * r.cost))
        trans.append(self.trans(src, src, guard=[self.all_of(
            [self.bin("!=", v(self.adm_k[k]), n(j)) for k in ks])]))
        return self.serve_request(src, admitted, costs, r.service - 1, names, trans, extra)

    def serve_request(self, src: str, admitted: s.Expr, costs, ticks: int, names: list[str],
               trans: list[s.Transition], extra: dict[str, str]) -> bool:
        """The tick on which client ``src`` serves, once ``admitted``, the first tick of its
        request this state sees, then ``ticks`` more (:meth:`service_ticks`), into
        ``<src>_served`` (``req = SERVED``); appended to ``trans``. True when the client's
        ``timer`` counts the ticks after the first."""
        fin = self.fresh(f"{src}_served", names, extra)
        if ticks == 0:
            trans.append(self.trans(src, fin, guard=[admitted], costs=costs,
                                    effects=[self.assign(REQ, self.var(self.served))]))
            return False
        svc = self.fresh(f"{src}_served_more", names, extra)
        trans += self.service_ticks(src, svc, fin, admitted, costs, ticks)
        return True

    def service_ticks(self, src: str, svc: str, fin: str, admitted: s.Expr, costs,
                      ticks: int) -> list[s.Transition]:
        """A request's service after admission, from the client's waiting state ``src``:
        into ``svc`` (``req = BUSY``, ``timer = ticks``) once ``admitted`` holds, a tick in
        ``svc`` while ``timer > 1``, then to ``fin`` (``req = SERVED``); each charging
        ``costs``. Both renderings of the server (one admission per tick or several) end a
        request so; they differ in the admission and in how many ticks are left for this."""
        v, n = self.var, self.lit
        return [
            self.trans(src, svc, guard=[admitted], costs=costs,
                       effects=[self.assign(REQ, v(self.busy)), self.assign(TIMER, n(ticks))]),
            self.trans(svc, svc, guard=[self.bin(">", v(TIMER), n(1))], costs=costs,
                       effects=[self.assign(TIMER, self.bin("-", v(TIMER), n(1)))]),
            self.trans(svc, fin, guard=[self.bin("==", v(TIMER), n(1))], costs=costs,
                       effects=[self.assign(TIMER, n(0)), self.assign(REQ, v(self.served))]),
        ]

    def phased_client(self, trans: list[s.Transition], states: list[str]) -> list[s.Transition]:
        """A client's transitions in a tick of ``A + 1`` steps: each one only at the move
        step (``phase == 0``), and a self-loop taking no time in every state for the
        admission steps."""
        v, n = self.var, self.lit
        move = self.bin("==", v(self.phase), n(0))
        out = [s.Transition(tr.src, tr.dst, guard=(self.all_of([move, *tr.guard]),),
                            effects=tr.effects, costs=tr.costs, pos=self.pos) for tr in trans]
        hold = self.bin("!=", v(self.phase), n(0))
        return out + [self.trans(x, x, guard=[hold], time=0) for x in states]
