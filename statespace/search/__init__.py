"""How a state space is searched, apart from how its successors are made.

:class:`BreadthFirstSearch` (:mod:`statespace.search.bfs`) expands the states any next-state
generator (:mod:`statespace.next_state`) gives it, chunk by chunk, numbers new states against
the visited set, keeps to the limits and reports progress; :class:`GraphBuilder`
(:mod:`statespace.search.builder`) holds what it found and assembles the
:class:`~statespace.graph.StateGraph`; :class:`Placement` (:mod:`statespace.search.placement`)
moves its arrays to the device and back. A distributed search replaces the loop and keeps the
generator.

>>> from dve import load_model
>>> from statespace import compile_model
>>> from statespace.next_state import generator_for
>>> cm = compile_model(load_model("process P { state a, b; init a; trans a -> b {}, "
...                               "b -> a {}; } system async;"))
>>> BreadthFirstSearch(generator_for(cm), chunk_size=1).run().n_edges
2
"""

from .bfs import DEVICE_CHUNK, HOST_CHUNK, BreadthFirstSearch
from .builder import GraphBuilder
from .placement import Placement

__all__ = ["BreadthFirstSearch", "DEVICE_CHUNK", "GraphBuilder", "HOST_CHUNK", "Placement"]
