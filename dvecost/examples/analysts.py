"""A scenario file (``dvecost saturate dvecost/examples/analysts.py``): analysts on a server with
eight workers.

An analyst thinks 12 ticks, then asks for a report that takes a worker 8 ticks: alone, 8 ticks
of service in a cycle of 22 (12 thinking, 1 sending, 8 served, 1 reading the reply), a load of
4/11 of a worker. The server admits one request per tick, so eight workers can all be busy
only with requests of 8 ticks or more: here they are, and the load reaches the capacity 8 at
22 analysts (21 give 84/11). The workers form a pool and the analysts are interchangeable, so
the analysis explores one state per class of states equal up to renumbering the analysts:
22 analysts take well under a second, where the full product has about 10^21 states.
"""

from scenarios import Request, Scenario, Server, Think

analyst = Scenario("analyst", [Think(12), Request("report", service=8)])
server = Server(workers=8)


def system(n):
    return {analyst: n}
