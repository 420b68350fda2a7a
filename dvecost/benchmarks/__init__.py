"""Benchmark suites behind ``dvecost bench SUITE``.

Each suite is a module here with ``add_arguments(parser)`` and ``run(args) -> Report``; the CLI
(:mod:`dvecost.cli.bench`) prints the report. Suites never print: progress goes to the
``progress`` callable they are given.
"""

from __future__ import annotations

import os
import pathlib
from dataclasses import dataclass, field

__all__ = ["Report", "SUITES", "shared_roots"]

#: Suite name -> module name under this package.
SUITES = {"parse": "parse", "explore": "explore", "ocm": "ocm", "analyze": "analyze",
          "symmetry": "symmetry", "saturate": "saturate", "scale": "scale",
          "storm": "storm"}


def shared_roots() -> list[pathlib.Path]:
    """Where the shared folder (BEEM, models, tools) may be, in order: ``$DVECOST_SHARED``,
    then ``../shared`` next to the working directory and next to the source tree."""
    roots = []
    if os.environ.get("DVECOST_SHARED"):
        roots.append(pathlib.Path(os.environ["DVECOST_SHARED"]))
    here = pathlib.Path(__file__).resolve().parents[2]
    roots += [pathlib.Path.cwd().parent / "shared", here.parent / "shared"]
    return roots


@dataclass(frozen=True)
class Report:
    """A benchmark's outcome: a titled table plus free-form notes and machine facts."""

    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple, ...]
    notes: tuple[str, ...] = ()
    meta: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"title": self.title, "meta": self.meta, "notes": list(self.notes),
                "rows": [dict(zip(self.columns, r)) for r in self.rows]}

    def as_markdown(self) -> str:
        def cell(v):
            if isinstance(v, float):
                return f"{v:.4g}"
            return "" if v is None else str(v)
        head = "| " + " | ".join(self.columns) + " |"
        rule = "|" + "|".join("---" for _ in self.columns) + "|"
        body = ["| " + " | ".join(cell(v) for v in r) + " |" for r in self.rows]
        return "\n".join([f"### {self.title}", "", head, rule, *body, "",
                          *(f"- {n}" for n in self.notes)])
