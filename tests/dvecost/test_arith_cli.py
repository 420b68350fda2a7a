"""What the user reads about DVE arithmetic: exact 64-bit costs, runtime faults of costs and
times, literals out of range refused alike by ``check`` and ``analyze``."""

from __future__ import annotations

import json

import pytest

from dvecost.cli import main


def run(tmp_path, capsys, text, *argv, cmd="analyze"):
    path = tmp_path / "m.dve"
    path.write_text(text)
    code = main([cmd, str(path), *argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


@pytest.mark.parametrize("decl,cost,value", [
    ("", "1000000000000000", "1000000000000000"),
    ("int x = 32767;", "x * x * x", "35181150961663"),
])
def test_large_costs_are_exact_and_certified(tmp_path, capsys, decl, cost, value):
    text = f"{decl} process P {{ state s; init s; trans s -> s {{ cost {cost}; }}; }} system async;"
    code, out, _ = run(tmp_path, capsys, text)
    assert code == 0
    assert f"maximal cycle mean of 'cost' = {value} = " in out and "(certified)" in out
    code, out, _ = run(tmp_path, capsys, text, "--json")
    assert json.loads(out)["exact"] == value


def test_a_faulting_step_shows_no_charge(tmp_path, capsys):
    text = ("byte x; process P { state s, t; init s; trans s -> s { guard x < 2; effect x = x + 1;"
            " cost 5; }, s -> t { guard x == 2; cost 7 / (x - 2); time 4; }, s -> s { guard "
            "x == 2; effect x = 0; cost 1; }; } system async;")
    code, out, _ = run(tmp_path, capsys, text)
    assert code == 0 and "error state reached" in out
    last = [ln for ln in out.splitlines() if "ERROR STATE" in ln]
    assert len(last) == 1 and last[0].split()[:6] == ["3", "P", "s", "->", "t", "-"]
    assert last[0].split()[6] == "-"
    # The step that faults names its model line and what went wrong.
    col = text.index("7 / (x - 2)") + 1
    assert (f"step 3 faults: {tmp_path / 'm.dve'}:1:{col}: this cost faults (a division by "
            "zero") in out
    code, out, _ = run(tmp_path, capsys, text, "--json")
    d = json.loads(out)
    assert d["error_trace"][-1]["fault"].startswith(f"{tmp_path / 'm.dve'}:1:{col}: ")
    assert [s["fault"] for s in d["error_trace"][:-1]] == [None, None]


def test_an_overflowing_or_negative_charge_leads_to_the_error_state(tmp_path, capsys):
    for clause in ("cost 4611686018427387904 * x * 2", "time 1 - x"):
        text = ("byte x; process P { state s; init s; trans s -> s { guard x < 3; "
                f"effect x = x + 1; {clause}; }}; }} system async;")
        code, out, err = run(tmp_path, capsys, text, "--ratio")
        assert code == 3 and "in the error state" in err
        assert "-> ERROR STATE" in err
        col = text.index(clause.split(" ", 1)[1]) + 1
        assert f"faults: {tmp_path / 'm.dve'}:1:{col}: " in err
        assert ("the time is -1" if clause.startswith("time") else "this cost faults") in err


def test_check_and_analyze_agree_on_a_literal_out_of_range(tmp_path, capsys):
    text = ("int x;\nprocess P { state s, t; init s; trans s -> t { effect x = 4294967296; "
            "cost 1; }, t -> t { cost 2; }; } system async;")
    for cmd in ("check", "analyze"):
        code, out, err = run(tmp_path, capsys, text, cmd=cmd)
        assert code == 2 and "m.dve:2:59: error[literal-out-of-range]" in err, cmd
        assert "^^^^^^^^^^" in err and "hint:" in err


def test_short_circuit_models_are_accepted(tmp_path, capsys):
    text = ("const byte N = 0; int x; process P { state s; init s; trans s -> s { guard "
            "N != 0 and x / N > 1; cost 1; }, s -> s { guard 0 and (1/0); }, s -> s { guard "
            "1 or (1/0); cost 3; }, s -> s { guard 0 imply (1/0); cost 2; }; } system async;")
    code, out, _ = run(tmp_path, capsys, text)
    assert code == 0 and "maximal cycle mean of 'cost' = 3 (certified)" in out


def test_explore_names_the_fault_of_the_last_step(tmp_path, capsys):
    text = ("byte x; process P { state s; init s; trans s -> s { guard x < 3; "
            "effect x = x + 1; cost 1; time 1 - x; }; } system async;")
    col = text.index("1 - x") + 1
    code, out, _ = run(tmp_path, capsys, text, cmd="explore")
    assert code == 0
    assert out.rstrip().endswith(f"fault: {tmp_path / 'm.dve'}:1:{col}: the time is -1 "
                                 "(a time must be 0 or more)")
    code, out, _ = run(tmp_path, capsys, text, "--json", cmd="explore")
    steps = json.loads(out)["error_trace"]
    assert [s["fault"] is None for s in steps] == [True, True, False]
