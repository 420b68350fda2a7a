"""One generated kernel per model: the successors of a chunk of states, one GPU thread a state.

The array form of the generator (:meth:`statespace.next_state.AsyncGenerator.successors`) runs
one array operation per operator of every guard and effect: on a GPU each is a kernel launch,
a few thousand per breadth-first chunk whatever its size. This module writes the model's whole
successor function as one CUDA C++ kernel instead (as GPUexplore does), from the same walk over
the syntax as the array form (:class:`statespace.evaluate.Evaluator`'s ``c_guard``,
``c_effect`` and ``c_charge``) and the C twins of DVE's arithmetic
(:data:`dve.arith.C_HELPERS`). Each thread loads its state's slots, and for every action of the
model in id order tests the control states, the guards (faults included) and, in the second of
two passes, runs the effects, packs the successor's key and writes one output row. The first
pass only counts each state's successors; an exclusive sum of the counts gives every state its
rows in the output, so the output is deterministic: sources ascending, each state's successors
in action order. The explorer sorts and numbers them exactly as it does the array form's, so
the graph is the same array for array (tests compare them).

Scope: ``system async`` models without a property process (``system sync`` and property
products keep the array form), with at most :data:`MAX_SLOTS` slots. Rendezvous, buffered
channels, arrays, committed states and the legacy error rules are covered.

The kernel is compiled by the array module's ``RawModule`` (CuPy's NVRTC, which caches the
binary on disk by source); tests run the same source with the host's C++ compiler behind a
prelude that defines CUDA's built-ins.

Examples
--------
>>> import dve
>>> from statespace import compile_model
>>> cm = compile_model(dve.load_model(
...     "byte x; process P { state a; init a; trans a -> a { guard x < 3; effect x = x + 1; }; }"
...     " system async;"))
>>> src = kernel_source(cm, charges=False)
>>> "dvecost_successors" in src and "dve_add(" in src
True
>>> kernel_source(compile_model(dve.load_model(
...     "process P { state a; init a; trans a -> a {}; } system sync;")), charges=False) is None
True
"""

from __future__ import annotations

import numpy as np

from dve import arith

from .evaluate import Evaluator
from .model import CompiledModel
from .store import KeyLayout

__all__ = ["MAX_SLOTS", "SuccessorKernel", "kernel_source"]

#: Models with more slots keep the array form (each thread holds two copies of its state).
MAX_SLOTS = 1024
#: Generated sources longer than this keep the array form (the compile time grows with it).
MAX_SOURCE = 4 << 20
#: Threads per block of the two launches.
THREADS = 256

_U = np.uint64


def kernel_source(cm: CompiledModel, *, charges: bool) -> str | None:
    """The CUDA C++ source of ``cm``'s successor kernel, or None outside its scope (see the
    module docstring). ``charges``: the kernel computes each step's costs and time (else the
    caller takes them from a table by action)."""
    if (cm.system != "async" or cm.property_process is not None or not cm.slots
            or len(cm.slots) > MAX_SLOTS):
        return None
    ev = Evaluator(cm, np)
    lay = KeyLayout.for_model(cm)
    W, NS, R = lay.n_words, len(cm.slots), len(cm.resources)
    err_key = lay.pack(np.array(cm.error_state, dtype=np.int32).reshape(-1, 1), np)[0]
    body: list[str] = []
    tables: dict[str, tuple[int, ...]] = {}
    procs = cm.system_processes
    commit = [p for p in procs if p.commit]
    if commit:
        # Committed states: where some process is in one, only processes in one may move.
        body.append("int anyc = 0;")
        for p in commit:
            test = " || ".join(f"s[{p.slot}] == {c}" for c in sorted(p.commit))
            body.append(f"int com{p.index} = {test}; anyc = anyc || com{p.index};")

    def allowed(p) -> str:
        if not commit:
            return ""
        return f" && (!anyc{f' || com{p.index}' if p.commit else ''})"

    size = 0   # characters so far: a model past MAX_SOURCE is given up on early
    for ai, a in enumerate(cm.actions):
        if size > MAX_SOURCE:
            return None
        mark = len(body)
        ts = [cm.transitions[t] for t in a.transitions]
        test = " && ".join(f"s[{cm.processes[t.process].slot}] == {t.src}"
                           + allowed(cm.processes[t.process]) for t in ts)
        body.append(f"if ({test}) {{  // action {ai}")
        body.append("int f = 0, ok = 1, fg = 0;")
        for k, t in enumerate(ts):
            # Each partner's guard on its own (both evaluated: their faults add up).
            g, en = ev.c_guard(t.id, f"g{k}_")
            tables.update(g.tables)
            body.append("if (ok) {")
            body.extend(g.lines)
            body.append(f"ok = {en} || f; fg |= f; f = 0; }}")
        body.append("if (ok) {")
        body.append("if (write) {")
        body.append("f = fg;")
        body.append("int n[NS];")
        body.append("for (int j = 0; j < NS; ++j) n[j] = s[j];")
        g = ev.c_effect(a.transitions, "e_")
        tables.update(g.tables)
        body.extend(g.lines)
        body.append("const i64 e = o + c;")
        if charges:
            parts = []
            for k, t in enumerate(ts):
                gc, costs, tm = ev.c_charge(t.id, f"c{k}_")
                tables.update(gc.tables)
                body.extend(gc.lines)
                parts.append((costs, tm))
            for r in range(R):
                # A rendezvous charges the sum of the partners' costs (checked) ...
                acc = parts[0][0][r]
                for costs, _ in parts[1:]:
                    acc = f"dve_add64({acc}, {costs[r]}, f)"
                body.append(f"i64 cost{r} = {acc};")
            # ... and the larger of their times.
            tm = parts[0][1]
            for _, tq in parts[1:]:
                tm = f"({tm} > {tq} ? {tm} : {tq})"
            body.append(f"i64 tim = {tm};")
        if a.error:
            body.append("f = 1;")
        for w in range(W):
            body.append(f"u64 k{w} = K[i * W + {w}];")
        for j in sorted(g.written):
            body.append(f"k{lay.word[j]} += (u64)((i64)n[{j}] - (i64)s[{j}]) << {lay.shift[j]};")
        for t in ts:
            slot = cm.processes[t.process].slot
            if t.dst != t.src:
                d = ((t.dst - t.src) << lay.shift[slot]) % (1 << 64)
                body.append(f"k{lay.word[slot]} += {d}ULL;")
        body.append("if (f) {")
        body.extend(f"k{w} = {int(err_key[w])}ULL;" for w in range(W))
        body.append("}")
        body.append(f"o_src[e] = i; o_act[e] = {ai}; o_err[e] = f != 0;")
        body.extend(f"o_key[e * W + {w}] = k{w};" for w in range(W))
        if charges:
            body.extend(f"o_cost[{r} * M + e] = cost{r};" for r in range(R))
            body.append("o_time[e] = tim;")
        body.append("}")   # write
        body.append("++c;")
        body.append("}")   # ok
        body.append("}")   # control states
        size += sum(len(line) + 9 for line in body[mark:])
    decls = "".join(f"__device__ const int {name}[{len(v)}] = {{{', '.join(map(str, v))}}};\n"
                    for name, v in sorted(tables.items()))
    src = (arith.C_HELPERS + f"#define NS {NS}\n#define W {W}\n" + decls + _KERNEL_HEAD
           + "\n".join("        " + ln for ln in body) + _KERNEL_TAIL)
    return src if len(src) <= MAX_SOURCE else None


_KERNEL_HEAD = r"""
// Pass 0 (write == 0): cnt[i] = the number of successors of state i. Pass 1: cnt[i] is the
// first output row of state i (an exclusive sum of pass 0's counts); its successors are
// written there in action order.
extern "C" __global__ void dvecost_successors(
    const int* __restrict__ X, const u64* __restrict__ K, const i64 F, const i64 write,
    i64* cnt, i64* o_src, int* o_act, u64* o_key, bool* o_err, i64* o_cost, i64* o_time,
    const i64 M)
{
    for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < F;
         i += (i64)gridDim.x * blockDim.x) {
        int s[NS];
        for (int j = 0; j < NS; ++j) s[j] = X[j * F + i];
        const i64 o = write ? cnt[i] : 0;
        i64 c = 0;
"""

_KERNEL_TAIL = r"""
        if (!write) cnt[i] = c;
    }
}
"""


class SuccessorKernel:
    """The successor kernel of one model, compiled on first use for an array module.

    Parameters
    ----------
    cm : CompiledModel
    charges : bool
        Compute costs and times in the kernel (else :meth:`successors` returns none).

    Raises
    ------
    ValueError
        ``cm`` is outside the kernel's scope (:func:`kernel_source` gives None); test with
        :meth:`for_model`.
    """

    def __init__(self, cm: CompiledModel, *, charges: bool) -> None:
        src = kernel_source(cm, charges=charges)
        if src is None:
            raise ValueError(f"{cm.name}: outside the successor kernel's scope")
        self.source, self.charges = src, charges
        self.n_words = KeyLayout.for_model(cm).n_words
        self.resources = cm.resources
        self._functions: dict[int, object] = {}

    @classmethod
    def for_model(cls, cm: CompiledModel, *, charges: bool) -> SuccessorKernel | None:
        """The kernel of ``cm``, or None outside its scope."""
        try:
            return cls(cm, charges=charges)
        except ValueError:
            return None

    def function(self, xp):
        """The compiled kernel for array module ``xp`` (``RawModule``, compiled once)."""
        fn = self._functions.get(id(xp))
        if fn is None:
            module = xp.RawModule(code=self.source, options=("--std=c++17",))
            fn = self._functions[id(xp)] = module.get_function("dvecost_successors")
        return fn

    def successors(self, xp, X, keys):
        """The successors of the states ``X`` (slots x rows, int32) with keys ``keys``:
        ``(src, act, keys, err, costs, time)`` as the explorer's ``_collect`` returns them,
        sources ascending and each source's steps in action order (``costs`` and ``time``
        None without ``charges``)."""
        fn = self.function(xp)
        F = int(X.shape[1])
        X = xp.ascontiguousarray(X, dtype=np.int32)
        keys = xp.ascontiguousarray(keys, dtype=_U)
        grid = ((F + THREADS - 1) // THREADS,)
        cnt = xp.zeros(max(F, 1), np.int64)
        i1, b1 = xp.zeros(1, np.int32), xp.zeros(1, bool)
        l1, u1 = xp.zeros(1, np.int64), xp.zeros(1, _U)
        if F:
            fn(grid, (THREADS,), (X, keys, np.int64(F), np.int64(0), cnt, l1, i1, u1, b1,
                                  l1, l1, np.int64(0)))
        cnt = cnt[:F]
        off = xp.cumsum(cnt)
        m = int(off[-1]) if F else 0
        off -= cnt
        src = xp.empty(m, np.int64)
        act = xp.empty(m, np.int32)
        out_key = xp.empty((m, self.n_words), _U)
        err = xp.empty(m, bool)
        R = len(self.resources)
        cost = xp.empty((R, m), np.int64) if self.charges else l1
        tim = xp.empty(m, np.int64) if self.charges else l1
        if m:
            fn(grid, (THREADS,), (X, keys, np.int64(F), np.int64(1), off, src, act, out_key,
                                  err, cost, tim, np.int64(m)))
        if not self.charges:
            return src, act, out_key, err, None, None
        return src, act, out_key, err, {r: cost[k] for k, r in enumerate(self.resources)}, tim
