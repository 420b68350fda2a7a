"""Shapes that the report's outputs must have, shared by the report and CLI tests."""

from __future__ import annotations

import re

#: Keys every ``analyze --json`` object has.
JSON_KEYS = {"status", "value", "exact", "certified", "kind", "mode", "cost", "n_states",
             "n_transitions", "n_deadlocks", "error_state_reached", "cycle", "backend",
             "timings"}

DOT_LINE = re.compile(r'^\s*(//.*|[a-z]+ \[.*\];|\w+=.*;|s\d+ \[.*\];|s\d+ -> s\d+ \[.*\];)$')


def assert_dotish(dot: str) -> None:
    """Graphviz DOT as the report writes it: one statement a line, quotes balanced."""
    lines = dot.strip().splitlines()
    assert lines[0] == "digraph dvecost {" and lines[-1] == "}"
    for line in lines[1:-1]:
        assert DOT_LINE.match(line), line
    assert dot.count('"') % 2 == dot.count('\\"') % 2  # quotes balanced (escaped ones aside)
