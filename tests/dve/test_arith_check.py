"""The static check's arithmetic: literal widths, short-circuit, constant cost overflow."""

from __future__ import annotations

import pytest

from dve.check import check_model
from dve.consteval import eval_const
from dve.errors import EvaluationError, ModelErrors
from dve.parser import parse_model


def _problems(text):
    """[(code, line, column, severity)] of a model's check."""
    try:
        found = check_model(parse_model(text, "m.dve"))
    except ModelErrors as exc:
        found = exc.errors
    return [(p.code, p.pos.line, p.pos.column, p.severity) for p in found]


def _proc(body, decls=""):
    return f"{decls}\nprocess P {{ state s, t; init s; trans {body}; }} system async;"


def _col(text, needle, line=2, nth=0):
    """The 1-based column of the ``nth`` occurrence of ``needle`` on line ``line``."""
    row = text.split("\n")[line - 1]
    at = -1
    for _ in range(nth + 1):
        at = row.index(needle, at + 1)
    return at + 1


@pytest.mark.parametrize("guard", ["N != 0 and x / N > 1", "0 and (1/0)", "1 or (1/0)",
                                   "0 imply (1/0)", "N == 0 or x % N == 1",
                                   "(0 and 1) and 1 / 0"])
def test_division_in_a_skipped_operand_is_no_error(guard):
    got = _problems(_proc(f"s -> t {{ guard {guard}; }}", "const byte N = 0; int x;"))
    assert not [p for p in got if p[3] == "error"], got


@pytest.mark.parametrize("guard", ["1 and (1/0)", "0 or (1/0)", "1 imply (1/0)",
                                   "x > 0 and 1/0 > 0"])
def test_division_in_an_evaluated_operand_is_an_error(guard):
    text = _proc(f"s -> t {{ guard {guard}; }}", "int x;")
    assert ("division-by-zero", 2, _col(text, "0)" if "(" in guard else "0 >"),
            "error") in _problems(text)


def test_index_out_of_range_in_a_skipped_operand_is_no_error():
    text = _proc("s -> t { guard 0 and a[5] > 0; }, t -> s { guard 1 or a[2] > 0; }",
                 "byte a[2];")
    assert [p for p in _problems(text) if p[3] == "error"] == []
    text = _proc("s -> t { guard 1 and a[5] > 0; }", "byte a[2];")
    assert ("index-out-of-range", 2, _col(text, "5"), "error") in _problems(text)


def test_names_in_a_skipped_operand_are_still_checked():
    got = _problems(_proc("s -> t { guard 0 and y / 0; }"))
    assert [p[0] for p in got if p[3] == "error"] == ["undefined-name"]


def test_literals_wider_than_their_expression_are_errors():
    text = ("int x = 2147483648;\nprocess P { state s; init s; trans s -> s { guard x != "
            "2147483648; effect x = 4294967296; cost 9223372036854775808; time "
            "18446744073709551616; }; } system async;")
    got = [p for p in _problems(text) if p[0] == "literal-out-of-range"]
    assert [p[1:3] for p in got] == [(1, 9)] + [
        (2, _col(text, lit)) for lit in ("2147483648", "4294967296", "9223372036854775808",
                                         "18446744073709551616")]


def test_literals_at_the_edges_are_accepted():
    text = _proc("s -> t { guard x > -2147483648 and 2147483647 > x; effect x = -32768; "
                 "cost 9223372036854775807; time -9223372036854775808 + 9223372036854775807 "
                 "+ 1; }", "int x;")
    assert [p for p in _problems(text) if p[3] == "error"] == []


def test_a_constant_cost_that_overflows_is_an_error():
    text = _proc("s -> t { cost 4611686018427387904 * 2; }, t -> t { time "
                 "9223372036854775807 + 1; }")
    assert [p[:3] for p in _problems(text) if p[3] == "error"] == [
        ("cost-overflow", 2, _col(text, "4611686018427387904")),
        ("cost-overflow", 2, _col(text, "9223372036854775807"))]


def test_a_state_dependent_cost_is_left_to_run_time():
    got = _problems(_proc("s -> t { cost 4611686018427387904 * 2 * x; }", "int x;"))
    assert [p for p in got if p[3] == "error"] == []


def test_wrapped_assignment_warns_like_the_explorer_faults():
    # 65536 * 65536 wraps to 0 in 32 bits, so the value is 40000: out of an int's range.
    text = _proc("s -> t { effect x = 65536 * 65536 + 40000; }", "int x;")
    assert ("value-out-of-range", 2, _col(text, "65536"), "warning") in _problems(text)


def _ev(text, wide=False, **env):
    m = parse_model(f"int x = {text}; process P {{ state s; init s; }} system async;", "<t>")
    return eval_const(m.items[0].init, env, wide=wide)


def test_eval_const_widths():
    assert _ev("32767 * 32767 * 32767") == 1073840127  # C int32 wraps
    assert _ev("32767 * 32767 * 32767", wide=True) == 32767**3
    assert _ev("(0 - 2147483647 - 1) / -1") == -2**31
    assert _ev("a[1] + 1", a=(4, 5)) == 6
    with pytest.raises(EvaluationError, match="overflow"):
        _ev("9223372036854775807 + 1", wide=True)
    with pytest.raises(EvaluationError, match="literal-out-of-range"):
        _ev("4294967296")
    with pytest.raises(EvaluationError, match="index-out-of-range"):
        _ev("a[2]", a=(4, 5))
