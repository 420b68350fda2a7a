"""The visited set's look-up of every run by one kernel (``store.look_up_runs``, the device's
path) against a dictionary of every tag: compiled for the host by the kernel emulator, the
same source the GPU compiles."""

import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from statespace.store import VisitedSet, look_up_runs

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import kernel_emulator  # noqa: E402
from device_stand_in import stand_in  # noqa: E402

needs_compiler = pytest.mark.skipif(kernel_emulator.compiler() is None,
                                    reason="no C++ compiler for the kernel emulator")


class _Patch:
    @staticmethod
    def setitem(mapping, key, value):
        mapping[key] = value


@needs_compiler
@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 2**64 - 1), unique=True, max_size=300),
       st.lists(st.integers(1, 60), max_size=8),
       st.lists(st.integers(0, 2**64 - 1), max_size=100), st.randoms(use_true_random=False))
def test_every_run_searched_by_one_kernel_against_a_dictionary(tags, cuts, extra, rnd):
    """Tags cut into runs of any sizes (empty ones too), each run sorted with ids of its own;
    queries: every stored tag, tags near them, tags absent, the extremes, in any order."""
    fake = stand_in(_Patch(), kernels=True)
    rnd.shuffle(tags)
    runs, at, ids = [], 0, {}
    for c in cuts + [len(tags)]:
        part = sorted(tags[at:at + c])
        at += len(part)
        rid = [rnd.randrange(2**40) for _ in part]
        ids.update(zip(part, rid))
        runs.append((np.array(part, np.uint64), np.array(rid, np.int64)))
    near = [t + d for t in tags[:50] for d in (-1, 1) if 0 <= t + d < 2**64]
    queries = tags + near + extra + [0, 2**64 - 1]
    rnd.shuffle(queries)
    q = np.array(queries, np.uint64)
    gid = np.full(q.shape[0], -7, np.int64)
    look_up_runs(fake, runs, q, gid)
    assert gid.tolist() == [ids.get(t, -1) for t in queries]


@needs_compiler
def test_the_set_numbers_alike_with_and_without_the_kernel():
    """A visited set on the stand-in with the kernel (the fused look-up) and on NumPy (the
    loop over runs), fed the same batches: the same ids, ranks and keys every time, over
    enough batches that the runs merge and several stay."""
    fake = stand_in(_Patch(), kernels=True)
    rng = np.random.default_rng(3)
    a, b = VisitedSet(1, key_bits=40, xp=fake), VisitedSet(1, key_bits=40)
    for size in (40, 3, 200, 17, 17, 500, 64, 1, 90, 33, 700, 20):
        keys = rng.integers(0, 1500, size, dtype=np.uint64).reshape(-1, 1)
        rank = rng.permutation(size).astype(np.int64) * 3
        got, want = a.add(keys, rank), b.add(keys, rank)
        for x, y in zip(got, want):
            assert np.array_equal(x, y)
    assert len(a.runs) > 1 and a.n == b.n


@pytest.mark.gpu
def test_the_kernel_on_the_device_against_a_dictionary():
    """The same look-up compiled by CuPy on a GPU: runs of many sizes (a large one), every
    stored tag and as many absent ones."""
    cupy = pytest.importorskip("cupy")
    from runtime.device import gpu_available
    if not gpu_available():
        pytest.skip("no CUDA device")
    rng = np.random.default_rng(11)
    tags = np.unique(rng.integers(0, 2**64 - 1, 300_000, dtype=np.uint64))
    rng.shuffle(tags)
    ids = rng.integers(0, 2**40, tags.shape[0]).astype(np.int64)
    runs, at = [], 0
    for c in (150_000, 70_000, 0, 30_000, 9_000, 1):
        part = np.argsort(tags[at:at + c], kind="stable") + at
        runs.append((cupy.asarray(tags[part]), cupy.asarray(ids[part])))
        at += c
    absent = rng.integers(0, 2**64 - 1, 100_000, dtype=np.uint64)
    q = np.concatenate([tags[:at], absent, tags[at:]])
    rng.shuffle(q)
    gid = cupy.full(q.shape[0], -7, np.int64)
    assert look_up_runs(cupy, runs, cupy.asarray(q), gid)
    where = dict(zip(tags[:at].tolist(), ids[:at].tolist()))
    assert cupy.asnumpy(gid).tolist() == [where.get(t, -1) for t in q.tolist()]
