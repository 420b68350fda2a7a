"""Expand DiVinE 3 constructs into a plain (legacy-shaped) model.

:func:`expand_model` turns a parsed :class:`~dve.syntax.Model` into one that holds only
:class:`~dve.syntax.VarDecl`, :class:`~dve.syntax.ChannelDecl`, :class:`~dve.syntax.Process`
and :class:`~dve.syntax.LtlProperty` items:

- ``input`` declarations take the value given in ``defines`` (``-D name=value``); they stay
  ``input`` declarations (which are constants: the parser sets ``const`` on them too);
- every ``process T(args);`` becomes one process, named by :func:`instance_name` from the values
  of ``T``'s ``key`` parameters, whose body is ``T``'s with every parameter replaced by its value;
- ``for`` loops are unrolled and ``if`` blocks resolved (bounds and conditions are constant);
- calls of ``expression`` macros are replaced by the macro's body, arguments substituted;
- ``T(k)`` in ``T(k).s``, ``T(k)->v`` and ``sync T(k)->c!...`` becomes the instance's name;
- the legacy shorthand ``, -> dst {...}`` gets the previous transition's source.

Substituted nodes keep the positions of the text they came from (a template body or a macro), so
diagnostics on expanded code point at the line the user wrote.
"""

from __future__ import annotations

from collections.abc import Mapping

from . import syntax as s
from .consteval import eval_const
from .errors import EvaluationError, ModelError, ModelErrors, ModelSemanticError, SourcePos

__all__ = ["expand_model", "instance_name"]

#: ``for`` loops longer than this are refused (a typo in a bound must not hang the tool).
MAX_LOOP = 100_000
_MAX_MACRO_DEPTH = 64
#: A macro use may expand into at most this many syntax nodes. Macros that call one another
#: twice each double at every level (20 levels: a million nodes, minutes of work downstream),
#: so the expansion's work and the size of its result are both bounded.
MAX_MACRO_NODES = 100_000


class _TooLarge(Exception):
    """The outermost macro use being expanded has outgrown :data:`MAX_MACRO_NODES`."""


def instance_name(template: str, key_values: tuple[int, ...] | list[int]) -> str:
    """The process name of template ``template`` instantiated with ``key`` values ``key_values``.

    The name is the template's name followed by ``_`` and each key value, a negative value
    written with ``m`` for its sign, so the result is a valid DVE identifier and formats back to
    a model that re-parses equal. A template without key parameters keeps its own name (it can
    then be instantiated once).

    Parameters
    ----------
    template : str
        The template's name.
    key_values : sequence of int
        The values of its ``key`` parameters, in declaration order.

    Returns
    -------
    str

    Examples
    --------
    >>> instance_name("a", (1,))
    'a_1'
    >>> instance_name("node", (2, -1))
    'node_2_m1'
    >>> instance_name("server", ())
    'server'
    """
    parts = [template] + [str(v) if v >= 0 else f"m{-v}" for v in key_values]
    return "_".join(parts)


def expand_model(model: s.Model, defines: Mapping[str, int] | None = None) -> s.Model:
    """Expand templates, loops, ``if`` blocks, macros and inputs (see the module docstring).

    Parameters
    ----------
    model : dve.syntax.Model
        A parsed model.
    defines : mapping of str to int, optional
        Values overriding the initial values of ``input`` declarations.

    Returns
    -------
    dve.syntax.Model
        A model with only variable, channel, process and LTL property items. When nothing
        needed expanding (a legacy model without omitted sources, no defines), ``model`` itself.

    Raises
    ------
    ModelErrors
        Every problem found, sorted by position: ``unknown-define`` (a define that names no
        ``input``; no position), ``not-constant`` (a loop bound, condition, template argument or
        key that is not constant), ``division-by-zero``, ``unknown-template``, ``template-arity``,
        ``not-a-template``, ``unknown-macro``, ``macro-arity``, ``macro-recursion``,
        ``macro-too-large`` (a macro use that expands into more than :data:`MAX_MACRO_NODES`
        nodes), ``loop-too-long``, ``assign-to-const`` (an assignment to a template parameter).

    Examples
    --------
    >>> from dve.parser import parse_model
    >>> from dve.format import format_model
    >>> m = parse_model('''
    ... input int N = 2;
    ... expression next(v) { (v + 1) % N }
    ... process C(key i) { byte x; state s; init s;
    ...     trans s -> s { guard C(1)->x == 0 || i == 1; effect x = next(x); }; }
    ... for (k : 1 .. 2) { process C(k); }
    ... system async;''')
    >>> print(format_model(expand_model(m, {"N": 5})))
    input int N = 5;
    <BLANKLINE>
    process C_1 {
        byte x;
        state s;
        init s;
        trans
            s -> s { guard C_1->x == 0 or 1 == 1; effect x = (x + 1) % N; };
    }
    <BLANKLINE>
    process C_2 {
        byte x;
        state s;
        init s;
        trans
            s -> s { guard C_1->x == 0 or 2 == 1; effect x = (x + 1) % N; };
    }
    <BLANKLINE>
    system async;
    <BLANKLINE>
    """
    return _Expander(model, dict(defines or {})).run()


def _lit(value: int, pos: SourcePos) -> s.Expr:
    if value >= 0:
        return s.IntLit(value, pos=pos)
    return s.Unary("-", s.IntLit(-value, pos=pos), pos=pos)


class _Expander:
    def __init__(self, model: s.Model, defines: dict[str, int]) -> None:
        self.model = model
        self.defines = defines
        self.errors: list[ModelError] = []
        self.templates: dict[str, s.ProcessTemplate] = {}
        self.macros: dict[str, s.Macro] = {}
        self.env: dict[str, int] = {}
        self.processes: set[str] = set()
        self.work: int | None = None  # nodes built so far by the outermost macro use, if any
        self.body_sizes: dict[str, int] = {}
        self._collect(model.items)

    def _collect(self, items: tuple) -> None:
        for i in items:
            t = type(i)
            if t is s.ProcessTemplate:
                self.templates.setdefault(i.body.name, i)
            elif t is s.Macro:
                self.macros.setdefault(i.name, i)
            elif t is s.Process:
                self.processes.add(i.name)
            elif t in (s.ForLoop, s.IfBlock):
                self._collect(i.body if t is s.ForLoop else i.then + i.orelse)

    def error(self, pos: SourcePos | None, code: str, message: str,
              hint: str | None = None) -> None:
        self.errors.append(ModelSemanticError(pos, code, message, hint))

    def const(self, e: s.Expr, env: Mapping[str, int]) -> int | None:
        try:
            return eval_const(e, env, self.macros)
        except EvaluationError as err:
            self.errors.append(err)
            return None

    # ------------------------------------------------------------------ the items

    def run(self) -> s.Model:
        inputs = {i.name for i in self.model.items if type(i) is s.VarDecl and i.input}
        for name in sorted(set(self.defines) - inputs):
            known = ", ".join(f"'{n}'" for n in sorted(inputs)) or "none"
            self.error(None, "unknown-define",
                       f"cannot define '{name}': the model has no input of that name "
                       f"(inputs: {known})",
                       "only `input` declarations can be set from the command line")
        out: list = []
        self.items(self.model.items, {}, out)
        if self.errors:
            raise ModelErrors(self.errors)
        if len(out) == len(self.model.items) and all(
                a is b for a, b in zip(out, self.model.items)):
            return self.model
        return s.Model(tuple(out), self.model.system, pos=self.model.pos)

    def items(self, items: tuple, values: dict[str, s.Expr], out: list) -> None:
        for item in items:
            t = type(item)
            if t is s.VarDecl:
                item = self.var_decl(item, values, top=True)
                out.append(item)
                if item.const and item.size is None and isinstance(item.init, s.ExprNode):
                    try:  # a constant later items may use; failures are the checker's to report
                        self.env[item.name] = eval_const(item.init, self.env, self.macros)
                    except EvaluationError:
                        pass
            elif t is s.ChannelDecl:
                out.append(self.channel(item, values))
            elif t is s.Process:
                out.append(self.process(item, values, item.name, item.pos))
            elif t is s.ProcessInstance:
                proc = self.instance(item, values)
                if proc is not None:
                    out.append(proc)
            elif t is s.ForLoop:
                self.for_loop(item, values, out)
            elif t is s.IfBlock:
                env = self.env_with(values)
                cond = self.const(self.rewrite(values).expr(item.cond), env)
                if cond is not None:
                    self.items(item.then if cond else item.orelse, values, out)
            elif t is s.LtlProperty:
                out.append(item)
            # templates and macros vanish: their uses have been expanded

    def env_with(self, values: dict[str, s.Expr]) -> dict[str, int]:
        if not values:
            return self.env
        env = dict(self.env)
        for k, v in values.items():
            try:
                env[k] = eval_const(v, env, self.macros)
            except EvaluationError:
                pass
        return env

    def var_decl(self, d: s.VarDecl, values: dict[str, s.Expr], top: bool = False) -> s.VarDecl:
        if top and d.input and d.name in self.defines:
            return s.VarDecl(d.type, d.name, d.size, _lit(self.defines[d.name], d.pos),
                             const=True, input=True, pos=d.pos)
        r = self.rewrite(values)
        size = r.expr(d.size) if d.size is not None else None
        init = d.init
        if type(init) is s.ArrayInit:
            items = tuple(r.expr(x) for x in init.items)
            if not _same(items, init.items):
                init = s.ArrayInit(items, pos=init.pos)
        elif init is not None:
            init = r.expr(init)
        if size is d.size and init is d.init:
            return d
        return s.VarDecl(d.type, d.name, size, init, const=d.const, input=d.input, pos=d.pos)

    def channel(self, c: s.ChannelDecl, values: dict[str, s.Expr]) -> s.ChannelDecl:
        if c.size is None:
            return c
        size = self.rewrite(values).expr(c.size)
        return c if size is c.size else s.ChannelDecl(c.name, c.types, size, pos=c.pos)

    def for_loop(self, loop: s.ForLoop, values: dict[str, s.Expr], out: list) -> None:
        r = self.rewrite(values)
        env = self.env_with(values)
        lo = self.const(r.expr(loop.lo), env)
        hi = self.const(r.expr(loop.hi), env)
        if lo is None or hi is None:
            return
        if hi - lo >= MAX_LOOP:
            self.error(loop.pos, "loop-too-long",
                       f"loop over '{loop.var}' runs {hi - lo + 1} times, more than {MAX_LOOP}")
            return
        for v in range(lo, hi + 1):
            self.items(loop.body, {**values, loop.var: _lit(v, loop.pos)}, out)

    def instance(self, inst: s.ProcessInstance, values: dict[str, s.Expr]) -> s.Process | None:
        tpl = self.templates.get(inst.template)
        if tpl is None:
            what = ("a plain process, not a template" if inst.template in self.processes
                    else "not declared")
            self.error(inst.pos, "unknown-template",
                       f"cannot instantiate '{inst.template}': it is {what}")
            return None
        if len(inst.args) != len(tpl.params):
            self.error(inst.pos, "template-arity",
                       f"template '{inst.template}' takes {len(tpl.params)} arguments, "
                       f"found {len(inst.args)}")
            return None
        r = self.rewrite(values)
        env = self.env_with(values)
        args: dict[str, s.Expr] = {}
        keys: list[int] = []
        for param, arg in zip(tpl.params, inst.args):
            v = self.const(r.expr(arg), env)
            if v is None:
                return None
            args[param.name] = _lit(v, arg.pos)
            if param.key:
                keys.append(v)
        name = instance_name(inst.template, keys)
        return self.process(tpl.body, args, name, inst.pos)

    def process(self, p: s.Process, values: dict[str, s.Expr], name: str,
                pos: SourcePos) -> s.Process:
        r = self.rewrite(values)
        decls = tuple(self.var_decl(d, values) if type(d) is s.VarDecl else self.channel(d, values)
                      for d in p.decls)
        transitions = []
        src = None
        for t in p.transitions:
            t = r.transition(t, src)
            src = t.src
            transitions.append(t)
        asserts = tuple(a if (e := r.expr(a.expr)) is a.expr else
                        s.Assertion(a.state, e, pos=a.pos) for a in p.asserts)
        if (name == p.name and pos is p.pos and _same(decls, p.decls)
                and _same(transitions, p.transitions) and _same(asserts, p.asserts)):
            return p
        return s.Process(name, decls, p.states, p.init, p.commit, p.accept, asserts,
                         tuple(transitions), pos=pos)

    def rewrite(self, values: dict[str, s.Expr]) -> _Rewriter:
        return _Rewriter(self, values)


class _Rewriter:
    """Substitutes names, expands macro calls and names template instances in expressions.

    Returns the very same node when nothing inside it changed, so untouched subtrees are shared.
    """

    def __init__(self, ex: _Expander, values: dict[str, s.Expr], depth: int = 0) -> None:
        self.ex = ex
        self.values = values
        self.depth = depth

    def expr(self, e: s.Expr) -> s.Expr:
        t = type(e)
        if t is s.Name:
            v = self.values.get(e.name)
            return e if v is None else v
        if t is s.IntLit or t is s.BoolLit:
            return e
        if t is s.Binary:
            left = self.expr(e.left)
            right = self.expr(e.right)
            if left is e.left and right is e.right:
                return e
            return s.Binary(e.op, left, right, pos=e.pos)
        if t is s.Unary:
            operand = self.expr(e.operand)
            return e if operand is e.operand else s.Unary(e.op, operand, pos=e.pos)
        if t is s.Index:
            index = self.expr(e.index)
            return e if index is e.index else s.Index(e.name, index, pos=e.pos)
        if t is s.StateTest:
            proc = self.proc(e.process)
            return e if proc is e.process else s.StateTest(proc, e.state, pos=e.pos)
        if t is s.Remote:
            proc = self.proc(e.process)
            index = self.expr(e.index) if e.index is not None else None
            if proc is e.process and index is e.index:
                return e
            return s.Remote(proc, e.name, index, pos=e.pos)
        if t is s.Call:
            return self.call(e)
        return e

    def call(self, e: s.Call) -> s.Expr:
        ex = self.ex
        if ex.work is not None:
            return self.expand_call(e)
        # The outermost macro use: it answers for the size of all that it expands into.
        ex.work = 0
        try:
            body = self.expand_call(e)
            size = _tree_size(body, MAX_MACRO_NODES)
        except _TooLarge:
            size = None
        finally:
            ex.work = None
        if size is None or size > MAX_MACRO_NODES:
            ex.error(e.pos, "macro-too-large",
                     f"this use of macro '{e.name}' expands into more than {MAX_MACRO_NODES:,} "
                     "nodes", "a macro that uses an argument or another macro twice doubles the "
                              "expression at each level: keep intermediate values in variables")
            return e
        return body

    def expand_call(self, e: s.Call) -> s.Expr:
        ex = self.ex
        m = ex.macros.get(e.name)
        if m is None:
            ex.error(e.pos, "unknown-macro", f"no expression macro named '{e.name}'")
            return e
        if len(m.params) != len(e.args):
            ex.error(e.pos, "macro-arity", f"macro '{e.name}' takes {len(m.params)} "
                     f"arguments, found {len(e.args)}")
            return e
        if self.depth >= _MAX_MACRO_DEPTH:
            ex.error(e.pos, "macro-recursion", f"macro '{e.name}' expands into itself")
            return e
        size = ex.body_sizes.get(m.name)
        if size is None:
            size = ex.body_sizes[m.name] = _tree_size(m.body, MAX_MACRO_NODES)
        ex.work += size
        # The nodes of every body expanded, calls and parameters included: a few per node of the
        # result, so a budget of several results keeps the work short and refuses nothing valid.
        if ex.work > 4 * MAX_MACRO_NODES:
            raise _TooLarge
        args = {p: self.expr(a) for p, a in zip(m.params, e.args)}
        # The body sees the call's arguments, then the names of the enclosing template or loop.
        inner = _Rewriter(ex, {**self.values, **args}, self.depth + 1)
        body = inner.expr(m.body)
        return _repos(body, e.pos)

    def proc(self, p: s.ProcRef) -> s.ProcRef:
        if not p.keys:
            return p
        ex = self.ex
        tpl = ex.templates.get(p.name)
        if tpl is None:
            ex.error(p.pos, "not-a-template",
                     f"'{p.name}({', '.join('...' for _ in p.keys)})' names an instance, "
                     f"but '{p.name}' is not a process template")
            return p
        n_keys = sum(1 for q in tpl.params if q.key)
        if len(p.keys) != n_keys:
            ex.error(p.pos, "template-arity",
                     f"template '{p.name}' has {n_keys} key parameters, found {len(p.keys)}")
            return p
        env = ex.env_with(self.values)
        keys = []
        for k in p.keys:
            v = ex.const(self.expr(k), env)
            if v is None:
                return p
            keys.append(v)
        return s.ProcRef(instance_name(p.name, keys), (), pos=p.pos)

    def transition(self, t: s.Transition, prev_src: s.StateRef | None) -> s.Transition:
        e = self.expr
        src = t.src if t.src is not None else prev_src
        guard = tuple(e(g) for g in t.guard)
        sync = t.sync
        if sync is not None:
            proc = self.proc(sync.process) if sync.process is not None else None
            values = tuple(e(v) for v in sync.values)
            if proc is not sync.process or not _same(values, sync.values):
                sync = s.Sync(sync.channel, sync.op, values, proc, pos=sync.pos)
        effects = []
        for a in t.effects:
            target = e(a.target)
            if type(target) not in (s.Name, s.Index):
                self.ex.error(a.target.pos, "assign-to-const",
                              f"cannot assign to '{a.target.name}': it is a template parameter "
                              f"or loop variable")
                target = a.target
            value = e(a.value)
            if target is not a.target or value is not a.value:
                a = s.Assign(target, value, pos=a.pos)
            effects.append(a)
        costs = tuple(c if (x := e(c.amount)) is c.amount else
                      s.Cost(c.resource, x, c.named, pos=c.pos) for c in t.costs)
        time = e(t.time) if t.time is not None else None
        if (src is t.src and sync is t.sync and time is t.time and _same(guard, t.guard)
                and _same(effects, t.effects) and _same(costs, t.costs)):
            return t
        return s.Transition(src, t.dst, guard, sync, tuple(effects), costs, time, pos=t.pos)


def _tree_size(root: s.Node, limit: int) -> int:
    """The number of nodes of ``root`` read as a tree (a shared subtree counts at each use).

    Substituted arguments are shared, so the expansion is a DAG much smaller than the tree later
    stages walk; sizes are summed bottom-up over the DAG (no recursion), stopping past ``limit``.
    """
    sizes: dict[int, int] = {}
    stack: list = [(root, False)]
    while stack:
        node, ready = stack.pop()
        kids = [c for f in type(node).__slots__ if f != "pos"
                for c in _nodes(getattr(node, f))]
        if ready:
            total = 1 + sum(sizes[id(c)] for c in kids)
            if total > limit:
                return total
            sizes[id(node)] = total
        elif id(node) not in sizes:
            stack.append((node, True))
            stack.extend((c, False) for c in kids if id(c) not in sizes)
    return sizes[id(root)]


def _nodes(value: object) -> tuple:
    if isinstance(value, s.Node):
        return (value,)
    if isinstance(value, tuple):
        return tuple(v for v in value if isinstance(v, s.Node))
    return ()


def _same(a, b) -> bool:
    """Whether two sequences hold the very same objects (nothing was rewritten)."""
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))


def _repos(e: s.Expr, pos: SourcePos) -> s.Expr:
    """``e`` with its top node moved to ``pos`` (a macro call's expansion points at the call)."""
    import dataclasses

    return dataclasses.replace(e, pos=pos)
