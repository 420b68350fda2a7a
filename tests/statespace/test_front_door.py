"""One front door: text and files become models only through ``dve.load_model``, which checks
them; the compiler and the explorers take models."""

from __future__ import annotations

import pathlib

import pytest

from dve import load_model
from dve.errors import ModelErrors
from dve.parser import parse_model
from statespace import build_state_graph, compile_model

TEXT = "byte x; process P { state a, b; init a; trans a -> b { effect x = 1; }; } system async;"
TEMPLATE = ("process P(key i) { state s; init s; } for (k : 1 .. 2) { process P(k); } "
            "system async;")


@pytest.mark.parametrize("model", [TEXT, pathlib.Path("model.dve"), "model.dve"])
def test_the_explorer_refuses_text_and_paths(model):
    with pytest.raises(TypeError, match="dve.load_model"):
        build_state_graph(model)


def test_the_compiler_refuses_an_unexpanded_model():
    with pytest.raises(ValueError, match="expanded model"):
        compile_model(parse_model(TEMPLATE, "<test>"))
    assert [p.name for p in compile_model(load_model(TEMPLATE)).processes] == ["P_1", "P_2"]


def test_a_model_that_fails_the_checks_never_reaches_the_explorer():
    bad = TEXT.replace("x = 1", "y = 1")  # an undeclared variable
    with pytest.raises(ModelErrors, match="undefined-name"):
        load_model(bad)


def test_text_and_its_model_give_the_same_graph():
    g = build_state_graph(load_model(TEXT))
    h = build_state_graph(compile_model(load_model(TEXT)))
    assert (g.n_states, g.n_edges, g.indices.tolist()) == (2, 1, [1])
    assert (h.n_states, h.n_edges, h.indices.tolist()) == (2, 1, [1])
