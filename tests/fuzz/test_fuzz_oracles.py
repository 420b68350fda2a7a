"""The fuzzing harness's own oracles and rules, checked before they judge dvecost.

Karp, Dinkelbach and brute-force enumeration must agree on random small graphs; the model
explorer must give hand-counted graphs; the rules of :func:`fuzz_harness.judge` must fire on
outputs that break them (a rule that cannot fail would check nothing); cases must be the same
for the same seed.
"""

from __future__ import annotations

import ast
import pathlib
import random
from fractions import Fraction

import fuzz_gen as G
import fuzz_harness as H
import fuzz_oracle as O
import pytest

HERE = pathlib.Path(__file__).resolve().parent


def _random_graph(rng, n, m, tmax=3):
    return [(rng.randrange(n), rng.randrange(n), rng.randint(-6, 9), rng.randint(1, tmax))
            for _ in range(m)]


def test_oracles_import_nothing_of_the_code_under_test():
    for name in ("fuzz_oracle.py",):
        tree = ast.parse((HERE / name).read_text())
        mods = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import)
                for a in n.names}
        mods |= {n.module.split(".")[0] for n in ast.walk(tree)
                 if isinstance(n, ast.ImportFrom) and n.module}
        assert not mods & {"dve", "statespace", "ocm", "scenarios", "dvecost", "numpy"}, mods


def test_karp_dinkelbach_and_brute_force_agree():
    rng = random.Random(7)
    checked = 0
    for _ in range(300):
        n = rng.randint(1, 6)
        edges = _random_graph(rng, n, rng.randint(0, 10))
        brute_mean = O.brute_force(n, edges, "mean")
        assert O.karp_max_mean(n, edges) == brute_mean
        assert O.max_ratio(n, [(u, v, c, 1) for u, v, c, _ in edges]) == brute_mean
        assert O.max_ratio(n, edges) == O.brute_force(n, edges, "ratio")
        checked += brute_mean is not None
    assert checked > 150  # most random graphs had a cycle


def test_hand_computed_values():
    # Two cycles: 0->1->0 (cost 4, time 5) and the self-loop at 1 (cost 3, time 1).
    edges = [(0, 1, 3, 2), (1, 0, 1, 3), (1, 1, 3, 1), (2, 0, 100, 1)]
    assert O.cycle_value(3, edges, "mean") == ("value", Fraction(3))
    assert O.cycle_value(3, edges, "ratio") == ("value", Fraction(3))
    assert O.cycle_value(3, edges, "mean", "min") == ("value", Fraction(2))
    assert O.cycle_value(3, edges, "ratio", "min") == ("value", Fraction(4, 5))
    assert O.cycle_value(2, [(0, 1, 5, 1)], "mean") == ("no-cycle",)
    assert O.cycle_value(2, [(0, 1, 5, 0), (1, 0, 5, 0)], "ratio") == ("zero-time",)
    assert O.cycle_value(1, [(0, 0, 5, -1)], "ratio") == ("negative-time",)
    big = 2**63 - 1
    assert O.cycle_value(2, [(0, 1, big, 1), (1, 0, big, 1)]) == ("value", Fraction(big))


def test_model_oracle_on_a_hand_counted_rendezvous():
    # P sends its counter to Q on c; Q stores it; P counts 0..2 then faults on x = 3 (byte ok,
    # array index 3 out of range).
    P = O.Proc("P", ["a", "b"], "a", [
        O.Trans("a", "b", sync=("c", "!", ("var", "x")), cost=("lit", 2), time=("lit", 1)),
        O.Trans("b", "a", effects=[(("idx", "arr", ("var", "x")), ("lit", 1)),
                                   (("var", "x"), ("bin", "+", ("var", "x"), ("lit", 1)))],
                cost=("var", "x"), time=("lit", 0)),
    ], [("byte", "x", None, [0]), ("byte", "arr", 3, [])])
    Q = O.Proc("Q", ["w"], "w", [O.Trans("w", "w", sync=("c", "?", ("var", "v")),
                                         cost=("lit", 1), time=("lit", 2))],
               [("byte", "v", None, [0])])
    m = O.Model("async", [], [("c", True)], [P, Q])
    n, n_trans, edges = O.explore(m)
    # States: (a,x=0) -> (b,x=0,v=0) -> (a,x=1,arr[0]=1) -> (b,v=1) -> (a,x=2) -> (b,v=2)
    # -> (a,x=3) -> (b,v=3) -> error (index 3): 8 states + the error state, 8 steps, no cycle.
    assert (n, n_trans) == (9, 8)
    assert len(edges) == 7 and {e[2:] for e in edges} == {(3, 2), (0, 0), (1, 0), (2, 0)}
    assert O.cycle_value(n, edges) == ("no-cycle",)
    text = G.render(m)
    assert "sync c!x;" in text and "arr[x] = 1" in text and "process Q {" in text


def test_model_oracle_sync_product_and_short_circuit():
    # system sync: both move at once; costs add, times take the maximum.
    A = O.Proc("A", ["s"], "s", [O.Trans("s", "s", cost=("lit", 1), time=("lit", 2)),
                                 O.Trans("s", "s", cost=("lit", 5), time=("lit", 1))])
    z = ("var", "z")
    B = O.Proc("B", ["t"], "t", [O.Trans(
        "t", "t", guard=("bin", "and", ("bin", "!=", z, ("lit", 0)),
                         ("bin", ">", ("bin", "/", ("lit", 10), z), ("lit", 1))),
        cost=("lit", 100)), O.Trans("t", "t", cost=("lit", 3), time=("lit", 3))],
        [("byte", "z", None, [0])])
    n, n_trans, edges = O.explore(O.Model("sync", [], [], [A, B]))
    assert (n, n_trans) == (1, 2)  # z == 0: the guarded step is disabled, never an error
    assert sorted(e[2:] for e in edges) == [(4, 3), (8, 3)]
    assert O.cycle_value(n, edges, "ratio") == ("value", Fraction(8, 3))


def test_cases_are_deterministic_per_seed():
    for seed in H.seeds(5, 40):
        a, b = H.make_case(seed), H.make_case(seed)
        assert (a.files, a.argv, a.expect, a.counts) == (b.files, b.argv, b.expect, b.counts)
    cats = {s.split(":")[1] for s in H.seeds(5, 400)}
    assert cats == set(H.WEIGHTS)


def test_mutations_change_the_text_and_keep_the_seed_contract():
    rng1, rng2 = random.Random("m"), random.Random("m")
    base = G.SIMPLE
    outs = [G.mutate(base, rng1) for _ in range(50)]
    assert outs == [G.mutate(base, rng2) for _ in range(50)]
    assert sum(t != base for t, _ in outs) >= 45


def _case(text="process P { state s; init s; }\nsystem async;\n", expect=None, hazard=False,
          argv=("analyze", "{file}")):
    return G.Case("model", "0:model:0", {"model.dve": text}, list(argv), expect=expect,
                  hazard=hazard)


def _oc(rc=0, out="", err=""):
    return H.Outcome(rc, out, err, 0.01)


@pytest.mark.parametrize("oc, klass", [
    (_oc(1, err="Traceback (most recent call last):\n  File ...\nValueError: x\n"), "traceback"),
    (_oc(1, err="dvecost: internal error; please report it"), "traceback"),
    (_oc(-11), "exit-code"),
    (_oc(0, err="/f/model.dve:4:1: error[x]: y"), "position"),
    (_oc(2, err="/f/model.dve:1:40: error[x]: y"), "position"),
    (_oc(2, err="/f/model.dve:0:1: error[x]: y"), "position"),
    (H.Outcome(None, "", "", 9.0, hang=True), "hang"),
    (H.Outcome(0, "", "", 0.1, warnings=["RuntimeWarning: overflow"]), "warning"),
])
def test_rules_fire(oc, klass):
    assert klass in {k for k, _ in H.judge(_case(), oc, "/f/model.dve")}


def test_positions_inside_the_file_pass_including_the_end_of_file():
    text = "ab\r\ncd\n"
    for pos in ("1:1", "1:3", "2:3", "3:1"):
        assert not H.position_errors(text, "/f", f"/f:{pos}: error")
    assert H.position_errors(text, "/f", "/f:2:4: error")
    # CR-only line ends: a reader counting them as line ends sees 3 lines.
    assert not H.position_errors("a\rbb\rc", "/f", "/f:2:3: error")
    assert H.position_errors("a\rbb\rc", "/f", "/f:4:1: error")


def test_value_rules():
    v = ("value", Fraction(5, 2))
    good = _oc(0, out='{"exact": "5/2", "certified": true, "n_states": 3, '
                      '"n_transitions": 4}')
    assert H.judge(_case(expect=v), good, "/f") == []
    c = _case(expect=v)
    c.counts = (3, 5)
    assert {k for k, _ in H.judge(c, good, "/f")} == {"wrong-count"}
    wrong = _oc(0, out="maximal cycle mean of 'cost' = 7/3 = 2.33 (certified)\n")
    assert {k for k, _ in H.judge(_case(expect=v), wrong, "/f")} == {"wrong-value"}
    uncert = _oc(0, out="maximal cycle ratio: 5/2 = 2.5 (NOT certified)\n")
    assert {k for k, _ in H.judge(_case(expect=v), uncert, "/f")} == {"wrong-value"}
    assert {k for k, _ in H.judge(_case(expect=v), _oc(2), "/f")} == {"refused-valid"}
    assert H.judge(_case(expect=v, hazard=True), _oc(2), "/f") == []
    assert {k for k, _ in H.judge(_case(expect=("no-cycle",)), _oc(0, out=good.out), "/f")} \
        == {"wrong-outcome"}
    assert {k for k, _ in H.judge(_case(expect=("zero-time",)), _oc(2), "/f")} \
        == {"wrong-outcome"}
    assert H.printed_value("maximal cycle mean: -3 = -3 (certified)\n")[:2] == (Fraction(-3),
                                                                              True)
    assert H.printed_value("maximal cycle mean of 'cost' = 0 (certified)\n")[:2] == (0, True)


def test_a_hang_is_caught_in_process(monkeypatch):
    import dvecost.cli as cli

    def spin(argv):
        while True:
            pass

    monkeypatch.setattr(cli, "main", spin)
    oc = H.run_in_process(["check", "x"], 0.3)
    assert oc.hang and 0.25 < oc.seconds < 3


def test_a_crash_escaping_main_is_a_traceback(monkeypatch):
    import dvecost.cli as cli

    def boom(argv):
        raise SystemExit(0)

    monkeypatch.setattr(cli, "main", boom)
    oc = H.run_in_process(["check", "x"], 5)
    assert "exit-code" in {k for k, _ in H.judge(_case(), oc, "/f")}


def test_caret_rule_on_real_output(tmp_path):
    """The caret rule passes dvecost's own rendering of a tabbed line and fires when the
    caret or the line shown is off."""
    text = "process P {\tstate s; init s;\n\ttrans s ->\tt {};\n}\nsystem async;\n"
    path = tmp_path / "tab.dve"
    path.write_text(text)
    oc = H.run_in_process(["check", str(path)], 20)
    assert oc.rc == 2 and f"{path}:2:" in oc.err
    assert H.caret_errors(text, str(path), oc.err) == []
    lines = oc.err.splitlines()
    i = next(k for k, ln in enumerate(lines) if ln.startswith(f"{path}:2:"))
    shifted = lines[:i + 2] + [lines[i + 2].replace("^", " ^", 1)] + lines[i + 3:]
    assert H.caret_errors(text, str(path), "\n".join(shifted))
    other = lines[:i + 1] + [lines[i + 1].replace("trans", "trams")] + lines[i + 2:]
    assert H.caret_errors(text, str(path), "\n".join(other))


def test_caret_rule_accepts_a_window_of_a_long_line():
    line = "x" * 50 + "ERR" + "y" * 300
    assert H._snippet_ok(line, 50, "..." + line[10:130] + "...", 43)
    assert not H._snippet_ok(line, 50, "..." + line[10:130] + "...", 44)
    assert not H._snippet_ok(line, 50, line[10:130] + "...", 40)  # a cut end must be marked
    assert H._snippet_ok(line, 50, line, 50)


def test_json_position_rule():
    text = "ab\ncd\n"
    ok = '{"diagnostics": [{"code": "x", "line": 2, "column": 3, "end_line": 3, "end_column": 2}]}'
    assert H.json_position_errors(text, ok) == []
    far = ok.replace('"column": 3', '"column": 4')
    assert H.json_position_errors(text, far)
    assert H.json_position_errors(text, "not json")


def test_model_oracle_overflow_and_negative_time_are_faults():
    two62 = ("lit", 2**62)
    P = O.Proc("P", ["s"], "s", [
        O.Trans("s", "s", cost=("bin", "*", two62, ("lit", 2))),       # 2^63: overflow
        O.Trans("s", "s", cost=("bin", "-", ("bin", "*", two62, ("lit", -2)), ("lit", 1))),
        O.Trans("s", "s", cost=("lit", 7), time=("bin", "-", ("lit", 0), ("lit", 1))),
        O.Trans("s", "s", cost=("bin", "*", ("lit", 32767**2), ("lit", 32767))),
    ])
    n, n_trans, edges = O.explore(O.Model("async", [], [], [P]))
    assert (n, n_trans) == (2, 4)  # the initial state and the error state
    assert sorted(e[2] for e in edges) == [32767**3]  # -2^63 - 1 faults too
    assert O.cycle_value(n, edges) == ("value", Fraction(32767**3))


def test_template_instances_render_once_and_explore_as_copies():
    m = G.gen_sym_model(random.Random(3))
    tpl, keys = m.template
    text = G.render(m)
    assert text.count("process C(key i) {") == 1
    assert f"for (i : {keys[0]} .. {keys[-1]}) {{ process C(i); }}" in text
    inst = m.procs[-len(keys):]
    assert [p.local[0][1] for p in inst] == [f"x_{k}" for k in keys]
    key_cost = O.instantiate(O.Proc("C", ["s"], "s", [O.Trans("s", "s", cost=("key",))]), 7)
    assert key_cost.trans[0].cost == ("lit", 7)


def test_model_oracle_commit_and_buffered_channel():
    # Committed state b: only P moves there (3 transitions, not 4).
    P = O.Proc("P", ["a", "b"], "a", [O.Trans("a", "b"), O.Trans("b", "a")], commit=["b"])
    Q = O.Proc("Q", ["t"], "t", [O.Trans("t", "t", cost=("lit", 1))])
    n, n_trans, edges = O.explore(O.Model("async", [], [], [P, Q]))
    assert (n, n_trans) == (2, 3)
    assert O.cycle_value(n, edges) == ("value", Fraction(1))  # Q's self-loop at (a, t)
    # A byte FIFO of 2: the sender's effect runs before the value is taken (DiVinE 2), and the
    # value wraps to the item type: x = 200 + 100 sends 44.
    x = ("var", "x")
    S = O.Proc("S", ["s"], "s", [O.Trans("s", "s", guard=("bin", "<", x, ("lit", 300)),
                                         sync=("q", "!", ("bin", "+", x, ("lit", 100))),
                                         effects=[(x, ("bin", "+", x, ("lit", 200)))])],
               [("int", "x", None, [0])])
    R = O.Proc("R", ["r"], "r", [O.Trans("r", "r", sync=("q", "?", ("var", "v")),
                                         cost=("var", "v"))], [("byte", "v", None, [0])])
    n, n_trans, edges = O.explore(O.Model("async", [], [("q", True, "byte", 2)], [S, R]))
    # S sends 300 -> 44 (x = 200), then 500 -> 244 (x = 400, after which its guard fails);
    # R receives in between or after: states (x, queue, v) = (0,,0) (200,44,0) (400,44 244,0)
    # (200,,44) (400,244,44) (400,,244); R's cost is v before the step, so only the last
    # receive costs 44.
    assert (n, n_trans) == (6, 6)
    assert sorted(e[2] for e in edges) == [0, 0, 0, 0, 0, 44]
    text = G.render(O.Model("async", [], [("q", True, "byte", 2)], [S, R]))
    assert "channel {byte} q[2];" in text


def test_witness_rule_on_real_answers(tmp_path):
    """The critical cycles of real `cycle` and `analyze` answers pass; tampered ones fail."""
    import json

    text = "3 4\n0 1 3 1\n1 0 5 2\n1 2 9 9\n2 2 1 1\n"
    case = G.Case("graph-text", "t", {"graph.txt": text}, ["cycle", "{file}", "--json"])
    edges = [(0, 1, 3, 1), (1, 0, 5, 2), (1, 2, 9, 9), (2, 2, 1, 1)]
    case.extra["csr"] = sorted(edges, key=lambda e: e[0])
    case.extra["lines"] = edges
    case.expect = O.cycle_value(3, edges)
    oc, fails = H.run_case(case, tmp_path, 20)
    assert oc.rc == 0 and fails == []
    obj = json.loads(oc.out)
    assert H.witness_errors(case, obj, Fraction(obj["exact"])) == []
    assert H.witness_errors(case, dict(obj, cycle_edges=[0]), Fraction(obj["exact"]))
    assert H.witness_errors(case, dict(obj, cycle_edge_lines=[3, 2]), Fraction(5))

    model = O.Model("async", [], [], [O.Proc("P", ["a", "b"], "a", [
        O.Trans("a", "b", cost=("lit", 4), time=("lit", 1)),
        O.Trans("b", "a", cost=("lit", 1), time=("lit", 3))])])
    mcase = H.model_case(model, ["analyze", "{file}", "--json", "--ratio"])
    oc, fails = H.run_case(mcase, tmp_path, 20)
    assert oc.rc == 0 and fails == []
    obj = json.loads(oc.out)
    assert Fraction(obj["exact"]) == Fraction(5, 4)
    assert H.witness_errors(mcase, obj, Fraction(5, 4)) == []
    bad_step = [dict(obj["cycle"][0], cost=99)] + obj["cycle"][1:]
    assert H.witness_errors(mcase, dict(obj, cycle=bad_step), Fraction(5, 4))


def test_ss_oracle_value_for_mutants(tmp_path):
    """Mutated models have no description to explore: their answers are checked with
    tests/statespace/ss_oracle.py (its own arithmetic) and Karp."""
    import json

    text = (EXAMPLE := (H.EXAMPLES / "client_server.dve")).read_text()
    assert EXAMPLE.is_file()
    oc = H.run_in_process(["analyze", str(EXAMPLE), "--json", "--symmetry", "off"], 20)
    obj = json.loads(oc.out)
    assert H.ss_oracle_value(text, obj) == ("value", Fraction(13, 5))
    assert H.ss_oracle_value(text, dict(obj, kind="ratio")) == ("value", Fraction(13, 14))
    assert H.ss_oracle_value(text, dict(obj, n_states=obj["n_states"] + 1)) is None


def test_explore_counts_are_checked(tmp_path):
    seed = next(s for s in H.seeds(72, 400, ["model"])
                if H.make_case(s).argv[0] == "explore" and H.make_case(s).counts)
    case = H.make_case(seed)
    oc, fails = H.run_case(case, tmp_path, 20)
    assert oc.rc == 0 and fails == []
    case.counts = (case.counts[0] + 1, case.counts[1])
    assert "wrong-count" in {k for k, _ in H.judge(case, oc, str(tmp_path / "model.dve"))}


def test_text_report_counts_and_value_are_checked(tmp_path):
    seed = next(s for s in H.seeds(73, 400, ["model"])
                if "--json" not in H.make_case(s).argv and H.make_case(s).counts
                and H.make_case(s).expect[0] == "value")
    case = H.make_case(seed)
    oc, fails = H.run_case(case, tmp_path, 20)
    assert oc.rc == 0 and fails == [] and "state space:" in oc.out
    case.counts = (case.counts[0], case.counts[1] + 1)
    assert "wrong-count" in {k for k, _ in H.judge(case, oc, str(tmp_path / "model.dve"))}
    case.expect = ("value", case.expect[1] + 1)
    assert "wrong-value" in {k for k, _ in H.judge(case, oc, str(tmp_path / "model.dve"))}
