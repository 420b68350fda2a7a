"""Bundled systems, by name: each a function ``n -> System`` with a one-line description.

=====================  ===========================================================================
``paper-no-server``    the paper's server-free system: ``n`` clients doing their own work,
                       interleaved (``system async``); the load stays that of one client
``paper-server``       the paper's client/server system: ``n`` clients taking turns at one
                       server (``system sync``); the load is ``min(1, n/3)``
``editor``             an online editor: readers, writers and exporters in proportions 5:3:2,
                       one server; saturates at 6 clients
=====================  ===========================================================================

The two paper templates follow the systems of Barnat, Bauch, Brim and Češka (PDMC 2011) in
shape (clients that think, then send a light or a heavy request; with no server, or with one
server they take turns at); the numbers (think 10 ticks, light 1 tick, heavy 6 ticks) are ours,
chosen so that the loads have closed forms:

- ``paper-server``: a client's worst cycle is a heavy request: 1 tick to send, 6 served, 1 to
  receive the reply, 10 thinking, 18 ticks for 6 of service, so one client loads the server
  6/18 = 1/3 and ``n`` clients ``min(1, n/3)``: three clients, staggered by 6 ticks, keep it
  busy (saturation at 3).
- ``paper-no-server``: a client does its heavy work itself, 6 ticks at cost 1 after 10 ticks of
  thinking; interleaved, the worst cycle is one client alone, 6/16 = 3/8 per step, whatever
  ``n``: the interleaved product cannot show load over time (docs/scenarios.md).

Examples
--------
>>> sorted(TEMPLATES)
['editor', 'paper-no-server', 'paper-server']
>>> TEMPLATES["editor"].family(4).describe()
'4 clients (reader: 2, writer: 1, exporter: 1), server with 1 worker, system sync'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from dve.errors import ConfigurationError

from .dsl import Choice, Loop, Request, Scenario, Server, System, Think, apportion

__all__ = ["Template", "TEMPLATES", "template", "paper_no_server", "paper_server", "editor",
           "EDITOR_SCENARIOS", "EDITOR_WEIGHTS"]


@dataclass(frozen=True)
class Template:
    """A named family of systems."""

    name: str
    description: str
    family: Callable[[int], System]


# ---------------------------------------------------------------------------- the paper

def _paper_client() -> Scenario:
    return Scenario("client", [
        Think(10),
        Choice(Request("light", service=1), Request("heavy", service=6), weights=(3, 1)),
    ])


def paper_no_server(n: int) -> System:
    """``n`` clients with no server, interleaved (``system async``).

    Each client thinks 10 ticks, then does a light (1 tick) or a heavy (6 ticks) piece of work
    itself, at cost 1 per tick, charged to the resource ``work``. One step moves one client, so
    the worst cycle is one client alone doing heavy work: 6 / 16 = 3/8 per step, for every
    ``n``.

    >>> paper_no_server(3).describe()
    '3 clients (client: 3), no server, system async'
    """
    return System({_paper_client(): n}, composition="async", name="paper-no-server")


def paper_server(n: int) -> System:
    """``n`` clients taking turns at one server (``system sync``, one worker).

    Each client thinks 10 ticks, then sends a light (1 tick of service) or a heavy (6 ticks)
    request at cost 1 per tick, and waits for the reply. The load is ``min(1, n/3)``.

    >>> paper_server(2).describe()
    '2 clients (client: 2), server with 1 worker, system sync'
    """
    return System({_paper_client(): n}, server=Server(), name="paper-server")


# ---------------------------------------------------------------------------- the editor

#: The online editor's scenarios.
EDITOR_SCENARIOS: tuple[Scenario, ...] = (
    # Opens a document (2 ticks of service) and reads it for 8 ticks.
    Scenario("reader", [Request("open", service=2), Think(8)]),
    # Opens a document, twice types for 2 ticks and sends the edit (1 tick), then reads 4.
    Scenario("writer", [Request("open", service=2),
                        Loop([Think(2), Request("edit", service=1)], times=2),
                        Think(4)]),
    # Opens a document, looks at it for 4 ticks, exports it (6 ticks), and waits 6.
    Scenario("exporter", [Request("open", service=2), Think(4), Request("export", service=6),
                          Think(6)]),
)

#: How many clients follow each editor scenario, in proportion (readers : writers : exporters).
EDITOR_WEIGHTS: tuple[int, ...] = (5, 3, 2)


def editor(n: int) -> System:
    """An online editor: ``n`` users, readers, writers and exporters in proportions 5:3:2.

    All requests cost 1 per tick of service on a server with one worker, so a load of 1 is the
    server busy all the time. Users are shared out with :func:`~scenarios.dsl.apportion`
    (``n = 4``: 2 readers, 1 writer, 1 exporter). One user alone, at most: a reader 2/12 of
    the server, a writer 4/18, an exporter 8/22. The load reaches 1 at 6 users
    (docs/scenarios.md works through why).

    >>> editor(6).describe()
    '6 clients (reader: 3, writer: 2, exporter: 1), server with 1 worker, system sync'
    """
    return System(apportion(dict(zip(EDITOR_SCENARIOS, EDITOR_WEIGHTS)), n), server=Server(),
                  name="editor")


#: The bundled templates, by name.
TEMPLATES: dict[str, Template] = {t.name: t for t in (
    Template("paper-no-server",
             "the paper's clients with no server, interleaved: the load stays 3/8 for any N",
             paper_no_server),
    Template("paper-server",
             "the paper's clients taking turns at one server: load min(1, N/3), saturates at 3",
             paper_server),
    Template("editor",
             "an online editor (readers, writers, exporters 5:3:2) on one server: "
             "saturates at 6",
             editor),
)}


def template(name: str) -> Template:
    """The bundled template called ``name``.

    Raises
    ------
    dve.errors.ConfigurationError
        No such template (the message lists them).

    >>> template("editor").description.split(":")[0]
    'an online editor (readers, writers, exporters 5'
    """
    try:
        return TEMPLATES[name]
    except KeyError:
        raise ConfigurationError(f"unknown template '{name}'; templates: "
                                 + ", ".join(TEMPLATES)) from None
