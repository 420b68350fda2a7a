"""A hand-written parser for the common subset of DVE, used before the Lark parser.

Why it exists: the Lark LALR parser spends about 5 µs per token in Python, and the BEEM set
holds 13 million tokens (the twelve ``plc`` files alone 12 million, in guards of thousands of
operators). This parser blanks out comments, tokenises with one regular expression
(``findall``, in C), finds every token's end offset with NumPy from the positions of the
non-blank characters, and descends over the token list, building the same nodes at a fraction
of the cost. A position is two offsets (:class:`dve.errors.SourcePos`): no line is counted.

Contract: :func:`fast_parse` returns exactly the model (positions included) that the Lark path
of :func:`dve.parser.parse_source` builds, or raises :class:`Fallback`. It raises
``Fallback`` for every input outside its subset (DiVinE 3 constructs, ``accept`` variants other
than the plain list, keywords used as names, anything odd) and for every input with an error, so
that diagnostics always come from the Lark parser and its error translation. The differential
test ``tests/dve/test_roundtrip.py`` checks the contract on all BEEM models and on generated
expressions.

The subset: global and local ``byte``/``int`` declarations (``const``, ``input``, arrays,
``{}`` initialisers), typed and untyped channels, processes with ``state``, ``init``,
``commit``, plain ``accept``, ``assert`` and ``trans`` in any order, transitions with
``guard`` (comma lists), ``sync`` (values, ``P->c``), ``effect``, ``cost`` and ``time``, the
omitted-source shorthand, every operator, ``P.s``, ``P->v``, ``P->v[e]``, and the ``system``
line.

The hot nodes (positions, names, numbers, binary operators, transitions, ...) are built as
instances of mutable twins of the frozen dataclasses, with the same slots, filled by plain
attribute stores and then turned into the frozen class by ``__class__`` assignment (see
:func:`_builder`); the others through the slot descriptors or their constructors. The result is
the very object the constructor builds, at a fraction of the cost of the generated ``__init__``
(which calls ``object.__setattr__`` once per field). Operands of the form ``( leaf op leaf )``,
the bulk of the ``plc`` guards, and lone leaves are built without the operator stack.
"""

from __future__ import annotations

import re

import numpy as np

from . import syntax as s
from .errors import Source, SourcePos
from ._parts import CANONICAL_OP, MAX_LITERAL_DIGITS, PRECEDENCE, ProcessParts

__all__ = ["Fallback", "fast_parse"]


class Fallback(Exception):
    """The input is outside the fast subset (or has an error): use the Lark parser."""


# `findall` with this pattern lists the tokens, in C (a one-character token is a cached string:
# no allocation). The characters that cannot start a longer token come first, the commonest
# case; the operators of two characters come before their one-character prefixes. Comments are
# blanked out before (see `_COMMENTS`). `findall` skips what no token matches: `fast_parse`
# checks that the tokens account for every character that is not blank.
_TOKEN = re.compile(
    r"[ \t\f\r\n]*+([(){}\[\],;:+*/%^~?]|[A-Za-z_][A-Za-z0-9_$#]*+|[0-9]++"
    r"|==|&&|\|\||!=|<=|>=|->|=>|\.\.|<<|>>|[-&|<>=!.])")
# The blank characters (as bytes), the only characters between tokens.
_BLANK = np.zeros(256, dtype=bool)
_BLANK[[ord(c) for c in " \t\f\r\n"]] = True
# Comments, found left to right as a tokenizer meets them: no token but `/` holds a `/`, so every
# `/` outside a comment starts a token, where the tokenizer, too, tries a comment first. Each is
# replaced by as many blanks, its newlines kept, so that offsets, lines and columns stay put.
# A block comment left open runs to the end of the text (`\Z`): matching it once, rather than
# failing at every later `/*` after a scan to the end, keeps the scan linear; it is an error,
# so `_blank_out` and `_drop` refuse it (the Lark path reports it).
_COMMENTS = re.compile(r"//[^\n]*|/\*(?:[^*]|\*(?!/))*+(?:\*/|\Z)")
_NOT_NEWLINE = re.compile(r"[^\n]")


def _blank_out(m: re.Match) -> str:
    g = m.group()
    if g[1] == "*" and (len(g) < 4 or not g.endswith("*/")):
        raise Fallback  # a comment never closed
    return _NOT_NEWLINE.sub(" ", g)


def _drop(m: re.Match) -> str:
    g = m.group()
    if g[:2] == "/*" and (len(g) < 4 or not g.endswith("*/")):
        raise Fallback
    return ""


_COMMENT = re.compile(r"//[^\n]*|/\*(?:[^*]|\*(?!/))*+(?:\*/|\Z)|\\\r?\n")
# Characters no token starts with (the blanks aside): `$` and `#` occur inside names only.
_NO_START = np.ones(256, dtype=bool)
_NO_START[[ord(c) for c in " \t\f\r\n(){}[],;:+*/%^~?=&|!<>-._0123456789"]] = False
_NO_START[ord("A"):ord("Z") + 1] = False
_NO_START[ord("a"):ord("z") + 1] = False

# Words the fast path never takes as a name: the legacy keywords. The words added later
# (`input`, `expression`, `key`, `for`, `if`, `else`, `ltl`, `cost`, `time`) are names wherever
# this parser asks for one: at each such place the Lark grammar accepts no keyword, so its
# contextual lexer reads them as names too (BEEM's plc declares `int time`).
_KEYWORDS = frozenset(
    ["guard", "sync", "async", "effect", "process", "state", "init", "accept", "commit", "trans", "system", "true", "false", "and", "or", "not", "imply", "int", "byte", "const", "channel", "property", "buchi", "genbuchi", "streett", "rabin", "muller", "assert"])

# Binding strength and canonical spelling of every binary operator token (as written).
_CANON = CANONICAL_OP
_PREC = {op: PRECEDENCE[canon] for op, canon in CANONICAL_OP.items()}
# Every token that is not a plain name or number: the keywords, the operators, the end.
_NOT_LEAF = _KEYWORDS | frozenset(["->", "=>", "..", "&&", "||", "==", "!=", "<=", ">=", "<<",
                                   ">>", "<eof>", *"-+*/%&|^~<>=!?.,;:{}()[]"])
# Tokens after a name that make it more than a plain name (index, state test, remote, call).
_POSTFIX = frozenset(("[", ".", "->", "("))


def _builder(cls: type) -> type:
    """A mutable twin of the frozen slotted dataclass ``cls``, with the very same layout.

    An instance of the twin takes its fields by plain attribute stores (which the interpreter
    runs inline), then becomes a ``cls`` by ``__class__`` assignment, which CPython allows
    between classes of identical slots and bases: the result is an ordinary, frozen ``cls``
    object, equal to the one the dataclass constructor builds, at about half the cost of the
    slot descriptors' ``__set__`` calls. The twin is created empty: ``object.__init__``
    replaces the inherited dataclass ``__init__`` (the base :class:`~dve.syntax.Node` has one,
    which would store ``pos`` for nothing, in Python, on every node).
    """
    if hasattr(cls, "__post_init__"):
        raise TypeError(f"{cls.__name__} checks its fields: build it through its constructor")
    return type("_Mutable" + cls.__name__, cls.__bases__,
                {"__slots__": cls.__slots__, "__init__": object.__init__,
                 "__setattr__": object.__setattr__, "__delattr__": object.__delattr__})


_MutPos = _builder(SourcePos)
_MutName = _builder(s.Name)
_MutInt = _builder(s.IntLit)
_MutBinary = _builder(s.Binary)
_MutIndex = _builder(s.Index)
_MutStateRef = _builder(s.StateRef)
_MutAssign = _builder(s.Assign)
_MutTransition = _builder(s.Transition)


# The node builders of the hot path. Each builds its node (and the node's position) by plain
# attribute stores on a mutable twin; the defaulted parameters are never passed (they make the
# globals locals). A leaf token starts with a digit (which sorts before "A") or with a letter
# or `_` (after): one string comparison tells a number from a name.

def _at(source: Source, start: int, end: int, mut_pos=_MutPos, pos_cls=SourcePos) -> SourcePos:
    """The position from offset ``start`` to ``end`` of ``source``."""
    pos = mut_pos()
    pos.source = source
    pos.start = start
    pos.end = end
    pos.__class__ = pos_cls
    return pos


def _leaf_node(source: Source, tok: str, end: int, mut_pos=_MutPos, pos_cls=SourcePos,
               mut_int=_MutInt, int_cls=s.IntLit, mut_name=_MutName, name_cls=s.Name) -> s.Expr:
    """The number or plain name ``tok``, whose token ends at offset ``end``."""
    pos = mut_pos()
    pos.source = source
    pos.start = end - len(tok)
    pos.end = end
    pos.__class__ = pos_cls
    if tok < "A":
        n = mut_int()
        n.value = int(tok)
        n.pos = pos
        n.__class__ = int_cls
    else:
        n = mut_name()
        n.name = tok
        n.pos = pos
        n.__class__ = name_cls
    return n


def _binary_node(source: Source, op: str, left: s.Expr, right: s.Expr, canon=_CANON,
            mut_binary=_MutBinary, binary_cls=s.Binary) -> s.Binary:
    """``left op right`` (``op`` as written: ``&&`` is stored as ``and``)."""
    b = mut_binary()
    b.op = canon[op]
    b.left = left
    b.right = right
    b.pos = _at(source, left.pos.start, right.pos.end)
    b.__class__ = binary_cls
    return b


def _index_node(source: Source, name: str, start: int, index: s.Expr, mut_index=_MutIndex,
           index_cls=s.Index) -> s.Index:
    """``name[index]``, whose name starts at offset ``start`` (the position ends with the
    index, not the ``]``)."""
    x = mut_index()
    x.name = name
    x.index = index
    x.pos = _at(source, start, index.pos.end)
    x.__class__ = index_cls
    return x


def fast_parse(source: Source) -> s.Model:
    """Parse ``source`` if it lies in the fast subset, else raise :class:`Fallback`."""
    text = source.text
    end = text.rfind(";") + 1
    # Everything after the last `;` (the end of the `system` line) must be blank. (A `;` inside
    # a final comment cuts that comment; it is then dropped as a token or, if a block comment
    # is cut open, it leaves a `/` that the parser refuses.)
    if end == 0 or _COMMENT.sub(_drop, text[end:]).strip(" \t\f\r\n"):
        raise Fallback
    body = text[:end]
    if "\\" in body:
        raise Fallback  # a line continuation (rare): left to Lark
    if "//" in body or "/*" in body:
        body = _COMMENTS.sub(_blank_out, body)
    try:
        chars = np.frombuffer(body.encode("ascii"), dtype=np.uint8)
    except UnicodeEncodeError:
        raise Fallback from None  # a character no token holds: an error, let Lark report it
    blank = _BLANK[chars]
    # `findall` tries each offset in turn: a run of blanks followed by a character no token
    # starts with would be scanned again from each of its offsets (quadratic: 80,000 blanks took
    # 23 s). Such a character is an error; refuse it before the scan, which is then linear.
    bad = _NO_START[chars]
    if bad.any() and (bad[0] or (bad[1:] & blank[:-1]).any()):
        raise Fallback
    toks = _TOKEN.findall(body)
    # The tokens, concatenated, are the body without its blanks exactly when the body holds
    # nothing but tokens and blanks. Then token k ends just past the solid (non-blank)
    # character number `lengths[0] + ... + lengths[k]`: ends[k] is found in NumPy, unboxed
    # (an int object per token would cost memory the tree needs); indexing the memoryview
    # yields plain ints.
    solid = np.flatnonzero(~blank)
    lengths = np.fromiter(map(len, toks), dtype=np.int64, count=len(toks))
    if not toks or lengths.sum() != len(solid):
        raise Fallback  # a character no token starts with: an error, let Lark report it
    if lengths.max() > MAX_LITERAL_DIGITS and any(
            t[0] < "A" and len(t) > MAX_LITERAL_DIGITS for t in toks):
        raise Fallback  # a literal too long to be a DVE value: an error, let Lark report it
    ends = memoryview(solid[lengths.cumsum() - 1] + 1)
    toks.append("<eof>")
    p = _Parser(source, toks, ends)
    try:
        return p.model()
    except (IndexError, KeyError, ValueError, AttributeError, TypeError, RecursionError):
        raise Fallback from None


class _Parser:
    def __init__(self, source: Source, toks: list[str], ends: memoryview) -> None:
        self.source = source
        self.toks = toks
        self.ends = ends  # the offset just past token k
        self.i = 0

    # ------------------------------------------------------------------ tokens and positions

    def pos(self, k: int) -> SourcePos:
        """Position of token ``k``."""
        end = self.ends[k]
        return _at(self.source, end - len(self.toks[k]), end)

    def span(self, first: SourcePos, last: SourcePos) -> SourcePos:
        return _at(self.source, first.start, last.end)

    def expect(self, tok: str) -> int:
        k = self.i
        if self.toks[k] != tok:
            raise Fallback
        self.i = k + 1
        return k

    def comma_list(self, item) -> list:
        """One or more ``item()``, separated by commas."""
        out = [item()]
        while self.toks[self.i] == ",":
            self.i += 1
            out.append(item())
        return out

    def once(self, seen, item):
        """The clause at the keyword here, given at most once (``seen`` is the earlier one or
        None): ``item()`` then ``;``. A second one is an error that Lark's path reports."""
        if seen is not None:
            raise Fallback
        self.i += 1
        x = item()
        self.expect(";")
        return x

    def ident(self) -> int:
        k = self.i
        t = self.toks[k]
        if not (t[0].isalpha() or t[0] == "_") or t in _KEYWORDS:
            raise Fallback
        self.i = k + 1
        return k

    # ------------------------------------------------------------------ expressions

    def expr(self, prec=_PREC, not_leaf=_NOT_LEAF, postfix=_POSTFIX, leaf=_leaf_node,
             binary=_binary_node) -> s.Expr:
        """One expression, iteratively: parentheses, unary and binary operators on one stack.

        ``ops`` holds binary operators (str), open parentheses (None) and pending unary
        operators (the int index of their token). Unary operators bind tightest, so they are
        applied as soon as their operand is complete; a binary operator first applies every
        stacked binary operator that binds at least as tightly (left associativity).
        """
        # (The keyword arguments are never passed: they make the hot names locals at no cost.)
        toks = self.toks
        source = self.source
        ends = self.ends
        k = self.i
        t = toks[k]
        if t not in not_leaf and toks[k + 1] not in prec and toks[k + 1] not in postfix:
            self.i = k + 1
            return leaf(source, t, ends[k])  # a lone number or name: common, and quick
        operands: list = []
        ops: list = []
        open_parens = 0  # the number of None entries in ops
        unary = 0  # the number of int entries in ops
        push, push_operand, pop_operand = ops.append, operands.append, operands.pop
        while True:
            # ---- operand position: prefixes, then one primary
            t = toks[k]
            e = None
            while t == "(" or t == "-" or t == "~" or t == "not":
                if t == "(":
                    # `( leaf op leaf )`, the commonest operand of the large models, built
                    # at once: the same nodes the stack below builds, without the stack.
                    left_tok = toks[k + 1]
                    right_tok = toks[k + 3]
                    if (toks[k + 4] == ")" and left_tok not in not_leaf
                            and right_tok not in not_leaf and toks[k + 2] in prec):
                        e = binary(source, toks[k + 2], leaf(source, left_tok, ends[k + 1]),
                                   leaf(source, right_tok, ends[k + 3]))
                        k += 5
                        break
                    push(None)
                    open_parens += 1
                else:
                    push(k)
                    unary += 1
                k += 1
                t = toks[k]
            if e is not None:
                pass
            elif t not in not_leaf and toks[k + 1] not in postfix:
                e = leaf(source, t, ends[k])  # the common leaves: a number or a plain name
                k += 1
            elif (t >= "A" and t not in not_leaf and toks[k + 1] == "["
                  and toks[k + 3] == "]" and toks[k + 2] not in not_leaf):
                # `a[i]`, `a[3]` (a name, a leaf index), at once as well: the `plc` guards'
                # `px[9]`.
                e = _index_node(source, t, ends[k] - len(t), leaf(source, toks[k + 2], ends[k + 2]))
                k += 4
            else:
                self.i = k
                e = self.operand()
                k = self.i
            # ---- after an operand: close parentheses, then look for a binary operator
            while True:
                while unary and type(ops[-1]) is int:
                    unary -= 1
                    u = ops.pop()
                    e = s.Unary(toks[u], e, pos=self.span(self.pos(u), e.pos))
                t = toks[k]
                if t == ")" and open_parens:
                    while ops[-1] is not None:
                        e = binary(source, ops.pop(), pop_operand(), e)
                    ops.pop()
                    open_parens -= 1
                    k += 1
                    continue
                break
            p = prec.get(t)
            if p is None:
                break
            while ops and type(ops[-1]) is str and prec[ops[-1]] >= p:
                e = binary(source, ops.pop(), pop_operand(), e)
            push(t)
            push_operand(e)
            k += 1
        if open_parens:
            raise Fallback  # an unclosed parenthesis
        while ops:
            e = binary(source, ops.pop(), pop_operand(), e)
        self.i = k
        return e

    def _leaf(self, k: int) -> s.Expr:
        """The number or plain name at token ``k``."""
        return _leaf_node(self.source, self.toks[k], self.ends[k])

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
            return self._leaf(k)
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
                inner = self.toks[k + 2]
                if inner not in _NOT_LEAF and self.toks[k + 3] == "]":
                    index = self._leaf(k + 2)  # `a[i]`, `a[3]`: no nested `expr` call
                    self.i = k + 4
                else:
                    self.i = k + 2
                    index = self.expr()
                    self.expect("]")
                return _index_node(self.source, t, self.pos(k).start, index)
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
            return self._leaf(k)
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
                    items = self.comma_list(self.expr) if toks[self.i] != "}" else []
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
        r = _MutStateRef()
        r.name = self.toks[k]
        r.pos = self.pos(k)
        r.__class__ = s.StateRef
        return r

    def refs(self) -> list[s.StateRef]:
        out = self.comma_list(self.state_ref)
        self.expect(";")
        return out

    def process(self) -> s.Process:
        toks = self.toks
        self.expect("process")
        k = self.ident()
        self.expect("{")
        out = ProcessParts()
        while True:
            t = toks[self.i]
            if t == "}":
                break
            if t == "byte" or t == "int" or t == "const" or t == "input":
                self.var_decls(out.decls)
            elif t == "channel":
                self.channel_decls(out.decls)
            elif t == "state":
                self.i += 1
                out.states.extend(s.StateDecl(r.name, pos=r.pos) for r in self.refs())
            elif t == "init":
                out.init = self.once(out.init, self.state_ref)
            elif t == "commit":
                self.i += 1
                out.commit.extend(self.refs())
            elif t == "accept":
                self.i += 1
                refs = self.refs()
                out.accept.append(s.Accept("plain", (tuple(refs),),
                                       pos=self.span(refs[0].pos, refs[-1].pos)))
            elif t == "assert":
                self.i += 1
                while True:
                    ref = self.state_ref()
                    self.expect(":")
                    e = self.expr()
                    out.asserts.append(s.Assertion(ref, e, pos=self.span(ref.pos, e.pos)))
                    if toks[self.i] == ";":
                        self.i += 1
                        break
                    self.expect(",")
            elif t == "trans":
                self.i += 1
                out.transitions = self.transitions()
                if toks[self.i] != "}":
                    raise Fallback  # `trans` must come last
                break
            else:
                raise Fallback
        self.expect("}")
        return out.build(toks[k], self.pos(k))

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
            g = self.comma_list(self.expr)
            self.expect(";")
            guard = tuple(g)
            last = g[-1].pos
        if toks[self.i] == "sync":
            sync = self.sync()
            last = sync.pos
        if toks[self.i] == "effect":
            self.i += 1
            eff = self.comma_list(self.assign) if toks[self.i] != ";" else []
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
                time = self.once(time, self.expr)
                last = time.pos
            else:
                break
        self.expect("}")
        first_pos = src.pos if src is not None else dst.pos
        tr = _MutTransition()
        tr.src = src
        tr.dst = dst
        tr.guard = guard
        tr.sync = sync
        tr.effects = effects
        tr.costs = tuple(costs)
        tr.time = time
        tr.pos = self.span(first_pos, last)
        tr.__class__ = s.Transition
        return tr

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
            values = self.comma_list(self.expr)
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
            target: s.Expr = _index_node(self.source, toks[k], self.pos(k).start, index)
        else:
            target = self._leaf(k)
        self.expect("=")
        value = self.expr()
        a = _MutAssign()
        a.target = target
        a.value = value
        a.pos = self.span(target.pos, value.pos)
        a.__class__ = s.Assign
        return a

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
