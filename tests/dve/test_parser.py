"""The grammar, feature by feature: what each construct parses to, precedence, positions, errors."""

from __future__ import annotations

import pytest

from dve import syntax as s
from dve.errors import DveSyntaxError, Source
from dve.parser import lark_parse, parse_model


def model(body: str, decls: str = "", system: str = "system async;"):
    """A model with one process ``P`` whose body is ``body``."""
    return parse_model(f"{decls}\nprocess P {{ {body} }}\n{system}")


def trans(clauses: str, decls: str = "byte x, y; byte a[4]; channel c; int time;"):
    """The single transition ``s -> t { clauses }`` of a small model."""
    m = model(f"state s, t; init s; trans s -> t {{ {clauses} }};", decls)
    return m.processes[0].transitions[0]


def guard(text: str) -> s.Expr:
    return trans(f"guard {text};").guard[0]


N = s.Name


def B(op, left, right):
    return s.Binary(op, left, right)


# ---------------------------------------------------------------------------- declarations

def test_variables_split_into_one_decl_each():
    m = parse_model("byte a, b = 2, c[3] = {1, 2}; int d = -1; const int K = 4; "
                    "process P { state s; init s; } system async;")
    assert m.items[:5] == (
        s.VarDecl("byte", "a"),
        s.VarDecl("byte", "b", None, s.IntLit(2)),
        s.VarDecl("byte", "c", s.IntLit(3), s.ArrayInit((s.IntLit(1), s.IntLit(2)))),
        s.VarDecl("int", "d", None, s.Unary("-", s.IntLit(1))),
        s.VarDecl("int", "K", None, s.IntLit(4), const=True),
    )


def test_input_is_a_constant_that_may_be_overridden():
    m = parse_model("input int N = 5; process P { state s; init s; } system async;")
    assert m.items[0] == s.VarDecl("int", "N", None, s.IntLit(5), const=True, input=True)


def test_long_and_empty_array_initialisers_parse():
    m = parse_model("byte a[3] = {1, 0, 0, 0}; byte b[2] = {}; "
                    "process P { state s; init s; } system async;")
    assert len(m.items[0].init.items) == 4 and m.items[1].init.items == ()


def test_channels_untyped_typed_and_sized():
    m = parse_model("channel a, b; channel {byte, int} q[2], r; channel u[3]; "
                    "process P { state s; init s; } system async;")
    assert m.items[:5] == (
        s.ChannelDecl("a"), s.ChannelDecl("b"),
        s.ChannelDecl("q", ("byte", "int"), s.IntLit(2)), s.ChannelDecl("r", ("byte", "int")),
        s.ChannelDecl("u", None, s.IntLit(3)),  # refused later by the static checks
    )


# ---------------------------------------------------------------------------- processes

def test_process_body_in_any_order_with_locals():
    m = model("init s; byte v = 1; state s, t; channel {byte} loc[1]; commit t; accept t; "
              "assert s: v < 3, t: v > 0; trans s -> t {}")
    p = m.processes[0]
    assert [d.name for d in p.decls] == ["v", "loc"]
    assert [x.name for x in p.states] == ["s", "t"]
    assert p.init == s.StateRef("s") and p.commit == (s.StateRef("t"),)
    assert p.accept == (s.Accept("plain", ((s.StateRef("t"),),)),)
    assert p.asserts[1] == s.Assertion(s.StateRef("t"), B(">", N("v"), s.IntLit(0)))
    assert p.transitions == (s.Transition(s.StateRef("s"), s.StateRef("t")),)


@pytest.mark.parametrize("text, kind, sets", [
    ("accept buchi a, b;", "buchi", (("a", "b"),)),
    ("accept genbuchi (a, b), (c);", "genbuchi", (("a", "b"), ("c",))),
    ("accept muller (a), ();", "muller", (("a",), ())),
    ("accept rabin (a; b), (c, a; );", "rabin", (("a",), ("b",), ("c", "a"), ())),
    ("accept streett (a; b);", "streett", (("a",), ("b",))),
])
def test_accept_variants(text, kind, sets):
    acc = model(f"state a, b, c; init a; {text}").processes[0].accept[0]
    assert acc.kind == kind
    assert tuple(tuple(r.name for r in x) for x in acc.sets) == sets


def test_transition_clauses_and_extension():
    t = trans("guard x > 0, y < 2; sync c!x; effect x = x + 1, a[0] = 2; "
              "cost cpu: 3, net: x; time 2;")
    assert t.guard == (B(">", N("x"), s.IntLit(0)), B("<", N("y"), s.IntLit(2)))
    assert t.sync == s.Sync("c", "!", (N("x"),))
    assert t.effects[1] == s.Assign(s.Index("a", s.IntLit(0)), s.IntLit(2))
    assert t.costs == (s.Cost("cpu", s.IntLit(3), True), s.Cost("net", N("x"), True))
    assert t.time == s.IntLit(2)


def test_cost_and_time_in_either_order_and_plain_cost():
    t = trans("time x; cost 4;")
    assert t.time == N("x") and t.costs == (s.Cost("cost", s.IntLit(4)),)


def test_time_and_cost_stay_usable_as_names():
    # BEEM's plc declares `int time` and assigns it: the words are keywords only as clauses.
    t = trans("guard time > 1; effect time = time + 1; time time; cost time;")
    assert t.effects[0].target == N("time") and t.time == N("time")
    assert t.costs == (s.Cost("cost", N("time")),)


def test_duplicate_time_clause_is_reported_at_the_second():
    with pytest.raises(DveSyntaxError) as e:
        trans("time 1; time 2;")
    assert e.value.code == "duplicate-clause"


@pytest.mark.parametrize("text, sync", [
    ("sync c?x;", s.Sync("c", "?", (N("x"),))),
    ("sync c!{x, 3};", s.Sync("c", "!", (N("x"), s.IntLit(3)))),
    ("sync c?{x, a[1]};", s.Sync("c", "?", (N("x"), s.Index("a", s.IntLit(1))))),
    ("sync c!;", s.Sync("c", "!")),
    ("sync c?;", s.Sync("c", "?")),
    ("sync Q->d!1;", s.Sync("d", "!", (s.IntLit(1),), s.ProcRef("Q"))),
    ("sync T(2)->d?x;", s.Sync("d", "?", (N("x"),), s.ProcRef("T", (s.IntLit(2),)))),
])
def test_sync_forms(text, sync):
    assert trans(text).sync == sync


def test_omitted_source_and_optional_final_semicolon():
    m = model("state s, t; init s; trans s -> t {}, -> s { guard true; }")
    _, t2 = m.processes[0].transitions
    assert t2.src is None and t2.dst == s.StateRef("s") and t2.guard == (s.BoolLit(True),)


def test_empty_trans_list():
    assert model("state s; init s; trans").processes[0].transitions == ()


def test_system_sync_and_property():
    m = parse_model("process P { state s; init s; } system sync property P;")
    assert m.system == s.SystemDecl("sync", "P")


def test_divine3_property_process_becomes_the_system_property():
    m = parse_model("process P { state s; init s; } property process Q { state q; init q; "
                    "accept q; } system async;")
    assert m.system.property == "Q" and [p.name for p in m.processes] == ["P", "Q"]


# ---------------------------------------------------------------------------- DiVinE 3

def test_divine3_top_level_constructs():
    m = parse_model("""
        input int N = 3;
        expression inc(v, w) { v + w }
        expression zero() { 0 }
        process T(key i, n) { state s; init s; trans s -> s { guard T(1).s; effect i = n; }; }
        process T(1, 2);
        process T();
        for (k : 1 .. N) { process T(k, k); }
        if (N > 2) { byte z; } else { if (N) { byte w; } }
        property ltl safe "G (x < 4)";
        system async;""")
    kinds = [type(i).__name__ for i in m.items]
    assert kinds == ["VarDecl", "Macro", "Macro", "ProcessTemplate", "ProcessInstance",
                     "ProcessInstance", "ForLoop", "IfBlock", "LtlProperty"]
    tpl = m.items[3]
    assert tpl.params == (s.Param("i", True), s.Param("n", False))
    assert tpl.body.transitions[0].guard[0] == s.StateTest(s.ProcRef("T", (s.IntLit(1),)), "s")
    assert m.items[1] == s.Macro("inc", ("v", "w"), B("+", N("v"), N("w")))
    assert m.items[6] == s.ForLoop("k", s.IntLit(1), N("N"),
                                   (s.ProcessInstance("T", (N("k"), N("k"))),))
    assert m.items[7].orelse[0].then == (s.VarDecl("byte", "w"),)
    assert m.items[8] == s.LtlProperty("safe", "G (x < 4)")


def test_macro_calls_and_remote_reads():
    g = guard("inc(x, 1) == T(1)->v[2] and Q->w")
    assert g == B("and", B("==", s.Call("inc", (N("x"), s.IntLit(1))),
                           s.Remote(s.ProcRef("T", (s.IntLit(1),)), "v", s.IntLit(2))),
                  s.Remote(s.ProcRef("Q"), "w"))


def test_template_parameter_must_be_a_name():
    with pytest.raises(DveSyntaxError) as e:
        parse_model("process T(1) { state s; init s; } system async;")
    assert e.value.code == "syntax-error" and (e.value.pos.line, e.value.pos.column) == (1, 11)


# ---------------------------------------------------------------------------- expressions

@pytest.mark.parametrize("text, tree", [
    ("a - b + c", B("+", B("-", N("a"), N("b")), N("c"))),
    ("a - (b + c)", B("-", N("a"), B("+", N("b"), N("c")))),
    ("a * b + c * d", B("+", B("*", N("a"), N("b")), B("*", N("c"), N("d")))),
    ("a or b and c", B("and", B("or", N("a"), N("b")), N("c"))),  # one level, left to right
    ("a and b or c", B("or", B("and", N("a"), N("b")), N("c"))),
    ("a || b && c", B("and", B("or", N("a"), N("b")), N("c"))),
    ("a | b & c ^ d", B("^", B("&", B("|", N("a"), N("b")), N("c")), N("d"))),
    ("a & b == c", B("&", N("a"), B("==", N("b"), N("c")))),  # C-like: == binds tighter
    ("a == b < c", B("==", N("a"), B("<", N("b"), N("c")))),
    ("a < b << c", B("<", N("a"), B("<<", N("b"), N("c")))),
    ("a << b + c", B("<<", N("a"), B("+", N("b"), N("c")))),
    ("a imply b or c", B("imply", N("a"), B("or", N("b"), N("c")))),
    ("a imply b imply c", B("imply", B("imply", N("a"), N("b")), N("c"))),
    ("-a * b", B("*", s.Unary("-", N("a")), N("b"))),
    ("not a == b", B("==", s.Unary("not", N("a")), N("b"))),  # unary binds tightest
    ("not (a == b)", s.Unary("not", B("==", N("a"), N("b")))),
    ("~-a", s.Unary("~", s.Unary("-", N("a")))),
    ("a / b % c", B("%", B("/", N("a"), N("b")), N("c"))),
    ("P.s + Q->v", B("+", s.StateTest(s.ProcRef("P"), "s"), s.Remote(s.ProcRef("Q"), "v"))),
    ("a[b[1]] >= true", B(">=", s.Index("a", s.Index("b", s.IntLit(1))), s.BoolLit(True))),
])
def test_precedence_and_associativity(text, tree):
    assert guard(text) == tree
    # The Lark parser (error path, DiVinE 3 files) builds the same tree as the fast path.
    src = f"process P {{ state s; init s; trans s -> s {{ guard {text}; }}; }} system async;"
    assert lark_parse(Source("x", src)).processes[0].transitions[0].guard[0] == tree


def test_identifiers_with_dollar_and_hash():
    assert guard("a$b#1 == c") == B("==", N("a$b#1"), N("c"))


def test_comments_and_line_continuation_are_blanks():
    m = parse_model("// header\n/* block\n comment */ byte x\\\n = 1; process P { state s; "
                    "init s; } // tail\nsystem async; /* end */\n")
    assert m.items[0] == s.VarDecl("byte", "x", None, s.IntLit(1))


# ---------------------------------------------------------------------------- positions

def test_every_node_has_a_position_into_the_shared_source():
    text = "byte x = 1;\nprocess P {\n  state s;\n  init s;\n  trans s -> s { guard x + 1 < 3; };\n}\nsystem async;\n"
    m = parse_model(text, "m.dve")
    sources = set()

    def walk(node):
        if isinstance(node, tuple):
            for n in node:
                walk(n)
        elif isinstance(node, s.Node):
            assert node.pos is not None, node
            sources.add(id(node.pos.source))
            for f in node.__dataclass_fields__:
                if f != "pos":
                    walk(getattr(node, f))
    walk(m)
    assert len(sources) == 1
    g = m.processes[0].transitions[0].guard[0]
    assert (g.pos.line, g.pos.column, g.pos.end_line, g.pos.end_column) == (5, 24, 5, 33)
    assert (g.left.right.pos.column, g.left.right.pos.end_column) == (28, 29)
    assert str(m.processes[0].pos) == "m.dve:2:9"


# ---------------------------------------------------------------------------- errors

@pytest.mark.parametrize("text, code, line, column", [
    ("", "empty-file", None, None),
    ("  // only a comment\n/* and a block */\n", "empty-file", None, None),
    ("byte x;\x00", "binary-input", None, None),
    ("byte x @ 3;", "unexpected-character", 1, 8),
    ("process P { state s; init s; trans s -> s { effect x = x +", "unexpected-eof", 1, 59),
    ("process P { state s\n init s; } system async;", "missing-semicolon", 1, 20),
    ("process P { state s; init s; trans s -> s { guard s = 1; }; } system async;",
     "assign-in-guard", 1, 53),
    ("process P { state s; init s;\nsystem async;", "unclosed-brace", 2, 1),
    ("process P { state s; init s; trans s => { s : 1 }; } system async;", "unsupported", 1, 38),
    ("process P { state s; init s; trans s -> { }; } system async;", "syntax-error", 1, 41),
    ("process P { state s; init s; init s; } system async;", "duplicate-init", 1, 35),
    ("/* never closed\nprocess", "unexpected-eof", 1, 1),
])
def test_syntax_errors(text, code, line, column):
    with pytest.raises(DveSyntaxError) as e:
        parse_model(text)
    err = e.value
    assert err.code == code, str(err)
    if line is None:
        assert err.pos is None
    else:
        assert (err.pos.line, err.pos.column) == (line, column), str(err)


def test_error_messages_speak_dve():
    with pytest.raises(DveSyntaxError) as e:
        parse_model("process P { state s; init s; trans s -> { }; } system async;")
    assert str(e.value) == "<string>:1:41: error[syntax-error]: expected a name, found '{'"
    with pytest.raises(DveSyntaxError) as e:
        parse_model("process P { state s; init s; trans s -> s { guard s = 1; }; } system async;")
    assert e.value.hint == "did you mean `==`?"


def test_not_utf8_is_positioned_at_the_bad_byte():
    with pytest.raises(DveSyntaxError) as e:
        parse_model(b"byte x;\n// caf\xe9\n", "m.dve")
    assert e.value.code == "not-utf8" and (e.value.pos.line, e.value.pos.column) == (2, 7)
