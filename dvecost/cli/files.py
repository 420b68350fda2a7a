"""Output files of the commands: written atomically, checked before a long run, plots.

A search may run for minutes, so the files it will write (``--csv``, ``--plot``) are checked
first (:func:`check_output_files`), and each is written through a temporary file renamed over
the target (:func:`write_atomic`), so a reader never sees half a file. matplotlib is an
optional extra (``pip install 'dvecost[plot]'``): :func:`need_matplotlib` says so when it is
missing.
"""

from __future__ import annotations

import os
import pathlib
import tempfile
from typing import Callable

from dve.errors import ConfigurationError

__all__ = ["write_atomic", "check_output_files", "need_matplotlib", "save_figure"]


def write_atomic(path: str, data: str | bytes | Callable[[str], None]) -> str:
    """Write ``data`` (text, bytes, or a function writing a file at the path it is given) to
    ``path`` through a temporary file in the same folder, renamed over ``path`` at the end: a
    reader never sees half a file, and a failure leaves any old file as it was. Returns
    ``path``."""
    target = pathlib.Path(path)
    folder = target.parent if str(target.parent) else pathlib.Path(".")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=target.suffix,
                                   dir=folder)
    except OSError as exc:
        raise ConfigurationError(f"cannot write '{path}': {exc.strerror or exc}") from None
    try:
        if callable(data):
            os.close(fd)
            data(tmp)
        else:
            with os.fdopen(fd, "wb") as f:
                f.write(data.encode() if isinstance(data, str) else data)
        os.replace(tmp, target)
    except OSError as exc:
        raise ConfigurationError(f"cannot write '{path}': {exc.strerror or exc}") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return str(path)


def check_output_files(csv_path: str | None, plot_path: str | None) -> None:
    """Refuse, before a search that may run for long, output files that could not be
    written afterwards: a missing or read-only folder, a plot without matplotlib or with a
    suffix it does not write."""
    for path in (csv_path, plot_path):
        if path:
            _check_writable(path)
    if plot_path:
        _check_plot_format(plot_path)


def _check_writable(path: str) -> None:
    folder = pathlib.Path(path).parent
    if pathlib.Path(path).is_dir():
        raise ConfigurationError(f"cannot write '{path}': it is a directory")
    if not folder.is_dir():
        raise ConfigurationError(f"cannot write '{path}': no folder '{folder}'")
    if not os.access(folder, os.W_OK):
        raise ConfigurationError(f"cannot write '{path}': the folder is not writable")


def need_matplotlib():
    try:
        import matplotlib
    except ImportError:
        raise ConfigurationError("--plot needs matplotlib, which is not installed; install it "
                                 "with: pip install 'dvecost[plot]'") from None
    return matplotlib


def _check_plot_format(path: str) -> None:
    """The image format named by ``path``'s suffix must be one matplotlib writes."""
    need_matplotlib()
    from matplotlib.figure import Figure

    formats = Figure().canvas.get_supported_filetypes()
    suffix = pathlib.Path(path).suffix.lstrip(".").lower()
    if suffix not in formats:
        raise ConfigurationError(f"cannot write a plot to '{path}': name it with one of the "
                                 "suffixes " + ", ".join(f".{f}" for f in sorted(formats)))


def save_figure(fig, path: str) -> str:
    """Write the matplotlib figure ``fig`` to ``path`` (atomically; the format is the
    suffix's) and close it; returns the path."""
    import matplotlib.pyplot as plt

    try:
        return write_atomic(path, lambda tmp: fig.savefig(tmp))
    finally:
        plt.close(fig)
