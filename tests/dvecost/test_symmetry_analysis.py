"""``analyze(..., symmetry='auto'|'off')`` and ``--symmetry``: same optimum, runs of the full
model (replayed independently), and what the report says about the reduction."""

from __future__ import annotations

import json
import pathlib

import pytest

import dve
from dvecost import analyze
from dvecost.cli import main
import dvecost.examples
from dvecost.examples import EXAMPLES, example_path
from replay import replay_analysis

TEMPLATE = pathlib.Path(dvecost.examples.__file__).parent / "client_server_template.dve"
BEEM = pathlib.Path(__file__).resolve().parents[3] / "shared" / "beem" / "models"


def _both(model, **kw):
    return analyze(model, symmetry="auto", backend="cpu", **kw), \
        analyze(model, symmetry="off", backend="cpu", **kw)


@pytest.mark.parametrize("n", [2, 3, 4])
@pytest.mark.parametrize("ratio,mode", [(False, "max"), (False, "min"), (True, "max"),
                                        (True, "min")])
def test_template_auto_equals_off_and_the_run_replays(n, ratio, mode):
    a, off = _both(TEMPLATE, ratio=ratio, mode=mode, defines={"N": n})
    assert a.value == off.value
    assert a.symmetry["reduced"] and not off.symmetry["reduced"]
    assert a.symmetry["full_states"] == off.n_states
    assert a.symmetry["classes"] == a.n_states < off.n_states
    d = a.as_dict()
    assert d["symmetry"]["groups"] == [{"template": "Client", "instances": n,
                                        "keys": list(range(1, n + 1))}]
    # The printed cycle and prefix are runs of the full model with real client names.
    assert replay_analysis(dve.load_model(TEMPLATE, defines={"N": n}), d) > 0


@pytest.mark.parametrize("name", EXAMPLES)
def test_bundled_examples_have_no_template_and_keep_their_answer(name):
    path = example_path(name)
    cost = "cpu" if name == "resources.dve" else None
    a, off = _both(path, cost=cost)
    assert not a.symmetry["reduced"]
    assert (a.value, a.n_states) == (off.value, off.n_states)


@pytest.mark.skipif(not BEEM.is_dir(), reason="../shared/beem not present")
@pytest.mark.parametrize("name,reduced", [("proc_instance.dve", True),
                                          # a(1)->b in the template: instance a_1 is special
                                          ("proc_instance2.dve", False)])
def test_beem_templates(name, reduced):
    a, off = _both(BEEM / name)
    assert a.symmetry["reduced"] is reduced and a.value == off.value
    if reduced:
        assert a.symmetry["full_states"] == off.n_states
    else:
        assert "names its instance a_1" in a.symmetry["reason"]
        assert a.n_states == off.n_states
    replay_analysis(dve.load_model(BEEM / name), a.as_dict())


def test_cli_text_and_json_report_the_reduction(capsys):
    assert main(["analyze", str(TEMPLATE), "-D", "N=4", "--ratio"]) == 0
    out = capsys.readouterr().out
    assert ("state space: 55 classes of interchangeable Client x4 (the full product has 513 "
            "states)") in out
    assert main(["analyze", str(TEMPLATE), "-D", "N=4", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["symmetry"]["classes"] == d["n_states"] == 55
    assert d["symmetry"]["full_states"] == 513
    assert main(["analyze", str(TEMPLATE), "-D", "N=4", "--json", "--symmetry", "off"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["n_states"] == 513 and d["symmetry"]["reduced"] is False


def test_a_refused_group_says_why(capsys):
    text = TEMPLATE.read_text().replace("guard typ == 1;", "guard typ == 1 and who != 2;")
    a = analyze(text, defines={"N": 3}, backend="cpu")
    assert not a.symmetry["reduced"]
    assert "renaming of the keys" in a.symmetry["not_reduced"][0]["reason"]


SYNC = """
input int N = 3;
process Server { byte k; state idle, busy; init idle;
  trans idle -> idle { guard k < 1; effect k = k + 1; },
        idle -> busy { guard k == 1; effect k = 0; cost 1; },
        busy -> idle { cost 2; time 3; };
}
process Client(key id) { byte n; state think, light, heavy; init think;
  trans think -> think { guard n < 2; effect n = n + 1; time 1; },
        think -> light { guard n == 2; effect n = 0; cost 1; },
        think -> heavy { guard n == 2; effect n = 0; cost 3; time 2; },
        light -> think { guard Server.idle; cost 1; },
        heavy -> think { guard Server.busy; cost 2; time 4; },
        light -> light { guard Server.busy; },
        heavy -> heavy { guard Server.idle; };
}
for (k : 1 .. N) { process Client(k); }
system sync;
"""


@pytest.mark.parametrize("ratio,mode", [(False, "max"), (True, "min")])
def test_sync_template_auto_equals_off_and_the_run_replays(ratio, mode):
    a, off = _both(SYNC, ratio=ratio, mode=mode, defines={"N": 4})
    assert a.symmetry["reduced"] and a.value == off.value
    assert a.symmetry["full_states"] == off.n_states
    d = a.as_dict()
    assert replay_analysis(dve.load_model(SYNC, defines={"N": 4}), d) > 0


@pytest.mark.parametrize("name,n", [("paper-server", 3), ("editor", 4)])
def test_scenario_server_witness_is_a_run_of_the_full_model(name, n):
    # The server's transitions name clients (client_2->req, done = 2): the lifted run renames
    # them along with the clients, and the replay re-executes every step.
    from scenarios.templates import TEMPLATES
    model = TEMPLATES[name].family(n).to_model()
    for mode in ("max", "min"):
        a = analyze(model, cost="server", mode=mode, backend="cpu")
        assert a.symmetry["reduced"]
        assert replay_analysis(model, a.as_dict()) > 0


def test_editor_saturating_witness_renames_keys_of_both_groups_and_closes_in_one_round():
    # 'done' and the server's 'cur' hold keys of readers and of writers: lifting a step renames
    # each group's keys in them (renaming the writers' must not undo the readers'). The
    # critical cycle visits 28 classes; three readers trade places along it, so following the
    # representatives' own members closes only after three rounds (84 steps), but letting
    # interchangeable readers trade places on the way closes it in one.
    from scenarios.templates import TEMPLATES
    model = TEMPLATES["editor"].family(6).to_model()
    a = analyze(model, cost="server", backend="cpu")
    d = a.as_dict()
    assert str(a.value) == "1" and len(d["cycle"]) == 28
    assert replay_analysis(model, d) > 28


def test_steps_name_states_and_edges_of_the_graph_returned():
    # With symmetry reduction the steps are those of the lifted runs: a.graph is their graph,
    # so an edge id of a step gives back its cost and time, and --dot draws the real run.
    from dvecost.report import render_dot
    a = analyze(TEMPLATE, defines={"N": 3}, mode="min", backend="cpu")
    g = a.graph
    for s in a.prefix + a.cycle:
        assert int(g.indices[s.edge]) == s.target
        assert (int(g.cost()[s.edge]), int(g.time[s.edge])) == (s.cost, s.time)
    dot = render_dot(a)
    assert "Client_3" in dot and dot.count("color=red, penwidth=2];") >= len(a.cycle)


def test_pool_of_workers_witness_replays():
    """A server with several workers (a pool: the clients serve their own ticks after the
    first): the reduced analysis's run is a run of the full model."""
    from scenarios import Server, System
    from scenarios.templates import paper_server
    client = paper_server(1).scenarios[0]
    model = System({client: 4}, server=Server(workers=3), name="pool").to_model()
    a = analyze(model, cost="server", backend="cpu")
    assert a.symmetry["reduced"] and str(a.value) == "4/3"
    assert replay_analysis(model, a.as_dict()) > 0
