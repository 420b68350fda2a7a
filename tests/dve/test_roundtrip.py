"""``parse(format(m)) == m`` on every BEEM and DiVinE model and on generated expressions, and the
fast parser agrees with the Lark parser (positions included) wherever it takes the input."""

from __future__ import annotations

import dataclasses

import pytest
from conftest import BEEM
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dve import syntax as s
from dve._fastparse import Fallback, fast_parse
from dve.errors import Source, SourcePos
from dve.expand import expand_model
from dve.format import format_expr, format_model
from dve.parser import lark_parse, parse_model

MODELS = sorted((BEEM / "models").glob("*.dve")) if (BEEM / "models").is_dir() else []
NAMES = [p.name for p in MODELS] or [pytest.param("none", marks=pytest.mark.skip(
    reason=f"BEEM benchmark not found at {BEEM} (set DVECOST_SHARED)"))]


def same_with_positions(a, b, path="model") -> str | None:
    """None when ``a`` and ``b`` are equal *and* every position agrees, else where they differ."""
    if type(a) is not type(b):
        return f"{path}: {type(a).__name__} vs {type(b).__name__}"
    if isinstance(a, tuple):
        if len(a) != len(b):
            return f"{path}: {len(a)} vs {len(b)} items"
        for i, (x, y) in enumerate(zip(a, b)):
            if (r := same_with_positions(x, y, f"{path}[{i}]")) is not None:
                return r
        return None
    if isinstance(a, SourcePos):
        ka = (a.line, a.column, a.end_line, a.end_column)
        kb = (b.line, b.column, b.end_line, b.end_column)
        return None if ka == kb and a.source is b.source else f"{path}: {ka} vs {kb}"
    if dataclasses.is_dataclass(a):
        for f in dataclasses.fields(a):
            r = same_with_positions(getattr(a, f.name), getattr(b, f.name), f"{path}.{f.name}")
            if r is not None:
                return r
        return None
    return None if a == b else f"{path}: {a!r} vs {b!r}"


#: plc's instances (2 MB each) take 2 to 5 s apiece to round-trip (``--durations``): --runslow.
ROUND_TRIP = [pytest.param(n, marks=pytest.mark.slow) if isinstance(n, str) and
              n.startswith("plc.") else n for n in NAMES]


@pytest.mark.parametrize("name", ROUND_TRIP)
def test_beem_round_trip(name, beem_dir):
    path = beem_dir / "models" / name
    m = parse_model(path.read_bytes(), str(path))
    text = format_model(m)
    again = parse_model(text, "formatted")
    assert again == m
    # Formatting is canonical: a second round gives the same text.
    assert format_model(again) == text
    e = expand_model(m)
    if e is not m:  # legacy models come back as they are
        assert parse_model(format_model(e), "expanded") == e


@pytest.mark.parametrize("name", [n for n in NAMES if not isinstance(n, str) or
                                  not n.startswith("plc.")])
def test_fast_parser_agrees_with_lark(name, beem_dir):
    # plc (2 MB each) is left out: the Lark parser alone takes tens of seconds on it.
    src = Source(name, (beem_dir / "models" / name).read_text())
    try:
        fast = fast_parse(src)
    except Fallback:
        assert name.startswith(("proc_instance", "ltltest", "test1-prop")), \
            f"{name}: the fast parser refused a legacy model"
        return
    assert same_with_positions(fast, lark_parse(src)) is None


# ---------------------------------------------------------------------------- generated

NAMES_ = st.sampled_from(["a", "b", "x", "time", "cost", "v$1"])
LEAVES = st.one_of(
    st.builds(s.Name, NAMES_),
    st.builds(s.IntLit, st.integers(0, 70000)),
    st.builds(s.BoolLit, st.booleans()),
    st.builds(lambda p, st_: s.StateTest(s.ProcRef(p), st_), st.sampled_from(["P", "Q"]),
              st.sampled_from(["s", "t"])),
)
OPS = [op for level in s.BINARY_OPS for op in level]


def _extend(children):
    return st.one_of(
        st.builds(s.Binary, st.sampled_from(OPS), children, children),
        st.builds(s.Unary, st.sampled_from(s.UNARY_OPS), children),
        st.builds(s.Index, st.sampled_from(["a", "arr"]), children),
        st.builds(lambda v, i: s.Remote(s.ProcRef("Q"), v, i), st.sampled_from(["v", "w"]),
                  st.none() | children),
    )


EXPRS = st.recursive(LEAVES, _extend, max_leaves=25)


def _model_with(e: s.Expr) -> str:
    return (f"process P {{ state s, t; init s; trans s -> t {{ guard {format_expr(e)}; "
            f"effect x = {format_expr(e)}; cost {format_expr(e)}; }}; }} system async;")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(EXPRS)
def test_expression_round_trip(e):
    m = parse_model(_model_with(e))
    t = m.processes[0].transitions[0]
    assert t.guard == (e,) and t.effects[0].value == e and t.costs[0].amount == e


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(EXPRS)
def test_fast_and_lark_parsers_agree_on_generated_expressions(e):
    src = Source("gen", _model_with(e))
    assert same_with_positions(fast_parse(src), lark_parse(src)) is None


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(["(", ")", "a", "1", "-", "not", "+", "*", "==", "or", "[", "]",
                                 "P", ".", "->", "s", "~", "&&"]), min_size=1, max_size=12))
def test_fast_parser_never_accepts_what_lark_refuses(tokens):
    # Random token soup in a guard: either both parsers build the same tree, or the fast one
    # declines (and the Lark one gives the diagnostic).
    src = Source("soup", "process P { state s; init s; trans s -> s { guard "
                 + " ".join(tokens) + "; }; } system async;")
    try:
        fast = fast_parse(src)
    except Fallback:
        return
    assert same_with_positions(fast, lark_parse(src)) is None


def test_format_uses_minimal_parentheses():
    a, b, c = s.Name("a"), s.Name("b"), s.Name("c")
    assert format_expr(s.Binary("-", a, s.Binary("-", b, c))) == "a - (b - c)"
    assert format_expr(s.Binary("-", s.Binary("-", a, b), c)) == "a - b - c"
    assert format_expr(s.Binary("and", s.Binary("or", a, b), c)) == "a or b and c"
    assert format_expr(s.Binary("or", a, s.Binary("and", b, c))) == "a or (b and c)"
    assert format_expr(s.Binary("*", s.Unary("-", a), b)) == "-a * b"
    assert format_expr(s.Unary("-", s.Unary("-", a))) == "- -a"


def test_format_groups_named_costs_and_keeps_plain_ones_apart():
    t = s.Transition(s.StateRef("s"), s.StateRef("s"), costs=(
        s.Cost("cost", s.IntLit(1)), s.Cost("cpu", s.IntLit(2), True),
        s.Cost("net", s.IntLit(3), True), s.Cost("cost", s.IntLit(4))), time=s.IntLit(0))
    m = s.Model((s.Process("P", (), (s.StateDecl("s"),), s.StateRef("s"), transitions=(t,)),),
                s.SystemDecl("async"))
    text = format_model(m)
    assert "s -> s { cost 1; cost cpu: 2, net: 3; cost 4; time 0; };" in text
    assert parse_model(text) == m
