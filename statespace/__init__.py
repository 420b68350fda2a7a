"""State spaces of DVE models: compile, explore breadth-first, and the CSR :class:`StateGraph`.

>>> from dve import load_model
>>> g = build_state_graph(load_model("process P { state a, b; init a; "
...                                  "trans a -> b {}, b -> a {}; } system async;"))
>>> g.n_states, g.n_edges
(2, 2)
"""

from .compiler import compile_model
from .explore import build_state_graph
from .graph import StateGraph, TraceStep, decode_state, shortest_trace
from .graphfile import load_graph, save_graph, validate_graph
from .model import Action, CompiledModel, CompiledTransition

__all__ = [
                    "Action",
                    "CompiledModel",
                    "CompiledTransition",
                    "StateGraph",
                    "TraceStep",
                    "build_state_graph",
                    "compile_model",
                    "decode_state",
                    "load_graph",
                    "save_graph",
                    "shortest_trace",
                    "validate_graph",
]
