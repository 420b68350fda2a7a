"""A DVE model's frontier over two inputs, and ``--jobs`` for the DVE sweep.

Oracles: the frontier's staircase against every grid point analysed by hand with
:func:`dvecost.analyze` (symmetry off: the full product) and against the closed form the model
is built for; ``--jobs 2`` against ``--jobs 1`` (the same curve, answer and report).
"""

from __future__ import annotations

import json
import pathlib
from fractions import Fraction as F

import pytest

from dve.errors import ConfigurationError
from dvecost import analyze, examples
from dvecost.cli import main
from dvecost.sweep import model_frontier, sweep

DATA = pathlib.Path(__file__).resolve().parents[1] / "data"
#: NA clients loading 'busy' 1/3 each, NB loading it 2/3 each, in lock step; CAPACITY 2.
TWO = DATA / "two_kinds.dve"
POOL = pathlib.Path(examples.__file__).resolve().parent / "pool_template.dve"


def run(capsys, *argv):
    code = main([*map(str, argv)])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def load(na, nb):
    """The load of the full model, analysed by hand (no frontier, no orbits)."""
    if na + nb == 0:
        return F(0)
    return F(analyze(TWO, defines={"NA": na, "NB": nb}, cost="busy", backend="cpu",
                     symmetry="off", witness=False).value)


def test_model_frontier_is_the_staircase_of_the_grid():
    r = model_frontier(TWO, "NA", "NB", max_values=(4, 3), backend="cpu", jobs=1)
    grid = {(a, b): load(a, b) for a in range(5) for b in range(4)}
    assert all(v == F(a, 3) + F(2 * b, 3) for (a, b), v in grid.items())   # the closed form
    want = tuple((a, max((b for b in range(4) if grid[a, b] < 2), default=None))
                 for a in range(5))
    assert r.stair == want and r.capacity == 2 and r.monotone
    for p in r.points:   # every point the walk analysed is the full model's load
        assert p.exact == grid[p.n_a, p.n_b] and p.saturated == (p.exact >= 2)
    assert r.analyses < 20          # the walk, not the grid


def test_model_frontier_on_the_cli_text_json_and_jobs(capsys, tmp_path):
    code, out, err = run(capsys, "saturate", TWO, "--frontier", "NA,NB", "--frontier-max",
                         "4,3", "--backend", "cpu", "--jobs", "1")
    assert code == 0 and "frontier of NA x NB (0..4 x 0..3), capacity 2" in out
    rows = [ln.split() for ln in out.splitlines()[3:8]]
    assert [(r[0], r[1]) for r in rows] == [("0", "2"), ("1", "2"), ("2", "1"), ("3", "1"),
                                            ("4", "0")]
    assert "NA 0, NB 1: load 2/3" in err
    code2, out2, _ = run(capsys, "saturate", TWO, "--frontier", "NA,NB", "--frontier-max",
                         "4,3", "--backend", "cpu", "--jobs", "2", "--json", "-q")
    d = json.loads(out2)
    assert code2 == 0 and [e["max_n_b"] for e in d["stair"]] == [2, 2, 1, 1, 0]
    assert d["a"] == "NA" and d["fixed"] == {} and d["capacity_exact"] == "2"


@pytest.mark.parametrize("extra, words", [
    (["--fixed", "NA=1"], "--fixed (use -D) applies to scenario specs"),
    (["--workers", "3"], "--workers applies to scenario specs"),
    (["--param", "NA"], "--param sweeps one input; --frontier A,B walks two"),
])
def test_model_frontier_refuses_what_does_not_apply(capsys, extra, words):
    code, _, err = run(capsys, "saturate", TWO, "--frontier", "NA,NB", *extra)
    assert code == 2 and words in err


def test_model_frontier_needs_one_capacity():
    text = ("input int X = 0; input int Y = 0; const int CAPACITY = X + 2; process P { "
            "state s; init s; trans s -> s { cost X + Y; }; } system sync;")
    with pytest.raises(ConfigurationError, match="CAPACITY changes over the grid"):
        model_frontier(text, "X", "Y", max_values=(2, 2), backend="cpu")
    assert model_frontier(text, "X", "Y", max_values=(2, 2), capacity=3,
                          backend="cpu").stair == ((0, 2), (1, 1), (2, 0))
    with pytest.raises(ConfigurationError, match="two different inputs"):
        model_frontier(TWO, "NA", "NA")


def test_sweep_with_jobs_is_the_sweep_with_one(capsys):
    one = sweep(POOL, "N", start=1, stop=7, capacity="2", resource="busy", backend="cpu",
                search="bisect", defines={"W": 2})
    two = sweep(POOL, "N", start=1, stop=7, capacity="2", resource="busy", backend="cpu",
                search="bisect", defines={"W": 2}, jobs=2)
    assert one.answer == two.answer == 5
    assert [(p.n, p.exact) for p in one.curve] == [(p.n, p.exact) for p in two.curve]
    argv = ["saturate", POOL, "--param", "N", "--to", "7", "-D", "W=2", "--resource", "busy",
            "--backend", "cpu", "-q"]
    outs = []
    for jobs in ("1", "2"):
        code, out, _ = run(capsys, *argv, "--jobs", jobs)
        assert code == 0
        outs.append([ln for ln in out.splitlines() if not ln.startswith("time:")])
    def strip(lines):      # the table's last column is the seconds
        return [ln.rsplit(None, 1)[0] if ln[:1].isspace() or ln[:1].isdigit() else ln
                for ln in lines]
    assert strip(outs[0]) == strip(outs[1])


def test_workers_of_a_model_take_jobs(capsys):
    code, out, _ = run(capsys, "workers", POOL, "--param", "W", "-D", "N=4", "--resource",
                       "busy", "--capacity", "1", "--max-workers", "4", "--backend", "cpu",
                       "--jobs", "2", "-q", "--json")
    d = json.loads(out)
    # 4 clients offer 12/7 busy workers: W = 2 keeps the load below 2.
    assert code == 0 and d["answer"] == 2 and d["goal"] == "below"


def test_a_value_that_does_not_load_is_its_error_whatever_the_jobs(capsys, tmp_path):
    """A worker process cannot send a model's error back (it does not pickle): the value is
    loaded again here and its error is exit 2 with its position, as with --jobs 1."""
    model = tmp_path / "bad_at_3.dve"
    model.write_text("input int N = 2; byte a[3 - N]; process P { state s; init s; "
                     "trans s -> s { cost 1; }; } system sync;")
    errs = []
    for jobs in ("1", "2"):
        code, _, err = run(capsys, "saturate", model, "--param", "N", "--capacity", "5",
                           "--to", "4", "--backend", "cpu", "--jobs", jobs, "-q")
        errs.append((code, err))
    assert errs[0] == errs[1] and errs[0][0] == 2
    assert "array-size-invalid" in errs[0][1] and "(with N = 3)" in errs[0][1]
