"""analyze() takes a path, text or a model, and every one of them passes the front door's
checks (dve.load_model): a model built in memory is not analysed unchecked."""

from __future__ import annotations

import pytest

import dve
from dve.errors import ConfigurationError, ModelErrors
from dve.parser import parse_model
from dvecost import analyze
from statespace import compile_model

TEXT = ("byte x; process P { state a, b; init a; "
        "trans a -> b { effect x = 1; cost 2; }, b -> a { cost 4; }; } system async;")


def test_a_parsed_model_that_fails_the_checks_is_refused_like_its_text():
    bad = "process P { state a; init b; trans a -> a { cost 1; }; } system async;"
    with pytest.raises(ModelErrors) as from_text:
        analyze(bad, backend="cpu")
    with pytest.raises(ModelErrors) as from_model:
        analyze(parse_model(bad, "<string>"), backend="cpu")
    assert str(from_model.value) == str(from_text.value)
    assert "unknown state 'b'" in str(from_model.value)


def test_a_parsed_model_is_expanded_and_checked_before_analysis():
    # An unexpanded DiVinE 3 model (a template and its instances), parsed only.
    text = ("process T(key i) { state s, t; init s; trans s -> t { cost i; }, t -> s {}; } "
            "process T(1); process T(3); system async;")
    a = analyze(parse_model(text, "<string>"), backend="cpu")
    assert a.processes == ("T_1", "T_3")
    assert a.exact == analyze(text, backend="cpu").exact == "3/2"


def test_a_loaded_model_gives_the_same_analysis_as_its_text():
    m = dve.load_model(TEXT)
    assert dve.load_model(m) is m   # a checked model comes back as it is
    a, b = analyze(m, backend="cpu"), analyze(TEXT, backend="cpu")
    assert (a.exact, a.n_states, a.n_transitions) == (b.exact, b.n_states, b.n_transitions)
    assert a.exact == "3"


@pytest.mark.parametrize("wrong", [TEXT.encode(), 42, None])
def test_anything_else_is_a_type_error_naming_the_front_door(wrong):
    with pytest.raises(TypeError, match="dve.load_model"):
        analyze(wrong, backend="cpu")


def test_a_compiled_model_is_refused_too():
    with pytest.raises(TypeError, match="got CompiledModel: read models with dve.load_model"):
        analyze(compile_model(dve.load_model(TEXT)), backend="cpu")


def test_defines_with_a_model_are_still_refused():
    with pytest.raises(ConfigurationError, match="pass them to dve.load_model"):
        analyze(dve.load_model(TEXT), defines={"N": 1}, backend="cpu")
