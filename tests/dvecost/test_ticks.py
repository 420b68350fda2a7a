"""The tick view (dvecost.ticks), its chart and the HTML report, replayed against the witness.

The oracle reads the witness's moves (state names of the rendering: a request's states end in
``_wait``) and the engine's cost of each step; it shares no code with dvecost.ticks, which
reads ``req`` and ``adm``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from html.parser import HTMLParser

import pytest

from dvecost.analysis import analyze
from dvecost.capacity import headroom
from dvecost.report import render_steps, render_text

from scenario_files import SHOP


def _phase_oracle(move) -> str:
    """Think, send, reply, or 'either' (waiting or in service) from a client's move alone."""
    a, b = "_wait" in move.source, "_wait" in move.target
    if not a and not b:
        return "."
    if not a:
        return ">"
    if not b:
        return "<"
    return "either"


def _ticks_of(steps):
    """Steps grouped into ticks: a server's admission steps take no time, the step in which
    every process moves takes one tick."""
    out, cur = [], []
    for s in steps:
        cur.append(s)
        if s.time:
            out.append(cur)
            cur = []
    assert not cur
    return out


def _check_view(a, steps, view, cost_per_tick):
    """Every cell of ``view`` against the steps it shows."""
    ticks = _ticks_of(steps)
    assert view.n_ticks == len(ticks)
    rows = {r.label: r for r in view.rows}
    for k, tick in enumerate(ticks):
        step = tick[-1]          # the step in which every client moves
        for s in tick[:-1]:      # admission steps: the clients stay where they are
            assert all(m.source == m.target for m in s.moves if m.process in rows)
        served = 0
        for m in step.moves:
            if m.process not in rows or rows[m.process].kind != "client":
                continue
            sym = rows[m.process].cells[k]
            want = _phase_oracle(m)
            if want == "either":
                assert sym in "w#", (k, m)
            else:
                assert sym == want, (k, m, sym)
            served += sym == "#"
        # every request costs `cost_per_tick` per tick of service, charged once per step of
        # the tick: the load counts the '#'
        cost = sum(s.cost for s in tick)
        assert cost == served * cost_per_tick * len(tick), (k, cost, served)
        assert view.load[k] * len(tick) == cost
        workers = [r for r in view.rows if r.kind == "worker"]
        busy = sum(r.cells[k] != "-" for r in workers)
        assert busy == served == view.busy[k]
        assert view.idle[k] == (busy < len(workers))
    for c in view.starved:
        assert all(rows[c].cells[k] == "w" for k in range(view.n_ticks))
        assert all(m.source == m.target for s in steps for m in s.moves if m.process == c)


PHASED = """
from scenarios import Scenario, Think, Request, Server, apportion
u = Scenario("u", [Think(1), Request("q", service=2)])
v = Scenario("v", [Request("w", service=1), Think(2)])
server = Server(workers=3, admissions=2)
def system(n):
    return apportion({u: 1, v: 1}, n)
"""


@pytest.mark.parametrize("clients", [{"u": 3, "v": 2}, {"u": 1, "v": 4}])
def test_several_admissions_per_tick_make_one_column(tmp_path, clients):
    spec = tmp_path / "phased.py"
    spec.write_text(PHASED)
    a = headroom(str(spec), clients, backend="cpu").witness
    v = a.ticks()
    assert set(v.steps) == {3}             # admissions + 1 steps per tick
    _check_view(a, a.cycle, v, 1)
    _check_view(a, a.prefix, a.ticks(prefix=True), 1)


@pytest.mark.parametrize("clients,workers", [({"browser": 4, "buyer": 2}, 2),
                                             ({"browser": 6, "buyer": 1}, 3),
                                             ({"browser": 3, "buyer": 3}, 1)])
def test_shop_ticks_replay_against_the_witness(tmp_path, clients, workers):
    spec = tmp_path / "shop.py"
    spec.write_text(SHOP)
    a = headroom(str(spec), clients, workers=workers, backend="cpu").witness
    _check_view(a, a.cycle, a.ticks(), 1)
    _check_view(a, a.prefix, a.ticks(prefix=True), 1)


def test_single_worker_editor_ticks_replay():
    a = headroom("editor", {"reader": 2, "writer": 1, "exporter": 1}, backend="cpu").witness
    _check_view(a, a.cycle, a.ticks(), 1)


def test_starved_clients_are_named_in_text_json_and_html(tmp_path):
    spec = tmp_path / "shop.py"
    spec.write_text(SHOP)
    a = headroom(str(spec), {"browser": 8, "buyer": 3}, workers=2, backend="cpu").witness
    v = a.ticks()
    assert v.starved, "8 browsers and 3 buyers on 2 workers starve someone"
    text = render_text(a)
    assert f"{len(v.starved)} " in text and "wait forever on this cycle" in text
    d = a.as_dict()
    assert d["starved"] == list(v.starved)
    # the oracle: a starved client stays in one waiting state on every step of the cycle
    for c in v.starved:
        assert all(m.source == m.target and m.source.endswith("_wait")
                   for s in a.cycle for m in s.moves if m.process == c)
    # and no other client does
    for p in a.processes:
        if p != "server" and p not in v.starved:
            assert any(m.source != m.target for s in a.cycle for m in s.moves
                       if m.process == p)


def test_hand_written_sync_model_rows_are_local_states():
    a = analyze("""byte x; process P { state a, b; init a; trans a -> b { cost 1; },
        b -> a { effect x = 1 - x; }; } process Q { state c, d; init c;
        trans c -> d {}, d -> c { cost 2; }; } system sync;""", backend="cpu")
    v = a.ticks()
    for k, step in enumerate(a.cycle):
        for r in v.rows:
            assert r.cells[k] == step.state[r.label]   # one-letter names are their own code
        assert v.load[k] == step.cost


def test_folded_rows_keep_every_client_once():
    a = headroom("editor", {"reader": 6, "exporter": 3}, workers=4, backend="cpu").witness
    v = a.ticks()
    members = [m for r in v.folded() if r.kind == "client" for m in r.members]
    assert sorted(members) == sorted(r.label for r in v.rows if r.kind == "client")
    for r in v.folded():
        for m in r.members:
            assert next(x for x in v.rows if x.label == m).cells == r.cells


def test_step_view_hides_unchanged_processes():
    a = headroom("editor", {"reader": 6, "exporter": 3}, workers=4, backend="cpu").witness
    lines = render_steps(a.cycle[:1])
    hidden = [x for x in lines if "others unchanged" in x or "other unchanged" in x]
    shown = [m for m in a.cycle[0].moves if m.source != m.target]
    assert len(hidden) == 1
    n = int(hidden[0].split("(")[1].split()[0])
    assert n + len(lines) - 2 >= len(shown) and n < len(a.cycle[0].moves)


class _Keys(HTMLParser):
    def __init__(self):
        super().__init__()
        self.values, self.key, self.svg, self.scripts = {}, None, 0, 0

    def handle_starttag(self, tag, attrs):
        d = dict(attrs)
        self.svg += tag == "svg"
        self.scripts += tag in ("script", "link", "img", "iframe")
        if "data-key" in d:
            self.key = d["data-key"]

    def handle_data(self, data):
        if self.key is not None:
            self.values.setdefault(self.key, data)
            self.key = None


def _dvecost(*args):
    return subprocess.run([sys.executable, "-m", "dvecost", *args], capture_output=True,
                          text=True, timeout=300)


def test_headroom_html_and_chart_hold_the_json_numbers(tmp_path):
    pytest.importorskip("matplotlib")
    spec = tmp_path / "shop.py"
    spec.write_text(SHOP)
    common = [str(spec), "--clients", "browser=4,buyer=2", "--workers", "2", "--backend", "cpu"]
    page, svg = tmp_path / "r.html", tmp_path / "c.svg"
    out = _dvecost("headroom", *common, "--html", str(page), "--chart", str(svg),
                   "--view", "ticks")
    assert out.returncode == 0, out.stderr
    assert "tick" in out.stdout and "load" in out.stdout
    js = json.loads(_dvecost("headroom", *common, "--json").stdout)
    p = _Keys()
    p.feed(page.read_text())
    assert p.scripts == 0 and p.svg >= 1          # self-contained, the chart inline
    assert p.values["exact"] == js["analysis"]["exact"] == js["exact"]
    assert float(p.values["value"]) == js["analysis"]["value"]
    assert int(p.values["n_states"]) == js["analysis"]["n_states"]
    assert int(p.values["cycle_cost"]) == js["analysis"]["cycle_cost"]
    assert p.values["result.headroom_exact"] == js["headroom_exact"]
    assert p.values["result.capacity_exact"] == js["capacity_exact"]
    assert int(p.values["result.n_states"]) == js["n_states"]
    assert svg.read_text().lstrip().startswith("<?xml")


def test_chart_bars_cover_every_cell():
    from dvecost.chart import bars
    a = headroom("editor", {"reader": 3, "exporter": 2}, workers=2, backend="cpu").witness
    v = a.ticks()
    rows = v.folded()
    seen = {}
    for i, k, n, sym in bars(v):
        for t in range(k, k + n):
            assert rows[i].cells[t] == sym
            seen[(i, t)] = True
    assert len(seen) == len(rows) * v.n_ticks


def test_view_ticks_needs_nothing_for_async_models():
    a = analyze("process P { state a, b; init a; trans a -> b { cost 1; }, b -> a {}; } "
                "system async;", backend="cpu")
    assert a.ticks() is None
    assert render_text(a, view="ticks") == render_text(a)


class _All(HTMLParser):
    """Every ``data-key`` element's text, in order."""

    def __init__(self):
        super().__init__()
        self.items, self.key = [], None

    def handle_starttag(self, tag, attrs):
        self.key = dict(attrs).get("data-key", self.key if tag == "span" else None)

    def handle_data(self, data):
        if self.key is not None:
            self.items.append((self.key, data))
            self.key = None


def test_saturate_html_holds_the_curve_and_answer_of_json(tmp_path):
    pytest.importorskip("matplotlib")
    page = tmp_path / "s.html"
    out = _dvecost("saturate", "paper-server", "-q", "--html", str(page), "--view", "ticks")
    assert out.returncode == 0, out.stderr
    assert "critical cycle tick by tick" in out.stdout
    js = json.loads(_dvecost("saturate", "paper-server", "-q", "--json").stdout)
    p = _All()
    p.feed(page.read_text())
    got = dict(p.items)
    assert int(got["result.saturating_clients"]) == js["saturating_clients"]
    clients = [int(v) for k, v in p.items if k == "curve.clients"]
    loads = [v for k, v in p.items if k == "curve.exact"]
    want = {c["clients"]: c["exact"] for c in js["curve"] if c["exact"] is not None}
    assert clients and dict(zip(clients, loads)) == want


def test_frontier_html_holds_the_staircase_of_json(tmp_path):
    page = tmp_path / "f.html"
    common = ["saturate", "editor", "--frontier", "reader,exporter", "--frontier-max", "3,3",
              "-q"]
    out = _dvecost(*common, "--html", str(page))
    assert out.returncode == 0, out.stderr
    js = json.loads(_dvecost(*common, "--json").stdout)
    p = _All()
    p.feed(page.read_text())
    a = [int(v) for k, v in p.items if k == "stair.a"]
    b = [v for k, v in p.items if k == "stair.b"]
    want = [(s["n_a"], s["max_n_b"]) for s in js["stair"]]
    assert list(zip(a, b)) == [(x, str(y) if y is not None else "none (saturates at 0)")
                               for x, y in want]
    assert "<svg" in page.read_text() and "<script" not in page.read_text()
