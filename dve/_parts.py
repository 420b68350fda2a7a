"""What both DVE parsers share: operator tables, the literal limit, and the process body
gathered on its way to :class:`~dve.syntax.Process`.

:mod:`dve._fastparse` (the hand-written fast path) and :mod:`dve.transform` (the Lark
callbacks) both read these; they live apart from the transformer so that a model the fast path
reads never imports Lark (about 0.05 s of a process's start on the H100 machine).
"""

from __future__ import annotations

from . import syntax as s
from .errors import SourcePos

__all__ = ["CANONICAL_OP", "MAX_LITERAL_DIGITS", "PRECEDENCE", "ProcessParts"]

#: Canonical spelling of every binary operator token.
CANONICAL_OP: dict[str, str] = {op: op for level in s.BINARY_OPS for op in level}
CANONICAL_OP.update({"||": "or", "&&": "and"})

#: Binding strength of each canonical binary operator: higher binds tighter (index in BINARY_OPS).
PRECEDENCE: dict[str, int] = {op: i for i, level in enumerate(s.BINARY_OPS) for op in level}

#: The most digits an integer literal may have. Every DVE value (variables, costs, times) fits
#: in 64 bits, 20 digits; longer literals are refused at parse time, before Python's own limit on
#: converting long digit strings (4300 digits) could raise, and before any stage computes with a
#: number of thousands of digits. Literals of up to this length that are still out of their
#: type's range are the static checks' business.
MAX_LITERAL_DIGITS = 30

class ProcessParts:
    """The parts of a process body, gathered in the order a parser meets them.

    Both parsers (this transformer and :mod:`dve._fastparse`) fill one and turn it into the
    :class:`~dve.syntax.Process` with :meth:`build`.
    """

    __slots__ = ("decls", "states", "init", "commit", "accept", "asserts", "transitions")

    def __init__(self) -> None:
        self.decls: list = []
        self.states: list = []
        self.init: s.StateRef | None = None
        self.commit: list = []
        self.accept: list = []
        self.asserts: list = []
        self.transitions: tuple = ()

    def build(self, name: str, pos: SourcePos) -> s.Process:
        return s.Process(name, tuple(self.decls), tuple(self.states), self.init,
                         tuple(self.commit), tuple(self.accept), tuple(self.asserts),
                         self.transitions, pos=pos)
