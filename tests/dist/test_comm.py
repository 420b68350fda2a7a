"""The collectives of :mod:`runtime.comm`: one process (identity), and MPI under ``mpiexec``
checked against what each process is known to send (plain Python over the ranks)."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime.comm import SelfComm, launched_world_size, world
from statespace.dist import owner_of

from mpirun import ROOT, run

sys.path.insert(0, str(ROOT / "tests" / "dist"))
from comm_worker import expected  # noqa: E402


def test_one_process_collectives_are_identities():
    c = SelfComm()
    a = np.arange(12, dtype=np.uint64).reshape(4, 3)
    got, counts = c.alltoallv(a, [4])
    assert got is a and counts.tolist() == [4]
    assert c.allreduce(7, "max") == 7 and c.exscan(5) == 0 and c.allgather("x") == ["x"]
    with pytest.raises(ValueError, match="unknown reduction"):
        c.allreduce(1, "prod")


def test_without_a_launcher_the_world_is_one_process(monkeypatch):
    for var in ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MPI_LOCALNRANKS", "PMIX_SIZE",
                "DVECOST_COMM"):
        monkeypatch.delenv(var, raising=False)
    assert launched_world_size() == 1
    assert world().size == 1


@pytest.mark.parametrize("P, guard", [(2, ""), (3, ""), (2, "1"), (3, "1")])
def test_mpi_collectives(P, guard, tmp_path):
    # The guarded communicator (runtime.guard) gives every answer the plain one gives.
    out = tmp_path / "comm.json"
    r = run(P, str(ROOT / "tests" / "dist" / "comm_worker.py"), str(out),
            extra_env={"COMM_GUARDED": guard})
    assert r.returncode == 0, r.stderr
    assert json.loads(out.read_text()) == expected(P, large=True)


@pytest.mark.parametrize("P, limit, guard", [(2, 48, ""), (3, 24, ""), (3, 100, ""),
                                             (3, 24, "1")])
def test_mpi_exchanges_over_the_limit_go_in_rounds_on_every_process(P, limit, guard,
                                                                     tmp_path):
    # With these limits some processes send or receive more than the limit and others do not
    # (rank 0 of 2 sends 24 bytes, rank 1 sends 72): every process must take the rounds alike,
    # or the one over the limit waits in a collective the others never enter.
    out = tmp_path / "comm.json"
    r = run(P, str(ROOT / "tests" / "dist" / "comm_worker.py"), str(out), str(limit),
            timeout=60, extra_env={"COMM_GUARDED": guard})
    assert r.returncode == 0, r.stderr
    assert json.loads(out.read_text()) == expected(P)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=40),
       st.integers(1, 2), st.integers(1, 7))
def test_owners_are_a_function_of_the_key_within_range(words, W, P):
    keys = np.array(words * W, np.uint64)[: (len(words) * W // W) * W].reshape(-1, W)
    own = owner_of(keys, P)
    assert own.shape == (keys.shape[0],) and own.min() >= 0 and own.max() < P
    # Equal keys, wherever they come, have one owner.
    again = owner_of(keys[::-1].copy(), P)[::-1]
    assert np.array_equal(own, again)
    for i in range(keys.shape[0]):
        same = (keys == keys[i]).all(axis=1)
        assert (own[same] == own[i]).all()
