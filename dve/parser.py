"""Parse DVE text into a :class:`dve.syntax.Model`, with compiler-quality syntax errors.

The grammar is ``dve/dve.lark`` (LALR(1), contextual lexer): it defines the language, and the
Lark parser built from it is the reference. It is built once per process, on first use, with
:class:`dve.transform.DveTransformer` as its callbacks, so parsing builds syntax nodes directly.

Speed: the Lark parser costs about 5 µs per token, and the BEEM models hold 13 million tokens.
:func:`parse_source` therefore first tries :func:`dve._fastparse.fast_parse`, a hand-written
parser for the legacy subset of the language that builds the very same tree (positions
included) several times faster, and falls back to Lark for everything else: DiVinE 3
constructs, unusual forms, and every input with an error, so that all diagnostics come from the
grammar. ``tests/dve/test_roundtrip.py`` checks that the two agree.

Every failure is a :class:`~dve.errors.DveSyntaxError` raised ``from None`` (users never see a
Lark traceback). Its ``code`` is one of:

=========================  ===================================================================
``empty-file``             nothing but whitespace and comments (no position)
``binary-input``           NUL bytes or other control characters: not a text file (no position)
``not-utf8``               bytes that do not decode as UTF-8 (at the first bad byte)
``unexpected-character``   a character that cannot start any DVE token
``unexpected-eof``         the text ends in the middle of a construct (at the end of the text)
``missing-semicolon``      a ``;`` is needed (just after the token that should end with it)
``assign-in-guard``        ``=`` in a guard, where a comparison needs ``==``
``unclosed-brace``         a ``process`` or ``system`` met while a ``{`` is still open
``unsupported``            probabilistic ``=>`` transitions
``duplicate-clause``       a second ``time`` clause on one transition
``duplicate-init``         a second ``init`` in one process
``syntax-error``           anything else: what was expected and what was found
=========================  ===================================================================
"""

from __future__ import annotations

import gc
import re
import threading
from importlib import resources

from typing import TYPE_CHECKING

from . import syntax
from ._fastparse import Fallback, fast_parse
from .errors import DvecostError, DveSyntaxError, Source, SourcePos

if TYPE_CHECKING:
    import lark
    from lark.exceptions import UnexpectedInput

# Lark (and the callbacks of dve.transform, which import it) are imported by get_parser, when
# the first model the fast path does not take is read: a model it takes never loads Lark.

__all__ = ["decode_source", "get_parser", "parse_model"]

_lock = threading.Lock()
_parser: lark.Lark | None = None
_transformer = None   # the DveTransformer the parser calls back, made with it


def get_parser() -> lark.Lark:
    """The process-wide Lark parser for ``dve.lark``, built on first use.

    Building takes a fraction of a second (the LALR tables of a small grammar); every later call
    returns the same object. Its callbacks build syntax nodes for the :class:`Source` that
    :func:`lark_parse` sets under a lock: call that, not ``get_parser().parse``.

    Examples
    --------
    >>> get_parser() is get_parser()
    True
    >>> "IDENT" in {t.name for t in get_parser().terminals}
    True
    """
    global _parser, _transformer
    if _parser is None:
        with _lock:
            if _parser is None:
                import lark

                from .transform import DveTransformer
                grammar = resources.files("dve").joinpath("dve.lark").read_text(encoding="utf-8")
                _transformer = DveTransformer()
                _parser = lark.Lark(grammar, parser="lalr", lexer="contextual",
                                    transformer=_transformer, maybe_placeholders=True)
    return _parser


# A carriage return not followed by a newline: a line end of its own.
_LONE_CR = re.compile(r"\r(?!\n)")
# Control characters that never occur in a text file (tab, newline, CR, FF, VT are fine).
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")


def decode_source(data: bytes, name: str) -> Source:
    """Decode a file's bytes into a :class:`Source`, refusing binary and non-UTF-8 data.

    Parameters
    ----------
    data : bytes
        The raw contents.
    name : str
        The name diagnostics show (usually the path).

    Returns
    -------
    Source

    Raises
    ------
    DveSyntaxError
        ``binary-input`` when the data holds a NUL byte; ``not-utf8`` (positioned at the first
        byte that does not decode) when it is not UTF-8.

    Examples
    --------
    >>> decode_source(b"system async;", "m.dve").text
    'system async;'
    >>> decode_source(b"byte x;\\n// caf\\xe9", "m.dve")
    Traceback (most recent call last):
    ...
    dve.errors.DveSyntaxError: m.dve:2:7: error[not-utf8]: byte 0xe9 is not valid UTF-8
    """
    if b"\x00" in data:
        raise _binary(name, data.index(b"\x00"), "a NUL byte") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        good = _LONE_CR.sub("\n", data[: e.start].decode("utf-8"))
        line = good.count("\n") + 1
        column = len(good) - (good.rfind("\n") + 1) + 1
        src = Source(name, _LONE_CR.sub("\n", data.decode("utf-8", errors="replace")))
        pos = SourcePos.at(src, line, column, line, column + 1)
        raise DveSyntaxError(pos, "not-utf8", f"byte 0x{data[e.start]:02x} is not valid UTF-8",
                             "save the file as UTF-8") from None
    text = text.removeprefix("\ufeff")
    return Source(name, text)


def _empty(source: Source) -> DveSyntaxError:
    return DveSyntaxError(None, "empty-file",
                          f"{source.name} holds no DVE: expected declarations, processes and "
                          "a 'system' line",
                          "a minimal model is `process P { state s; init s; } system async;`")


def _binary(name: str, offset: int, what: str) -> DveSyntaxError:
    return DveSyntaxError(None, "binary-input",
                          f"{name} is not a text file: it holds {what} (offset {offset})",
                          "DVE models are plain text")


def parse_model(text: str | bytes | Source, name: str = "<string>") -> syntax.Model:
    """Parse a DVE model.

    Parameters
    ----------
    text : str, bytes or Source
        The model. Bytes are decoded as UTF-8 (see :func:`decode_source`); a
        :class:`~dve.errors.Source` (from :func:`dve.read_source`) is parsed as it is.
    name : str
        The source name diagnostics show (a path, or ``<string>``); unused for a ``Source``.

    Returns
    -------
    dve.syntax.Model
        Items in source order; DiVinE 3 constructs (templates, ``for``, ``if``, macros) are kept
        as written: :func:`dve.expand_model` turns them into plain processes.

    Raises
    ------
    DveSyntaxError
        For every input that is not a DVE model; ``code`` says why (see the module docstring).

    Examples
    --------
    >>> m = parse_model("byte x; process P { state a; init a; "
    ...                 "trans a -> a { guard x < 3 || x == 7; effect x = x + 1; time 2; }; }"
    ...                 " system async;")
    >>> t = m.processes[0].transitions[0]
    >>> t.guard[0].op, t.time.value
    ('or', 2)
    >>> parse_model("process P { state a; init a; trans a -> a { guard x = 1; }; } system async;")
    Traceback (most recent call last):
    ...
    dve.errors.DveSyntaxError: <string>:1:53: error[assign-in-guard]: expected a comparison, found '=' (assignment)
    """
    if isinstance(text, Source):
        return parse_source(text)
    if isinstance(text, (bytes, bytearray)):
        source = decode_source(bytes(text), name)
    else:
        text = text.removeprefix("\ufeff")
        source = Source(name, text)
    return parse_source(source)


def parse_source(source: Source) -> syntax.Model:
    """Parse an already decoded :class:`Source` (see :func:`parse_model`).

    Examples
    --------
    >>> m = parse_source(Source("m.dve", "process P { state s; init s; } system async;"))
    >>> str(m.processes[0].pos)
    'm.dve:1:9'
    """
    text = source.text
    if "\r" in text:
        lone = _LONE_CR.sub("\n", text)
        if lone != text:
            # Old Mac line ends (a CR alone): as a newline of the same width, so offsets stay
            # put while lines, columns and `//` comments end where the author sees them end.
            source = Source(source.name, lone)
            text = lone
    bad = _CONTROL.search(text)
    if bad is not None:
        what = "a NUL byte" if bad.group() == "\x00" else f"control character {bad.group()!r}"
        raise _binary(source.name, bad.start(), what)
    if not text.strip():
        raise _empty(source)
    # The parse allocates one object per node and position and frees none: the cyclic garbage
    # collector would walk the growing tree again and again (three times the parse time on the
    # large BEEM models), so it is paused for the parse.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        try:
            return fast_parse(source)
        except Fallback:
            return lark_parse(source)
    finally:
        if was_enabled:
            gc.enable()


def lark_parse(source: Source) -> syntax.Model:
    """Parse with the Lark parser only (no fast path), translating its errors.

    :func:`parse_source` falls back to this for every input the fast path does not take, so all
    syntax errors come from here. Tests use it to check that the two parsers agree.

    Examples
    --------
    >>> text = "process P { state s; init s; trans s -> s { guard a - b + c; }; } system async;"
    >>> lark_parse(Source("m", text)) == parse_source(Source("m", text))
    True
    """
    from lark.exceptions import UnexpectedInput

    text = source.text
    parser = get_parser()
    try:
        with _lock:
            _transformer.source = source
            return parser.parse(text)
    except DvecostError:
        raise
    except UnexpectedInput as e:
        raise _translate(e, source) from None
    except RecursionError:
        raise DveSyntaxError(None, "too-deep", "the model nests too deeply to be read") from None


# ---------------------------------------------------------------------------- error translation

#: How terminals are named in messages (string terminals show as the quoted string).
_TERMINAL_WORDS = {
    "IDENT": "a name",
    "NUMBER": "a number",
    "STRING": "a quoted formula",
    "$END": "the end of the file",
    "<END-OF-FILE>": "the end of the file",
}
_EXPR_START = {"IDENT", "NUMBER", "LPAR", "MINUS", "TILDE", "NOT", "TRUE", "FALSE"}
_BINARY = {"IMPLY", "OR", "AND", "OROR", "ANDAND", "BAR", "AMP", "CARET", "EQ", "NE", "LT",
           "LE", "GT", "GE", "SHL", "SHR", "PLUS", "MINUS", "STAR", "SLASH", "PERCENT"}
# Terminals that only start a top-level item: meeting one inside braces means a `}` is missing.
_TOP_LEVEL = {"PROCESS", "SYSTEM"}
# Clause keywords after which a missing `;` is the likely mistake.
_CLAUSE_WORDS = {"guard", "sync", "effect", "cost", "time", "state", "init", "commit", "accept",
                 "assert", "trans", "byte", "int", "const", "input", "channel", "process",
                 "system"}

_SCAN = re.compile(
    r"(?P<skip>\s+|//[^\n]*|/\*.*?(?:\*/|\Z)|\\\r?\n)"
    r"|(?P<tok>[A-Za-z_][A-Za-z0-9_$#]*|\d+|\"[^\"\n]*\"?|->|=>|\.\.|&&|\|\||==|!=|<=|>="
    r"|<<|>>|.)", re.DOTALL)


def _point(source: Source, offset: int, width: int = 1) -> SourcePos:
    # A span never ends past the text: at the very end it is zero-width (the caret still shows).
    return SourcePos(source, offset, max(offset, min(offset + width, len(source.text))))


class _Context:
    """What the text before an error looks like: the last token, open braces, last keyword."""

    def __init__(self, text: str, end: int) -> None:
        self.last: tuple[str, int, int] | None = None  # (value, start, end offset)
        self.braces: list[int] = []  # offsets of the `{` still open
        self.keyword: str | None = None
        for m in _SCAN.finditer(text, 0, end):
            if m.lastgroup == "skip":
                continue
            tok = m.group()
            self.last = (tok, m.start(), m.end())
            if tok == "{":
                self.braces.append(m.start())
            elif tok == "}" and self.braces:
                self.braces.pop()
            elif tok in _CLAUSE_WORDS:
                self.keyword = tok


_DECL_START = {"BYTE", "INT", "CONST", "INPUT", "CHANNEL"}
_TOP_START = _DECL_START | {"PROCESS", "PROPERTY", "FOR", "IF", "EXPRESSION"}
_BODY_START = _DECL_START | {"STATE", "INIT", "COMMIT", "ACCEPT", "ASSERT", "TRANS"}


def _describe(expected: set[str], terminals: dict[str, str]) -> str:
    names = set(expected)
    words: list[str] = []
    # Long lists of alternatives are summed up in DVE terms.
    if names >= {"PROCESS", "SYSTEM", "BYTE"}:
        names -= _TOP_START
        words += ["a declaration", "a process"]
    if names >= {"STATE", "INIT", "TRANS"}:
        names -= _BODY_START
        words += ["a declaration", "a process part ('state', 'init', 'trans', ...)"]
    if names >= {"IDENT", "NUMBER", "LPAR"}:
        names -= _EXPR_START
        words.append("an expression")
    if len(names & _BINARY) >= 4:
        names -= _BINARY
        words.append("an operator")
    rest = sorted(_word(n, terminals) for n in names)
    # Put punctuation first: it is the usual answer ("expected ';'").
    rest.sort(key=lambda w: (w[1:2].isalpha(), w))
    words = rest + words
    if len(words) > 7:
        return "one of " + ", ".join(words[:6]) + ", ..."
    if not words:
        return "something else"
    if len(words) == 1:
        return words[0]
    return ", ".join(words[:-1]) + " or " + words[-1]


def _word(name: str, terminals: dict[str, str]) -> str:
    if name in _TERMINAL_WORDS:
        return _TERMINAL_WORDS[name]
    value = terminals.get(name)
    return f"'{value}'" if value is not None else name.lower()


def _found(tok: lark.Token) -> str:
    if tok.type in ("$END", "<END-OF-FILE>"):
        return "the end of the file"
    if tok.type == "IDENT":
        return f"name '{tok.value}'"
    if tok.type == "NUMBER":
        return f"number {tok.value}"
    return f"'{tok.value}'"


def _translate(e: UnexpectedInput, source: Source) -> DveSyntaxError:
    from lark.exceptions import UnexpectedCharacters, UnexpectedToken

    text = source.text
    parser = get_parser()
    terminals = {t.name: t.pattern.value for t in parser.terminals
                 if t.pattern.type == "str"}
    offset = getattr(e, "pos_in_stream", None)
    if offset is None and isinstance(e, UnexpectedToken):
        offset = e.token.start_pos
    if offset is not None and text.startswith("/*", offset):
        # An unclosed comment is no comment to the lexer: it sees a '/' where it cannot be.
        return DveSyntaxError(_point(source, offset, 2), "unexpected-eof",
                              "comment opened here is never closed", "close it with '*/'")
    if isinstance(e, UnexpectedCharacters):
        offset = e.pos_in_stream
        ch = text[offset]
        hint = None
        if ch in "'\"":
            hint = "DVE has no strings or character literals outside 'property ltl'"
        elif ord(ch) > 127:
            hint = "names use ASCII letters, digits and '_' only"
        return DveSyntaxError(_point(source, offset), "unexpected-character",
                              f"unexpected character {ch!r}", hint)
    if not isinstance(e, UnexpectedToken):  # pragma: no cover - LALR raises only these two
        return DveSyntaxError(_point(source, getattr(e, "pos_in_stream", 0) or 0),
                              "syntax-error", str(e).splitlines()[0])
    tok = e.token
    expected = set(e.expected or ())
    try:
        # The LALR state's list merges lookaheads of similar states; asking the parser which
        # tokens it would really accept here gives the exact list (errors only, so cost is moot).
        accepts = e.interactive_parser.accepts() if e.interactive_parser is not None else None
        if accepts:
            expected = set(accepts)
    except Exception:  # noqa: BLE001, S110 - a better message is a nicety, never a new failure
        pass
    what = _describe(expected, terminals)
    if tok.type in ("$END", "<END-OF-FILE>"):
        ctx = _Context(text, len(text))
        if ctx.last is None:  # only blanks and comments
            return _empty(source)
        hint = None
        if ctx.braces:
            bl, bc = source.locate(ctx.braces[-1])
            hint = f"the '{{' at line {bl}, column {bc} is not closed"
        # Zero-width at the end of the text: no column past the file (the caret still shows).
        return DveSyntaxError(SourcePos(source, len(text), len(text)), "unexpected-eof",
                              f"unexpected end of file, expected {what}", hint)
    start = tok.start_pos if tok.start_pos is not None else 0
    ctx = _Context(text, start)
    found = _found(tok)
    tok_pos = SourcePos(source, start, tok.end_pos if tok.end_pos is not None else start + 1)
    if tok.type == "PROB_ARROW" or tok.value == "=>":
        return DveSyntaxError(tok_pos, "unsupported",
                              "probabilistic transitions ('=>') are not supported",
                              "write one '->' transition per branch")
    if tok.value == "=" and "EQ" in expected:
        if ctx.keyword in ("guard", "assert"):
            return DveSyntaxError(tok_pos, "assign-in-guard",
                                  "expected a comparison, found '=' (assignment)",
                                  "did you mean `==`?")
        return DveSyntaxError(tok_pos, "syntax-error", f"expected {what}, found '='",
                              "did you mean `==`?")
    if "SEMICOLON" in expected and ctx.last is not None and (
            tok.type == "RBRACE" or tok.value in _CLAUSE_WORDS
            or tok.line > source.locate(ctx.last[2])[0]):
        pos = _point(source, ctx.last[2])
        return DveSyntaxError(pos, "missing-semicolon", f"expected ';' here, found {found}",
                              f"end the {ctx.keyword or 'declaration'} clause with ';'"
                              if ctx.keyword else None)
    if tok.type in _TOP_LEVEL and ctx.braces:
        bl, bc = source.locate(ctx.braces[-1])
        return DveSyntaxError(tok_pos, "unclosed-brace",
                              f"expected '}}' to close the '{{' at line {bl}, column {bc}, "
                              f"found {found}",
                              "add the missing '}'")
    return DveSyntaxError(tok_pos, "syntax-error", f"expected {what}, found {found}",
                          _hint(tok, expected, ctx))


#: The clauses of a transition, in the order the grammar takes them (``cost`` and ``time`` may
#: come in either order, after the others).
_CLAUSE_ORDER = ("guard", "sync", "effect", "cost", "time")


def _hint(tok: lark.Token, expected: set[str], ctx: _Context) -> str | None:
    """A likely fix for a plain syntax error: clauses out of order, C's ``!`` for ``not``."""
    if tok.value == "!" and expected & _EXPR_START:
        return "DVE writes logical negation as `not`, e.g. `not (x > 0)`"
    if tok.value in _CLAUSE_ORDER and ctx.keyword in _CLAUSE_ORDER:
        if tok.value == ctx.keyword:
            join = {"guard": ": join the conditions with `and`",
                    "effect": ": separate the assignments with `,`"}.get(tok.value, "")
            return f"a transition has one '{tok.value}' clause{join}"
        return (f"a transition's clauses come in the order guard, sync, effect, then cost and "
                f"time: move '{tok.value}' before '{ctx.keyword}'")
    return None
