"""The size of a state: a declaration that takes the state vector past MAX_STATE_SLOTS is an
error at its size (``declaration-too-large``), up to the bound included a model is accepted."""

from __future__ import annotations

import pytest

from dve.check import MAX_STATE_SLOTS, check_model
from dve.errors import ModelErrors
from dve.parser import parse_model

PROC = "process P { state s; init s; trans s -> s {}; }\nsystem async;\n"


def problems(text):
    try:
        return check_model(parse_model(text, "m.dve"))
    except ModelErrors as exc:
        return exc.errors


def test_exactly_the_bound_is_accepted():
    # One slot for P's control state, the rest for the array.
    assert problems(f"byte a[{MAX_STATE_SLOTS - 1}];\n" + PROC) == ()


def test_one_slot_past_the_bound_is_refused_at_the_crossing_declaration():
    (e,) = problems(f"byte a[{MAX_STATE_SLOTS - 1}];\nint b[2];\n" + PROC)
    assert (e.code, e.severity, e.pos.line, e.pos.column) == ("declaration-too-large",
                                                             "error", 2, 7)
    assert f"to {MAX_STATE_SLOTS + 1:,} slots" in e.message
    assert e.hint.startswith(f"the largest part is array 'a' of {MAX_STATE_SLOTS - 1:,} cells "
                             "at line 1, column 8;")


@pytest.mark.parametrize("decl,col,what", [
    ("byte a[2000000000];", 8, "array 'a' of 2,000,000,000 cells"),
    ("channel {byte, int} c[600000];", 23, "buffered channel 'c' of 600,000 items"),
    ("const int k[1048577] = {1};", 13, "constant array 'k' of 1,048,577 cells"),
])
def test_absurd_declarations(decl, col, what):
    (e,) = problems(decl + "\n" + PROC)
    assert (e.code, e.pos.line, e.pos.column) == ("declaration-too-large", 1, col)
    assert e.message.startswith(f"impossible declaration: {what}")


def test_local_arrays_count_per_process():
    half = MAX_STATE_SLOTS // 2
    text = "".join(f"process P{i} {{ byte a[{half}]; state s; init s; }}\n" for i in range(2))
    (e,) = problems(text + "system async;\n")
    assert (e.code, e.pos.line) == ("declaration-too-large", 2)
