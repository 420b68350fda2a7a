"""Helpers for the state-space tests: build a graph from DVE text; shared paths."""

from __future__ import annotations

import os
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
SHARED = pathlib.Path(os.environ.get("DVECOST_SHARED", ROOT.parent / "shared"))
BEEM = SHARED / "beem"


def compiled(text: str, defines=None, property: bool = True):
    """Parse, expand and compile DVE text, unchecked (the explorer's own tests give it models
    the static checks would refuse)."""
    from dve.expand import expand_model
    from dve.parser import parse_model
    from statespace import compile_model
    return compile_model(expand_model(parse_model(text, "<test>"), defines or {}),
                         property=property)


def graph(text: str, **kw):
    """The validated state graph of DVE text (``property=`` goes to the compiler)."""
    from statespace import build_state_graph, validate_graph
    prop = kw.pop("property", True)
    g = build_state_graph(compiled(text, property=prop), **kw)
    validate_graph(g)
    return g
