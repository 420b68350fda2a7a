"""The CLI's start-up and exit for the GPU (issue 15): a run parses with its command's parser
alone, ``--backend gpu`` starts the device in a background thread, and a process that used
CuPy ends with os._exit after flushing its output, with the command's exit code."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import dvecost.cli as cli
from dvecost.examples import example_path


@pytest.mark.parametrize("words", [
    ["analyze", "m.dve", "--backend", "gpu", "--json", "--ratio", "-D", "N=3"],
    ["explore", "m.dve", "--max-states", "10", "--backend=cpu"],
    ["check", "a.dve", "b.dve"],
])
def test_one_command_parser_parses_as_the_full_one(words):
    full, one = cli._build_parser(), cli._build_parser(words[0])
    a, b = full.parse_known_args(words), one.parse_known_args(words)
    assert vars(a[0]) == vars(b[0]) and a[1] == b[1]


def test_device_started_only_for_gpu_runs_of_device_commands(monkeypatch):
    import runtime.warmup
    started = []
    monkeypatch.setattr(runtime.warmup, "warm_up", lambda: started.append(1))
    cli._start_device(["analyze", "m.dve", "--backend", "cpu"])
    cli._start_device(["saturate", "s.py", "--backend", "gpu"])
    cli._start_device(["--backend", "gpu"])
    assert started == []
    cli._start_device(["analyze", "m.dve", "--backend", "gpu"])
    cli._start_device(["explore", "m.dve", "--backend=gpu"])
    assert started == [1, 1]


# A process in which "cupy" was imported (a stand-in module here) ends through os._exit:
# what follows main() never runs, the output is whole, and the exit code is the command's.
_PROGRAM = """
import sys, types
sys.modules["cupy"] = types.ModuleType("cupy")
sys.argv = ["dvecost"] + sys.argv[1:]
from dvecost.cli import main
main()
print("after main", file=sys.stderr)
"""


@pytest.mark.parametrize("args, code", [
    (["--backend", "cpu", "--json"], 0),
    (["--backend", "cpu", "--json", "--max-states", "5"], 3),
])
def test_a_process_that_used_cupy_exits_at_once_with_its_output(args, code, tmp_path):
    path = str(example_path("client_server.dve"))
    run = subprocess.run([sys.executable, "-c", _PROGRAM, "analyze", path, *args],
                         capture_output=True, text=True, cwd=str(tmp_path))
    assert run.returncode == code, run.stderr
    assert "after main" not in run.stderr
    out = json.loads(run.stdout)
    assert out["status"] == ("ok" if code == 0 else "limit")
    # Without CuPy in the process, main returns as usual.
    run = subprocess.run([sys.executable, "-c", _PROGRAM.replace(
        'sys.modules["cupy"] = types.ModuleType("cupy")', ""), "analyze", path, *args],
        capture_output=True, text=True, cwd=str(tmp_path))
    assert run.returncode == 0 and "after main" in run.stderr


def test_under_a_profiler_the_process_ends_as_usual(tmp_path):
    # cProfile writes its report at exit: the process is not cut short under it.
    script = tmp_path / "prog.py"
    script.write_text(_PROGRAM)
    prof = tmp_path / "out.prof"
    run = subprocess.run([sys.executable, "-m", "cProfile", "-o", str(prof), str(script),
                          "analyze", str(example_path("client_server.dve")), "--backend", "cpu",
                          "--json"], capture_output=True, text=True, cwd=str(tmp_path))
    assert run.returncode == 0, run.stderr
    assert "after main" in run.stderr and prof.stat().st_size > 0


class _Alive:
    def is_alive(self) -> bool:
        return True


@pytest.fixture
def warming_without_device(monkeypatch):
    """As while warm_up's thread is at work on a machine with CuPy but no device."""
    import runtime.device as ob
    monkeypatch.setattr(ob, "_WARMING", _Alive())
    monkeypatch.setattr(ob, "cupy_installed", lambda: True)
    monkeypatch.setattr(ob, "gpu_unavailable_reason", lambda: "no CUDA device found")
    return ob


def test_gpu_while_warming_up_defers_the_device(warming_without_device, monkeypatch):
    from runtime.errors import BackendUnavailableError
    ob = warming_without_device
    xp = ob.array_module_for("gpu")
    assert isinstance(xp, ob.DeferredDevice) and xp.required and not xp.resolved
    with pytest.raises(BackendUnavailableError, match="no CUDA device found; install"):
        xp.cuda
    # Once the warm-up is over (or without one) the device is asked for at once.
    monkeypatch.setattr(ob, "_WARMING", None)
    with pytest.raises(BackendUnavailableError, match="no CUDA device found"):
        ob.array_module_for("gpu")


@pytest.mark.parametrize("host_below", [0, 1 << 14])
def test_gpu_without_device_found_late_is_still_exit_2(host_below, warming_without_device,
                                                       monkeypatch, capsys):
    # host_below 0: the explorer asks for the device at its first chunk; the default: the
    # small example stays on the host and the cycle engine asks for it.
    from statespace.search import Placement
    monkeypatch.setattr(Placement, "device_min_rows", host_below)
    code = cli.main(["analyze", str(example_path("client_server.dve")), "--backend", "gpu"])
    err = capsys.readouterr().err
    assert code == 2 and "the GPU backend is unavailable: no CUDA device found" in err
    assert "Traceback" not in err
