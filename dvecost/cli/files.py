"""Output files of the commands: written atomically, checked before a long run, plots.

A search may run for minutes, so the files it will write (``--csv``, ``--plot``) are checked
first (:func:`check_output_files`). A regular file (or a new one) is written through a
temporary file renamed over the target (:func:`write_atomic`), so a reader never sees half a
file; it gets the permissions a plain ``open`` would give it (those of the file it replaces,
else 0666 less the umask). Anything else named as output (a FIFO, ``/dev/null``, a terminal)
is written through, never replaced by a regular file. matplotlib is an optional extra (``pip
install 'dvecost[plot]'``): :func:`need_matplotlib` says so when it is missing.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import stat
import tempfile
from typing import Callable

from dve.errors import ConfigurationError

__all__ = ["write_atomic", "check_output_files", "need_matplotlib", "save_figure",
           "new_file_mode", "write_outputs"]


def new_file_mode(path: str | None = None) -> int:
    """The permission bits a file written at ``path`` gets: those of the regular file there
    now, else 0666 less the process's umask (what ``open(path, 'w')`` gives a new file).

    >>> old = os.umask(0o027)
    >>> oct(new_file_mode())
    '0o640'
    >>> _ = os.umask(old)
    """
    if path is not None:
        try:
            st = os.stat(path)
            if stat.S_ISREG(st.st_mode):
                return stat.S_IMODE(st.st_mode)
        except OSError:
            pass
    umask = os.umask(0)   # the only way to read it; set back at once
    os.umask(umask)
    return 0o666 & ~umask


def _is_special(path: str) -> bool:
    """Whether ``path`` names something other than a regular file (a FIFO, a device, a
    socket), following symbolic links; a missing path is not special."""
    try:
        return not stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def write_atomic(path: str, data: str | bytes | Callable[[str], None]) -> str:
    """Write ``data`` (text, bytes, or a function writing a file at the path it is given) to
    ``path``; returns ``path``.

    A regular file (or a new one) is written through a temporary file in the same folder,
    renamed over it at the end: a reader never sees half a file, a failure leaves any old file
    as it was, and the file keeps the permissions :func:`new_file_mode` gives. A symbolic link
    is followed (the file it names is replaced, the link stays). A FIFO or a device is written
    directly, never replaced.

    >>> import tempfile
    >>> d = tempfile.mkdtemp(); f = os.path.join(d, "a.csv")
    >>> _ = write_atomic(f, "x,y\\n"); open(f).read()
    'x,y\\n'
    >>> _ = write_atomic(os.devnull, "nothing"); os.path.exists(os.devnull)
    True
    """
    if _is_special(path):
        try:
            if callable(data):
                data(path)
            else:
                with open(path, "wb") as f:
                    f.write(data.encode() if isinstance(data, str) else data)
        except OSError as exc:
            raise ConfigurationError(f"cannot write '{path}': {exc.strerror or exc}") from None
        return str(path)
    target = pathlib.Path(os.path.realpath(path))   # through a link to the file it names
    mode = new_file_mode(str(target))
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=target.suffix,
                                   dir=target.parent)
    except OSError as exc:
        raise ConfigurationError(f"cannot write '{path}': {exc.strerror or exc}") from None
    try:
        os.fchmod(fd, mode)   # mkstemp makes it 0600
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
    if suffix == "pgf":
        # matplotlib's PGF backend runs a TeX program to measure text; without it the plot
        # would fail only after the whole search.
        import matplotlib

        tex = matplotlib.rcParams.get("pgf.texsystem", "xelatex")
        if shutil.which(tex) is None:
            raise ConfigurationError(f"cannot write a plot to '{path}': the .pgf format needs "
                                     f"the program '{tex}', which is not installed; name the "
                                     "plot .png, .pdf or .svg instead")


def save_figure(fig, path: str) -> str:
    """Write the matplotlib figure ``fig`` to ``path`` (atomically; the format is the
    suffix's) and close it; returns the path."""
    import matplotlib.pyplot as plt

    def draw(target: str) -> None:
        # The format is the suffix of the path asked for (a temporary file has another).
        fig.savefig(target, format=pathlib.Path(path).suffix.lstrip(".").lower() or None)

    try:
        return write_atomic(path, draw)
    except ConfigurationError:
        raise
    except Exception as exc:  # noqa: BLE001 - a backend's failure (a missing program, ...)
        raise ConfigurationError(f"cannot write the plot '{path}': {exc}") from None
    finally:
        plt.close(fig)


def write_outputs(writers: dict[str, Callable[[], str]]) -> tuple[dict[str, str], list[str]]:
    """Run each ``writers[what]()`` (which writes a file and returns its path); returns the
    paths written, by ``what``, and the messages of those that failed: a file that cannot be
    written after a search is reported beside the result, never in its place."""
    written: dict[str, str] = {}
    failed: list[str] = []
    for what, write in writers.items():
        try:
            written[what] = write()
        except ConfigurationError as exc:
            failed.append(str(exc))
    return written, failed
