"""The one path of a model (dvecost.pipeline), the one way to register a subcommand, and the run's
concerns that exist once (runtime): what the user reads of each."""

from __future__ import annotations

import ast
import pathlib
import warnings

import numpy as np
import pytest

import ocm
from dvecost import pipeline
from dvecost.cli import COMMANDS, main
from dvecost.examples import example_path
from runtime.device import DeviceFallbackWarning, is_out_of_memory
from runtime.errors import MemoryLimitExceeded

CLI = pathlib.Path(__file__).resolve().parents[2] / "dvecost" / "cli"


@pytest.mark.parametrize("n,m", [(0, 0), (3, 4), (1000, 5000)])
def test_engine_memory_check_refuses_exactly_past_the_limit(monkeypatch, n, m):
    """Refused iff the memory held now plus the engine's estimate (64 bytes per edge, 96 per
    vertex and one, written out here) passes the limit; the stop says both figures."""
    import runtime.memory
    monkeypatch.setattr(runtime.memory, "current_rss", lambda: 10_000)
    need = 10_000 + 64 * m + 96 * (n + 1)
    pipeline.check_engine_memory(need, n, m)          # exactly at the limit: fits
    pipeline.check_engine_memory(None, n, m)          # no limit
    with pytest.raises(MemoryLimitExceeded) as info:
        pipeline.check_engine_memory(need - 1, n, m)
    assert (info.value.held, info.value.more, info.value.limit_bytes) == (10_000, need - 10_000,
                                                                          need - 1)


def test_explore_and_analyze_see_one_graph():
    """``dvecost explore`` and ``analyze`` explore through the same front: their counts agree
    on every bundled example with one cost resource (symmetry off, the full product)."""
    from dvecost.analysis import analyze
    for name in ("printer.dve", "client_server.dve", "rings_sync.dve"):
        path = str(example_path(name))
        _, compiled = pipeline.load(path)
        graph = pipeline.explore(compiled, xp=pipeline.array_module("cpu"), backend="cpu")
        a = analyze(path, backend="cpu", symmetry="off", witness=False)
        assert (graph.n_states, graph.n_edges) == (a.n_states, a.n_transitions), name


def test_out_of_memory_is_recognised_through_the_cause():
    class OutOfMemoryError(MemoryError):   # CuPy's class name
        pass

    try:
        try:
            raise OutOfMemoryError("8 GiB")
        except MemoryError as inner:
            raise RuntimeError("a kernel failed") from inner
    except RuntimeError as exc:
        assert is_out_of_memory(exc)
    assert not is_out_of_memory(RuntimeError("a kernel failed"))
    assert is_out_of_memory(RuntimeError("CUDA_ERROR_OUT_OF_MEMORY: out of memory"))


def test_the_engines_fallback_is_the_one_warning_line(tmp_path, capsys, monkeypatch):
    """The cycle engine's fallback to the CPU is the same warning as the explorer's: the
    command line prints it as one ``dvecost: warning:`` line, once per message."""
    g = tmp_path / "g.txt"
    g.write_text("2 2\n0 1 3 1\n1 0 5 1\n")
    solve = ocm.optimal_cycle

    def falling_back(*a, **k):
        for _ in range(2):
            ocm.backend.warn_fallback(MemoryError("out of memory allocating 8 GiB"), 2)
        return solve(*a, **k)

    monkeypatch.setattr(ocm, "optimal_cycle", falling_back)
    assert main(["cycle", str(g), "--backend", "cpu"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err == ["dvecost: warning: the GPU ran out of memory on a graph of 2 edges (out of "
                   "memory allocating 8 GiB); continuing on the CPU engine"]
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        ocm.backend.call_with_cpu_fallback(
            lambda xp: 1 if xp is np else (_ for _ in ()).throw(MemoryError(
                "cudaErrorMemoryAllocation")), object(), 5)
    assert [w.category for w in seen] == [DeviceFallbackWarning]


@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_registers_through_add_command(name):
    """One way to add a subcommand: the module's ``register`` calls ``add_command`` with the
    module's docstring, and adds no parser of its own at the top level."""
    tree = ast.parse((CLI / f"{name}.py").read_text())
    register = next(n for n in tree.body if isinstance(n, ast.FunctionDef)
                    and n.name == "register")
    calls = [c for c in ast.walk(register) if isinstance(c, ast.Call)]
    adds = [c for c in calls if isinstance(c.func, ast.Name) and c.func.id == "add_command"]
    assert len(adds) == 1
    sub = register.args.args[0].arg
    assert not [c for c in calls if isinstance(c.func, ast.Attribute)
                and c.func.attr == "add_parser" and isinstance(c.func.value, ast.Name)
                and c.func.value.id == sub]
    assert isinstance(adds[0].args[2], ast.Name) and adds[0].args[2].id == "__doc__"
