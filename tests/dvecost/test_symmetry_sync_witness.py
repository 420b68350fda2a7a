"""``system sync`` models reduced with per-class joint choices (statespace/next_state/symmetric.py,
``SyncChoiceGenerator``): the optimum equals the full product's, and the lifted critical cycle
is a run of the full model (replayed independently by tests/dvecost/replay.py)."""

from __future__ import annotations

import pytest

import dve
from dvecost import analyze
from replay import replay_analysis

# Lockstep clients with three branches out of 'idle' (two to 'b' with different charges and
# effects) and a server counting ticks that they wait on: runs of equal clients split three
# ways.
WIDE = """
input int N = 3;
process Server { byte k; state s; init s;
  trans s -> s { guard k < 2; effect k = k + 1; cost 1; },
        s -> s { guard k == 2; effect k = 0; time 2; };
}
process Client(key id) { byte m; state idle, a, b; init idle;
  trans idle -> a { cost 1; time 1; },
        idle -> b { cost 3; time 2; },
        idle -> b { effect m = (m + 1) % 2; cost 2; time 5; },
        a -> idle { guard Server->k == 0; cost 1; },
        a -> a { guard Server->k != 0; },
        b -> idle { guard Server->k == 2; cost 2; time 4; },
        b -> b { guard Server->k != 2; };
}
for (k : 1 .. N) { process Client(k); }
system sync;
"""


@pytest.mark.parametrize("ratio,mode", [(False, "max"), (False, "min"), (True, "max"),
                                        (True, "min")])
def test_three_way_choices_keep_the_full_products_value_and_the_run_replays(ratio, mode):
    model = dve.load_model(WIDE, defines={"N": 4})
    a = analyze(model, ratio=ratio, mode=mode, backend="cpu")
    off = analyze(model, ratio=ratio, mode=mode, backend="cpu", symmetry="off")
    assert a.symmetry["reduced"] and a.value == off.value and a.certified
    assert a.symmetry["full_states"] == off.n_states > a.n_states
    assert replay_analysis(model, a.as_dict()) > 0


def test_a_pool_of_workers_with_a_choice_replays():
    # Clients choosing between a long and a short request on a pool of two workers: the
    # server's guard counts every client, and a run of waiting clients splits between the
    # requests.
    from scenarios import Choice, Request, Scenario, Server, System, Think
    client = Scenario("c", [Think(2), Choice(Request("long", service=3),
                                             Request("short", service=1))])
    model = System({client: 3}, server=Server(workers=2), name="pool").to_model()
    a = analyze(model, cost="server", backend="cpu")
    off = analyze(model, cost="server", backend="cpu", symmetry="off", witness=False)
    assert a.symmetry["reduced"] and a.value == off.value
    assert replay_analysis(model, a.as_dict()) > 0
