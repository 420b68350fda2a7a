"""Format a syntax tree as canonical DVE text.

The output re-parses to an equal tree (``parse_model(format_model(m)) == m``, positions aside)
for every model :func:`dve.parse_model` produces, and for every tree the scenario DSL builds.

Canonical form
--------------
- 4-space indentation; one declaration per line (``byte a, b;`` is written as two lines, as the
  tree holds two declarations); one transition per line;
- a process lists its declarations, then ``state``, ``init``, ``commit``, ``accept``,
  ``assert`` and ``trans``; a transition its ``guard``, ``sync``, ``effect``, ``cost`` and
  ``time`` clauses, in that order;
- operators in canonical spelling (``or``, ``and``; never ``||``, ``&&``), single spaces around
  binary operators, and only the parentheses the legacy precedence table needs: a child of a
  binary operator is parenthesised when it binds more loosely, or equally on the right (all
  levels are left-associative);
- consecutive named charges go into one ``cost a: 1, b: 2;`` clause, each plain charge into its
  own ``cost e;`` clause.
"""

from __future__ import annotations

from . import syntax as s

__all__ = ["format_expr", "format_model"]

_PREC = {op: i for i, level in enumerate(s.BINARY_OPS) for op in level}
_UNARY_PREC = len(s.BINARY_OPS)  # binds tighter than every binary operator
_INDENT = "    "


def format_expr(e: s.Expr) -> str:
    """One expression as DVE text, with minimal parentheses.

    Examples
    --------
    >>> from dve.syntax import Binary, Name, Unary
    >>> a, b, c = Name("a"), Name("b"), Name("c")
    >>> format_expr(Binary("-", a, Binary("+", b, c)))
    'a - (b + c)'
    >>> format_expr(Binary("+", Binary("-", a, b), c))
    'a - b + c'
    >>> format_expr(Unary("not", Binary("==", a, b)))
    'not (a == b)'
    """
    return _expr(e, 0)


def _expr(e: s.Expr, context: int) -> str:
    t = type(e)
    if t is s.Name:
        return e.name
    if t is s.IntLit:
        return str(e.value)
    if t is s.Binary:
        p = _PREC[e.op]
        text = f"{_expr(e.left, p)} {e.op} {_expr(e.right, p + 1)}"
        return f"({text})" if p < context else text
    if t is s.Index:
        return f"{e.name}[{_expr(e.index, 0)}]"
    if t is s.Unary:
        inner = _expr(e.operand, _UNARY_PREC)
        if e.op == "not":
            return f"not {inner}"
        if inner.startswith(("-", "~")):
            return f"{e.op} {inner}"  # `- -x` reads better than `--x`
        return f"{e.op}{inner}"  # unary binds tighter than any context: never parenthesised
    if t is s.BoolLit:
        return "true" if e.value else "false"
    if t is s.StateTest:
        return f"{_proc(e.process)}.{e.state}"
    if t is s.Remote:
        idx = f"[{_expr(e.index, 0)}]" if e.index is not None else ""
        return f"{_proc(e.process)}->{e.name}{idx}"
    if t is s.Call:
        return f"{e.name}({', '.join(_expr(a, 0) for a in e.args)})"
    raise TypeError(f"not an expression: {type(e).__name__}")


def _proc(p: s.ProcRef) -> str:
    if not p.keys:
        return p.name
    return f"{p.name}({', '.join(_expr(k, 0) for k in p.keys)})"


def format_model(model: s.Model) -> str:
    """The model as canonical DVE text (see the module docstring), ending with a newline.

    Parameters
    ----------
    model : dve.syntax.Model
        A parsed, expanded or DSL-built model.

    Returns
    -------
    str

    Examples
    --------
    >>> from dve.parser import parse_model
    >>> m = parse_model("byte a,b=2; process P{state s,t;init s;"
    ...                 "trans s->t{guard a<3&&(b||a);effect a=a+1;cost 2;time 3;},t->s{};}"
    ...                 "system async;")
    >>> text = format_model(m)
    >>> print(text)
    byte a;
    byte b = 2;
    <BLANKLINE>
    process P {
        state s, t;
        init s;
        trans
            s -> t { guard a < 3 and (b or a); effect a = a + 1; cost 2; time 3; },
            t -> s {};
    }
    <BLANKLINE>
    system async;
    <BLANKLINE>
    >>> parse_model(text) == m
    True
    """
    lines: list[str] = []
    _items(model.items, 0, lines)
    if lines and lines[-1] != "":
        lines.append("")
    sys_ = model.system
    prop = f" property {sys_.property}" if sys_.property is not None else ""
    lines.append(f"system {sys_.kind}{prop};")
    return "\n".join(lines) + "\n"


_BLOCKS = (s.Process, s.ProcessTemplate, s.ForLoop, s.IfBlock, s.Macro, s.LtlProperty)


def _items(items: tuple, depth: int, lines: list[str]) -> None:
    ind = _INDENT * depth
    prev_block = None
    for item in items:
        block = isinstance(item, _BLOCKS)
        if lines and lines[-1] != "" and (block or prev_block) and not lines[-1].endswith("{"):
            lines.append("")
        prev_block = block
        t = type(item)
        if t is s.VarDecl:
            lines.append(ind + _var_decl(item))
        elif t is s.ChannelDecl:
            lines.append(ind + _channel(item))
        elif t is s.Process:
            _process(item, "", depth, lines)
        elif t is s.ProcessTemplate:
            params = ", ".join(("key " if p.key else "") + p.name for p in item.params)
            _process(item.body, f"({params})", depth, lines)
        elif t is s.ProcessInstance:
            args = ", ".join(_expr(a, 0) for a in item.args)
            lines.append(f"{ind}process {item.template}({args});")
        elif t is s.ForLoop:
            lines.append(f"{ind}for ({item.var} : {_expr(item.lo, 0)} .. {_expr(item.hi, 0)}) {{")
            _items(item.body, depth + 1, lines)
            lines.append(ind + "}")
        elif t is s.IfBlock:
            lines.append(f"{ind}if ({_expr(item.cond, 0)}) {{")
            _items(item.then, depth + 1, lines)
            if item.orelse:
                lines.append(ind + "} else {")
                _items(item.orelse, depth + 1, lines)
            lines.append(ind + "}")
        elif t is s.Macro:
            lines.append(f"{ind}expression {item.name}({', '.join(item.params)}) "
                         f"{{ {_expr(item.body, 0)} }}")
        elif t is s.LtlProperty:
            lines.append(f'{ind}property ltl {item.name} "{item.formula}";')
        else:
            raise TypeError(f"not a model item: {t.__name__}")


def _var_decl(d: s.VarDecl) -> str:
    mod = "input " if d.input else "const " if d.const else ""
    size = f"[{_expr(d.size, 0)}]" if d.size is not None else ""
    if d.init is None:
        init = ""
    elif type(d.init) is s.ArrayInit:
        init = " = {" + ", ".join(_expr(x, 0) for x in d.init.items) + "}"
    else:
        init = f" = {_expr(d.init, 0)}"
    return f"{mod}{d.type} {d.name}{size}{init};"


def _channel(c: s.ChannelDecl) -> str:
    types = "{" + ", ".join(c.types) + "} " if c.types is not None else ""
    size = f"[{_expr(c.size, 0)}]" if c.size is not None else ""
    return f"channel {types}{c.name}{size};"


def _refs(refs: tuple) -> str:
    return ", ".join(r.name for r in refs)


def _process(p: s.Process, params: str, depth: int, lines: list[str]) -> None:
    ind = _INDENT * depth
    inner = ind + _INDENT
    lines.append(f"{ind}process {p.name}{params} {{")
    for d in p.decls:
        lines.append(inner + (_var_decl(d) if type(d) is s.VarDecl else _channel(d)))
    if p.states:
        lines.append(f"{inner}state {_refs(p.states)};")
    if p.init is not None:
        lines.append(f"{inner}init {p.init.name};")
    if p.commit:
        lines.append(f"{inner}commit {_refs(p.commit)};")
    for a in p.accept:
        lines.append(f"{inner}accept {_accept(a)};")
    if p.asserts:
        body = ", ".join(f"{a.state.name}: {_expr(a.expr, 0)}" for a in p.asserts)
        lines.append(f"{inner}assert {body};")
    if p.transitions:
        lines.append(f"{inner}trans")
        last = len(p.transitions) - 1
        for i, t in enumerate(p.transitions):
            lines.append(inner + _INDENT + _transition(t) + (";" if i == last else ","))
    lines.append(ind + "}")


def _accept(a: s.Accept) -> str:
    if a.kind in ("plain", "buchi"):
        refs = _refs(a.sets[0]) if a.sets else ""
        return refs if a.kind == "plain" else f"buchi {refs}"
    if a.kind in ("genbuchi", "muller"):
        return a.kind + " " + ", ".join(f"({_refs(x)})" for x in a.sets)
    pairs = [f"({_refs(a.sets[i])}; {_refs(a.sets[i + 1])})" for i in range(0, len(a.sets), 2)]
    return a.kind + " " + ", ".join(pairs)


def _transition(t: s.Transition) -> str:
    head = f"{t.src.name} -> {t.dst.name}" if t.src is not None else f"-> {t.dst.name}"
    clauses: list[str] = []
    if t.guard:
        clauses.append("guard " + ", ".join(_expr(g, 0) for g in t.guard) + ";")
    if t.sync is not None:
        clauses.append(_sync(t.sync))
    if t.effects:
        clauses.append("effect " + ", ".join(
            f"{_expr(a.target, 0)} = {_expr(a.value, 0)}" for a in t.effects) + ";")
    named: list[str] = []
    for c in t.costs:
        if c.named:
            named.append(f"{c.resource}: {_expr(c.amount, 0)}")
            continue
        if named:
            clauses.append("cost " + ", ".join(named) + ";")
            named = []
        clauses.append(f"cost {_expr(c.amount, 0)};")
    if named:
        clauses.append("cost " + ", ".join(named) + ";")
    if t.time is not None:
        clauses.append(f"time {_expr(t.time, 0)};")
    if not clauses:
        return head + " {}"
    return head + " { " + " ".join(clauses) + " }"


def _sync(y: s.Sync) -> str:
    owner = f"{_proc(y.process)}->" if y.process is not None else ""
    if not y.values:
        vals = ""
    elif len(y.values) == 1:
        vals = _expr(y.values[0], 0)
    else:
        vals = "{" + ", ".join(_expr(v, 0) for v in y.values) + "}"
    return f"sync {owner}{y.channel}{y.op}{vals};"
