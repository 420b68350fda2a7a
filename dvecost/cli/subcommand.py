"""``add_command``: the one way to add a subcommand; its ``--help`` is its module's docstring.

A command's module docstring opens with ``` ``dvecost NAME ...``: what it answers.``` and a
paragraph saying what it does; those are its one-line help (in ``dvecost --help``) and its
description (in ``dvecost NAME --help``), so the two texts are written once and cannot drift
apart.

Every command module registers so::

    def register(sub):
        p = add_command(sub, "NAME", __doc__, run)
        ...   # the command's own options, in the order --help lists them
        add_common(p)
        return p
"""

from __future__ import annotations

import argparse
from typing import Callable

__all__ = ["add_command", "help_texts"]


def help_texts(doc: str) -> tuple[str, str]:
    """``(help, description)`` from a command module's docstring: the first line's text after
    the colon (without its final full stop) and the next paragraph, joined into one line, with
    the double backquotes of code spans turned into single quotes.

    >>> help_texts('''``dvecost x FILE``: what x answers.
    ...
    ... Reads ``FILE`` and says it,
    ... exit code 0.
    ...
    ... Details for the reader of the code.''')
    ('what x answers', "Reads 'FILE' and says it, exit code 0.")
    """
    head, _, rest = doc.strip().partition("\n\n")
    summary = " ".join(head.split(": ", 1)[1].split()).rstrip(".")
    description = " ".join(rest.split("\n\n", 1)[0].split())
    return summary.replace("``", "'"), description.replace("``", "'")


def add_command(sub: argparse._SubParsersAction, name: str, doc: str | None,
                run: Callable[[argparse.Namespace], int]) -> argparse.ArgumentParser:
    """The parser of subcommand ``name`` (help and description from ``doc``, see
    :func:`help_texts`), running ``run``; the caller adds its options."""
    summary, description = help_texts(doc or "")
    p = sub.add_parser(name, help=summary, description=description)
    p.set_defaults(func=run)
    return p
