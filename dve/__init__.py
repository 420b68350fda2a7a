"""The DVE front end: parse, expand DiVinE 3 constructs, check, and format models.

>>> m = parse_model("process P { state a; init a; trans a -> a { cost 2; }; } system async;")
>>> m.processes[0].name
'P'
"""

from .errors import *  # noqa: F401,F403  (the exception tree is part of the public surface)
from .errors import __all__ as _errors_all
from .syntax import Model
from .parser import parse_model
from .format import format_model
from .expand import expand_model, instance_name
from .check import check_model
from .loader import load_model, read_source

__all__ = [
    "parse_model", "format_model", "expand_model", "instance_name", "check_model", "load_model",
    "read_source", "Model", *_errors_all,
]
