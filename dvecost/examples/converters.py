"""A scenario file (``dvecost saturate dvecost/examples/converters.py``): viewers and
converters, 3:1, on a pool of eight workers that admits up to eight requests per tick.

A viewer thinks 6 ticks and asks for a page (1 tick of service): alone, 1 tick of work in a
round of 9 (6 thinking, the send, the service, the reply), 1/9 of a worker. A converter thinks
4 ticks and asks for a conversion that takes 2 or 5 ticks (a choice): alone, at most 5 ticks of
work in a round of 12, 5/12 of a worker. The alone rates add up to 8 between 40 and 44 users
(``apportion``'s 3:1 mixes), so that is where the question is decided. A converter's choice
gives its clients many more phases than a fixed round, and the exact analysis of 42 users
passes 28 million states: ``auto`` analyses exactly only under its memory guard.
"""

from scenarios import Choice, Request, Scenario, Server, Think, apportion

viewer = Scenario("viewer", [Think(6), Request("page", service=1)])
converter = Scenario("converter", [Think(4), Choice(Request("small", service=2),
                                                    Request("large", service=5))])
server = Server(workers=8, admissions=8)


def system(n):
    return apportion({viewer: 3, converter: 1}, n)
