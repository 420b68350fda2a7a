"""``system sync`` models are numbered the same whatever the chunk size.

Breadth-first numbering gives new states ids by (source, action); in a ``system sync`` model
the action ids are interned step codes, so they too must depend only on the first (source,
code) that takes them, not on which states shared a chunk. The rendered editor template is a
model where codes are met in an order that differs from their numeric order.
"""

from __future__ import annotations

import numpy as np
import pytest

from dve import load_model
from dvecost.cli.scenarios import render_spec
from statespace import build_state_graph


@pytest.mark.parametrize("spec,n", [("editor", 3), ("paper-server", 3)])
def test_sync_numbering_does_not_depend_on_chunk_size(spec, n):
    model = load_model(render_spec(spec, n))
    graphs = [build_state_graph(model, chunk_size=c) for c in (1, 2, 7, 1 << 17)]
    first = graphs[0]
    assert first.model.system == "sync" and first.action_codes is not None
    for g in graphs[1:]:
        for name in ("indptr", "indices", "action", "states", "parent"):
            assert np.array_equal(getattr(first, name), getattr(g, name)), name
        assert list(g.action_codes) == list(first.action_codes)
