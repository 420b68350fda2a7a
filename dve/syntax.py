"""The DVE abstract syntax: frozen dataclasses, each carrying its :class:`~dve.errors.SourcePos`.

Conventions
-----------
- Children are tuples, never lists, so nodes are hashable and immutable.
- Every node is frozen and slotted (:func:`_node`) and inherits ``pos`` from :class:`Node`:
  keyword-only and ``compare=False``, so structural equality ignores positions, which is what
  ``parse_model(format_model(m)) == m`` needs.
- Abstract bases start with ``_``.
- Operators are stored in canonical spelling: ``'or'`` for ``or``/``||``, ``'and'`` for
  ``and``/``&&``; unary ``'-'``, ``'~'``, ``'not'``.
- ``byte a, b = 1;`` becomes two :class:`VarDecl` nodes.

A parsed file is a :class:`Model`. DiVinE 3 constructs (templates, instances, ``for``, ``if``,
macros, ``property ltl``) appear only before :func:`dve.expand_model`; after expansion a model
holds only :class:`VarDecl`, :class:`ChannelDecl` and :class:`Process` items (plus
:class:`LtlProperty`, kept for the record but not analysed).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

from .errors import SourcePos

__all__ = [
    "Node", "ExprNode", "IntLit", "BoolLit", "Name", "Index", "ProcRef", "StateTest", "Remote",
    "Unary", "Binary", "Call", "Expr", "LValue", "ArrayInit", "VarDecl", "ChannelDecl",
    "StateDecl", "StateRef", "Accept", "Assertion", "Sync", "Assign", "Cost", "Transition",
    "Process", "Param", "ProcessTemplate", "ProcessInstance", "ForLoop", "IfBlock", "Macro",
    "LtlProperty", "SystemDecl", "Model", "Item", "BINARY_OPS", "UNARY_OPS",
    "DEFAULT_COST_RESOURCE",
]

#: Binary operators in canonical spelling, lowest precedence first (legacy DiVinE 2 table,
#: C-like, every level left-associative; see docs/language.md, "Expressions").
BINARY_OPS: tuple[tuple[str, ...], ...] = (
    ("imply",),
    ("or", "and"),
    ("|", "&", "^"),
    ("==", "!="),
    ("<", "<=", ">", ">="),
    ("<<", ">>"),
    ("+", "-"),
    ("*", "/", "%"),
)
UNARY_OPS: tuple[str, ...] = ("-", "~", "not")

#: The resource a plain ``cost EXPR;`` charges.
DEFAULT_COST_RESOURCE = "cost"


#: The decorator of every node class: immutable (so nodes are hashable and can be shared), slotted.
_node = dataclass(frozen=True, slots=True)


@_node
class Node:
    """Base of all syntax nodes: each carries its position, keyword-only and ignored by ``==``."""
    # Keyword-only so that subclasses may declare fields without defaults; None only in
    # hand-built test nodes (the parsers and the scenario DSL always set it).
    pos: SourcePos = field(  # type: ignore[assignment]
        default=None, compare=False, repr=False, kw_only=True)


# ---------------------------------------------------------------------------- expressions

@_node
class ExprNode(Node):
    """Base of the expression nodes (the members of :data:`Expr`)."""


@_node
class IntLit(ExprNode):
    """A non-negative decimal literal (negative numbers are ``Unary('-', IntLit)``)."""
    value: int


@_node
class BoolLit(ExprNode):
    """``true`` (1) or ``false`` (0)."""
    value: bool


@_node
class Name(ExprNode):
    """A variable, constant, input or (inside a template) parameter, by name."""
    name: str


@_node
class Index(ExprNode):
    """``name[index]``: one element of an array variable."""
    name: str
    index: "Expr"


@_node
class ProcRef(Node):
    """A process named in an expression or sync: ``P`` or a template instance ``T(1)``.

    After expansion ``keys`` is empty and ``name`` is the instance's name (see
    :func:`dve.instance_name`).
    """
    name: str
    keys: tuple["Expr", ...] = ()


@_node
class StateTest(ExprNode):
    """``P.s``: 1 when process ``P`` is in local state ``s``, else 0."""
    process: ProcRef
    state: str


@_node
class Remote(ExprNode):
    """``P->v`` or ``P->v[e]``: variable ``v`` of process ``P``."""
    process: ProcRef
    name: str
    index: "Expr | None" = None


@_node
class Unary(ExprNode):
    """``-e``, ``~e``, ``not e``."""
    op: str
    operand: "Expr"


@_node
class Binary(ExprNode):
    """``left op right``; ``op`` is in canonical spelling (see :data:`BINARY_OPS`)."""
    op: str
    left: "Expr"
    right: "Expr"


@_node
class Call(ExprNode):
    """``m(args)``: a use of an expression macro (DiVinE 3); gone after expansion."""
    name: str
    args: tuple["Expr", ...]


Expr = Union[IntLit, BoolLit, Name, Index, StateTest, Remote, Unary, Binary, Call]
LValue = Union[Name, Index]


# ---------------------------------------------------------------------------- declarations

@_node
class ArrayInit(Node):
    """``{e, e, ...}``: an array initialiser (shorter pads with 0, longer is cut, as DiVinE)."""
    items: tuple[Expr, ...]


@_node
class VarDecl(Node):
    """``[const|input] byte|int name[size] = init``.

    ``size`` is ``None`` for scalars. ``init`` is an expression for scalars, an
    :class:`ArrayInit` for arrays, or ``None`` (zero).
    """
    type: str
    name: str
    size: Expr | None = None
    init: Expr | ArrayInit | None = None
    const: bool = False
    input: bool = False


@_node
class ChannelDecl(Node):
    """``channel c`` (untyped: ``types is None``), or ``channel {T, ...} c[size]``.

    A channel is buffered iff it is typed and ``size`` evaluates above 0. A typed channel
    written without ``[size]`` (DiVinE 3) has ``size is None`` and is a rendezvous.
    """
    name: str
    types: tuple[str, ...] | None = None
    size: Expr | None = None


# ---------------------------------------------------------------------------- processes

@_node
class StateDecl(Node):
    """One name of a ``state a, b, c;`` list."""
    name: str


@_node
class StateRef(Node):
    """A use of a local state name (in ``init``, ``commit``, ``accept``, transitions, ...)."""
    name: str


@_node
class Accept(Node):
    """An acceptance condition.

    ``kind`` is ``'plain'`` (``accept a, b;``), ``'buchi'``, ``'genbuchi'``, ``'muller'``,
    ``'rabin'`` or ``'streett'``. ``sets`` holds one set for plain/buchi, one per ``(...)`` for
    genbuchi/muller, and for rabin/streett two per pair (first, second, first, second, ...).
    """
    kind: str
    sets: tuple[tuple[StateRef, ...], ...]


@_node
class Assertion(Node):
    """``assert s: e``: ``e`` must hold whenever the process is in ``s``."""
    state: StateRef
    expr: Expr


@_node
class Sync(Node):
    """``sync c!v``, ``sync c?x``, ``sync c!{a, b}``, ``sync P->c!v`` (DiVinE 3).

    ``op`` is ``'!'`` (send) or ``'?'`` (receive). ``values`` are expressions for a send and
    lvalues (:class:`Name` or :class:`Index`) for a receive; empty when nothing is passed.
    ``process`` names the owner of a process-local channel, else ``None``.
    """
    channel: str
    op: str
    values: tuple[Expr, ...] = ()
    process: ProcRef | None = None


@_node
class Assign(Node):
    """``target = value`` in an effect list."""
    target: LValue
    value: Expr


@_node
class Cost(Node):
    """One charge of a ``cost`` clause: ``cost e;`` has ``resource == 'cost'``;
    ``cost cpu: 5, net: 2;`` gives two ``Cost`` nodes. ``named`` tells the two spellings apart
    (``cost cost: 3`` is legal but rare)."""
    resource: str
    amount: Expr
    named: bool = False


@_node
class Transition(Node):
    """``src -> dst { guard ...; sync ...; effect ...; cost ...; time ...; }``.

    ``src`` is ``None`` for the legacy shorthand ``, -> dst {...}`` (same source as the previous
    transition); :func:`dve.expand_model` fills it in. ``guard`` is a tuple (DiVinE 3 allows a
    comma list, meaning conjunction); empty when there is no guard. ``time`` is ``None`` when
    not given (default 1); ``costs`` is empty when not given (default 0).
    """
    src: StateRef | None
    dst: StateRef
    guard: tuple[Expr, ...] = ()
    sync: Sync | None = None
    effects: tuple[Assign, ...] = ()
    costs: tuple[Cost, ...] = ()
    time: Expr | None = None


@_node
class Process(Node):
    """A process (or, when it is the system's property, a Büchi automaton)."""
    name: str
    decls: tuple[VarDecl | ChannelDecl, ...]
    states: tuple[StateDecl, ...]
    init: StateRef | None
    commit: tuple[StateRef, ...] = ()
    accept: tuple[Accept, ...] = ()
    asserts: tuple[Assertion, ...] = ()
    transitions: tuple[Transition, ...] = ()


# ---------------------------------------------------------------------------- DiVinE 3 additions

@_node
class Param(Node):
    """A template parameter; ``key`` parameters identify the instance (``process T(key i)``)."""
    name: str
    key: bool = False


@_node
class ProcessTemplate(Node):
    """``process T(key i, n) { ... }``: instantiated by :class:`ProcessInstance`."""
    params: tuple[Param, ...]
    body: Process


@_node
class ProcessInstance(Node):
    """``process T(1, 3);``."""
    template: str
    args: tuple[Expr, ...]


@_node
class ForLoop(Node):
    """``for (v : lo .. hi) { items }`` at top level; bounds inclusive."""
    var: str
    lo: Expr
    hi: Expr
    body: tuple["Item", ...]


@_node
class IfBlock(Node):
    """``if (cond) { items } [else { items }]`` at top level."""
    cond: Expr
    then: tuple["Item", ...]
    orelse: tuple["Item", ...] = ()


@_node
class Macro(Node):
    """``expression name(a, b) { e }``."""
    name: str
    params: tuple[str, ...]
    body: Expr


@_node
class LtlProperty(Node):
    """``property ltl Name "formula"``: kept, not analysed."""
    name: str
    formula: str


# ---------------------------------------------------------------------------- the file

@_node
class SystemDecl(Node):
    """``system async|sync [property P];``."""
    kind: str
    property: str | None = None


Item = Union[VarDecl, ChannelDecl, Process, ProcessTemplate, ProcessInstance, ForLoop, IfBlock,
             Macro, LtlProperty]


@_node
class Model(Node):
    """A whole DVE file: items in source order, then the ``system`` line."""
    items: tuple[Item, ...]
    system: SystemDecl

    @property
    def processes(self) -> tuple[Process, ...]:
        return tuple(i for i in self.items if isinstance(i, Process))

    @property
    def globals(self) -> tuple[VarDecl | ChannelDecl, ...]:
        return tuple(i for i in self.items if isinstance(i, (VarDecl, ChannelDecl)))
