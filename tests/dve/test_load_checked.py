"""``dve.loader.load_checked``: the front door with its warnings and errors as values.

It must give what the stages give one by one (parse, expand, check), what ``load_model``
returns or raises, and the model's inputs whether the model passes or not.
"""

from __future__ import annotations

import pytest

from dve import format_model, load_model
from dve.check import check_model
from dve.errors import ConfigurationError, DveSyntaxError, ModelErrors, Source
from dve.expand import expand_model
from dve.loader import LoadResult, load_checked, read_source
from dve.parser import parse_model

WARN = """\
input byte N = 2;
byte cell[N];
process P {
 state a, b, lost;
 init a;
 trans a -> b { effect cell[0] = 1; }, b -> a {};
}
system async;
"""

BAD = """\
input byte N = 2;
process P { state a; init a; trans a -> a { guard tokn > 0; }; }
system async;
"""


def test_a_correct_model_with_its_warnings_as_the_stages_give_them(tmp_path):
    path = tmp_path / "w.dve"
    path.write_text(WARN)
    r = load_checked(str(path), defines={"N": 3})
    stages = expand_model(parse_model(WARN, str(path)), {"N": 3})
    assert isinstance(r, LoadResult) and r.ok and r.error is None
    assert format_model(r.model) == format_model(stages)
    assert format_model(load_model(str(path), defines={"N": 3})) == format_model(r.model)
    assert [(w.code, str(w.pos)) for w in r.warnings] == \
        [(w.code, str(w.pos)) for w in check_model(stages)]
    assert [w.code for w in r.warnings] == ["unreachable-state"]
    assert r.inputs == frozenset({"N"})


def test_a_failing_model_returns_what_load_model_raises_and_its_inputs():
    r = load_checked(BAD, name="bad.dve")
    assert not r.ok and r.model is None and r.warnings == ()
    assert isinstance(r.error, ModelErrors)
    with pytest.raises(ModelErrors) as raised:
        load_model(BAD, name="bad.dve")
    assert str(raised.value) == str(r.error)
    assert "bad.dve:2:51" in str(r.error)
    assert r.inputs == frozenset({"N"})   # known although the model failed


def test_defines_for_other_models_are_dropped_only_when_asked():
    r = load_checked(WARN, defines={"N": 1, "M": 4}, only_inputs=True)
    assert r.ok and r.inputs == frozenset({"N"})
    strict = load_checked(WARN, defines={"N": 1, "M": 4})
    assert not strict.ok and [e.code for e in strict.error] == ["unknown-define"]


def test_unreadable_and_unparsable_inputs_are_values_not_exceptions(tmp_path):
    missing = load_checked(str(tmp_path / "none.dve"))
    assert isinstance(missing.error, ConfigurationError) and missing.inputs == frozenset()
    syntax = load_checked("process P { state a; init a; ", name="cut.dve")
    assert isinstance(syntax.error, DveSyntaxError) and syntax.error.code == "unexpected-eof"


def test_a_source_is_taken_as_it_is_whatever_its_name(tmp_path):
    # A path holding ';' would be sniffed as text by load_model; a Source never is.
    path = tmp_path / "odd;name.dve"
    path.write_text(WARN)
    src = read_source(str(path))
    r = load_checked(src)
    assert r.ok and str(r.warnings[0].pos).startswith(f"{path}:4:")
    renamed = load_checked(Source("x.dve", WARN))
    assert str(renamed.warnings[0].pos).startswith("x.dve:4:")
