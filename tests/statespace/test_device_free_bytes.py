"""runtime.device.device_free_bytes asks the device at most once in FREE_QUERY_SECONDS and
in between subtracts what the memory pool took since; without a pool total it always asks."""

from __future__ import annotations

import types

import numpy as np

from runtime import device


def fake_module(free: list[int], pool_total: list[int], with_total: bool = True):
    calls = {"memGetInfo": 0}

    def mem_get_info():
        calls["memGetInfo"] += 1
        return free[0], 1 << 40

    pool = types.SimpleNamespace(free_bytes=lambda: 100)
    if with_total:
        pool.total_bytes = lambda: pool_total[0]
    xp = types.SimpleNamespace(cuda=types.SimpleNamespace(
        runtime=types.SimpleNamespace(memGetInfo=mem_get_info)),
        get_default_memory_pool=lambda: pool)
    return xp, calls


def test_asks_once_per_interval_and_subtracts_the_pool_growth(monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr(device.time, "monotonic", lambda: clock[0])
    free, total = [10_000], [0]
    xp, calls = fake_module(free, total)
    assert device.device_free_bytes(xp) == 10_000 + 100
    total[0] = 3_000                    # the pool took 3,000 bytes from the device
    free[0] = 1                         # (what the device would say: not asked)
    assert device.device_free_bytes(xp) == 7_000 + 100 and calls["memGetInfo"] == 1
    total[0] = 1_000                    # blocks given back to the device
    assert device.device_free_bytes(xp) == 9_000 + 100 and calls["memGetInfo"] == 1
    clock[0] += device.FREE_QUERY_SECONDS
    assert device.device_free_bytes(xp) == 1 + 100 and calls["memGetInfo"] == 2


def test_without_a_pool_total_asks_every_time(monkeypatch):
    free = [5_000]
    xp, calls = fake_module(free, [0], with_total=False)
    assert device.device_free_bytes(xp) == 5_100
    free[0] = 0
    assert device.device_free_bytes(xp) == 100 and calls["memGetInfo"] == 2
    assert device.device_free_bytes(np) is None
    assert device.device_free_bytes(types.SimpleNamespace()) is None
