"""Small models shared by the state-space tests (their semantics are tested in
``test_explore_semantics.py``, their graphs against the oracle in ``test_explore_oracle.py``)."""

RDV = """
channel c;
process P { byte x = 3; state a, b; init a;
  trans a -> b { sync c!{x, x + 1}; effect x = 5; cost 2; time 3; }; }
process Q { byte y, z; state a, b; init a;
  trans a -> b { sync c?{y, z}; effect z = z * 2; cost 1; time 1; }; }
process R { byte y; state a, b; init a;
  trans a -> b { sync c?{y, y}; cost 4; time 7; }; }
system async;
"""


BUF = """
channel {byte, byte} q[2];
process P { byte x; state a; init a;
  trans a -> a { guard x < 3; sync q!{x, 10 + x}; effect x = x + 1; }; }
process Q { byte y, z, s; state a; init a;
  trans a -> a { sync q?{y, z}; effect s = s * 10 + y; }; }
system async;
"""


COMMIT2 = """
process Pcom { byte x = 0; state a, b, c; init a; commit b;
  trans a -> b { guard true; effect x = 0; }, b -> b { guard x < 2; effect x = x + 1; }; }
process P1 { state a, b; init a; trans a -> b { guard true; }, b -> a { guard true; }; }
system async;
"""


RINGS_SYNC = """
process A { state a0, a1, a2; init a0;
  trans a0 -> a1 { cost 1; time 1; }, a1 -> a2 { cost 2; time 1; }, a2 -> a0 { cost 3; time 2; }; }
process B { state b0, b1; init b0;
  trans b0 -> b1 { cost 5; time 1; }, b1 -> b0 { cost 1; time 1; }; }
system sync;
"""


PROD = """
process P1 { state a, b; init a; trans a -> b { guard true; }, b -> b { guard true; }; }
process P2 { state a, b; init a; trans a -> b { guard true; }, b -> b { guard true; }; }
process Pltl { state qa, qb, qc; init qa; accept qb; trans %s; }
system async property Pltl;
"""


# Three words per key (tags mixed and confirmed), a division by zero on the way (the error state).
WIDE_KEYS = """
int a[6];
process P { state s, t; init s;
  trans s -> t { guard a[0] < 3; effect a[0] = a[0] + 1, a[5] = 1000 * a[0]; },
        t -> s { effect a[1] = a[1] + a[0], a[2] = 7 / (a[0] - 2); }; }
process Q { state u; init u; trans u -> u { guard a[3] < 2; effect a[3] = a[3] + 1; }; }
system async;
"""
