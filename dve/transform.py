"""Lark parse callbacks that build the :mod:`dve.syntax` tree directly (no parse tree).

The parser in :mod:`dve.parser` is built with ``Lark(..., transformer=DveTransformer())``: every
grammar rule calls the method of the same name (or alias) with its children as soon as it is
reduced, so no intermediate :class:`lark.Tree` is ever built. Children are Lark tokens (named
terminals only: anonymous punctuation is filtered out by Lark), syntax nodes, ``None`` for an
absent optional (``[x]`` in the grammar), or the small internal values documented on each method.

Positions
---------
Every node gets a :class:`~dve.errors.SourcePos` spanning its first to its last child that has a
position (tokens carry theirs; nodes their ``pos``). Punctuation that Lark filters out is not part
of the span: ``(a + b)`` spans ``a + b``, and a transition spans ``src`` to its last clause. The
:class:`~dve.errors.Source` is set once per parse on :attr:`DveTransformer.source` and shared by
every position.

Binary operators arrive flat (``[operand, op, operand, op, ...]``) and are combined here by
precedence climbing over :data:`dve.syntax.BINARY_OPS`, every level left-associative.
"""

from __future__ import annotations

from typing import Any

from lark import Token

from . import syntax as s
from ._parts import CANONICAL_OP, MAX_LITERAL_DIGITS, PRECEDENCE, ProcessParts
from .errors import DveSyntaxError, Source, SourcePos

__all__ = ["CANONICAL_OP", "MAX_LITERAL_DIGITS", "PRECEDENCE", "DveTransformer", "ProcessParts"]

_new = object.__new__


class _Part:
    """A piece of a process body on its way to :class:`~dve.syntax.Process` (kind, value, pos)."""

    __slots__ = ("kind", "pos", "value")

    def __init__(self, kind: str, value: Any, pos: SourcePos | None = None) -> None:
        self.kind = kind
        self.value = value
        self.pos = pos


class _Time:
    """A ``time e;`` clause on its way into a transition (the clause keyword's position)."""

    __slots__ = ("expr", "pos")

    def __init__(self, expr: s.Expr, pos: SourcePos) -> None:
        self.expr = expr
        self.pos = pos


class _PropertyProcess:
    """DiVinE 3's ``property process P {...}``: a process that is the system's property."""

    __slots__ = ("pos", "process")

    def __init__(self, process: s.Process, pos: SourcePos) -> None:
        self.process = process
        self.pos = pos


class _ChannelTypes(tuple):
    """The item types of a typed channel declaration."""


class _CostClause(tuple):
    """The :class:`~dve.syntax.Cost` charges of one ``cost`` clause."""


class DveTransformer:
    """Callbacks named after the grammar rules of ``dve.lark``; see the module docstring.

    Not thread-safe by itself: :func:`dve.parser.parse_model` sets :attr:`source` under a lock.
    """

    def __init__(self) -> None:
        self.source: Source = Source("<string>", "")

    # ------------------------------------------------------------------ positions

    def tpos(self, tok: Token) -> SourcePos:
        """The position of one token."""
        return SourcePos(self.source, tok.start_pos, tok.end_pos)

    def span(self, first: Any, last: Any) -> SourcePos:
        """From the start of ``first`` to the end of ``last`` (tokens or nodes)."""
        start = first.start_pos if isinstance(first, Token) else first.pos.start
        end = last.end_pos if isinstance(last, Token) else last.pos.end
        return SourcePos(self.source, start, end)

    def error(self, where: Any, code: str, message: str, hint: str | None = None) -> DveSyntaxError:
        pos = self.tpos(where) if isinstance(where, Token) else where.pos
        return DveSyntaxError(pos, code, message, hint)

    # ------------------------------------------------------------------ expressions

    def expr(self, c: list) -> s.Expr:
        if len(c) == 1:
            return c[0]
        # Shunting-yard: `operands` and `ops` hold the pending left spine; an operator is
        # applied as soon as the next one binds no tighter (all levels are left-associative).
        operands = [c[0]]
        ops: list[str] = []
        prec = PRECEDENCE
        for i in range(1, len(c), 2):
            op = CANONICAL_OP[c[i].value]
            p = prec[op]
            while ops and prec[ops[-1]] >= p:
                right = operands.pop()
                left = operands.pop()
                operands.append(s.Binary(ops.pop(), left, right, pos=left.pos.to(right.pos)))
            ops.append(op)
            operands.append(c[i + 1])
        while ops:
            right = operands.pop()
            left = operands.pop()
            operands.append(s.Binary(ops.pop(), left, right, pos=left.pos.to(right.pos)))
        return operands[0]

    def unary(self, c: list) -> s.Unary:
        op, operand = c
        return s.Unary(op.value, operand, pos=self.span(op, operand))

    def int_lit(self, c: list) -> s.IntLit:
        tok = c[0]
        if len(tok.value) > MAX_LITERAL_DIGITS:
            raise DveSyntaxError(
                self.tpos(tok), "literal-too-large",
                f"integer literal of {len(tok.value)} digits is too large for any DVE value",
                "variables hold 8-bit 'byte' or 16-bit 'int' values; costs and times are "
                "64-bit (at most 19 digits)")
        return s.IntLit(int(tok.value), pos=self.tpos(tok))

    def bool_lit(self, c: list) -> s.BoolLit:
        tok = c[0]
        return s.BoolLit(tok.value == "true", pos=self.tpos(tok))

    def name(self, c: list) -> s.Name:
        tok = c[0]
        return s.Name(tok.value, pos=self.tpos(tok))

    def index(self, c: list) -> s.Index:
        tok, idx = c
        return s.Index(tok.value, idx, pos=self.span(tok, idx))

    def proc_ref(self, c: list) -> s.ProcRef:
        tok = c[0]
        keys = tuple(k for k in c[1:] if k is not None)
        return s.ProcRef(tok.value, keys, pos=self.span(tok, keys[-1] if keys else tok))

    def state_test(self, c: list) -> s.StateTest:
        proc, state = c
        return s.StateTest(proc, state.value, pos=self.span(proc, state))

    def remote(self, c: list) -> s.Remote:
        proc, var, idx = c
        return s.Remote(proc, var.value, idx, pos=self.span(proc, idx if idx is not None else var))

    def call(self, c: list) -> s.Call:
        tok = c[0]
        args = tuple(a for a in c[1:] if a is not None)
        return s.Call(tok.value, args, pos=self.span(tok, args[-1] if args else tok))

    # ------------------------------------------------------------------ declarations

    def var_decls(self, c: list) -> list[s.VarDecl]:
        modifier, typ = c[0], c[1]
        # An input is a constant whose value the command line may override: both flags are set.
        const = modifier is not None
        is_input = const and modifier.value == "input"
        out = []
        for name, size, init, pos in c[2:]:
            out.append(s.VarDecl(typ.value, name, size, init, const=const, input=is_input,
                                 pos=pos))
        return out

    def declarator(self, c: list) -> tuple:
        tok, size, init = c
        last = init if init is not None else size if size is not None else tok
        return tok.value, size, init, self.span(tok, last)

    def array_size(self, c: list) -> s.Expr:
        return c[0]

    def array_init(self, c: list) -> s.ArrayInit:
        items = tuple(i for i in c[1:-1] if i is not None)
        return s.ArrayInit(items, pos=self.span(c[0], c[-1]))

    def channel_decls(self, c: list) -> list[s.ChannelDecl]:
        types = None
        if isinstance(c[0], _ChannelTypes):
            types = tuple(c[0])
            c = c[1:]
        return [s.ChannelDecl(name, types, size, pos=pos) for name, size, pos in c]

    def channel_name(self, c: list) -> tuple:
        tok, size = c
        return tok.value, size, self.span(tok, size if size is not None else tok)

    def channel_types(self, c: list) -> _ChannelTypes:
        return _ChannelTypes(t.value for t in c)

    # ------------------------------------------------------------------ processes

    def process(self, c: list) -> s.Process | _PropertyProcess:
        proc = self._process(c[1], c[2:])
        return proc if c[0] is None else _PropertyProcess(proc, self.tpos(c[0]))

    def _process(self, name: Token, parts: list) -> s.Process:
        out = ProcessParts()
        for part in parts:
            if part is None:
                continue
            if isinstance(part, list):  # var_decls / channel_decls
                out.decls.extend(part)
                continue
            kind = part.kind
            if kind == "states":
                out.states.extend(part.value)
            elif kind == "init":
                if out.init is not None:
                    raise DveSyntaxError(
                        part.pos, "duplicate-init",
                        f"expected one 'init' in process '{name.value}', found a second",
                        f"the first one names state '{out.init.name}'")
                out.init = part.value
            elif kind == "commit":
                out.commit.extend(part.value)
            elif kind == "accept":
                out.accept.append(part.value)
            elif kind == "assert":
                out.asserts.extend(part.value)
            else:  # trans
                out.transitions = part.value
        return out.build(name.value, self.tpos(name))

    def process_template(self, c: list) -> s.ProcessTemplate:
        name = c[0]
        params: list[s.Param] = []
        i = 1
        while i < len(c) and not isinstance(c[i], (_Part, list)) and c[i] is not None:
            p = c[i]
            if isinstance(p, s.Param):
                params.append(p)
            elif isinstance(p, s.Name):
                params.append(s.Param(p.name, False, pos=p.pos))
            else:
                raise DveSyntaxError(p.pos, "syntax-error",
                                     "expected a parameter name in a process template, "
                                     "found an expression",
                                     "write `process T(key i) {...}` to declare a template and "
                                     "`process T(1);` to instantiate it")
            i += 1
        if i < len(c) and c[i] is None and i == 1:
            i += 1  # `process T() {...}`: the empty argument list's placeholder
        body = self._process(name, c[i:])
        return s.ProcessTemplate(tuple(params), body, pos=self.tpos(name))

    def process_instance(self, c: list) -> s.ProcessInstance:
        name = c[0]
        args = []
        for a in c[1:]:
            if a is None:
                continue
            if isinstance(a, s.Param):
                raise DveSyntaxError(a.pos, "syntax-error",
                                     "expected a value for the template parameter, found 'key'",
                                     "'key' belongs in the template, `process T(key i) {...}`")
            args.append(a)
        last = args[-1] if args else name
        return s.ProcessInstance(name.value, tuple(args), pos=self.span(name, last))

    def key_param(self, c: list) -> s.Param:
        tok = c[0]
        return s.Param(tok.value, True, pos=self.tpos(tok))

    def states(self, c: list) -> _Part:
        return _Part("states", c)

    def state_decl(self, c: list) -> s.StateDecl:
        tok = c[0]
        return s.StateDecl(tok.value, pos=self.tpos(tok))

    def state_ref(self, c: list) -> s.StateRef:
        tok = c[0]
        return s.StateRef(tok.value, pos=self.tpos(tok))

    def init(self, c: list) -> _Part:
        return _Part("init", c[0], c[0].pos)

    def commit(self, c: list) -> _Part:
        return _Part("commit", c)

    def accept_plain(self, c: list) -> _Part:
        kind = "buchi" if c[0] is not None else "plain"
        refs = tuple(c[1:])
        return _Part("accept", s.Accept(kind, (refs,), pos=self.span(c[0] or refs[0], refs[-1])))

    def accept_sets(self, c: list) -> _Part:
        kind = c[0]
        sets = tuple(c[1:])
        return _Part("accept", s.Accept(kind.value, sets, pos=self.tpos(kind)))

    def accept_set(self, c: list) -> tuple:
        return tuple(r for r in c if r is not None)

    def accept_pairs(self, c: list) -> _Part:
        kind = c[0]
        sets: list = []
        for first, second in c[1:]:
            sets.append(first)
            sets.append(second)
        return _Part("accept", s.Accept(kind.value, tuple(sets), pos=self.tpos(kind)))

    def accept_pair(self, c: list) -> tuple:
        return c[0], c[1]

    def accept_half(self, c: list) -> tuple:
        return tuple(r for r in c if r is not None)

    def assertions(self, c: list) -> _Part:
        return _Part("assert", c)

    def assertion(self, c: list) -> s.Assertion:
        ref, e = c
        return s.Assertion(ref, e, pos=self.span(ref, e))

    def trans(self, c: list) -> _Part:
        return _Part("trans", tuple(t for t in c if t is not None))

    # ------------------------------------------------------------------ transitions

    def transition(self, c: list) -> s.Transition:
        return self._transition(c[0], c[1], c[2:])

    def omitted_source(self, c: list) -> s.Transition:
        return self._transition(None, c[0], c[1:])

    def _transition(self, src: s.StateRef | None, dst: s.StateRef, clauses: list
                    ) -> s.Transition:
        guard, sync, effect = clauses[0], clauses[1], clauses[2]
        costs: list[s.Cost] = []
        time = None
        last: Any = dst
        for x in clauses:
            if isinstance(x, tuple):  # guard, effect or cost clause: a non-empty tuple
                last = x[-1] if x else last
            elif isinstance(x, _Time):
                last = x.expr
            elif x is not None:
                last = x
        for x in clauses[3:]:
            if isinstance(x, _Time):
                if time is not None:
                    raise DveSyntaxError(x.pos, "duplicate-clause",
                                         "expected one 'time' clause per transition, "
                                         "found a second",
                                         "add the durations: 'time a + b;'")
                time = x.expr
            elif x is not None:  # one cost clause
                costs.extend(x)
        first = src if src is not None else dst
        return s.Transition(src, dst, guard if guard is not None else (), sync,
                            effect if effect is not None else (), tuple(costs), time,
                            pos=self.span(first, last))

    def prob_transition(self, c: list) -> None:
        raise DveSyntaxError(self.tpos(c[1]), "unsupported",
                             "probabilistic transitions ('=>') are not supported",
                             "dvecost analyses non-probabilistic DVE; write one '->' "
                             "transition per branch")

    def prob_branch(self, c: list) -> None:  # pragma: no cover - prob_transition raises first
        return None

    def guard(self, c: list) -> tuple:
        return tuple(c)

    def sync(self, c: list) -> s.Sync:
        proc, chan, op = c[1], c[2], c[3]  # c[0] is the `sync` keyword
        values = tuple(v for v in c[4:] if v is not None)
        last = values[-1] if values else op
        return s.Sync(chan.value, op.value, values, proc, pos=self.span(chan if proc is None
                                                                        else proc, last))

    def effect(self, c: list) -> tuple:
        return tuple(a for a in c if a is not None)

    def assign(self, c: list) -> s.Assign:
        target, value = c
        return s.Assign(target, value, pos=self.span(target, value))

    def cost_plain(self, c: list) -> _CostClause:
        kw, e = c
        return _CostClause((s.Cost(s.DEFAULT_COST_RESOURCE, e, False, pos=self.span(kw, e)),))

    def cost_named(self, c: list) -> _CostClause:
        return _CostClause(c[1:])

    def cost_item(self, c: list) -> s.Cost:
        tok, e = c
        return s.Cost(tok.value, e, True, pos=self.span(tok, e))

    def time(self, c: list) -> _Time:
        kw, e = c
        return _Time(e, self.tpos(kw))

    # ------------------------------------------------------------------ DiVinE 3 top level

    def for_loop(self, c: list) -> s.ForLoop:
        var, lo, hi = c[0], c[1], c[2]
        return s.ForLoop(var.value, lo, hi, _items(c[3:]), pos=self.tpos(var))

    def if_block(self, c: list) -> s.IfBlock:
        cond = c[0]
        orelse = c[-1]
        body = _items(c[1:-1])
        return s.IfBlock(cond, body, orelse if orelse is not None else (), pos=cond.pos)

    def else_part(self, c: list) -> tuple:
        return _items(c)

    def macro(self, c: list) -> s.Macro:
        name = c[0]
        params = tuple(p.value for p in c[1:-1] if p is not None)
        return s.Macro(name.value, params, c[-1], pos=self.tpos(name))

    def ltl_property(self, c: list) -> s.LtlProperty:
        _, name, formula = c
        return s.LtlProperty(name.value, formula.value[1:-1], pos=self.span(name, formula))

    def system(self, c: list) -> s.SystemDecl:
        kind, _, prop = c
        return s.SystemDecl(kind.value, prop.value if prop is not None else None,
                            pos=self.span(kind, prop if prop is not None else kind))

    def start(self, c: list) -> s.Model:
        system = c[-1]
        items = _items(c[:-1], top=True)
        marked = [i for i in items if isinstance(i, _PropertyProcess)]
        if marked:
            # DiVinE 3's `property process P {...}` is the legacy `system ... property P;`.
            first = marked[0]
            if len(marked) > 1 or system.property is not None:
                other = marked[1] if len(marked) > 1 else system
                raise DveSyntaxError(other.pos, "syntax-error",
                                     "expected one property process, found a second",
                                     f"process '{first.process.name}' is already the property")
            system = s.SystemDecl(system.kind, first.process.name, pos=system.pos)
            items = tuple(i.process if isinstance(i, _PropertyProcess) else i for i in items)
        first = items[0] if items else system
        return s.Model(items, system, pos=first.pos.to(system.pos) if first.pos else None)


def _items(parts: list, top: bool = False) -> tuple:
    """Flatten a list of items (declaration groups arrive as lists)."""
    out: list = []
    for p in parts:
        if p is None:
            continue
        if isinstance(p, list):
            out.extend(p)
        elif isinstance(p, _PropertyProcess) and not top:
            raise DveSyntaxError(p.pos, "syntax-error",
                                 "expected a property process at the top level, found one in "
                                 "a 'for' or 'if' block")
        else:
            out.append(p)
    return tuple(out)
