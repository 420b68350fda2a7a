"""``system sync`` across processes: step ids numbered as one process numbers them.

A ``system sync`` model's actions are its steps (the transitions fired together), coded by
the successor function as it meets them; the one-process explorer gives a new code the next
id when it first meets it, and meets steps in (source, code) order. Across processes each
level's new codes take the next ids in the order of (smallest source id among their steps,
code), whichever process met them: every process proposes the codes it met first with their
smallest source, one ``allgather`` a level brings every proposal to every process, and all of
them number alike.

Examples
--------
>>> StepNumbers().code_array().tolist(), StepNumbers(codes=[3, 2**64]).code_array().dtype
([], dtype('O'))
"""

from __future__ import annotations

import numpy as np

from runtime.arrays import lexsort
from runtime.comm import Comm
from runtime.device import to_host

__all__ = ["StepNumbers"]


class StepNumbers:
    """The step codes numbered so far (the same on every process) and this process's map
    from the successor function's step ids to them."""

    def __init__(self, codes: list[int] | None = None) -> None:
        #: The codes by global id.
        self.codes: list[int] = list(codes or [])
        self.code_id: dict[int, int] = {c: i for i, c in enumerate(self.codes)}
        # This process's step ids mapped to the global ones (-1: not yet).
        self.to_global = np.zeros(0, np.int64)

    def number(self, comm: Comm, xp, codes: list[int], src, act):
        """Global step ids of a level's steps (``act``: the successor function's ids, whose
        codes are ``codes``; ``src``: each step's source id), arrays of module ``xp``. One
        ``allgather``: collective. (On a device the level's distinct step ids and their
        smallest sources come to the host.)"""
        grown = np.full(len(codes), -1, np.int64)
        grown[:self.to_global.shape[0]] = self.to_global
        self.to_global = grown
        proposals = []
        if act.shape[0]:
            order = lexsort(xp, (src, act))
            a_sorted, s_sorted = act[order], src[order]
            flag = xp.empty(a_sorted.shape[0], bool)
            flag[0] = True
            flag[1:] = a_sorted[1:] != a_sorted[:-1]
            first = xp.flatnonzero(flag)
            for i, s in zip(to_host(a_sorted[first]).tolist(),
                            to_host(s_sorted[first]).tolist()):
                if self.to_global[i] < 0 and codes[i] not in self.code_id:
                    proposals.append((codes[i], s))
        best: dict[int, int] = {}
        for part in comm.allgather(proposals):
            for code, s in part:
                best[code] = min(s, best.get(code, s))
        for code, _ in sorted(best.items(), key=lambda kv: (kv[1], kv[0])):
            self.code_id[code] = len(self.codes)
            self.codes.append(code)
        for i in np.flatnonzero(self.to_global < 0).tolist():
            if codes[i] in self.code_id:
                self.to_global[i] = self.code_id[codes[i]]
        table = self.to_global if xp is np else xp.asarray(self.to_global)
        return table[act]

    def code_array(self) -> np.ndarray:
        """A graph's ``action_codes``: int64 while every code fits, else Python integers (as
        the one-process explorer gives them)."""
        if all(c < 2**63 for c in self.codes):
            return np.array(self.codes, np.int64)
        return np.array(self.codes, dtype=object)
