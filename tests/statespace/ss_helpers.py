"""Helpers for the state-space tests: build a graph from DVE text; shared paths."""

from __future__ import annotations

import os
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
SHARED = pathlib.Path(os.environ.get("DVECOST_SHARED", ROOT.parent / "shared"))
BEEM = SHARED / "beem"


def compiled(text: str, defines=None, property: bool = True):
    """Parse, expand and compile DVE text."""
    from dve.parser import parse_model
    from statespace import compile_model
    model = parse_model(text, "<test>")
    if defines:
        from dve.expand import expand_model
        model = expand_model(model, defines)
    return compile_model(model, property=property)  # expands DiVinE 3 constructs itself


def graph(text: str, **kw):
    """The validated state graph of DVE text (``property=`` goes to the compiler)."""
    from statespace import build_state_graph, validate_graph
    prop = kw.pop("property", True)
    g = build_state_graph(compiled(text, property=prop), **kw)
    validate_graph(g)
    return g
