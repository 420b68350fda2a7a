"""Size figures of an expanded model, as ``dvecost check`` prints them.

>>> from dve.parser import parse_model
>>> text = '''
... byte x; byte a[3]; const byte N = 2;
... channel {byte, int} q[2];
... process P { byte y; state s, t; init s; trans s -> t {}, t -> s {}; }
... system async;'''
>>> summarize(parse_model(text))
ModelSummary(n_processes=1, n_states=2, n_transitions=2, n_variables=3, n_channels=1, n_slots=11)
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from . import syntax as s
from .errors import DvecostError

__all__ = ["ModelSummary", "summarize"]


@dataclass(frozen=True, slots=True)
class ModelSummary:
    """What a model is made of.

    Attributes
    ----------
    n_processes : int
        Processes (after template expansion), the property process included.
    n_states : int
        Local (control) states, summed over all processes.
    n_transitions : int
        Transitions as written, summed over all processes.
    n_variables : int
        Variables that are part of the state (global and local; constants and inputs are not).
        An array counts once.
    n_channels : int
        Declared channels, global and process-local.
    n_slots : int
        Slots of the state vector: one control slot per process, one per scalar variable, one
        per array cell, and per buffered channel one count slot plus one slot per item field
        (buffer size times the number of item types).
    """

    n_processes: int
    n_states: int
    n_transitions: int
    n_variables: int
    n_channels: int
    n_slots: int

    def as_dict(self) -> dict[str, int]:
        """The fields as a plain dict (for JSON)."""
        return asdict(self)

    def describe(self) -> str:
        """One line, as ``dvecost check`` prints it.

        >>> ModelSummary(3, 12, 20, 4, 2, 9).describe()
        '3 processes, 12 states, 20 transitions, 4 variables, 2 channels, 9 slots'
        """
        def n(count: int, word: str) -> str:
            return f"{count} {word}{'es' if word.endswith('s') else 's'}" if count != 1 \
                else f"1 {word}"
        return ", ".join((n(self.n_processes, "process"), n(self.n_states, "state"),
                          n(self.n_transitions, "transition"), n(self.n_variables, "variable"),
                          n(self.n_channels, "channel"), n(self.n_slots, "slot")))


def _value(expr: object, env: dict[str, int]) -> int | None:
    if expr is None:
        return None
    if isinstance(expr, s.IntLit):
        return expr.value
    from .consteval import eval_const
    try:
        return int(eval_const(expr, env))  # type: ignore[arg-type]
    except (DvecostError, ArithmeticError, ValueError, RecursionError):
        return None


def _declare(d: s.VarDecl, env: dict[str, int]) -> None:
    if (d.const or d.input) and d.size is None and d.init is not None \
            and not isinstance(d.init, s.ArrayInit):
        value = _value(d.init, env)
        if value is not None:
            env[d.name] = value


def summarize(model: s.Model) -> ModelSummary:
    """Count processes, states, transitions, variables, channels and state-vector slots.

    Parameters
    ----------
    model : dve.syntax.Model
        An expanded model that passed :func:`dve.check_model` (an array or buffer size that is
        not a constant counts as 0 slots).

    Returns
    -------
    ModelSummary
    """
    env: dict[str, int] = {}
    n_vars = n_chans = n_slots = 0

    def decls(items: tuple) -> None:
        nonlocal n_vars, n_chans, n_slots
        for d in items:
            if isinstance(d, s.VarDecl):
                _declare(d, env)
                if d.const or d.input:
                    continue
                n_vars += 1
                n_slots += 1 if d.size is None else max(_value(d.size, env) or 0, 0)
            elif isinstance(d, s.ChannelDecl):
                n_chans += 1
                size = _value(d.size, env) or 0
                if d.types is not None and size > 0:
                    n_slots += 1 + size * len(d.types)

    decls(model.globals)
    procs = model.processes
    n_states = n_trans = 0
    for p in procs:
        saved = dict(env)
        decls(p.decls)
        env.clear()
        env.update(saved)
        n_states += len(p.states)
        n_trans += len(p.transitions)
    return ModelSummary(len(procs), n_states, n_trans, n_vars, n_chans, n_slots + len(procs))
