"""The compiler refuses a state vector past dve.check.MAX_STATE_SLOTS before allocating it
(for models that skip the static checks), with the checks' code and position."""

from __future__ import annotations

import pytest
from ss_helpers import compiled

from dve.check import MAX_STATE_SLOTS
from dve.errors import ModelSemanticError

PROC = "process P { state s; init s; trans s -> s {}; }\nsystem async;\n"


@pytest.mark.parametrize("decl,col,message", [
    ("byte a[2000000000];", 8,
     "impossible declaration: array 'a' of 2,000,000,000 cells takes the state vector to "
     "2,000,000,001 slots; the explorer holds at most 1,048,576"),
    ("channel {byte} c[2000000000];", 18,
     "impossible declaration: buffered channel 'c' takes the state vector to 2,000,000,002 "
     "slots; the explorer holds at most 1,048,576"),
    ("const byte k[2000000000];", 14,
     "impossible declaration: array 'k' of 2,000,000,000 cells; the explorer holds at most "
     "1,048,576"),
])
def test_huge_declarations_are_refused_not_allocated(decl, col, message):
    with pytest.raises(ModelSemanticError) as info:
        compiled(decl + "\n" + PROC)
    e = info.value
    assert (e.code, e.pos.line, e.pos.column, e.message) == ("declaration-too-large", 1, col,
                                                            message)


def test_the_bound_itself_compiles():
    cm = compiled(f"byte a[{MAX_STATE_SLOTS // 4}];\nint b[{MAX_STATE_SLOTS // 4}];\n" + PROC)
    assert cm.n_slots == 1 + MAX_STATE_SLOTS // 2
