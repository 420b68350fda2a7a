"""Hand-built syntax trees for tests that must not depend on the parser."""

from __future__ import annotations

from dve import syntax as S


def n(x):
    return S.IntLit(x) if isinstance(x, int) else S.Name(x)


def tr(src, dst, guard=None, sync=None, effects=(), cost=None, time=None):
    return S.Transition(S.StateRef(src), S.StateRef(dst),
                        guard=() if guard is None else (guard,), sync=sync,
                        effects=tuple(S.Assign(t, v) for t, v in effects),
                        costs=() if cost is None else (S.Cost("cost", n(cost)),),
                        time=None if time is None else n(time))


def proc(name, states, transitions, decls=(), init=None, commit=()):
    return S.Process(name, tuple(decls), tuple(S.StateDecl(s) for s in states),
                     S.StateRef(init or states[0]), commit=tuple(S.StateRef(c) for c in commit),
                     transitions=tuple(transitions))


def client_server(k: int) -> S.Model:
    """The client/server model of ``k`` clients (the benchmark family's cs_k) as a syntax tree."""
    items = [S.ChannelDecl("reqL"), S.ChannelDecl("reqH")]
    items += [S.ChannelDecl(f"rep{i}") for i in range(1, k + 1)]
    server = [
        tr("idle", "work", sync=S.Sync("reqL", "?", (S.Name("who"),)),
           effects=[(S.Name("typ"), n(0))], time=0),
        tr("idle", "work", sync=S.Sync("reqH", "?", (S.Name("who"),)),
           effects=[(S.Name("typ"), n(1))], time=0),
        tr("work", "reply", guard=S.Binary("==", n("typ"), n(0)), cost=1, time=1),
        tr("work", "reply", guard=S.Binary("==", n("typ"), n(1)), cost=9, time=6),
    ]
    server += [tr("reply", "idle", guard=S.Binary("==", n("who"), n(i)),
                  sync=S.Sync(f"rep{i}", "!"), effects=[(S.Name("who"), n(0)),
                                                        (S.Name("typ"), n(0))], time=0)
               for i in range(1, k + 1)]
    items.append(proc("Server", ["idle", "work", "reply"], server,
                      decls=[S.VarDecl("byte", "who"), S.VarDecl("byte", "typ")]))
    for i in range(1, k + 1):
        items.append(proc(f"Client{i}", ["think", "ready", "wait", "post"], [
            tr("think", "ready", cost=0, time=4),
            tr("ready", "wait", sync=S.Sync("reqL", "!", (n(i),)), cost=1, time=1),
            tr("ready", "wait", sync=S.Sync("reqH", "!", (n(i),)), cost=1, time=1),
            tr("wait", "post", sync=S.Sync(f"rep{i}", "?"), cost=1, time=1),
            tr("post", "think", cost=2, time=2)]))
    return S.Model(tuple(items), S.SystemDecl("async"))
