"""Lark is loaded only for the models the fast path does not take (dve.parser, dve._parts)."""

import subprocess
import sys
from importlib import resources

CHECK = """
import sys
import dve
{body}
print('lark' in sys.modules)
"""


def _lark_loaded(body: str) -> str:
    out = subprocess.run([sys.executable, "-c", CHECK.format(body=body)], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()[-1]


def test_a_model_the_fast_path_reads_never_imports_lark():
    path = resources.files("dvecost.examples").joinpath("client_server.dve")
    body = f"m = dve.load_model({str(path)!r}); assert m.processes"
    assert _lark_loaded(body) == "False"


def test_a_syntax_error_loads_lark_and_is_reported_with_its_position():
    body = """
from dve.errors import DveSyntaxError
from dve.errors import Source
from dve.parser import parse_source
try:
    parse_source(Source('bad.dve', 'process P { state s; init s; trans s -> s { guard ; }; }'))
except DveSyntaxError as e:
    assert 'bad.dve:1:' in str(e), str(e)
else:
    raise AssertionError('no error')
"""
    assert _lark_loaded(body) == "True"
