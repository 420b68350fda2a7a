"""The constraint rows of the planners' integer programs, built a row at a time.

Both :mod:`scenarios.periodic` and :mod:`scenarios.walkfamily` state their programs as rows
``low <= sum(a * x[c]) <= high`` over numbered variables and hand them to SciPy's ``milp``
(HiGHS) as one sparse constraint.
"""

from __future__ import annotations

__all__ = ["ConstraintRows"]


class ConstraintRows:
    """The rows of an integer program's constraints ``low <= sum(a * x[c]) <= high``, one
    :meth:`add` a row, as one sparse :class:`scipy.optimize.LinearConstraint`.

    >>> rows = ConstraintRows()
    >>> rows.add([(0, 1.0), (2, -1.0)], 0, 0)
    >>> rows.constraint(3).A.toarray().tolist()
    [[1.0, 0.0, -1.0]]
    """

    def __init__(self) -> None:
        self.rows: list[int] = []
        self.cols: list[int] = []
        self.vals: list[float] = []
        self.lo: list[float] = []
        self.hi: list[float] = []

    def add(self, terms, low, high) -> None:
        """One row: ``terms`` are ``(column, coefficient)`` pairs."""
        r = len(self.lo)
        for c, a in terms:
            self.rows.append(r)
            self.cols.append(c)
            self.vals.append(a)
        self.lo.append(low)
        self.hi.append(high)

    def constraint(self, nvar: int):
        """The rows as one constraint over ``nvar`` variables."""
        from scipy.optimize import LinearConstraint
        from scipy.sparse import coo_array
        mat = coo_array((self.vals, (self.rows, self.cols)), shape=(len(self.lo), nvar))
        return LinearConstraint(mat.tocsr(), self.lo, self.hi)
