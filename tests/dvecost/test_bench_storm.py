"""``dvecost bench storm``: the PRISM translation of the client/server family builds the same
graph as dvecost and Storm agrees on the value; without stormpy the suite stops with a hint.

Storm is not a dependency of the project: the tests that run it use the interpreter named by
``DVECOST_STORM_PYTHON`` (else this one) and skip when it cannot import stormpy.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from dvecost.analysis import analyze
from dvecost.benchmarks.storm import FAMILY, prism_client_server

STORM_PYTHON = os.environ.get("DVECOST_STORM_PYTHON", sys.executable)


def _has_stormpy(python: str) -> bool:
    try:
        return subprocess.run([python, "-c", "import stormpy"], capture_output=True,
                              timeout=120).returncode == 0
    except OSError:
        return False


needs_storm = pytest.mark.skipif(not _has_stormpy(STORM_PYTHON),
                                 reason="stormpy not importable (pip install stormpy, or set "
                                        "DVECOST_STORM_PYTHON to an interpreter that has it)")


def _bench(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dvecost", "bench", "storm", "-q", *args],
                          capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize("n", [1, 2, 5])
def test_prism_text_has_one_module_per_process_and_every_rendezvous(n):
    text = prism_client_server(n)
    assert text.count("\nmodule ") == n + 1 and text.count("endmodule") == n + 1
    for i in range(1, n + 1):
        # Each rendezvous action is written by both of its sides: the client and the server.
        for act in (f"reqL_{i}", f"reqH_{i}", f"rep_{i}"):
            assert text.count(f"[{act}] c_{i}=") == 1 and text.count(f"[{act}] s=") == 1
        # ... and carries its cost once.
        assert text.count(f"[{act}] true :") == 1


def test_prism_rejects_no_clients():
    with pytest.raises(ValueError):
        prism_client_server(0)


def test_without_stormpy_the_suite_stops_with_a_hint(tmp_path):
    if _has_stormpy(sys.executable):
        pytest.skip("this interpreter has stormpy")
    res = _bench("--clients", "2", "--repeat", "1", "--python", sys.executable)
    assert res.returncode == 2
    assert "pip install stormpy" in res.stderr and "Traceback" not in res.stderr


def test_bad_client_list_is_an_input_error():
    res = _bench("--clients", "two", "--python", sys.executable)
    assert res.returncode == 2 and "--clients two" in res.stderr


@needs_storm
@pytest.mark.parametrize("n", [1, 2, 4])
def test_storm_builds_dvecost_graph_and_agrees_on_the_value(n, tmp_path):
    """The translation is checked against dvecost's own exploration of the DVE template: the
    same number of states and of transitions (one choice per step), and Storm's long-run
    average equal to the exact cycle mean (to Storm's precision)."""
    ours = analyze(FAMILY, defines={"N": n}, symmetry="off", witness=False, backend="cpu")
    prism = tmp_path / "cs.prism"
    prism.write_text(prism_client_server(n))
    script = ("import json, sys, stormpy\n"
              "prog = stormpy.parse_prism_program(sys.argv[1])\n"
              "props = stormpy.parse_properties('R{\"cost\"}max=? [LRA]', prog)\n"
              "m = stormpy.build_model(prog, props)\n"
              "r = stormpy.model_checking(m, props[0])\n"
              "print(json.dumps([m.nr_states, m.nr_choices, r.get_value(m.initial_states[0])]))")
    out = subprocess.run([STORM_PYTHON, "-c", script, str(prism)], capture_output=True,
                         text=True, timeout=300, check=True)
    states, choices, value = json.loads(out.stdout)
    assert (states, choices) == (ours.n_states, ours.n_transitions)
    assert value == pytest.approx(float(ours.value), abs=1e-6)


@needs_storm
def test_table_and_json_name_both_tools_with_equal_counts():
    res = _bench("--clients", "3", "--repeat", "1", "--python", STORM_PYTHON, "--json")
    assert res.returncode == 0, res.stderr
    rows = {r["tool"]: r for r in json.loads(res.stdout)["rows"]}
    assert set(rows) == {"dvecost", "Storm"}
    assert rows["dvecost"]["states"] == rows["Storm"]["states"] > 0
    assert rows["dvecost"]["transitions"] == rows["Storm"]["transitions"]
    assert rows["dvecost"]["value"] == "13/5" and rows["Storm"]["value"] == pytest.approx(2.6)
    assert rows["Storm"]["vs dvecost"] == pytest.approx(
        rows["Storm"]["process s"] / rows["dvecost"]["process s"], rel=0.02)
    text = _bench("--clients", "2", "--repeat", "1", "--python", STORM_PYTHON)
    assert text.returncode == 0 and "| Storm | 2 |" in text.stdout
