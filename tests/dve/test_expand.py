"""Expansion of DiVinE 3 constructs, constant evaluation, and the loader."""

from __future__ import annotations

import time

import pytest
from conftest import BEEM

from dve import syntax as s
from dve.consteval import eval_const, wrap32
from dve.errors import ConfigurationError, DveSyntaxError, EvaluationError, ModelErrors
from dve.expand import MAX_MACRO_NODES, expand_model, instance_name
from dve.format import format_model
from dve.loader import load_model, read_source
from dve.parser import parse_model

PLAIN = (s.VarDecl, s.ChannelDecl, s.Process, s.LtlProperty)


def expanded(text: str, defines=None) -> s.Model:
    m = expand_model(parse_model(text), defines)
    assert all(isinstance(i, PLAIN) for i in m.items)
    assert parse_model(format_model(m)) == m  # an expanded model is plain, valid DVE
    return m


def beem(name: str) -> str:
    path = BEEM / "models" / name
    if not path.is_file():
        pytest.skip(f"{path} not found (set DVECOST_SHARED)")
    return path.read_text()


# ---------------------------------------------------------------------------- templates

def test_instance_names_are_identifiers():
    assert instance_name("a", (1,)) == "a_1"
    assert instance_name("a", (1, -3)) == "a_1_m3"
    assert instance_name("a", ()) == "a"


def test_proc_instance_models():
    m = expanded(beem("proc_instance.dve"))
    assert [p.name for p in m.processes] == ["a_1", "a_2", "a_3", "a_4"]
    m = expanded(beem("proc_instance3.dve"))
    p1, p2, p3 = m.processes
    # `b = (a(1)->b + 1) % limit` with limit = 3 - i + 1 ... as instantiated: 3, 2, 1.
    eff = [p.transitions[0].effects[1].value for p in (p1, p2, p3)]
    assert [e.right for e in eff] == [s.IntLit(3), s.IntLit(2), s.IntLit(1)]
    assert eff[0].left.left == s.Remote(s.ProcRef("a_1"), "b")


def test_for_loop_instances_match_the_written_ones():
    loop = expanded(beem("proc_instance4.dve"))
    assert [p.name for p in loop.processes] == ["a_1", "a_2", "a_3"]
    limits = [p.transitions[0].effects[1].value.right for p in loop.processes]
    # Template arguments are evaluated: `4 - x` with x = 1, 2, 3.
    assert limits == [s.IntLit(3), s.IntLit(2), s.IntLit(1)]


def test_key_parameters_name_instances_and_values_are_substituted():
    m = expanded("""
        process W(key i, n) { byte x = n; state s; init s;
            trans s -> s { guard W(i)->x < n and W(2).s; effect x = i; }; }
        process W(1, 5); process W(2, 6);
        system async;""")
    w1, w2 = m.processes
    assert (w1.name, w2.name) == ("W_1", "W_2")
    assert w2.decls[0].init == s.IntLit(6)
    g = w1.transitions[0].guard[0]
    assert g.left == s.Binary("<", s.Remote(s.ProcRef("W_1"), "x"), s.IntLit(5))
    assert g.right == s.StateTest(s.ProcRef("W_2"), "s")
    assert w1.transitions[0].effects[0].value == s.IntLit(1)


def test_if_blocks_and_negative_keys():
    m = expanded("""
        const int K = 2;
        process T(key i) { state s; init s; }
        for (v : -1 .. K) { if (v % 2 == 0) { process T(v); } else { byte b; } }
        system async;""")
    assert [type(i).__name__ + ":" + i.name for i in m.items[1:]] == [
        "VarDecl:b", "Process:T_0", "VarDecl:b", "Process:T_2"]


def test_macros_expand_with_their_arguments():
    m = expanded("""
        byte x;
        expression inc(v) { (v + 1) % 4 }
        expression twice(v) { inc(inc(v)) }
        process P { state s; init s; trans s -> s { effect x = twice(x); }; }
        system async;""")
    v = m.processes[0].transitions[0].effects[0].value
    inner = s.Binary("%", s.Binary("+", s.Name("x"), s.IntLit(1)), s.IntLit(4))
    assert v == s.Binary("%", s.Binary("+", inner, s.IntLit(1)), s.IntLit(4))


def test_ltltest_models_keep_their_property_and_drop_macros():
    m = expanded(beem("ltltest1.dve"))
    assert [type(i).__name__ for i in m.items] == ["Process", "LtlProperty"]
    assert m.items[1] == s.LtlProperty("Pltl", "F(p1a)")


def test_omitted_sources_are_filled():
    m = expanded("process P { state a, b; init a; trans a -> b {}, -> a {}, b -> b {}, -> a {}; }"
                 " system async;")
    assert [(t.src.name, t.dst.name) for t in m.processes[0].transitions] == [
        ("a", "b"), ("a", "a"), ("b", "b"), ("b", "a")]


# ---------------------------------------------------------------------------- inputs

def test_input_defaults_and_defines():
    text = beem("input.dve")
    assert expanded(text).items[0] == s.VarDecl("int", "i", None, s.IntLit(5), const=True,
                                                input=True)
    assert expanded(text, {"i": 7}).items[0].init == s.IntLit(7)
    assert expanded(text, {"i": -2}).items[0].init == s.Unary("-", s.IntLit(2))


def test_unknown_define_is_an_error():
    with pytest.raises(ModelErrors) as e:
        expand_model(parse_model(beem("input.dve")), {"j": 1})
    (err,) = e.value.errors
    assert err.code == "unknown-define" and "'i'" in err.message


@pytest.mark.parametrize("text, code", [
    ("process T(key i) { state s; init s; } process T(1, 2); system async;", "template-arity"),
    ("process P { state s; init s; } process P(1); system async;", "unknown-template"),
    ("byte y; process T(key i) { state s; init s; } process T(y); system async;",
     "not-constant"),
    ("process T(key i) { state s; init s; } process T(1 / 0); system async;", "division-by-zero"),
    ("process P { state s; init s; trans s -> s { guard Q(1).s; }; } system async;",
     "not-a-template"),
    ("process P { state s; init s; trans s -> s { guard m(1); }; } system async;",
     "unknown-macro"),
    (("expression m(a) { a } process P { state s; init s; trans s -> s { guard m(); }; } "
      "system async;"), "macro-arity"),
    (("expression m(a) { m(a) } process P { state s; init s; trans s -> s { guard m(1); }; } "
      "system async;"), "macro-recursion"),
    (("process T(key i) { state s; init s; } for (k : 0 .. 1000000000) { process T(k); } "
      "system async;"), "loop-too-long"),
    (("process T(key i) { state s; init s; trans s -> s { effect i = 1; }; } process T(1); "
      "system async;"), "assign-to-const"),
])
def test_expansion_errors(text, code):
    with pytest.raises(ModelErrors) as e:
        expand_model(parse_model(text))
    assert code in [err.code for err in e.value.errors]
    assert all(err.pos is not None for err in e.value.errors)


def test_legacy_models_are_returned_as_they_are():
    m = parse_model("process P { state s; init s; } system async;")
    assert expand_model(m) is m


# ---------------------------------------------------------------------------- constants

def ev(text: str, **env) -> int:
    m = parse_model(f"byte x = {text}; process P {{ state s; init s; }} system async;")
    return eval_const(m.items[0].init, env)


@pytest.mark.parametrize("text, value", [
    ("7 / 2", 3), ("-7 / 2", -3), ("7 / -2", -3), ("-7 % 2", -1), ("7 % -2", 1),
    ("1 << 33", 2), ("-8 >> 1", -4), ("~0", -1), ("not 3", 0), ("3 == 3", 1),
    ("2147483647 + 1", -2147483648), ("65536 * 65536", 0),
    ("0 and 1 / 0", 0), ("1 or 1 / 0", 1), ("0 imply 1 / 0", 1), ("1 imply 0", 0),
    ("true + true", 2), ("5 & 3 | 8 ^ 1", 8),  # one level, left to right
])
def test_c_semantics(text, value):
    assert ev(text) == value


def test_wrap32():
    assert wrap32(2 ** 32 + 5) == 5 and wrap32(-(2 ** 31) - 1) == 2 ** 31 - 1


@pytest.mark.parametrize("text, code", [("1 / 0", "division-by-zero"), ("5 % (2 - 2)",
                                                                          "division-by-zero"),
                                        ("y + 1", "not-constant"), ("a[1]", "not-constant"),
                                        ("P.s", "not-constant"), ("m(1)", "unknown-macro")])
def test_constant_errors(text, code):
    with pytest.raises(EvaluationError) as e:
        ev(text)
    assert e.value.code == code and e.value.pos is not None


# ---------------------------------------------------------------------------- loader

def test_read_source_errors(tmp_path):
    with pytest.raises(ConfigurationError, match="no such file"):
        read_source(tmp_path / "missing.dve")
    with pytest.raises(ConfigurationError, match="directory"):
        read_source(tmp_path)
    bad = tmp_path / "bad.dve"
    bad.write_bytes(b"byte x;\n\xff\xfe")
    with pytest.raises(DveSyntaxError) as e:
        read_source(bad)
    assert e.value.code == "not-utf8" and (e.value.pos.line, e.value.pos.column) == (2, 1)
    bad.write_bytes(b"\x00\x01\x02binary")
    with pytest.raises(DveSyntaxError) as e:
        read_source(bad)
    assert e.value.code == "binary-input" and e.value.pos is None


def test_load_model_from_path_and_text(tmp_path):
    text = "input int N = 1;\nprocess P(key i) { state s; init s; }\n" \
           "for (k : 1 .. N) { process P(k); }\nsystem async;\n"
    path = tmp_path / "m.dve"
    path.write_text(text)
    m = load_model(path, defines={"N": 2})
    assert [p.name for p in m.processes] == ["P_1", "P_2"]
    assert str(m.processes[0].pos).startswith(str(path))
    assert [p.name for p in load_model(text).processes] == ["P_1"]
    assert str(load_model(text, name="x.dve").processes[0].pos).startswith("x.dve:")


# ---------------------------------------------------------------------------- macro size bound

def _doubling(levels: int) -> str:
    lines = ["byte x;", "expression m0(a) { a + a }"]
    lines += [f"expression m{i}(a) {{ m{i - 1}(a) + m{i - 1}(a) }}" for i in range(1, levels + 1)]
    lines += [f"process P {{ state s; init s; trans s -> s {{ guard m{levels}(x) > 0; }}; }}",
              "system async;"]
    return "\n".join(lines)


def _leaves(e) -> int:
    stack, n = [e], 0
    while stack:
        e = stack.pop()
        if isinstance(e, s.Binary):
            stack += [e.left, e.right]
        else:
            n += 1
    return n


def test_a_macro_just_under_the_size_bound_expands_fully():
    # m_i expands into 2^(i+2) - 1 nodes: m14 is 65,535 (allowed), m15 131,071 (refused).
    assert 2 ** 16 - 1 <= MAX_MACRO_NODES < 2 ** 17 - 1
    m = expand_model(parse_model(_doubling(14)))
    guard = m.processes[0].transitions[0].guard[0]
    assert _leaves(guard.left) == 2 ** 15


@pytest.mark.parametrize("levels", [15, 40])
def test_a_doubling_macro_is_refused_quickly_at_its_use(levels):
    t0 = time.perf_counter()
    with pytest.raises(ModelErrors) as info:
        expand_model(parse_model(_doubling(levels), "m.dve"))
    assert time.perf_counter() - t0 < 5  # 20 levels took 80 s before the bound
    (err,) = info.value.errors
    assert err.code == "macro-too-large" and f"macro 'm{levels}'" in err.message
    call = f"m{levels}(x"  # the span ends at the last argument
    assert (err.pos.line, err.pos.column, err.pos.end_column) == (levels + 3, 51, 51 + len(call))


def test_nested_uses_that_double_their_argument_are_refused():
    # d(a) = a + a shares its argument, so the work is small but the tree it stands for is not.
    text = ("byte x; expression d(a) { a + a } process P { state s; init s; "
            "trans s -> s { guard " + "d(" * 30 + "x" + ")" * 30 + " > 0; }; } system async;")
    with pytest.raises(ModelErrors) as info:
        expand_model(parse_model(text))
    (err,) = info.value.errors
    assert err.code == "macro-too-large" and err.pos.column == 85
    small = text.replace("d(" * 30 + "x" + ")" * 30, "d(" * 10 + "x" + ")" * 10)
    guard = expand_model(parse_model(small)).processes[0].transitions[0].guard[0]
    assert _leaves(guard.left) == 2 ** 10
