"""``dvecost explore``: output, JSON, limits (exit 3), the error trace, --save."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dvecost.cli import main

STACK = """
byte buf[3];
byte n;
process Stack { state run; init run;
  trans run -> run { effect buf[n] = 1, n = n + 1; cost 1; },
        run -> run { guard n > 0; effect n = n - 1, buf[n] = 0; cost 2; }; }
system async;
"""

INPUT = """
input byte k = 2;
byte x;
process P { state s; init s; trans s -> s { guard x < k; effect x = x + 1; }; }
system async;
"""


@pytest.fixture
def model(tmp_path):
    def write(text, name="m.dve"):
        p = tmp_path / name
        p.write_text(text)
        return str(p)
    return write


def test_text_report_with_error_trace(model, capsys):
    assert main(["explore", model(STACK)]) == 0
    out = capsys.readouterr().out
    assert "states        5" in out and "transitions   7" in out
    assert "error state   reachable" in out
    assert "shortest run to the error state" in out and "ERROR STATE" in out


def test_json(model, capsys):
    assert main(["explore", model(STACK), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["n_states"] == 5 and info["n_transitions"] == 7
    assert info["n_deadlocks"] == 0 and info["error_state_reached"] is True
    assert info["status"] == "ok" and info["depth"] == 4
    assert set(info["timings"]) == {"load", "explore"} and info["peak_memory_bytes"] > 0
    assert info["error_trace"][-1]["state"] == {"error": True}
    assert len(info["error_trace"]) == 4


def test_defines(model, capsys):
    assert main(["explore", model(INPUT), "--json", "-D", "k=5"]) == 0
    assert json.loads(capsys.readouterr().out)["n_states"] == 6


def test_state_limit_exit_3(model, capsys):
    big = "byte x, y; process P { state s; init s; trans s -> s { effect x = x + 1; }, " \
          "s -> s { effect y = y + 1; }; } system async;"
    assert main(["explore", model(big), "--max-states", "100"]) == 3
    cap = capsys.readouterr()
    assert "--max-states 100" in cap.err and "states" in cap.err and "Traceback" not in cap.err
    assert main(["explore", model(big), "--max-memory", "1K"]) == 3
    assert "--max-memory" in capsys.readouterr().err


def test_limit_partial_graph():
    from runtime.errors import StateLimitExceeded
    from dve import load_model
    from statespace import build_state_graph, validate_graph
    model = load_model("byte x; process P { state s; init s; trans s -> s { "
                       "effect x = x + 1; }; } system async;")
    with pytest.raises(StateLimitExceeded) as info:
        build_state_graph(model, max_states=10, chunk_size=4)
    part = info.value.partial
    assert not part.complete and part.n_states > 10 and part.n_expanded <= part.n_states
    validate_graph(part)


def test_save(model, tmp_path, capsys):
    out = tmp_path / "g.npz"
    assert main(["explore", model(STACK), "--save", str(out), "-q"]) == 0
    from statespace import load_graph
    g = load_graph(out)
    assert g.n_states == 5 and g.error_state == 4
    # The last step faults (buf[3]) and goes to the error state, which charges nothing.
    assert np.array_equal(g.cost(), np.array([1, 2, 1, 2, 1, 2, 0]))


def test_bad_model_exit_2(model, capsys):
    assert main(["explore", model("process P { state a; init b; } system async;")]) == 2
    assert "Traceback" not in capsys.readouterr().err


def test_progress_silent_when_not_a_tty(model, capsys):
    assert main(["explore", model(STACK)]) == 0
    assert capsys.readouterr().err == ""
