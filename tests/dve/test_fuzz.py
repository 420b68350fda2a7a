"""Property test: mangled models never crash the front end.

Random token deletions, duplications and swaps, truncations, and random bytes are applied to a
few valid models of our own and (when ``../shared/beem`` exists) a few BEEM models. Loading the
result (read, parse, expand, check) must either succeed or raise a :class:`DvecostError`
subclass: never another exception, and never a hang (a per-example alarm and Hypothesis'
deadline guard that). ``max_examples`` is kept modest so the test takes a few seconds.
"""

from __future__ import annotations

import os
import pathlib
import re
import signal
import tempfile
from datetime import timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dve.errors import DvecostError
from dve.loader import load_model

#: The repository root and ../shared/beem (not imported from conftest: there are two).
ROOT = pathlib.Path(__file__).resolve().parents[2]
BEEM = pathlib.Path(os.environ.get("DVECOST_SHARED", ROOT.parent / "shared")) / "beem"

OURS = [
    """\
byte x = 1, y[3] = {1, 2};
const int K = -4;
channel c, d;
channel {byte, int} q[2];
process P {
    byte v;
    state a, b, c;
    init a;
    trans
        a -> b { guard x > 0 && y[1] != 2; sync c!x; effect v = v + 1; cost cpu: 3; time 2; },
        b -> c { sync q!{v, K}; cost cpu: 1, net: 2; },
        c -> a { guard not (v == 0) or Q.s; effect y[v % 3] = v / 2; };
}
process Q {
    byte w, z;
    int k;
    state s, t;
    init s;
    accept t;
    trans s -> t { sync c?w; }, t -> s { sync q?{z, k}; effect w = -w * 2 << 1; };
}
system async property Q;
""",
    (ROOT / "dvecost" / "examples" / "client_server.dve").read_text()
    if (ROOT / "dvecost" / "examples" / "client_server.dve").is_file() else "",
    """\
input int N = 3;
expression inc(v) { (v + 1) % N }
process W(key i) {
    byte x;
    state a;
    init a;
    trans a -> a { guard x < N; effect x = inc(x); };
}
for (i : 1 .. 2) { process W(i); }
property ltl safe "G true";
system async;
""",
]
OURS = [m for m in OURS if m]

BEEM_PICKS = ("anderson.1.dve", "brp.1.dve", "lup.1.prop2.dve", "pgm_protocol.1.prop2.dve",
              "bufchan.dve", "proc_instance3.dve")
if (BEEM / "models").is_dir():
    SEEDS = OURS + [(BEEM / "models" / n).read_text() for n in BEEM_PICKS
                    if (BEEM / "models" / n).is_file()]
else:
    SEEDS = OURS

_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+|->|==|!=|<=|>=|&&|\|\||<<|>>|\s+|.", re.S)


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(text)


@st.composite
def mangled(draw) -> bytes:
    text = draw(st.sampled_from(SEEDS))
    toks = _tokens(text)
    kind = draw(st.sampled_from(["delete", "duplicate", "swap", "truncate", "bytes", "mix"]))
    n_edits = draw(st.integers(1, 4))
    for _ in range(n_edits if kind in ("delete", "duplicate", "swap", "mix") else 0):
        if not toks:
            break
        i = draw(st.integers(0, len(toks) - 1))
        op = kind if kind != "mix" else draw(st.sampled_from(["delete", "duplicate", "swap"]))
        if op == "delete":
            del toks[i]
        elif op == "duplicate":
            toks.insert(i, toks[i])
        else:
            j = draw(st.integers(0, len(toks) - 1))
            toks[i], toks[j] = toks[j], toks[i]
    data = "".join(toks).encode()
    if kind == "truncate":
        data = data[: draw(st.integers(0, len(data)))]
    elif kind == "bytes":
        junk = draw(st.binary(min_size=1, max_size=16))
        at = draw(st.integers(0, len(data)))
        replace = draw(st.booleans())
        data = data[:at] + junk + data[at + (len(junk) if replace else 0):]
    return data


#: Per example: generous, as CI machines are shared; a true hang is caught by the 30 s alarm.
_DEADLINE = timedelta(seconds=10)


class _Hang(Exception):
    pass


def _alarm(signum, frame):
    raise _Hang("the front end took more than 30 s on one input")


def _load(data: bytes) -> None:
    fd, path = tempfile.mkstemp(suffix=".dve")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        old = signal.signal(signal.SIGALRM, _alarm)
        signal.alarm(30)
        try:
            load_model(path)
        except DvecostError:
            pass
        finally:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, old)
    finally:
        os.unlink(path)


def test_seeds_load():
    """The unmangled seeds are valid (else the fuzz test would test little)."""
    for text in OURS:
        fd, path = tempfile.mkstemp(suffix=".dve")
        with os.fdopen(fd, "w") as f:
            f.write(text)
        try:
            load_model(path)
        finally:
            os.unlink(path)


@settings(max_examples=300, deadline=_DEADLINE, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(mangled())
def test_mangled_models_never_crash(data):
    _load(data)


@settings(max_examples=60, deadline=_DEADLINE, derandomize=True)
@given(st.binary(max_size=256))
def test_random_bytes_never_crash(data):
    _load(data)


@pytest.mark.parametrize("data", [b"", b"\x00", b"\xff\xfe", b"process", b"system async;",
                                  b"process P {", b"/* unclosed comment", b"\\\n" * 5,
                                  "process \u00e9 {}".encode()])
def test_edge_inputs(data):
    _load(data)
