"""Static checks of expressions: names resolve, indices fit, literals fit, divisors are not 0.

:class:`ExprChecker` checks one value expression, assignment or receive target at a time
against a :class:`~dve.symbols.SymbolTable`, recording what it finds in the table's
:class:`~dve.symbols.Problems`. Constant folding (:func:`const_value`) is the checks' own: a
constant is any expression of literals and of names whose values are known (global constants
and inputs), and a value that fails to evaluate is no constant.

>>> from dve.parser import parse_model
>>> e = parse_model("process P { state s; init s; trans s -> s { guard 4 / (2 - 2) > x; }; }"
...                 " system async;").items[0].transitions[0].guard[0]
>>> from dve.symbols import SymbolTable
>>> t = SymbolTable()
>>> ExprChecker(t).expr(e, {}, None)
>>> [x.code for x in t.p.items]
['division-by-zero', 'undefined-name']
"""

from __future__ import annotations

from . import syntax as s
from .arith import INT32, INT64
from .consteval import const_evaluator, eval_const, literal_error
from .errors import DvecostError, SourcePos
from .symbols import ProcScope, Symbol, SymbolTable, name_span, at_line

__all__ = ["ExprChecker", "const_value"]

_DIV_OPS = ("/", "%")
_SHORT_CIRCUIT = ("and", "or", "imply")
#: The largest literal of a 32-bit (False) and of a 64-bit (True: cost, time) expression.
_LITERAL_MAX = {False: INT32[1], True: INT64[1]}
_NOT_VALUES = ("channel", "process")



def _is_const_expr(expr: object, env: dict[str, int]) -> bool:
    """Whether ``expr`` mentions only literals and names bound in ``env`` (cheap pre-test)."""
    stack = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, s.Binary):
            stack.append(e.right)
            stack.append(e.left)
        elif isinstance(e, s.Unary):
            stack.append(e.operand)
        elif isinstance(e, s.Name):
            if e.name not in env:
                return False
        elif not isinstance(e, (s.IntLit, s.BoolLit)):
            return False
    return True


def const_value(expr: object, env: dict[str, int], wide: bool = False) -> int | None:
    """The value of a constant expression, or ``None`` when it is not constant or fails
    (``wide``: in the checked 64-bit arithmetic of costs and times)."""
    if expr is None or not _is_const_expr(expr, env):
        return None
    if isinstance(expr, s.IntLit):  # the common case, without a call
        return expr.value if expr.value <= _LITERAL_MAX[wide] else None
    try:
        return int(eval_const(expr, env, wide=wide))  # type: ignore[arg-type]
    except (DvecostError, ArithmeticError, ValueError, RecursionError):
        return None


def _constant_nodes(root: object, env: dict[str, int]) -> dict[int, bool]:
    """``id(node) -> whether it mentions only literals and constants`` for the operator and
    leaf nodes of ``root``, in one post-order pass (a test per node would be quadratic along
    a chain ``a and b and c ...``)."""
    out: dict[int, bool] = {}
    stack: list = [(root, False)]
    while stack:
        x, done = stack.pop()
        kind = type(x)
        if kind is s.Binary:
            if done:
                out[id(x)] = out[id(x.left)] and out[id(x.right)]
            else:
                stack += ((x, True), (x.left, False), (x.right, False))
        elif kind is s.Unary:
            if done:
                out[id(x)] = out[id(x.operand)]
            else:
                stack += ((x, True), (x.operand, False))
        elif kind is s.Name:
            out[id(x)] = x.name in env
        else:
            out[id(x)] = kind is s.IntLit or kind is s.BoolLit
    return out


def _evaluated(root: object, target: object, env: dict[str, int], wide: bool) -> bool:
    """Whether evaluating ``root`` evaluates its sub-expression ``target``: ``and``, ``or``
    and ``imply`` skip their right operand when a constant left one decides the result.

    Asked only for a node that would be an error (a division by a constant zero, a constant
    index out of range), so the common path pays nothing for it.

    >>> from dve.parser import parse_model
    >>> g = parse_model("process P { state s; init s; trans s -> s { guard 0 and 1 / 0; }; }"
    ...                 " system async;").items[0].transitions[0].guard[0]
    >>> _evaluated(g, g.right, {}, False), _evaluated(g, g.left, {}, False)
    (False, True)
    """
    value_of = const_evaluator(env, wide=wide)
    constant = _constant_nodes(root, env)
    stack = [root]
    while stack:
        x = stack.pop()
        if x is target:
            return True
        kind = type(x)
        if kind is s.Binary:
            stack.append(x.left)
            if x.op in _SHORT_CIRCUIT and constant.get(id(x.left), False):
                try:
                    v = value_of(x.left)
                except (DvecostError, ArithmeticError, ValueError, RecursionError):
                    v = None   # the left operand faults: the step faults there
                if v is not None and ((v != 0) if x.op == "or" else (v == 0)):
                    continue   # the right operand never runs
            stack.append(x.right)
        elif kind is s.Unary:
            stack.append(x.operand)
        elif kind is s.Index or (kind is s.Remote and x.index is not None):
            stack.append(x.index)
        elif kind is s.Call:
            stack.extend(x.args)
    return False



class ExprChecker:
    """The checks of value expressions and assignment targets, over one symbol table."""

    def __init__(self, table: SymbolTable) -> None:
        self.table = table
        self.p = table.p
        self.globals = table.globals

    def expr(self, root: object, env: dict[str, int], scope: ProcScope | None,
             wide: bool = False) -> None:
        """Check a value expression: names resolve to variables, indices fit, literals fit
        the width (64 bits with ``wide``, for costs and times; else 32), no constant divisor
        is 0 where the division is evaluated.

        ``and``, ``or`` and ``imply`` skip their right operand when a constant left one
        decides the result (``N != 0 and x / N > 1`` with ``N = 0``): that operand is still
        checked for names, but a division by zero or an index out of range in it is no
        error, since it never runs (:func:`_evaluated`, asked only when one is found).
        Iterative, not recursive: BEEM's ``plc`` has guards with thousands of operators.
        """
        # Exact type tests and a fast path for plain scalar names: this loop visits every
        # operand of every guard and effect (300 000 nodes in one plc model).
        stack = [root]
        pop, push = stack.pop, stack.append
        local_syms = scope.locals if scope is not None else {}
        global_syms = self.globals
        while stack:
            e = pop()
            kind = type(e)
            if kind is s.Binary:
                push(e.right)
                push(e.left)
                if e.op in _DIV_OPS and const_value(e.right, env, wide) == 0 \
                        and _evaluated(root, e, env, wide):
                    self.p.error(e.right.pos or e.pos, "division-by-zero",
                                 f"expected a non-zero divisor for '{e.op}', found 0",
                                 "this step would always lead to the error state")
            elif kind is s.Name:
                sym = local_syms.get(e.name) or global_syms.get(e.name)
                if sym is None or sym.kind in _NOT_VALUES or sym.is_array:
                    self.leaf(e, env, scope, stack)
            elif kind is s.IntLit:
                if e.value > _LITERAL_MAX[wide]:
                    self.literal(e, wide)
            elif kind is s.BoolLit or e is None:
                pass
            elif kind is s.Unary:
                if e.op == "-" and type(e.operand) is s.IntLit:
                    # '-2147483648': a minus and a literal one past the maximum.
                    if e.operand.value > _LITERAL_MAX[wide] + 1:
                        self.literal(e.operand, wide, negated=True)
                else:
                    push(e.operand)
            else:
                self.leaf(e, env, scope, stack, (root, wide))

    def overflow(self, e: s.Expr, env: dict[str, int], what: str) -> None:
        """An error when the constant cost or time ``e`` overflows 64 bits (every step would
        fault); a cost that depends on the state is checked step by step at run time."""
        if not _is_const_expr(e, env):
            return
        try:
            eval_const(e, env, wide=True)
        except DvecostError as exc:
            if getattr(exc, "code", None) == "overflow":
                self.p.error(exc.pos or e.pos, "cost-overflow", f"this {what} overflows 64 bits",
                             f"every step would fault: a {what} and its intermediate values "
                             f"must lie within {INT64[0]}..{INT64[1]}")

    def literal(self, e: s.IntLit, wide: bool, negated: bool = False) -> None:
        err = literal_error(e, wide, negated)
        if err is not None:
            self.p.error(err.pos, err.code, err.message, err.hint)

    def leaf(self, e: object, env: dict[str, int], scope: ProcScope | None,
             stack: list, within: tuple | None = None) -> None:
        """Check one name, index, state test, remote read or call; push its sub-expressions.
        ``within``: ``(root, wide)`` of the expression ``e`` is part of (a constant index out
        of range is an error only where ``root`` evaluates it)."""
        if isinstance(e, s.Name):
            sym = self.table.lookup(e.name, scope)
            if sym is None:
                self.table.undefined(e.pos, e.name, scope, ("variable", "constant", "input"), "variable")
            elif sym.kind == "channel":
                self.p.error(e.pos, "channel-as-value",
                             f"expected a variable, found channel '{e.name}'",
                             "channels are used only in 'sync c!v' and 'sync c?x'")
            elif sym.kind == "process":
                self.p.error(e.pos, "not-a-variable",
                             f"expected a variable, found process '{e.name}'",
                             f"test its state with '{e.name}.STATE'")
            elif sym.is_array:
                self.whole_array(e.pos, e.name)
        elif isinstance(e, s.Index):
            stack.append(e.index)
            sym = self.table.lookup(e.name, scope)
            if sym is None:
                self.table.undefined(name_span(e.pos, e.name), e.name, scope,
                               ("variable", "constant", "input"), "array")
            else:
                self.indexed(sym, e.index, e.pos, env, within=within, node=e)
        elif isinstance(e, s.StateTest):
            sc = self.table.process_scope(e.process, scope)
            if sc is not None and e.state not in sc.states:
                self.p.error(name_span(e.pos, e.state, last=True), "unknown-state",
                             f"unknown state '{e.state}' of process '{sc.process.name}'",
                             self.p.did_you_mean(e.state, sc.states))
        elif isinstance(e, s.Remote):
            if e.index is not None:
                stack.append(e.index)
            sc = self.table.process_scope(e.process, scope)
            if sc is None:
                return
            sym = sc.locals.get(e.name)
            pos = name_span(e.pos, e.name, last=e.process.name != e.name) \
                if sym is None or sym.kind == "channel" or sym.is_array else None
            if sym is None:
                self.p.error(pos, "undefined-name",
                             f"unknown variable '{e.name}' of process '{sc.process.name}'",
                             self.p.did_you_mean(e.name, [n for n, x in sc.locals.items()
                                                         if x.kind != "channel"]))
            elif sym.kind == "channel":
                self.p.error(pos, "channel-as-value",
                             f"expected a variable, found channel '{e.name}'")
            elif e.index is None and sym.is_array:
                self.whole_array(pos, e.name, f"{e.process.name}->")
            elif e.index is not None:
                self.indexed(sym, e.index, e.pos, sc.env, last=e.process.name != e.name,
                             within=within, node=e)
        elif isinstance(e, s.Call):
            stack.extend(e.args)
            self.p.error(name_span(e.pos, e.name), "undefined-name",
                         f"unknown macro '{e.name}'")
        else:
            raise TypeError(f"not an expression: {e!r}")

    def whole_array(self, pos: SourcePos | None, name: str, prefix: str = "") -> None:
        # A warning, not an error: BEEM's train-gate models do this, and DiVinE 2 accepts them.
        self.p.warning(pos, "array-without-index", f"array '{name}' used without an index",
                       f"write '{prefix}{name}[0]' if the first cell is meant")

    def indexed(self, sym: Symbol, index: s.Expr, whole: SourcePos | None,
                env: dict[str, int], last: bool = False, within: tuple | None = None,
                node: object = None) -> None:
        """Check ``sym[index]``; ``whole`` is the span of the indexed expression. A constant
        index out of range is an error only where the read (``node``) is evaluated when the
        expression ``within = (root, wide)`` is."""
        if sym.is_array and sym.size is not None and sym.size > 0:
            i = const_value(index, env)
            if i is not None and not 0 <= i < sym.size and (
                    within is None or _evaluated(within[0], node, env, within[1])):
                self.p.error(index.pos or whole, "index-out-of-range",
                             f"index {i} is out of range for array '{sym.name}': "
                             f"expected 0..{sym.size - 1}",
                             f"'{sym.name}' has {sym.size} cell{'s' * (sym.size != 1)}")
            return
        pos = name_span(whole, sym.name, last=last)
        if sym.kind == "channel":
            self.p.error(pos, "channel-as-value", f"expected an array, found channel '{sym.name}'")
        elif sym.kind == "process":
            self.p.error(pos, "not-a-variable", f"expected an array, found process '{sym.name}'")
        elif not sym.is_array:
            self.p.error(pos, "not-an-array",
                         f"expected an array, found scalar '{sym.name}' with an index",
                         f"'{sym.name}' is declared at {at_line(sym.pos)}")

    def lvalue(self, target: object, env: dict[str, int], scope: ProcScope,
               verb: str = "assign to") -> Symbol | None:
        """Check an assignment or receive target; the symbol when it is a valid variable."""
        if isinstance(target, s.Name):
            sym = self.table.lookup(target.name, scope)
            pos = target.pos
        elif isinstance(target, s.Index):
            self.expr(target.index, env, scope)
            sym = self.table.lookup(target.name, scope)
            pos = target.pos
        else:
            self.expr(target, env, scope)
            self.p.error(getattr(target, "pos", None), "sync-kind",
                         "expected a variable to receive into, found an expression",
                         "a receive 'c?x' stores into variables; compare values with a guard")
            return None
        name = target.name
        if isinstance(target, s.Index) and (sym is None or sym.kind != "variable"):
            pos = name_span(pos, name)  # only when reporting: it reads the source line
        if sym is None:
            self.table.undefined(pos, name, scope, ("variable", "constant", "input"), "variable")
            return None
        if sym.kind in ("constant", "input"):
            self.p.error(pos, "assign-to-const", f"cannot {verb} {sym.kind} '{name}'",
                         f"'{name}' is declared {sym.kind if sym.kind == 'input' else 'const'} "
                         f"at {at_line(sym.pos)}")
            return None
        if sym.kind == "channel":
            self.p.error(pos, "assign-to-channel", f"cannot {verb} channel '{name}'",
                         f"send on it with 'sync {name}!value'")
            return None
        if sym.kind == "process":
            self.p.error(pos, "not-a-variable", f"expected a variable, found process '{name}'")
            return None
        if isinstance(target, s.Name):
            if sym.is_array:
                self.whole_array(pos, name)
        else:
            self.indexed(sym, target.index, target.pos, env)
        return sym

