"""Client scenarios, servers and systems in Python; the bundled templates; the saturation search.

Describe what users do (:class:`Scenario` made of :class:`Think`, :class:`Request`,
:class:`Choice` and :class:`Loop` steps), put ``{scenario: count}`` clients together with a
:class:`Server` in a :class:`System`, and :meth:`System.to_model` gives the DVE model (an AST).
:func:`saturate` finds how many clients it takes to use the server's capacity (given an
evaluator; :func:`dvecost.saturation.saturate` is the search with dvecost's analysis).

>>> user = Scenario("user", [Think(4), Request("query", service=2)])
>>> System({user: 3}, server=Server()).describe()
'3 clients (user: 3), server with 1 worker, system sync'
"""

from .dsl import (CLIENT_RESOURCE, SERVER_RESOURCE, Choice, Loop, Request, Scenario, Server,
                  Step, System, Think, apportion)
from .bounds import find_witness, upper_bound
from .capacity import frontier, headroom, workers_needed
from .loader import load_spec
from .saturation import Evaluation, SaturationPoint, SaturationResult, resolve_spec, saturate
from .templates import TEMPLATES, template

__all__ = ["Think", "Request", "Choice", "Loop", "Step", "Scenario", "Server", "System",
           "apportion", "SERVER_RESOURCE", "CLIENT_RESOURCE", "load_spec", "saturate",
           "SaturationResult", "SaturationPoint", "Evaluation", "resolve_spec", "TEMPLATES",
           "template", "frontier", "headroom", "workers_needed", "upper_bound", "find_witness"]
