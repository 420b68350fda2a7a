"""The generated successor kernel (statespace.kernel) against the array form and the oracle.

The kernel's CUDA source runs here on the CPU, compiled by the host's C++ compiler
(:mod:`kernel_emulator`); on the device the same source goes through NVRTC
(``test_explore_gpu.py``'s GPU tests then cover it). Three levels:

- one chunk: every state of a model expanded by the kernel and by the array form
  (``AsyncGenerator.successors``), the same successors, faults, keys, costs and times;
- whole graphs: ``build_state_graph`` on a stand-in device module whose ``RawModule`` is the
  host compiler equals the NumPy build array for array;
- random expressions in guards, effects, costs and times: the graph built through the kernel
  against the plain interpreter of ``ss_oracle.py``, which shares no code with either.
"""

from __future__ import annotations

import os
import warnings

import kernel_emulator
import numpy as np
import pytest
import ss_oracle
from device_stand_in import same_graph, stand_in
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ss_exprs import LEAVES32, LEAVES64, exprs
from ss_helpers import BEEM, ROOT
from ss_models import BUF, COMMIT2, RDV, WIDE_KEYS

import dve
from dve.errors import DvecostError
from statespace import build_state_graph, compile_model
from statespace.next_state import AsyncGenerator
from statespace.search import Placement
from statespace.kernel import SuccessorKernel, kernel_source
from statespace.store import KeyLayout

pytestmark = pytest.mark.skipif(kernel_emulator.compiler() is None, reason="no C++ compiler")

EXAMPLES = sorted((ROOT / "dvecost" / "examples").glob("*.dve"))
#: BEEM models of many shapes: buffered channels (brp, iprotocol), arrays at computed indices
#: (hanoi, lamport), commit states (driving_phils), rendezvous with values (firewire_link),
#: the error state (mcs).
BEEM_SAMPLE = ("brp.1", "driving_phils.1", "firewire_link.1", "hanoi.1", "iprotocol.1",
               "lamport.1", "leader_election.1", "mcs.1", "msmie.1", "public_subscribe.1")


def _module(monkeypatch):
    return stand_in(monkeypatch, kernels=True)


def _one_chunk(cm, fake, n_max=2000) -> int:
    """Expand the first ``n_max`` states of ``cm`` with the kernel and with the array form;
    assert they agree (faulting steps: the error key, charges unspecified); the edge count."""
    g = build_state_graph(cm)
    X = np.ascontiguousarray(g.states[:n_max].T.astype(np.int32))
    if 0 <= g.error_state < n_max:
        X[[p.slot for p in cm.processes], g.error_state] = -1   # as the explorer hides it
    keys = KeyLayout.for_model(cm).pack(X, np)
    gen = AsyncGenerator(cm)
    s = gen.successors(keys, X.copy())
    ref = (s.source, s.action, s.keys, s.error, s.costs, s.time)
    if ref[4] is None:   # constant charges: the search reads them from the action table
        ct, tt = gen.charge_table
        ref = (*ref[:4], {r: ct[k][ref[1]] for k, r in enumerate(cm.resources)}, tt[ref[1]])
    for charges in (True, False):
        got = SuccessorKernel(cm, charges=charges).successors(fake, X, keys)
        o1, o2 = np.lexsort((ref[1], ref[0])), np.lexsort((got[1], got[0]))
        assert np.array_equal(got[0], got[0][o2])   # sources ascending, actions in order
        assert np.array_equal(ref[0][o1], got[0][o2])
        assert np.array_equal(ref[1][o1], got[1][o2])
        err = ref[3][o1]
        assert np.array_equal(err, got[3][o2])
        assert np.array_equal(ref[2][o1][~err], got[2][o2][~err])
        assert (got[2][o2][err] == gen.error_key()[0]).all()
        if charges:
            for r in cm.resources:
                assert np.array_equal(ref[4][r][o1][~err], got[4][r][o2][~err]), r
            assert np.array_equal(ref[5][o1][~err], got[5][o2][~err])
        else:
            assert got[4] is None and got[5] is None
    return ref[0].shape[0]


def _in_scope(cm) -> bool:
    return kernel_source(cm, charges=True) is not None


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_examples_one_chunk(path, monkeypatch):
    cm = compile_model(dve.load_model(str(path)))
    if not _in_scope(cm):
        assert cm.system == "sync" or cm.property_process is not None
        pytest.skip("system sync: the array form only")
    assert _one_chunk(cm, _module(monkeypatch)) > 0


@pytest.mark.parametrize("name", BEEM_SAMPLE)
def test_beem_one_chunk(name, monkeypatch):
    path = BEEM / "models" / f"{name}.dve"
    if not path.exists():
        pytest.skip(f"{name} not in the BEEM copy (../shared/beem)")
    cm = compile_model(dve.load_model(str(path)))
    assert _in_scope(cm)
    assert _one_chunk(cm, _module(monkeypatch)) > 100


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_examples_whole_graph_through_the_kernel(path, monkeypatch):
    cm = compile_model(dve.load_model(str(path)))
    monkeypatch.setattr(Placement, "device_min_rows", 0)
    ref = build_state_graph(cm)
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # the kernel compiles: no fallback warning
        got = build_state_graph(cm, xp=_module(monkeypatch), chunk_size=7)
    same_graph(ref, got)


#: Both rendezvous partners assign one global: the legacy rule sends the step to the error state.
SAME_GLOBAL = """
byte g; channel c;
process P { state a, b; init a;
  trans a -> b { sync c!1; effect g = 1; }, b -> a { effect g = 0; }; }
process Q { state a; init a; trans a -> a { sync c?g; effect g = 2; }; }
system async;
"""


#: An index computed in 64 bits (in a cost) past 2**32: out of range, not wrapped to a[0].
WIDE_INDEX = """
int x = 1; int a[3];
process P { state s, t; init s;
  trans s -> t { cost a[x * 4294967296] + 1; }, t -> s { effect x = 0; }; }
system async;
"""


@pytest.mark.parametrize("text", [RDV, BUF, COMMIT2, SAME_GLOBAL, WIDE_INDEX],
                         ids=["rendezvous", "buffered", "commit", "same-global", "wide-index"])
def test_small_models_whole_graph_through_the_kernel(text, monkeypatch):
    cm = compile_model(dve.load_model(text))
    assert kernel_source(cm, charges=True) is not None
    monkeypatch.setattr(Placement, "device_min_rows", 0)
    ref = build_state_graph(cm)
    same_graph(ref, build_state_graph(cm, xp=_module(monkeypatch), chunk_size=2))
    assert (ref.error_state >= 0) == (text in (SAME_GLOBAL, WIDE_INDEX))


@pytest.mark.parametrize("legacy", [False, True])
def test_error_state_and_wide_keys_through_the_kernel(legacy, monkeypatch):
    # Three words per key, a division by zero (the error state), expanded in the legacy mode.
    text = WIDE_KEYS
    cm = compile_model(dve.load_model(text))
    assert KeyLayout.for_model(cm).n_words >= 2
    monkeypatch.setattr(Placement, "device_min_rows", 0)
    ref = build_state_graph(cm, error_successors=legacy)
    got = build_state_graph(cm, xp=_module(monkeypatch), chunk_size=3, error_successors=legacy)
    same_graph(ref, got)
    assert ref.error_state >= 0


def test_out_of_scope_models_use_the_array_form(monkeypatch):
    sync = compile_model(dve.load_model(str(ROOT / "dvecost" / "examples" / "rings_sync.dve")))
    assert kernel_source(sync, charges=True) is None
    assert SuccessorKernel.for_model(sync, charges=True) is None
    monkeypatch.setattr(Placement, "device_min_rows", 0)
    same_graph(build_state_graph(sync), build_state_graph(sync, xp=_module(monkeypatch),
                                                           chunk_size=5))


def test_a_kernel_that_does_not_compile_falls_back_with_a_warning(monkeypatch):
    from runtime.device import DeviceFallbackWarning
    cm = compile_model(dve.load_model(str(ROOT / "dvecost" / "examples" / "pipeline.dve")))
    fake = _module(monkeypatch)

    def broken(code, options=()):
        raise RuntimeError("nvrtc: error")

    fake.RawModule = broken
    monkeypatch.setattr(Placement, "device_min_rows", 0)
    with pytest.warns(DeviceFallbackWarning, match="did not compile"):
        got = build_state_graph(cm, xp=fake, chunk_size=5)
    same_graph(build_state_graph(cm), got)


# ------------------------------------------------------------------ random expressions

#: The array cell at a computed index adds index faults to the shared leaves (in costs and
#: times also an index computed in 64 bits, beyond 2**32).
_LEAVES32 = LEAVES32 + ["a[y % 3]"]
_LEAVES64 = LEAVES64 + ["a[y % 3]", "a[x * 4294967296]"]


def _against_oracle(cm, g) -> None:
    """The graph ``g`` of ``cm`` equals the plain interpreter's (ss_oracle): states, edges
    in order, and the charges of every step that does not fault."""
    states, edges = ss_oracle.explore(cm)
    assert g.states.astype(np.int64).tolist() == [list(s) for s in states]
    src = np.repeat(np.arange(g.n_states), np.diff(g.indptr))
    ours = list(zip(src.tolist(), g.indices.tolist(),
                    [g.model_action(a) for a in g.action.tolist()]))
    assert ours == [e[:3] for e in edges]
    for k, e in enumerate(edges):
        if e[1] != g.error_state:
            assert [int(g.costs[r][k]) for r in cm.resources] == [e[3][r] for r in cm.resources]
            assert int(g.time[k]) == e[4]


# DVECOST_ARITH_EXAMPLES=1500 searches harder; each example compiles one kernel (~0.1 s).
@settings(max_examples=int(os.environ.get("DVECOST_ARITH_EXAMPLES", 60)), deadline=None,
          derandomize=True, suppress_health_check=[HealthCheck.too_slow,
                                                   HealthCheck.function_scoped_fixture])
@given(guard=exprs(_LEAVES32), value=exprs(_LEAVES32), index=exprs(_LEAVES32),
       cost=exprs(_LEAVES64), time=exprs(_LEAVES64),
       x0=st.sampled_from([-32768, -1, 0, 1, 3, 32767]), y0=st.sampled_from([0, 1, 2, 255]))
def test_random_expressions_through_the_kernel_agree_with_the_oracle(
        guard, value, index, cost, time, x0, y0, monkeypatch):
    # A guarded step assigning x (range faults) and an array cell at a computed index (index
    # faults), charging the random cost and time (64-bit faults, negative times); a rendezvous
    # passing a value through a typed channel (the byte cast); a step that always moves on.
    text = (f"int x = {x0}; byte y = {y0}; int a[3]; channel {{byte}} c[0];\n"
            f"process P {{ state s, t; init s; trans "
            f"s -> t {{ guard {guard}; effect x = {value}, a[{index}] = x, y = (y + 1) % 256; "
            f"cost {cost}; time {time}; }}, "
            f"s -> t {{ effect y = y / 2; }}, t -> s {{ guard y > 0; sync c!{value}; }}; }}\n"
            f"process Q {{ state u; init u; trans u -> u {{ sync c?y; }}; }} system async;")
    try:
        cm = compile_model(dve.load_model(text))
    except DvecostError:
        return   # refused statically (a literal that does not fit, ...): nothing to run
    monkeypatch.setattr(Placement, "device_min_rows", 0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g = build_state_graph(cm, xp=_module(monkeypatch), chunk_size=2)
    _against_oracle(cm, g)
