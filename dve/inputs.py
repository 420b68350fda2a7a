"""A model's ``input`` declarations and the values of its global constants.

A sweep over an input constant (``dvecost saturate model.dve --param N``) needs to know, before
any exploration, which inputs a model has, their types (what values they can hold) and where
they are declared (to point at them in an error); and, once a value is chosen, what the model's
global constants evaluate to (a model may say its capacity as ``const int CAPACITY = W;``).
Both are read here, in the language's own terms, without exploring anything.

>>> from dve.parser import parse_model
>>> m = parse_model("input byte N = 3; input int W; const int CAPACITY = 2 * W; "
...                 "process P { state s; init s; } system sync;", "m.dve")
>>> [(i.name, i.type, i.default, str(i.pos)) for i in model_inputs(m)]
[('N', 'byte', 3, 'm.dve:1:12'), ('W', 'int', None, 'm.dve:1:29')]
>>> value_range("byte")
(0, 255)
>>> from dve.expand import expand_model
>>> constant_value(expand_model(m, {"W": 4}), "CAPACITY")
8
"""

from __future__ import annotations

from dataclasses import dataclass

from . import syntax as s
from .consteval import eval_const
from .errors import EvaluationError, SourcePos

__all__ = ["InputDecl", "model_inputs", "value_range", "constant_value", "global_constant"]


@dataclass(frozen=True)
class InputDecl:
    """One ``input`` declaration of a model.

    Attributes
    ----------
    name : str
        The constant's name (what ``-D NAME=...`` sets).
    type : str
        ``'byte'`` or ``'int'``: :func:`value_range` gives the values it can hold.
    default : int or None
        Its value when not set: the initialiser, where it is a constant expression of the
        inputs declared before it (their defaults); ``None`` for ``input int W;`` (no
        initialiser: 0) and for an initialiser that is not constant.
    pos : SourcePos or None
        Where it is declared.
    """

    name: str
    type: str
    default: int | None
    pos: SourcePos | None


def model_inputs(model: s.Model) -> tuple[InputDecl, ...]:
    """The scalar ``input`` declarations of a parsed (or expanded) model, in file order.

    Parameters
    ----------
    model : dve.syntax.Model
        A model from :func:`dve.parse_model` or :func:`dve.load_model`.

    Returns
    -------
    tuple of InputDecl
        An ``input`` array (not settable from the command line as a whole) is left out.

    Examples
    --------
    >>> from dve.parser import parse_model
    >>> m = parse_model("input int N = 2; input int M = N + 1; byte x; "
    ...                 "process P { state s; init s; } system async;")
    >>> [(i.name, i.default) for i in model_inputs(m)]
    [('N', 2), ('M', 3)]
    """
    out: list[InputDecl] = []
    env: dict[str, int] = {}
    for item in model.items:
        if type(item) is not s.VarDecl or not item.input or item.size is not None:
            continue
        default: int | None = None
        if item.init is not None and not isinstance(item.init, s.ArrayInit):
            try:
                default = eval_const(item.init, env)
            except EvaluationError:
                default = None   # the model's own checks report it when it is loaded
        if default is not None:
            env[item.name] = default
        out.append(InputDecl(item.name, item.type, default, item.pos))
    return tuple(out)


def value_range(type_name: str) -> tuple[int, int]:
    """The values a scalar of DVE type ``type_name`` holds: byte 0..255, int 32-bit signed.

    >>> value_range("int")
    (-2147483648, 2147483647)
    """
    return (0, 255) if type_name == "byte" else (-2**31, 2**31 - 1)


def global_constant(model: s.Model, name: str) -> s.VarDecl | None:
    """The global scalar ``const`` (or ``input``) declaration called ``name``, or ``None``.

    >>> from dve.parser import parse_model
    >>> m = parse_model("const int C = 2; byte v; process P { state s; init s; } system async;")
    >>> global_constant(m, "C").name, global_constant(m, "v"), global_constant(m, "X")
    ('C', None, None)
    """
    for item in model.items:
        if type(item) is s.VarDecl and item.name == name:
            return item if item.const and item.size is None else None
    return None


def constant_value(model: s.Model, name: str) -> int | None:
    """The value of the global scalar constant ``name`` of an expanded model (inputs set), or
    ``None`` when there is no such constant.

    Parameters
    ----------
    model : dve.syntax.Model
        An expanded model (:func:`dve.load_model`, or :func:`dve.expand_model`): its inputs
        hold the values they were given.
    name : str
        The constant.

    Raises
    ------
    dve.errors.EvaluationError
        Its initialiser is not a constant expression of the constants before it (positioned).

    Examples
    --------
    >>> from dve.parser import parse_model
    >>> m = parse_model("input int W = 3; const int CAP = W * 2; process P { state s; "
    ...                 "init s; } system async;")
    >>> constant_value(m, "CAP"), constant_value(m, "W"), constant_value(m, "Z")
    (6, 3, None)
    """
    env: dict[str, int] = {}
    for item in model.items:
        if type(item) is not s.VarDecl or not item.const or item.size is not None:
            continue
        init = item.init
        value = 0 if init is None else eval_const(init, env)   # no initialiser: 0, as DVE
        env[item.name] = value
        if item.name == name:
            return value
    return None
