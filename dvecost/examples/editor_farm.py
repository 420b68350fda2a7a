"""A scenario file (``dvecost saturate dvecost/examples/editor_farm.py``): the online editor's
readers, writers and exporters (the template ``editor``, in proportions 5:3:2) on a server with
eight workers that admits up to eight requests per tick.

With one admission per tick (``Server(workers=8)``) these users can never load eight workers:
no request brings more than 6 ticks of work (an export), so the load stays at most 6 whatever
their number, and ``dvecost saturate`` says so without any analysis. Admitting up to eight
requests on one tick lifts that bound to the capacity 8 (``System.load_bound``). Alone, a
reader loads the server 2/12, a writer 4/18 and an exporter 8/22; a user's share of any run is
at most that, and the shares of ``apportion``'s mixes add up to 8 only from 37 users on (36:
18 readers, 11 writers, 7 exporters, 791/99), so no fewer than 37 users can keep all eight
workers busy. And 37 do (``dvecost saturate`` finds it in under a minute, certified):
with some users waiting a tick here and there, their requests can fall into place so that
eight are in service on every tick, a run of the model that ``saturate`` finds by planning
a cycle of full ticks on a count model of the users and a prefix that reaches it
(docs/scenarios.md, section 8). Each tick of this server is nine
steps of the model (eight admission steps, then the step in which everybody moves), and the
state spaces of so many users are far beyond exact analysis.
"""

from scenarios import Server, apportion
from scenarios.templates import EDITOR_SCENARIOS, EDITOR_WEIGHTS

server = Server(workers=8, admissions=8)


def system(n):
    return apportion(dict(zip(EDITOR_SCENARIOS, EDITOR_WEIGHTS)), n)
