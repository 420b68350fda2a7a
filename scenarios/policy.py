"""Server policies: which waiting request the server of a scenario model admits next.

``Server(policy=...)`` (:class:`scenarios.dsl.Server`) says how the server chooses among the
requests waiting when a worker is free:

- ``'any'`` (the default): any of them; the worst case takes the worst choice, and the model
  has no state for it (the rendering of :mod:`scenarios.dsl` as it always was);
- ``'fifo'``: first come, first served. Requests sent on the same tick go in the order of
  their scenarios in the system, then of their place in the scenario (the scenario's waiting
  states in the order the model lists them: the order in which its steps reach them);
- ``'priority'``: the waiting request of the scenario listed first in ``order`` (the system's
  scenarios that ``order`` does not name come after, in the system's order); within one
  scenario first come, first served, ties as for ``'fifo'``.

Clients in the same local state that sent on the same tick remain tied: they are
interchangeable (swapping them fixes the state), so whichever goes first the runs are the
same up to renaming them, with the same loads; the model leaves that choice free, which keeps
it invariant under renaming the clients of a scenario (the symmetry reduction stays exact).

The order of arrival is kept as *ranks* (:class:`PolicyRendering`): each client has a byte
``rank``, its group of arrival while it waits: 1 for the requests that came first among
those still waiting, 2 for the next tick's, and so on (0: not waiting, or sent on the tick
before and not ranked yet). The server keeps two bytes: ``ngroups``, how many groups wait,
and ``gone``, the group that emptied on the tick before (0: none). A client writes only its
own rank and the server only its two bytes (``system sync``: one writer per variable), and
ranks hold no client's number, so renaming clients permutes the ranks with the clients.

Invariants, in every reachable state ``s`` (a waiting client: its request sent and not yet
admitted; ``e(k)``, the *effective rank* of waiting client ``k``: ``rank - 1`` when ``gone``
is not 0 and ``rank > gone``, else ``rank``, and ``ngroups + 1`` when ``rank`` is 0):

1. the effective ranks of the waiting clients are exactly ``1..ngroups``, plus
   ``ngroups + 1`` for those that sent on the tick before (if any);
2. ``e(k) < e(m)`` exactly when ``k`` sent its request on an earlier tick than ``m``.

Each tick every waiting client sets its ``rank`` to ``e(k)`` (renumbered after the group
that emptied), the server admits the best waiting client by the policy (by effective rank,
then the tie rule), and it writes ``gone``: the effective rank of the client it admitted
when nobody else waiting shares it, else 0; and ``ngroups``: plus 1 when some client sent
on the tick before, minus 1 when a group emptied. A client leaving its waiting state sets
its rank to 0. Ranks stay below the number of clients, so they fit a byte.

Every run of a policy model is a run of the ``'any'`` model of the same system with these
bytes added (the policy only narrows the choice of the admission, and some waiting client is
always best, so the server still admits whenever a worker is free and a request waits):
no policy raises a load, and a bound proven for ``'any'`` holds for every policy
(docs/algorithms.md, "Server policies").

Examples
--------
>>> from scenarios import Scenario, Think, Request, Server, System
>>> from dve import format_model
>>> u = Scenario("u", [Think(1), Request("r", service=2)])
>>> m = System({u: 2}, server=Server(policy="fifo")).to_model()
>>> [d.name for d in m.globals]
['R', 'done', 'ngroups', 'gone']
>>> [d.name for d in m.processes[1].decls]
['req', 'rank']
"""

from __future__ import annotations

from dve import syntax as s

__all__ = ["POLICIES", "RANK", "PolicyRendering"]

#: The server policies, the default first.
POLICIES = ("any", "fifo", "priority")
#: A client's local byte: its group of arrival while its request waits (see the module).
RANK = "rank"


class PolicyRendering:
    """The parts of a scenario model that a server policy adds (the module docstring says
    what they keep): mixed into :mod:`scenarios.dsl`'s model builder, whose expression
    helpers (``var``, ``lit``, ``bin``, ``all_of``, ``any_of``, ``assign``, ``req``,
    ``trans``), clients and automata it uses. Nothing here runs for ``policy='any'``."""

    def setup_policy(self, clear) -> None:
        """Names and priorities; ``clear(name)`` keeps a generated name clear of the kinds'
        constants."""
        server = self.sys.server
        self.policy = server.policy if server is not None else "any"
        self.ranked = self.policy != "any"
        self.ngroups, self.gone = clear("ngroups"), clear("gone")
        names = [sc.name for sc in self.sys.scenarios]
        order = [x for x in (server.order if server is not None else ()) if x in names]
        order += [x for x in names if x not in order]
        # priority[scenario] (0 highest; all 0 for 'fifo'), place[scenario]: system order
        self.priority = {x: (order.index(x) if self.policy == "priority" else 0) for x in names}
        self.place = {x: i for i, x in enumerate(names)}
        self.memo_rank: dict = {}

    def policy_globals(self) -> list[s.VarDecl]:
        """``ngroups`` and ``gone``, written by the server only."""
        return [self.byte(self.ngroups), self.byte(self.gone)] if self.ranked else []

    # -- expressions ------------------------------------------------------------------------
    def effective(self, r: s.Expr) -> s.Expr:
        """The effective rank of a waiting client whose ``rank`` is ``r``:
        ``r - (gone != 0 and r > gone) + (r == 0) * (ngroups + 1)``."""
        v, n = self.var, self.lit
        down = self.bin("and", self.bin("!=", v(self.gone), n(0)),
                        self.bin(">", r, v(self.gone)))
        fresh = self.bin("*", self.bin("==", r, n(0)),
                         self.bin("+", v(self.ngroups), n(1)))
        return self.bin("+", self.bin("-", r, down), fresh)

    def rank_of(self, j: int, proc: str) -> tuple[s.Expr, s.Expr, s.Expr, s.Expr]:
        """``(waiting, rank, arrival, effective rank)`` of client ``j`` as the server reads
        them, built once per client (shared subtrees: the symmetry check normalises each
        once). ``arrival`` orders the waiting clients as their effective ranks do, without
        reading ``gone`` or ``ngroups``: ``rank``, or 256 when it is 0. (No waiting client
        has the rank ``gone``: that group emptied; so renumbering keeps every comparison
        between waiting clients, and the server may write ``gone`` before it reads them.)"""
        hit = self.memo_rank.get(j)
        if hit is None:
            v, n = self.var, self.lit
            if self.workers == 1:
                waiting = self.all_of([self.bin("!=", self.req(proc), n(0)),
                                       self.bin("!=", v("done"), n(j)),
                                       self.bin("!=", v("cur"), n(j))])
            else:
                waiting = self.all_of([self.bin("!=", self.req(proc), n(0)),
                                       self.bin("<", self.req(proc), v(self.busy)),
                                       self.bin("!=", v(self.adm), n(j))])
            r = s.Remote(s.ProcRef(proc, pos=self.pos), RANK, pos=self.pos)
            arrival = self.bin("+", r, self.bin("*", self.bin("==", r, n(0)), n(256)))
            hit = self.memo_rank[j] = (waiting, r, arrival, self.effective(r))
        return hit

    def wait_states(self, sc) -> list[str]:
        """The waiting states of a client of ``sc``, in the order the model lists them."""
        names = self.state_names(sc)
        auto = self.autos[sc.name]
        waits = sorted({a for a, _, t in auto.edges if t.kind == "wait"})
        return [names[a] for a in waits]

    def tie(self, proc: str, sc) -> s.Expr:
        """Which waiting state client ``proc`` is in, as its place in :meth:`wait_states`
        (1, 2, ...): the sum of ``proc.w * place``."""
        terms = [self.bin("*", s.StateTest(s.ProcRef(proc, pos=self.pos), w, pos=self.pos),
                          self.lit(i + 1))
                 for i, w in enumerate(self.wait_states(sc))]
        out = terms[0]
        for x in terms[1:]:
            out = self.bin("+", out, x)
        return out

    def best(self, j: int, proc: str, sc) -> s.Expr:
        """Client ``j`` (waiting) is the policy's choice: no waiting client goes before it."""
        _, _, aj, _ = self.rank_of(j, proc)
        terms = []
        for k, pk, sk in self.clients:
            if k == j or self.priority[sk.name] > self.priority[sc.name]:
                continue
            wk, _, ak, _ = self.rank_of(k, pk)
            if self.priority[sk.name] < self.priority[sc.name]:
                terms.append(s.Unary("not", wk, pos=self.pos))
                continue
            if sk.name != sc.name:
                # arrived on the same tick: the scenario listed first goes first
                before = self.bin("<=" if self.place[sk.name] < self.place[sc.name] else "<",
                                  ak, aj)
            elif len(self.wait_states(sc)) < 2:
                before = self.bin("<", ak, aj)
            else:
                before = self.bin("or", self.bin("<", ak, aj), self.bin("and", self.bin(
                    "==", ak, aj), self.bin("<", self.tie(pk, sk), self.tie(proc, sc))))
            terms.append(s.Unary("not", self.bin("and", wk, before), pos=self.pos))
        return self.all_of(terms) if terms else s.BoolLit(True, pos=self.pos)

    def arrived(self) -> s.Expr:
        """Some client sent a request on the tick before (waiting, rank 0): a new group."""
        return self.any_of([self.bin("and", w, self.bin("==", r, self.lit(0)))
                            for w, r, _, _ in (self.rank_of(j, p) for j, p, _ in self.clients)])

    # -- the server's and the clients' transitions ------------------------------------------
    # The server's bookkeeping comes first among its effects (DVE performs a transition's
    # effects in order): ``gone`` first (it reads ``ngroups``), then ``ngroups`` (it reads
    # ``cur`` and ``done`` through the waiting clients, and ranks by arrival, not ``gone``).
    def keep_groups(self) -> list[s.Assign]:
        """The server's bookkeeping on a tick it admits nobody: no group emptied; a new one
        if some client sent on the tick before."""
        if not self.ranked:
            return []
        return [self.assign(self.gone, self.lit(0)),
                self.assign(self.ngroups, self.bin("+", self.var(self.ngroups), self.arrived()))]

    def admit_groups(self, j: int, proc: str) -> list[s.Assign]:
        """The server's bookkeeping on admitting client ``j``: its group empties when nobody
        else waiting arrived with it."""
        _, _, aj, ej = self.rank_of(j, proc)
        others = [self.bin("and", w, self.bin("==", a, aj))
                  for k, p, _ in self.clients if k != j for w, _, a, _ in (self.rank_of(k, p),)]
        empties = (s.Unary("not", self.any_of(others), pos=self.pos) if others
                   else s.BoolLit(True, pos=self.pos))
        return [self.assign(self.gone, self.bin("*", empties, ej)),
                self.assign(self.ngroups, self.bin("-", self.bin(
                    "+", self.var(self.ngroups), self.arrived()), empties))]

    def ranked_client(self, j: int, sc, trans: list[s.Transition]) -> list[s.Transition]:
        """A client's transitions with its rank kept: a tick spent waiting sets it to the
        effective rank; a transition out of a waiting state sets it to 0. With one worker,
        a client keeps its waiting state while served (``server->cur`` is its number): its
        rank goes to 0 on the first such tick."""
        if not self.ranked:
            return trans
        waits = set(self.wait_states(sc))
        v, n = self.var, self.lit
        out = []
        for tr in trans:
            src, dst = tr.src.name, tr.dst.name
            if src not in waits:
                out.append(tr)
            elif src != dst:
                out.append(_with(tr, effects=tr.effects + (self.assign(RANK, n(0)),)))
            elif self.workers == 1:
                cur = s.Remote(s.ProcRef("server", pos=self.pos), "cur", pos=self.pos)
                out.append(_with(tr, guard=tr.guard + (self.bin("!=", cur, n(j)),),
                                 effects=tr.effects + (self.assign(RANK, self.effective(
                                     v(RANK))),)))
                out.append(self.trans(src, src, guard=[self.bin("==", cur, n(j))],
                                      effects=[self.assign(RANK, n(0))]))
            else:
                out.append(_with(tr, effects=tr.effects + (self.assign(
                    RANK, self.effective(v(RANK))),)))
        return out


def _with(tr: s.Transition, **changes) -> s.Transition:
    """``tr`` with some fields replaced (its position kept)."""
    fields = dict(src=tr.src, dst=tr.dst, guard=tr.guard, sync=tr.sync, effects=tr.effects,
                  costs=tr.costs, time=tr.time, pos=tr.pos)
    fields.update(changes)
    return s.Transition(**fields)
