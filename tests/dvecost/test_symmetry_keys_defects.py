"""Symmetry reduction on two defects of issue 28: two groups of different sizes whose keys
pass through one channel, and a key-holding variable that starts at an implicit 0 which is a
key. The reduced analysis must give the full product's value, state count and initial state,
and its lifted run must replay on the full model."""

from __future__ import annotations

import pathlib

import pytest

import dve
from dvecost import analyze
from replay import replay_analysis

DATA = pathlib.Path(__file__).resolve().parents[1] / "data"
TWO = (DATA / "crash_two_templates.dve").read_text()


def _variant(kind: str) -> str:
    if kind == "sync":
        return TWO.replace("system async;", "system sync;")
    if kind == "buffered":
        return TWO.replace("channel req, rep;", "channel {byte} req[1];\nchannel rep;")
    if kind == "committed":
        # a committed state: explored by the quotient explorer, not by counting
        return TWO.replace("state idle, busy;", "state idle, busy, mid;\n  commit mid;") \
            .replace("busy -> idle { sync rep!; }", "busy -> mid { sync rep!; }, mid -> idle { }")
    return TWO


def _check(src: str, defines: dict, ratio: bool, mode: str) -> None:
    kw = dict(ratio=ratio, mode=mode, backend="cpu", defines=defines)
    a = analyze(src, symmetry="auto", **kw)
    off = analyze(src, symmetry="off", **kw)
    assert a.symmetry["reduced"] and not off.symmetry["reduced"]
    assert a.value == off.value
    assert a.symmetry["full_states"] == off.n_states
    d = a.as_dict()
    assert d["initial"] == off.as_dict()["initial"]
    assert replay_analysis(dve.load_model(src, defines=defines), d) > 0


@pytest.mark.parametrize("na,nb", [(3, 2), (2, 3), (4, 1), (1, 3)])
@pytest.mark.parametrize("ratio,mode", [(False, "max"), (True, "min"), (True, "max")])
def test_two_groups_of_different_sizes_through_a_channel(na, nb, ratio, mode):
    # A_1..A_na and B_11..B_1nb send their ids to the server over one channel; moving a
    # member of the larger group must not index the other group's keys (it did: IndexError).
    _check(TWO, {"NA": na, "NB": nb}, ratio, mode)


@pytest.mark.parametrize("kind", ["sync", "buffered", "committed"])
def test_two_groups_variants(kind):
    _check(_variant(kind), {"NA": 3, "NB": 2}, True, "max")


def test_the_command_line_answers_as_without_symmetry(capsys):
    from dvecost.cli import main
    path = str(DATA / "crash_two_templates.dve")
    outs = []
    for sym in ("auto", "off"):
        assert main(["analyze", path, "-D", "NA=3", "-D", "NB=2", "--ratio",
                     "--symmetry", sym]) == 0
        out = capsys.readouterr().out
        outs.append(next(ln for ln in out.splitlines() if ln.startswith("maximal cycle")))
    assert outs[0] == outs[1] and "(certified)" in outs[0]


OWNER = """
byte owner;
process C(key id) {
  state idle, crit, away;
  init idle;
  trans
    idle -> crit { guard owner == id; cost 2; },
    crit -> idle { cost 1; },
    idle -> away { },
    away -> idle { };
}
for (k : LO .. LO + 2) { process C(k); }
system async;
"""


def _owner(lo: int, init: str = "") -> str:
    src = OWNER.replace("LO", str(lo))
    return src.replace("byte owner;", f"byte owner{init};")


def test_an_implicit_zero_that_is_a_key_is_not_renamed():
    # 'owner' is never given a value: it starts at 0, the key of C_0, so only C_0 can enter
    # 'crit'. Renaming the clients would move that 0; the group is refused (as a written
    # 'owner = 0' is) and the answer is the full product's, state for state.
    src = _owner(0)
    a = analyze(src, symmetry="auto", backend="cpu")
    off = analyze(src, symmetry="off", backend="cpu")
    assert not a.symmetry["reduced"]
    assert "starts at 0" in a.symmetry["reason"] and "owner" in a.symmetry["reason"]
    assert a.value == off.value and a.n_states == off.n_states == 3 * 2 * 2
    d = a.as_dict()
    assert d["initial"]["owner"] == 0
    assert {s["process"] for s in d["cycle"] if "crit" in s["transition"]} == {"C_0"}
    assert replay_analysis(dve.load_model(src), d) > 0


@pytest.mark.parametrize("lo,init", [(1, ""), (1, " = 0"), (0, " = 7")])
def test_a_zero_or_value_that_is_no_key_is_still_reduced(lo, init):
    # Keys 1..3 (0 is no key) or an initial value outside the keys: the renaming keeps the
    # initial state, so the group is reduced, with the full product's answer.
    src = _owner(lo, init)
    src = src.replace("crit -> idle { cost 1; }", "crit -> idle { cost 1; }, away -> away { cost 1; }")
    a = analyze(src, symmetry="auto", backend="cpu")
    off = analyze(src, symmetry="off", backend="cpu")
    assert a.symmetry["reduced"], a.symmetry
    assert a.value == off.value and a.symmetry["full_states"] == off.n_states
    assert a.as_dict()["initial"] == off.as_dict()["initial"]
    assert replay_analysis(dve.load_model(src), a.as_dict()) > 0
