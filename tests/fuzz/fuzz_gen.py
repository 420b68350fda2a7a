"""Seed-deterministic input generators for the fuzzing harness.

Every generator takes a :class:`random.Random` and returns a :class:`Case`: the files to write,
the command line to run (``{file}`` stands for the first file's path), and what the harness can
check beyond the generic rules (an :mod:`fuzz_oracle` expectation, or ``None``).

Categories (the names used in the figures of docs/reliability.md):

- ``beem-mutant``: a BEEM model with 1-3 mutations (token deletion, duplication, swap,
  insertion, number replacement by boundary values, character deletion/insertion, clause or
  transition reordering, truncation) through ``check``, ``explore`` or ``analyze``.
- ``model``: a small valid model written from a description that :func:`fuzz_oracle.explore`
  evaluates independently (``system async`` with rendezvous channels and arrays, or ``system
  sync``), with cost and time, through ``analyze`` (mean or ratio, max or min); ``model-big``:
  the same with huge literals, cost products near the 64-bit limit and negative times.
  Generated models may carry typed FIFO channels, committed states and an ``input``
  constant; ``model-sym``: instances of one template (symmetry reduction).
- ``model-mutant``: a mutated generated model or bundled example.
- ``graph-text`` / ``graph-npz``: small graphs with boundary costs and times through
  ``cycle``, and ``graph-bad``: malformed edge lists and ``.npz`` files.
- ``stress``: hand-made hostile inputs (long blanks, huge literals, deep nesting, wide sums,
  doubling macros, large arrays) that must finish within the time bound.

The harness (:mod:`fuzz_harness`) adds ``saved-graph``, ``limits`` and ``signal``, which are
built from these generators and the BEEM files.
"""

from __future__ import annotations

import io
import random
import re
from dataclasses import dataclass, field

import numpy as np

from fuzz_oracle import Model, Proc, Trans, instantiate

#: Values substituted for numbers: boundaries of byte, int (16-bit), the 32-bit evaluation
#: width, int64 and beyond.
BOUNDARY = [0, 1, -1, 2, 7, 255, 256, -256, 32767, 32768, -32768, -32769, 65535, 65536,
            2**31 - 1, 2**31, -2**31, 2**32, 2**53 + 1, 2**62, 2**63 - 1, 2**63, -2**63,
            2**64, 10**20, 10**40]


@dataclass
class Case:
    category: str
    seed: str
    files: dict  # name -> str | bytes
    argv: list  # "{file}" is replaced by the path of the first file
    expect: tuple | None = None  # fuzz_oracle.cycle_value() result, for value checks
    hazard: bool = False  # values near the limits: exit 2/3 allowed instead of a value
    counts: tuple | None = None  # (states, transitions) the tool must report on exit 0
    note: str = ""
    extra: dict = field(default_factory=dict)


# ------------------------------------------------------------------------------- mutations
TOKEN = re.compile(r"\s+|//[^\n]*|/\*.*?\*/|[A-Za-z_][A-Za-z0-9_]*|\d+|->|==|!=|<=|>=|&&|"
                   r"\|\||<<|>>|\S", re.S)
VOCAB = ["process", "state", "init", "trans", "guard", "sync", "effect", "cost", "time",
         "system", "async", "sync", "channel", "byte", "int", "const", "commit", "accept",
         "assert", "{", "}", "(", ")", "[", "]", ";", ",", "->", "=", "==", "!", "?", ".",
         "+", "-", "*", "/", "%", "and", "or", "not", "imply", "true", "false", "x", "s",
         "cost 5;", "time 0;", "cost -3;", "time -1;", "expression", "input", "for", "key",
         "\t", "\r", "\n", "\r\n", "\x00", "\u00e9", "\\\n", "/*", "*/", "//", "0x10"]


def mutate(text: str, rng: random.Random, k: int | None = None) -> tuple[str, str]:
    """Apply ``k`` (1-3) random mutations; returns the new text and a short description."""
    done = []
    for _ in range(k or rng.randint(1, 3)):
        toks = TOKEN.findall(text)
        if not toks:
            toks = [""]
        kind = rng.choice(["del", "dup", "swap", "ins", "num", "num", "chardel", "charins",
                           "reorder", "truncate", "ident"])
        i = rng.randrange(len(toks))
        if kind == "del":
            toks[i] = ""
        elif kind == "dup":
            toks[i] = toks[i] * 2 if toks[i].isspace() else toks[i] + " " + toks[i]
        elif kind == "swap" and i + 2 < len(toks):
            toks[i], toks[i + 2] = toks[i + 2], toks[i]
        elif kind == "ins":
            toks.insert(i, " " + rng.choice(VOCAB) + " ")
        elif kind == "num":
            nums = [j for j, t in enumerate(toks) if t.isdigit()]
            if nums:
                toks[rng.choice(nums)] = str(rng.choice(BOUNDARY))
        elif kind == "ident":
            ids = [j for j, t in enumerate(toks) if t[:1].isalpha()]
            if ids:
                toks[rng.choice(ids)] = toks[rng.choice(ids)]
        elif kind == "reorder":
            text2 = _reorder(text, rng)
            if text2 is not None:
                text = text2
                done.append(kind)
                continue
        joined = "".join(toks)
        if kind == "chardel" and joined:
            j = rng.randrange(len(joined))
            joined = joined[:j] + joined[j + 1:]
        elif kind == "charins":
            j = rng.randrange(len(joined) + 1)
            joined = joined[:j] + rng.choice(["\t", "\r", "\x00", "\u00e9", "\ufeff", "$", "#",
                                              "'", '"', "@", "\\", "\x1b"]) + joined[j:]
        elif kind == "truncate" and joined:
            joined = joined[:rng.randrange(len(joined))]
        text = joined
        done.append(kind)
    return text, "+".join(done)


def _reorder(text, rng):
    """Swap two clauses inside one transition body, or two transitions of one process."""
    bodies = list(re.finditer(r"\{([^{}]*;[^{}]*)\}", text))
    if bodies and rng.random() < 0.6:
        b = rng.choice(bodies)
        parts = [p for p in b.group(1).split(";")]
        if len(parts) > 2:
            i, j = rng.sample(range(len(parts) - 1), 2)
            parts[i], parts[j] = parts[j], parts[i]
            return text[:b.start(1)] + ";".join(parts) + text[b.end(1):]
    trans = list(re.finditer(r"[A-Za-z_]\w*\s*->\s*[A-Za-z_]\w*\s*\{[^{}]*\}", text))
    if len(trans) >= 2:
        a, b = sorted(rng.sample(trans, 2), key=lambda m: m.start())
        return (text[:a.start()] + b.group(0) + text[a.end():b.start()] + a.group(0)
                + text[b.end():])
    return None


# ------------------------------------------------------------------------- generated models
def _lit(v):
    return ("lit", v)


def gen_model(rng: random.Random, big: bool = False) -> Model:
    """A small model: 1-3 processes of 2-3 states, byte/int variables and arrays, async with
    rendezvous channels or sync; cost and time expressions over the variables. With ``big``,
    literals and cost products reach the 32-bit, int64 and beyond, and times may be negative."""
    system = "sync" if rng.random() < 0.3 else "async"
    nproc = rng.randint(1, 3)
    glob = []
    if system == "async":
        if rng.random() < 0.6:
            glob.append(("byte", "g0", None, [rng.randint(0, 3)]))
        if rng.random() < 0.4:
            glob.append(("int", "h0", None, [rng.choice([0, -2, 5, 32767 if big else 7])]))
        if rng.random() < 0.4:
            glob.append(("byte", "ga", 3, [rng.randint(0, 2) for _ in range(rng.randint(0, 3))]))
    channels = []
    if system == "async" and nproc > 1:
        channels = [("c0", rng.random() < 0.6)] + ([("c1", False)] if rng.random() < 0.4 else [])
    if system == "async" and rng.random() < 0.3:  # a typed FIFO buffer
        channels.append(("q0", True, rng.choice(["byte", "int"]), rng.randint(1, 3)))
    inputs = []
    if rng.random() < 0.2:  # an `input` constant, set with -D on the command line
        inputs = [(rng.choice(["input byte", "input int"]), "N", None, [rng.randint(0, 4)])]
        glob = inputs + glob
    procs = []
    for k in range(nproc):
        local = [("byte", f"x{k}", None, [rng.randint(0, 2)])]
        if rng.random() < 0.5:
            local.append(("int", f"y{k}", None,
                          [rng.choice([0, -3, 4, 32767, -32768] if big else [0, -3, 4])]))
        if rng.random() < 0.3:
            local.append(("byte", f"a{k}", 2, [1]))
        states = [f"s{j}" for j in range(rng.randint(2, 3))]
        readable = [d for d in glob] + local if system == "async" else inputs + local
        writable = [d for d in readable if not d[0].startswith("input")]
        trans = []
        for _ in range(rng.randint(2, 4)):
            trans.append(_gen_trans(rng, states, readable, writable, channels, local, big))
        # Make it likely that there is a cycle: a way back to the initial state, and often an
        # unguarded ring through every state (then no process ever blocks).
        ring = list(zip(states, states[1:] + states[:1]))
        for src, dst in ring if rng.random() < 0.6 else ring[-1:]:
            trans.append(Trans(src, dst, cost=_gen_expr(rng, readable, 1, big, True),
                               time=_lit(rng.choice([0, 1, 2])) if rng.random() < 0.8 else None))
        rng.shuffle(trans)
        commit = [rng.choice(states[1:])] if system == "async" and rng.random() < 0.15 else []
        procs.append(Proc(f"P{k}", states, states[0], trans, local, commit))
    if rng.random() < 0.2:  # named resources: `cost cpu: E, net: E;` instead of `cost E;`
        for p in procs:
            for t in p.trans:
                if t.cost is not None:
                    t.cost = {"cpu": t.cost} if rng.random() < 0.5 else \
                        {"cpu": t.cost, "net": _gen_expr(rng, [], 0, big, True)}
        if not resources(Model(system, glob, channels, procs)):
            procs[0].trans[0].cost = {"net": _lit(1)}
    return Model(system, glob, channels, procs)


def resources(model: Model) -> list[str]:
    """The named cost resources a model uses (empty for plain ``cost E;``)."""
    return sorted({r for p in model.procs for t in p.trans if isinstance(t.cost, dict)
                   for r in t.cost})


def gen_sym_model(rng: random.Random) -> Model:
    """Instances of one template (``process C(key i)`` and ``for (i : 1 .. K)``), with or
    without a server process: the input of symmetry reduction. The key appears in some costs
    and sent values (then the instances are not interchangeable and the tool must see that)."""
    base = gen_model(rng, False)
    system = "async" if rng.random() < 0.8 else "sync"
    glob = base.globals if system == "async" else []
    channels = [("c0", rng.random() < 0.5)] if system == "async" else []
    local = [("byte", "x", None, [rng.randint(0, 1)])]
    if rng.random() < 0.4:
        local.append(("int", "y", None, [rng.choice([0, 2])]))
    states = [f"s{j}" for j in range(rng.randint(2, 3))]
    readable = (list(glob) if system == "async" else []) + local
    writable = [d for d in readable if not d[0].startswith("input")]
    trans = [_gen_trans(rng, states, readable, writable, channels, local, False)
             for _ in range(rng.randint(1, 3))]
    for src, dst in zip(states, states[1:] + states[:1]):
        trans.append(Trans(src, dst, cost=_gen_expr(rng, readable, 1, False, True),
                           time=_lit(rng.choice([0, 1, 2]))))
    if rng.random() < 0.3:
        t = rng.choice(trans)
        t.cost = ("bin", "*", ("key",), _lit(rng.randint(1, 3)))
    rng.shuffle(trans)
    tpl = Proc("C", states, states[0], trans, local)
    keys = list(range(1, rng.randint(2, 4) + 1))
    procs = []
    if system == "async" and channels and rng.random() < 0.7:
        # A server on the same channel, receiving (or sending) what the clients send.
        name, valued = channels[0]
        own = [("byte", "v", None, [0])]
        recv = Trans("a", "b", sync=(name, "?", ("var", "v") if valued else None),
                     cost=_gen_expr(rng, own, 1, False, True), time=_lit(rng.randint(0, 2)))
        back = Trans("b", "a", cost=_lit(rng.randint(0, 3)), time=_lit(rng.randint(1, 2)))
        procs.append(Proc("S", ["a", "b"], "a", [recv, back], own))
    procs += [instantiate(tpl, k) for k in keys]
    return Model(system, glob, channels, procs, template=(tpl, keys))


def _gen_expr(rng, vars_, depth, big, wide=False):
    r = rng.random()
    if depth <= 0 or r < 0.35:
        if vars_ and rng.random() < 0.55:
            d = rng.choice(vars_)
            if d[2]:
                return ("idx", d[1], _index(rng, [v for v in vars_ if not v[2]]))
            return ("var", d[1])
        if big and rng.random() < 0.3:
            # Mostly literals that fit the width (64 bits in cost and time, 32 elsewhere), so
            # that the model runs into overflow at run time; some that do not (exit 2).
            lim = (1 << 63) - 1 if wide else (1 << 31) - 1
            if rng.random() < 0.1:
                lim = (1 << 64) if wide else (1 << 33)
            return _lit(rng.choice([v for v in BOUNDARY if 0 <= v <= lim] + [10**15] * wide))
        return _lit(rng.randint(0, 9))
    op = rng.choice(["+", "-", "*", "*", "/", "%", "&", "|", "^"] if big or wide else
                    ["+", "-", "*", "/", "%", "+", "-", "&", "|", "^"])
    right = _gen_expr(rng, vars_, depth - 1, big, wide)
    if op in "/%" and not _has_var(right):
        # A divisor that is constant is made a non-zero literal: `check` refuses a step that
        # always divides by zero (it would always reach the error state).
        right = _lit(rng.randint(1, 9))
    return ("bin", op, _gen_expr(rng, vars_, depth - 1, big, wide), right)


def _has_var(e) -> bool:
    """Whether ``e`` reads a variable (the input ``N`` is a constant to the static check)."""
    return (e[0] in ("var", "idx") and e[1] != "N") or any(isinstance(x, tuple) and _has_var(x)
                                                          for x in e[1:])


def _index(rng, scalars):
    """An array index that depends on a variable (a constant one out of range is refused
    statically; a variable one may still fault at run time: the error state)."""
    scalars = [d for d in scalars if d[1] != "N"]
    if not scalars:
        return _lit(rng.randint(0, 1))
    x = ("var", rng.choice(scalars)[1])
    return x if rng.random() < 0.5 else ("bin", "%", ("bin", "+", x, _lit(rng.randint(0, 2))),
                                         _lit(rng.randint(2, 4)))


def _gen_guard(rng, vars_, big):
    op = rng.choice(["<", "<=", ">", ">=", "==", "!="])
    g = ("bin", op, _gen_expr(rng, vars_, 1, big), _gen_expr(rng, vars_, 0, big))
    r = rng.random()
    if r < 0.15:
        # `and`/`or` short-circuit: the right operand may fault only where it is not evaluated.
        v = rng.choice(vars_) if vars_ else None
        if v is not None and not v[2]:
            x = ("var", v[1])
            return ("bin", "and", ("bin", "!=", x, _lit(0)),
                    ("bin", ">", ("bin", "/", _lit(10), x), _lit(1)))
    if r < 0.25:
        return ("not", g)
    if r < 0.35:
        return ("bin", rng.choice(["and", "or", "imply"]), g, _gen_guard(rng, vars_, big))
    return g


def _gen_trans(rng, states, readable, writable, channels, local, big):
    src, dst = rng.choice(states), rng.choice(states)
    t = Trans(src, dst)
    if rng.random() < 0.6:
        t.guard = _gen_guard(rng, readable, big)
    scalars = [d for d in writable if not d[2]]
    arrays = [d for d in writable if d[2]]
    if channels and rng.random() < 0.5:
        name, valued = rng.choice(channels)[:2]
        own = [d for d in local if not d[2]]  # a received value goes to a local variable
        if rng.random() < 0.5:
            t.sync = (name, "!", _gen_expr(rng, readable, 1, big) if valued else None)
        else:
            t.sync = (name, "?", ("var", rng.choice(own)[1]) if valued else None)
    for _ in range(rng.choice([0, 1, 1, 2])):
        if arrays and rng.random() < 0.3:
            a = rng.choice(arrays)
            target = ("idx", a[1], _index(rng, [d for d in readable if not d[2]]))
        elif scalars:
            target = ("var", rng.choice(scalars)[1])
        else:
            continue
        r = rng.random()
        if r < 0.5:  # stays in range by construction
            e = ("bin", "%", ("bin", "+", ("var", target[1]) if target[0] == "var" else _lit(1),
                              _lit(rng.randint(1, 3))), _lit(rng.randint(2, 5)))
        else:  # may leave the variable's range or fault: the run goes to the error state
            e = _gen_expr(rng, readable, 2, big)
            if not big and not _has_var(e):  # a constant out of range is refused statically
                e = _lit(rng.randint(0, 9))
        t.effects.append((target, e))
    if rng.random() < 0.85:
        t.cost = _gen_expr(rng, readable, rng.choice([0, 1, 2, 3]) if big else 1, big, True)
    if rng.random() < 0.7:
        lo = -1 if big and rng.random() < 0.15 else 0  # a constant negative time: exit 2
        t.time = _lit(rng.randint(lo, 3)) if rng.random() < 0.7 else \
            ("bin", "%", _gen_expr(rng, [d for d in readable if d[0] == "byte" and not d[2]],
                                   0, False), _lit(3))
    return t


def render(model: Model) -> str:
    """The model as DVE text, every compound expression in parentheses."""
    out = []

    def decl(d, ind=""):
        typ, name, size, init = d
        if size:
            ini = f" = {{{', '.join(map(str, init))}}}" if init else ""
            return f"{ind}{typ} {name}[{size}]{ini};"
        return f"{ind}{typ} {name} = {init[0]};"

    for d in model.globals:
        out.append(decl(d))
    for ch in model.channels:
        out.append(f"channel {{{ch[2]}}} {ch[0]}[{ch[3]}];" if len(ch) == 4 else
                   f"channel {ch[0]};")
    procs = list(model.procs)
    if model.template is not None:
        tpl, keys = model.template
        procs = procs[:len(procs) - len(keys)] + [tpl]
    for p in procs:
        header = f"{p.name}(key i)" if model.template and p is model.template[0] else p.name
        out.append(f"process {header} {{")
        for d in p.local:
            out.append(decl(d, "    "))
        out.append(f"    state {', '.join(p.states)};")
        out.append(f"    init {p.init};")
        if p.commit:
            out.append(f"    commit {', '.join(p.commit)};")
        out.append("    trans")
        body = []
        for t in p.trans:
            parts = []
            if t.guard is not None:
                parts.append(f"guard {expr(t.guard)};")
            if t.sync is not None:
                ch, d, v = t.sync
                parts.append(f"sync {ch}{d}{'' if v is None else expr(v)};")
            if t.effects:
                parts.append("effect " + ", ".join(f"{expr(a)} = {expr(e)}"
                                                   for a, e in t.effects) + ";")
            if isinstance(t.cost, dict):
                parts.append("cost " + ", ".join(f"{r}: {expr(e)}" for r, e in t.cost.items())
                             + ";")
            elif t.cost is not None:
                parts.append(f"cost {expr(t.cost)};")
            if t.time is not None:
                parts.append(f"time {expr(t.time)};")
            body.append(f"        {t.src} -> {t.dst} {{ {' '.join(parts)} }}")
        out.append(",\n".join(body) + ";")
        out.append("}")
    if model.template is not None:
        out.append(f"for (i : {keys[0]} .. {keys[-1]}) {{ process {model.template[0].name}(i); }}")
    out.append(f"system {model.system};")
    return "\n".join(out) + "\n"


def expr(e) -> str:
    k = e[0]
    if k == "key":
        return "i"
    if k == "lit":
        return str(e[1]) if e[1] >= 0 else f"(-{-e[1]})"
    if k == "var":
        return e[1]
    if k == "idx":
        return f"{e[1]}[{expr(e[2])}]"
    if k == "not":
        return f"(not {expr(e[1])})"
    if k == "neg":
        return f"(-{expr(e[1])})"
    return f"({expr(e[2])} {e[1]} {expr(e[3])})"


# --------------------------------------------------------------------------------- graphs
def gen_graph(rng: random.Random, big: bool):
    """``(n, edges)``: a small graph, often with cycles; boundary values when ``big``."""
    n = rng.randint(1, 9)
    m = rng.randint(0, 3 * n)
    edges = []
    for _ in range(m):
        u, v = rng.randrange(n), rng.randrange(n)
        if big and rng.random() < 0.4:
            c = rng.choice(BOUNDARY)
        else:
            c = rng.randint(-5, 9)
        t = rng.choice([0, 1, 1, 2, 3]) if not (big and rng.random() < 0.2) else \
            rng.choice([-1, 2**31, 2**62, 2**63 - 1, 2**63])
        edges.append((u, v, c, t))
    if n and rng.random() < 0.7:  # a cycle through every vertex
        for u in range(n):
            edges.append((u, (u + 1) % n, rng.randint(-3, 6), rng.randint(0, 2)))
    rng.shuffle(edges)
    return n, edges


def edge_list_text(n, edges) -> str:
    return f"{n} {len(edges)}\n" + "".join(f"{u} {v} {c} {t}\n" for u, v, c, t in edges)


def npz_bytes(arrays: dict) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def csr(n, edges):
    order = sorted(range(len(edges)), key=lambda i: edges[i][0])
    indptr = [0] * (n + 1)
    for u, *_ in edges:
        indptr[u + 1] += 1
    for i in range(n):
        indptr[i + 1] += indptr[i]
    return indptr, [edges[i] for i in order]


def _fits(v, dtype):
    info = np.iinfo(dtype)
    return info.min <= v <= info.max


def npz_graph(rng, n, edges):
    """The graph as a ``.npz`` of CSR arrays, with a random integer dtype for cost and time;
    returns the bytes and the edges as the file holds them (None if a value does not fit)."""
    indptr, es = csr(n, edges)
    dt = rng.choice([np.int64, np.int64, np.int32, np.uint64, np.int16, np.uint8])
    if not all(_fits(e[2], dt) and _fits(e[3], dt) for e in es):
        dt = np.int64
        if not all(_fits(e[2], dt) and _fits(e[3], dt) for e in es):
            if all(_fits(e[2], np.uint64) and _fits(e[3], np.uint64) for e in es):
                dt = np.uint64
            else:
                return None, None
    arrays = {"indptr": np.array(indptr, dtype=np.int64),
              "indices": np.array([e[1] for e in es], dtype=rng.choice([np.int64, np.int32])),
              "cost": np.array([e[2] for e in es], dtype=dt),
              "time": np.array([e[3] for e in es], dtype=dt)}
    return npz_bytes(arrays), es


BAD_TEXT = [
    "", "\n", "3\n", "1 1\n0 0 1\n", "1 1\n0 0 1 1 1\n", "1 1\n0 0 x 1\n", "1 1\n0 0 1.5 1\n",
    "1 1\n0 0 1e3 1\n", "1 2\n0 0 1 1\n", "1 0\n0 0 1 1\n", "2 1\n0 2 1 1\n", "2 1\n-1 0 1 1\n",
    "-1 0\n", "1000000000000 0\n", "1000000000000 1\n0 0 1 1\n", "9223372036854775807 1\n0 0 1 1\n",
    "9223372036854775808 1\n0 0 1 1\n", "1 1\n0 0 99999999999999999999 1\n",
    "1 1\n0 0 -9223372036854775808 1\n", "1 1\n0 0 -9223372036854775809 1\n",
    "1 1\n0 0 9223372036854775807 1\n", "1 1\n0 0 1 -1\n", "1 1\n0 0 1 0\n",
    "1 1\n0 0 1 99999999999999999999\n", "1 1 0 0 5 1", "1 1\r\n0 0 5 1\r\n", "1 1\r0 0 5 1\r",
    "\ufeff1 1\n0 0 5 1\n", "1 1\n0 0 5 1\n# comment\n", "1 1\n0\x000 5 1\n", "\x00\x01\x02",
    "1 1\n0 0 0x10 1\n", "1 1\n0 0 +5 1\n", "2 2\n0 1 " + "9" * 5000 + " 1\n1 0 1 1\n",
    "2 3\n0 1 9223372036854775807 1\n1 0 9223372036854775807 1\n0 0 1 1\n",
]


def bad_npz(rng) -> bytes:
    ok = {"indptr": np.array([0, 1, 2]), "indices": np.array([1, 0]),
          "cost": np.array([3, 4]), "time": np.array([1, 1])}
    k = rng.randrange(17)
    a = dict(ok)
    if k == 0:
        return b""
    if k == 16:  # the zip entries marked encrypted (one bit of each central directory entry)
        data = bytearray(npz_bytes(ok))
        i = data.find(b"PK\x01\x02")
        while i >= 0:
            data[i + 8] |= 1
            i = data.find(b"PK\x01\x02", i + 4)
        return bytes(data)
    if k == 1:
        return npz_bytes(ok)[: rng.randrange(1, 200)]
    if k == 2:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 300)))
    if k == 3:
        del a[rng.choice(list(a))]
    elif k == 4:
        a["indptr"] = np.array([0, 2, 1])
    elif k == 5:
        a["indices"] = np.array([1, 5])
    elif k == 6:
        a["cost"] = np.array([3.5, 4.0])
    elif k == 7:
        a["cost"] = np.array([2**63 + 5, 1], dtype=np.uint64)
    elif k == 8:
        a["indptr"] = np.array([0, 10**12, 2])
    elif k == 9:
        a["indptr"] = np.zeros(0, dtype=np.int64)
    elif k == 10:
        a["cost"] = np.array([[3, 4]])
    elif k == 11:
        a["cost"] = np.array(["a", "b"])
    elif k == 12:
        a["cost"] = np.array([-2**63, 5])
    elif k == 13:
        a["time"] = np.array([-1, 1])
    elif k == 14:
        a["indices"] = np.array([-1, 0])
    else:
        a["cost"] = np.array([1, 2, 3])
    return npz_bytes(a)


# ---------------------------------------------------------------------------------- stress
SIMPLE = "process P { byte x; state s; init s; trans s -> s { guard x < 3; cost 1; }; }\n" \
         "system async;\n"


def stress_cases():
    """Hand-made hostile inputs: ``[(name, text, argv)]``; each must end within the bound."""
    out = [
        ("blanks-then-bad-char", " " * 80_000 + "@\n", ["check"]),
        ("long-comment-unclosed", "/*" + "x" * 200_000, ["check"]),
        ("5000-digit-literal", "byte x = " + "9" * 5000 + ";\n" + SIMPLE, ["check"]),
        ("5000-digit-cost", SIMPLE.replace("cost 1", "cost " + "9" * 5000), ["analyze"]),
        ("deep-parens", "int x = " + "(" * 16_000 + "1" + ")" * 16_000 + ";\n" + SIMPLE,
         ["check"]),
        ("deep-not", "process P { state s; init s; trans s -> s { guard "
         + "not " * 5000 + "0; }; }\nsystem async;\n", ["analyze"]),
        ("flat-sum-1000", "process P { byte x; state s; init s; trans s -> s { cost "
         + " + ".join(["1"] * 1000) + "; }; }\nsystem async;\n", ["analyze"]),
        ("doubling-macros", "".join(
            f"expression m{i}(v) {{ m{i - 1}(v) + m{i - 1}(v) }}\n" if i else
            "expression m0(v) { v }\n" for i in range(20))
         + "process P { state s; init s; trans s -> s { cost m19(1); }; }\nsystem async;\n",
         ["analyze"]),
        ("byte-array-2e9", "byte a[2000000000];\n" + SIMPLE, ["check"]),
        ("byte-array-2e9-analyze", "byte a[2000000000];\n" + SIMPLE, ["analyze"]),
        ("byte-array-16000", "byte b[16000];\nprocess P { byte i; state s; init s; trans "
         "s -> s { guard i < 200; effect b[i] = 1, i = i + 1; }; }\nsystem async;\n",
         ["analyze"]),
        ("byte-array-65536", "byte buf[65536];\nbyte n;\nprocess Stack { state run; init run;"
         " trans run -> run { effect buf[n] = 1, n = n + 1; cost 1; }, run -> run { guard n > 0;"
         " effect n = n - 1, buf[n] = 0; cost 2; }; }\nsystem async;\n", ["analyze"]),
        ("chain-16000", "process P { int i; state s; init s; trans s -> s { guard i < 16000; "
         "effect i = i + 1; cost 1; }; }\nsystem async;\n", ["analyze"]),
        ("cost-1e15", "process P { state s; init s; trans s -> s { cost 1000000000000000; }; }"
         "\nsystem async;\n", ["analyze"]),
        ("cost-cube", "int x = 32767;\nprocess P { state s; init s; trans s -> s { cost x * x * "
         "x; }; }\nsystem async;\n", ["analyze"]),
        ("effect-2p32", "int x;\nprocess P { state s; init s; trans s -> s { effect x = "
         "4294967296; cost 1; }; }\nsystem async;\n", ["analyze"]),
        ("short-circuit", "const int N = 0;\nbyte x;\nprocess P { state s; init s; trans s -> s"
         " { guard N != 0 and x / N > 1; cost 1; }, s -> s { guard 1 or (1/0); cost 2; }; }\n"
         "system async;\n", ["analyze"]),
        ("cr-only", SIMPLE.replace("\n", "\r").replace("x < 3", "x < @"), ["check"]),
        ("max-states-0", SIMPLE, ["explore", "--max-states", "0"]),
        ("multi-file-5000-digits", "byte x = " + "9" * 5000 + ";\n" + SIMPLE, ["check"]),
        ("multi-file-binary", "\x00\x01\x02\xff" * 100, ["check"]),
        ("channel-2e9", "channel {byte, int} c[2000000000];\n" + SIMPLE, ["analyze"]),
        ("const-array-2e9", "const byte k[2000000000] = {1};\n" + SIMPLE, ["explore"]),
    ]
    return out
