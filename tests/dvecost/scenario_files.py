"""Scenario files shared by the saturate tests (written to a temporary folder by each test)."""

#: Browsers and buyers (2:1) on a two-worker server; the buyer chooses between paying and
#: thinking, so runs have choices.
SHOP = """
from scenarios import Scenario, Think, Request, Choice, Server, apportion

browser = Scenario("browser", [Think(2), Request("page", service=2)])
buyer = Scenario("buyer", [Think(1), Choice(Request("pay", service=3), Think(2))])
server = Server(workers=2)

def system(n):
    return apportion({browser: 2, buyer: 1}, n)
"""
