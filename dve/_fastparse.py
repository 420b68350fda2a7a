"""A hand-written parser for the common subset of DVE, used before the Lark parser.

Why it exists: the Lark LALR parser spends about 5 µs per token in Python, and the BEEM set
holds 13 million tokens (the twelve ``plc`` files alone 12 million, in guards of thousands of
operators). This parser tokenises with one regular expression (``re.split``, in C), computes
every token's offset and line with ``itertools.accumulate`` (also in C), and descends
recursively over the token list, building the same nodes at a fraction of the cost.

Contract: :func:`fast_parse` returns exactly the model (positions included) that the Lark path
of :func:`dve.parser.parse_source` builds, or raises :class:`Fallback`. It raises
``Fallback`` for every input outside its subset (DiVinE 3 constructs, ``accept`` variants other
than the plain list, keywords used as names, anything odd) and for every input with an error, so
that diagnostics always come from the Lark parser and its error translation. The differential
test ``tests/dve/test_fastparse.py`` checks the contract on all BEEM models and on generated
expressions.

The subset: global and local ``byte``/``int`` declarations (``const``, ``input``, arrays,
``{}`` initialisers), typed and untyped channels, processes with ``state``, ``init``,
``commit``, plain ``accept``, ``assert`` and ``trans`` in any order, transitions with
``guard`` (comma lists), ``sync`` (values, ``P->c``), ``effect``, ``cost`` and ``time``, the
omitted-source shorthand, every operator, ``P.s``, ``P->v``, ``P->v[e]``, and the ``system``
line.

Nodes are built through the slot descriptors of the frozen dataclasses (``object.__new__`` and
``member.__set__``), which is what the generated ``__init__`` does, minus the call overhead; this
halves the cost of the millions of leaves and positions of the large models.
"""

from __future__ import annotations

import re
from itertools import accumulate, compress, repeat

from . import syntax as s
from .errors import Source, SourcePos

__all__ = ["Fallback", "fast_parse"]


class Fallback(Exception):
    """The input is outside the fast subset (or has an error): use the Lark parser."""


# `split` with this pattern cuts the text into [gap, token, gap, token, ..., gap], in C. Comments
# are matched as tokens (and dropped afterwards) so that a comment's text is never cut into
# tokens; the gaps must then hold only blanks. Operators are listed longest first.
_SPLIT = re.compile(
    r"(//[^\n]*|/\*(?:[^*]|\*(?!/))*\*/"
    r"|[A-Za-z_][A-Za-z0-9_$#]*|[0-9]+|->|=>|\.\.|&&|\|\||==|!=|<=|>=|<<|>>"
    r"|[-+*/%&|^~<>=!?.,;:{}()\[\]])")
# The gaps, joined by NUL (which no text holds: the parser refused it before), must be blanks.
_GAPS = re.compile(r"(?:[ \t\f\r\n\x00]|\\\r?\n)*")
_NO_BLANKS = str.maketrans("", "", " \t\f\r\n\x00")  # the quick test; _GAPS decides the rest
_COMMENT = re.compile(r"//[^\n]*|/\*(?:[^*]|\*(?!/))*\*/|\\\r?\n")

# Words the fast path never takes as a name: the legacy keywords. The words added later
# (`input`, `expression`, `key`, `for`, `if`, `else`, `ltl`, `cost`, `time`) are names wherever
# this parser asks for one: at each such place the Lark grammar accepts no keyword, so its
# contextual lexer reads them as names too (BEEM's plc declares `int time`).
_KEYWORDS = frozenset(
    ["guard", "sync", "async", "effect", "process", "state", "init", "accept", "commit", "trans", "system", "true", "false", "and", "or", "not", "imply", "int", "byte", "const", "channel", "property", "buchi", "genbuchi", "streett", "rabin", "muller", "assert"])

_PREC = {op: i for i, level in enumerate(s.BINARY_OPS) for op in level}
_PREC["||"] = _PREC["or"]
_PREC["&&"] = _PREC["and"]
_CANON = {op: op for op in _PREC}
_CANON["||"] = "or"
_CANON["&&"] = "and"
# Tokens after a name that make it more than a plain name (index, state test, remote, call).
_POSTFIX = frozenset(("[", ".", "->", "("))

_new = object.__new__


def _setters(cls: type, *fields: str):
    return tuple(getattr(cls, f).__set__ for f in fields)


_P_SRC, _P_LINE, _P_COL, _P_ELINE, _P_ECOL = _setters(SourcePos, "source", "line", "column",
                                                      "end_line", "end_column")
_NAME_NAME, _NAME_POS = _setters(s.Name, "name", "pos")
_INT_VALUE, _INT_POS = _setters(s.IntLit, "value", "pos")
_BIN_OP, _BIN_LEFT, _BIN_RIGHT, _BIN_POS = _setters(s.Binary, "op", "left", "right", "pos")
_IDX_NAME, _IDX_INDEX, _IDX_POS = _setters(s.Index, "name", "index", "pos")


def fast_parse(source: Source) -> s.Model:
    """Parse ``source`` if it lies in the fast subset, else raise :class:`Fallback`."""
    text = source.text
    end = text.rfind(";") + 1
    # Everything after the last `;` (the end of the `system` line) must be blank. (A `;` inside
    # a final comment cuts that comment; it is then dropped as a token or, if a block comment
    # is cut open, it leaves a `/` that the parser refuses.)
    if end == 0 or _COMMENT.sub("", text[end:]).strip(" \t\f\r\n"):
        raise Fallback
    body = text[:end]
    parts = _SPLIT.split(body)
    gap_list = parts[0::2]
    gaps = "\x00".join(gap_list)
    if gaps.translate(_NO_BLANKS) and _GAPS.fullmatch(gaps) is None:
        raise Fallback  # a character no token starts with: an error, let Lark report it
    toks = parts[1::2]
    # Token k starts where gap k ends; lines[k] counts the newlines before it. Only gaps and
    # block comments hold newlines: when the gaps hold them all, counting them is enough.
    starts = list(accumulate(map(len, parts)))[0::2]
    lines = list(accumulate(map(str.count, gap_list, repeat("\n"))))
    if lines[-1] == body.count("\n"):
        del lines[-1]
    else:
        lines = list(accumulate(map(str.count, parts, repeat("\n"))))[0::2]
    if "//" in body or "/*" in body:
        keep = [not (t[0] == "/" and t[1:2] in ("/", "*")) for t in toks]
        toks = list(compress(toks, keep))
        starts = list(compress(starts, keep))
        lines = list(compress(lines, keep))
    if not toks:
        raise Fallback
    # line_starts[j] is the offset where line j (0-based) starts.
    line_starts = list(accumulate(map(len, body.split("\n")), _next_line, initial=0))
    toks.append("<eof>")
    p = _Parser(source, toks, starts, lines, line_starts)
    try:
        return p.model()
    except (IndexError, KeyError, ValueError, AttributeError, TypeError, RecursionError):
        raise Fallback from None


def _next_line(start: int, length: int) -> int:
    return start + length + 1


class _Parser:
    def __init__(self, source: Source, toks: list[str], starts: list[int], lines: list[int],
                 line_starts: list[int]) -> None:
        self.source = source
        self.toks = toks
        self.starts = starts
        self.lines = lines  # newlines before token k (0-based line index)
        self.line_starts = line_starts
        self.i = 0

    # ------------------------------------------------------------------ tokens and positions

    def pos(self, k: int) -> SourcePos:
        """Position of token ``k``."""
        line = self.lines[k]
        col = self.starts[k] - self.line_starts[line] + 1
        p = _new(SourcePos)
        _P_SRC(p, self.source)
        _P_LINE(p, line + 1)
        _P_COL(p, col)
        _P_ELINE(p, line + 1)
        _P_ECOL(p, col + len(self.toks[k]))
        return p

    def span(self, first: SourcePos, last: SourcePos) -> SourcePos:
        p = _new(SourcePos)
        _P_SRC(p, self.source)
        _P_LINE(p, first.line)
        _P_COL(p, first.column)
        _P_ELINE(p, last.end_line)
        _P_ECOL(p, last.end_column)
        return p

    def expect(self, tok: str) -> int:
        k = self.i
        if self.toks[k] != tok:
            raise Fallback
        self.i = k + 1
        return k

    def ident(self) -> int:
        k = self.i
        t = self.toks[k]
        if not (t[0].isalpha() or t[0] == "_") or t in _KEYWORDS:
            raise Fallback
        self.i = k + 1
        return k

    # ------------------------------------------------------------------ expressions

    def expr(self) -> s.Expr:
        """One expression, iteratively: parentheses, unary and binary operators on one stack.

        ``ops`` holds binary operators (str), open parentheses (None) and pending unary
        operators (the int index of their token). Unary operators bind tightest, so they are
        applied as soon as their operand is complete; a binary operator first applies every
        stacked binary operator that binds at least as tightly (left associativity).
        """
        toks = self.toks
        prec = _PREC
        source = self.source
        starts = self.starts
        lines = self.lines
        line_starts = self.line_starts
        operands: list = []
        ops: list = []
        open_parens = 0  # the number of None entries in ops
        k = self.i
        # Hot names as locals (the plc models run this loop a million times per file).
        new, pos_cls, int_cls, name_cls = _new, SourcePos, s.IntLit, s.Name
        p_src, p_line, p_col, p_eline, p_ecol = _P_SRC, _P_LINE, _P_COL, _P_ELINE, _P_ECOL
        int_value, int_pos, name_name, name_pos = _INT_VALUE, _INT_POS, _NAME_NAME, _NAME_POS
        keywords, postfix, binary = _KEYWORDS, _POSTFIX, self._binary
        push, push_operand, pop_operand = ops.append, operands.append, operands.pop
        while True:
            # ---- operand position: prefixes, then one primary
            t = toks[k]
            while t == "(" or t == "-" or t == "~" or t == "not":
                if t == "(":
                    push(None)
                    open_parens += 1
                else:
                    push(k)
                k += 1
                t = toks[k]
            c = t[0]
            digit = c.isdigit()
            if digit or ((c.isalpha() or c == "_") and t not in keywords
                         and toks[k + 1] not in postfix):
                # The common leaves, built inline: a number or a plain name.
                line = lines[k]
                col = starts[k] - line_starts[line] + 1
                pos = new(pos_cls)
                p_src(pos, source)
                p_line(pos, line + 1)
                p_col(pos, col)
                p_eline(pos, line + 1)
                p_ecol(pos, col + len(t))
                if digit:
                    e = new(int_cls)
                    int_value(e, int(t))
                    int_pos(e, pos)
                else:
                    e = new(name_cls)
                    name_name(e, t)
                    name_pos(e, pos)
                k += 1
            else:
                self.i = k
                e = self.operand()
                k = self.i
            # ---- after an operand: close parentheses, then look for a binary operator
            while True:
                while ops and type(ops[-1]) is int:
                    u = ops.pop()
                    e = s.Unary(toks[u], e, pos=self.span(self.pos(u), e.pos))
                t = toks[k]
                if t == ")" and open_parens:
                    while ops[-1] is not None:
                        e = binary(ops.pop(), pop_operand(), e)
                    ops.pop()
                    open_parens -= 1
                    k += 1
                    continue
                break
            p = prec.get(t)
            if p is None:
                break
            while ops and type(ops[-1]) is str and prec[ops[-1]] >= p:
                e = binary(ops.pop(), pop_operand(), e)
            push(t)
            push_operand(e)
            k += 1
        if open_parens:
            raise Fallback  # an unclosed parenthesis
        while ops:
            e = binary(ops.pop(), pop_operand(), e)
        self.i = k
        return e

    def _binary(self, op: str, left: s.Expr, right: s.Expr) -> s.Binary:
        lp = left.pos
        rp = right.pos
        pos = _new(SourcePos)
        _P_SRC(pos, self.source)
        _P_LINE(pos, lp.line)
        _P_COL(pos, lp.column)
        _P_ELINE(pos, rp.end_line)
        _P_ECOL(pos, rp.end_column)
        b = _new(s.Binary)
        _BIN_OP(b, _CANON[op])
        _BIN_LEFT(b, left)
        _BIN_RIGHT(b, right)
        _BIN_POS(b, pos)
        return b

    def operand(self) -> s.Expr:
        k = self.i
        t = self.toks[k]
        c = t[0]
        if c == "(":
            self.i = k + 1
            e = self.expr()
            self.expect(")")
            return e
        if c.isdigit():
            self.i = k + 1
            n = _new(s.IntLit)
            _INT_VALUE(n, int(t))
            _INT_POS(n, self.pos(k))
            return n
        if c.isalpha() or c == "_":
            if t in _KEYWORDS:
                if t == "not":
                    self.i = k + 1
                    operand = self.operand()
                    return s.Unary("not", operand, pos=self.span(self.pos(k), operand.pos))
                if t == "true" or t == "false":
                    self.i = k + 1
                    return s.BoolLit(t == "true", pos=self.pos(k))
                raise Fallback
            nxt = self.toks[k + 1]
            if nxt == "[":
                self.i = k + 2
                index = self.expr()
                self.expect("]")
                x = _new(s.Index)
                _IDX_NAME(x, t)
                _IDX_INDEX(x, index)
                _IDX_POS(x, self.span(self.pos(k), index.pos))
                return x
            if nxt == "." or nxt == "->":
                proc = s.ProcRef(t, (), pos=self.pos(k))
                self.i = k + 2
                v = self.ident()
                if nxt == ".":
                    return s.StateTest(proc, self.toks[v], pos=self.span(proc.pos, self.pos(v)))
                index = None
                last = self.pos(v)
                if self.toks[self.i] == "[":
                    self.i += 1
                    index = self.expr()
                    self.expect("]")
                    last = index.pos
                return s.Remote(proc, self.toks[v], index, pos=self.span(proc.pos, last))
            if nxt == "(":
                raise Fallback  # macro call or template instance (DiVinE 3)
            self.i = k + 1
            n = _new(s.Name)
            _NAME_NAME(n, t)
            _NAME_POS(n, self.pos(k))
            return n
        if c == "-" or c == "~":
            if t != c:
                raise Fallback
            self.i = k + 1
            operand = self.operand()
            return s.Unary(t, operand, pos=self.span(self.pos(k), operand.pos))
        raise Fallback

    # ------------------------------------------------------------------ declarations

    def var_decls(self, out: list) -> None:
        toks = self.toks
        const = is_input = False
        t = toks[self.i]
        if t == "const" or t == "input":
            const = True
            is_input = t == "input"
            self.i += 1
        typ = toks[self.i]
        if typ != "byte" and typ != "int":
            raise Fallback
        self.i += 1
        while True:
            k = self.ident()
            name_pos = self.pos(k)
            last = name_pos
            size = init = None
            if toks[self.i] == "[":
                self.i += 1
                size = self.expr()
                self.expect("]")
                last = size.pos
            if toks[self.i] == "=":
                self.i += 1
                if toks[self.i] == "{":
                    lb = self.i
                    self.i += 1
                    items = []
                    if toks[self.i] != "}":
                        items.append(self.expr())
                        while toks[self.i] == ",":
                            self.i += 1
                            items.append(self.expr())
                    rb = self.expect("}")
                    init = s.ArrayInit(tuple(items), pos=self.span(self.pos(lb), self.pos(rb)))
                else:
                    init = self.expr()
                last = init.pos
            out.append(s.VarDecl(typ, toks[k], size, init, const=const, input=is_input,
                                 pos=self.span(name_pos, last)))
            if toks[self.i] == ";":
                self.i += 1
                return
            self.expect(",")

    def channel_decls(self, out: list) -> None:
        toks = self.toks
        self.expect("channel")
        types = None
        if toks[self.i] == "{":
            self.i += 1
            ts = []
            while True:
                t = toks[self.i]
                if t != "byte" and t != "int":
                    raise Fallback
                ts.append(t)
                self.i += 1
                if toks[self.i] == "}":
                    break
                self.expect(",")
            self.i += 1
            types = tuple(ts)
        while True:
            k = self.ident()
            first = last = self.pos(k)
            size = None
            if toks[self.i] == "[":
                self.i += 1
                size = self.expr()
                self.expect("]")
                last = size.pos
            out.append(s.ChannelDecl(toks[k], types, size, pos=self.span(first, last)))
            if toks[self.i] == ";":
                self.i += 1
                return
            self.expect(",")

    # ------------------------------------------------------------------ processes

    def state_ref(self) -> s.StateRef:
        k = self.ident()
        return s.StateRef(self.toks[k], pos=self.pos(k))

    def refs(self) -> list[s.StateRef]:
        out = [self.state_ref()]
        while self.toks[self.i] == ",":
            self.i += 1
            out.append(self.state_ref())
        self.expect(";")
        return out

    def process(self) -> s.Process:
        toks = self.toks
        self.expect("process")
        k = self.ident()
        self.expect("{")
        decls: list = []
        states: list = []
        init = None
        commit: list = []
        accept: list = []
        asserts: list = []
        transitions: tuple = ()
        while True:
            t = toks[self.i]
            if t == "}":
                break
            if t == "byte" or t == "int" or t == "const" or t == "input":
                self.var_decls(decls)
            elif t == "channel":
                self.channel_decls(decls)
            elif t == "state":
                self.i += 1
                refs = self.refs()
                states.extend(s.StateDecl(r.name, pos=r.pos) for r in refs)
            elif t == "init":
                if init is not None:
                    raise Fallback  # duplicate-init: Lark's path reports it
                self.i += 1
                init = self.state_ref()
                self.expect(";")
            elif t == "commit":
                self.i += 1
                commit.extend(self.refs())
            elif t == "accept":
                self.i += 1
                refs = self.refs()
                accept.append(s.Accept("plain", (tuple(refs),),
                                       pos=self.span(refs[0].pos, refs[-1].pos)))
            elif t == "assert":
                self.i += 1
                while True:
                    ref = self.state_ref()
                    self.expect(":")
                    e = self.expr()
                    asserts.append(s.Assertion(ref, e, pos=self.span(ref.pos, e.pos)))
                    if toks[self.i] == ";":
                        self.i += 1
                        break
                    self.expect(",")
            elif t == "trans":
                self.i += 1
                transitions = self.transitions()
                if toks[self.i] != "}":
                    raise Fallback  # `trans` must come last
                break
            else:
                raise Fallback
        self.expect("}")
        return s.Process(toks[k], tuple(decls), tuple(states), init, tuple(commit),
                         tuple(accept), tuple(asserts), transitions, pos=self.pos(k))

    def transitions(self) -> tuple:
        toks = self.toks
        out: list = []
        if toks[self.i] in (";", "}"):
            if toks[self.i] == ";":
                self.i += 1
            return ()
        out.append(self.transition(first=True))
        while toks[self.i] == ",":
            self.i += 1
            out.append(self.transition(first=False))
        if toks[self.i] == ";":
            self.i += 1
        return tuple(out)

    def transition(self, first: bool) -> s.Transition:
        toks = self.toks
        src = None
        if toks[self.i] != "->" or first:
            src = self.state_ref()
        self.expect("->")
        dst = self.state_ref()
        self.expect("{")
        last = dst.pos
        guard: tuple = ()
        sync = None
        effects: tuple = ()
        costs: list = []
        time = None
        if toks[self.i] == "guard":
            self.i += 1
            g = [self.expr()]
            while toks[self.i] == ",":
                self.i += 1
                g.append(self.expr())
            self.expect(";")
            guard = tuple(g)
            last = g[-1].pos
        if toks[self.i] == "sync":
            sync = self.sync()
            last = sync.pos
        if toks[self.i] == "effect":
            self.i += 1
            eff = []
            if toks[self.i] != ";":
                eff.append(self.assign())
                while toks[self.i] == ",":
                    self.i += 1
                    eff.append(self.assign())
            self.expect(";")
            effects = tuple(eff)
            if eff:
                last = eff[-1].pos
        while True:
            t = toks[self.i]
            if t == "cost":
                kw = self.i
                self.i += 1
                if toks[self.i + 1] == ":":
                    while True:
                        k = self.ident()
                        self.expect(":")
                        e = self.expr()
                        c = s.Cost(toks[k], e, True, pos=self.span(self.pos(k), e.pos))
                        costs.append(c)
                        if toks[self.i] == ";":
                            break
                        self.expect(",")
                else:
                    e = self.expr()
                    c = s.Cost(s.DEFAULT_COST_RESOURCE, e, False, pos=self.span(self.pos(kw), e.pos))
                    costs.append(c)
                self.expect(";")
                last = c.pos
            elif t == "time":
                if time is not None:
                    raise Fallback  # duplicate-clause: Lark's path reports it
                self.i += 1
                time = self.expr()
                self.expect(";")
                last = time.pos
            else:
                break
        self.expect("}")
        first_pos = src.pos if src is not None else dst.pos
        return s.Transition(src, dst, guard, sync, effects, tuple(costs), time,
                            pos=self.span(first_pos, last))

    def sync(self) -> s.Sync:
        toks = self.toks
        self.i += 1
        proc = None
        k = self.ident()
        if toks[self.i] == "->":
            proc = s.ProcRef(toks[k], (), pos=self.pos(k))
            self.i += 1
            k = self.ident()
        op = toks[self.i]
        if op != "!" and op != "?":
            raise Fallback
        opk = self.i
        self.i += 1
        values: list = []
        t = toks[self.i]
        if t == "{":
            self.i += 1
            values.append(self.expr())
            while toks[self.i] == ",":
                self.i += 1
                values.append(self.expr())
            self.expect("}")
        elif t != ";":
            values.append(self.expr())
        self.expect(";")
        first = proc.pos if proc is not None else self.pos(k)
        last = values[-1].pos if values else self.pos(opk)
        return s.Sync(toks[k], op, tuple(values), proc, pos=self.span(first, last))

    def assign(self) -> s.Assign:
        toks = self.toks
        k = self.ident()
        if toks[self.i] == "[":
            self.i += 1
            index = self.expr()
            self.expect("]")
            target: s.Expr = s.Index(toks[k], index, pos=self.span(self.pos(k), index.pos))
        else:
            target = s.Name(toks[k], pos=self.pos(k))
        self.expect("=")
        value = self.expr()
        return s.Assign(target, value, pos=self.span(target.pos, value.pos))

    # ------------------------------------------------------------------ the file

    def model(self) -> s.Model:
        toks = self.toks
        items: list = []
        while True:
            t = toks[self.i]
            if t == "process":
                items.append(self.process())
            elif t == "byte" or t == "int" or t == "const" or t == "input":
                self.var_decls(items)
            elif t == "channel":
                self.channel_decls(items)
            elif t == "system":
                break
            else:
                raise Fallback
        self.expect("system")
        kind = toks[self.i]
        if kind != "async" and kind != "sync":
            raise Fallback
        kk = self.i
        self.i += 1
        prop = None
        last = self.pos(kk)
        if toks[self.i] == "property":
            self.i += 1
            pk = self.ident()
            prop = toks[pk]
            last = self.pos(pk)
        self.expect(";")
        if toks[self.i] != "<eof>":
            raise Fallback
        system = s.SystemDecl(kind, prop, pos=self.span(self.pos(kk), last))
        first = items[0].pos if items else system.pos
        return s.Model(tuple(items), system, pos=self.span(first, system.pos))
