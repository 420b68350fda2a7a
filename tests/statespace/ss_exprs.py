"""Random DVE expressions for property tests (hypothesis strategies), shared by the tests of
the array evaluator (``test_arithmetic.py``) and of the generated kernel
(``test_successor_kernel.py``)."""

from __future__ import annotations

from hypothesis import strategies as st

#: Leaves of 32-bit expressions: two variables and the literals at the edges of the types.
LEAVES32 = ["x", "y", "0", "1", "2", "7", "255", "32767", "65536", "2147483647",
            "-2147483648", "-1"]
#: Leaves of 64-bit (cost and time) expressions.
LEAVES64 = LEAVES32 + ["4611686018427387904", "9223372036854775807", "3037000499"]
BINARY = ["+", "-", "*", "/", "%", "<<", ">>", "&", "|", "^", "==", "!=", "<", "<=", ">",
          ">=", "and", "or", "imply"]


def exprs(leaves):
    """Expressions of up to six leaves over every operator, parenthesised."""
    return st.recursive(
        st.sampled_from(leaves),
        lambda inner: st.one_of(
            st.tuples(inner, st.sampled_from(BINARY), inner).map(
                lambda t: f"({t[0]} {t[1]} {t[2]})"),
            st.tuples(st.sampled_from(["-", "~", "not "]), inner).map(
                lambda t: f"({t[0]}{t[1]})")),
        max_leaves=6)
