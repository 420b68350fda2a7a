"""``dvecost analyze --gpus N`` when its launcher fails: mpiexec's own message reaches the
user, the exit code is mpiexec's, and Open MPI's refusal to run as root is never lifted
silently (the children's environment is the user's, plus ``DVECOST_COMM``)."""

from __future__ import annotations

import os
import stat
import sys

import pytest

from dvecost.cli import distributed


def _fake_mpiexec(tmp_path, code: int):
    """An ``mpiexec`` that writes its environment's Open MPI switches and a message, and
    fails with ``code``."""
    exe = tmp_path / "mpiexec"
    exe.write_text(f"#!{sys.executable}\n"
                   "import os, sys\n"
                   "print('fake-mpiexec: refusing to run; allow_root=' +\n"
                   "      os.environ.get('OMPI_ALLOW_RUN_AS_ROOT', 'unset') + ' comm=' +\n"
                   "      os.environ.get('DVECOST_COMM', 'unset'), file=sys.stderr)\n"
                   f"sys.exit({code})\n")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return str(exe)


@pytest.mark.skipif(sys.platform == "win32", reason="a script as the launcher")
def test_a_failing_mpiexec_shows_its_message_and_exit_code(tmp_path, monkeypatch, capfd):
    exe = _fake_mpiexec(tmp_path, 7)
    monkeypatch.setattr(distributed.shutil, "which", lambda name, path=None: exe)
    monkeypatch.delenv("OMPI_ALLOW_RUN_AS_ROOT", raising=False)
    monkeypatch.delenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", raising=False)
    code = distributed.launch_gpus(2, ["analyze", "m.dve", "--gpus", "2"])
    err = capfd.readouterr().err
    assert code == 7
    assert "fake-mpiexec: refusing to run; allow_root=unset comm=nccl" in err
    hint = "OMPI_ALLOW_RUN_AS_ROOT=1 and OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1" in err
    assert hint == (os.geteuid() == 0)


@pytest.mark.skipif(sys.platform == "win32", reason="a script as the launcher")
def test_the_users_choice_to_allow_root_is_passed_on_and_no_hint(tmp_path, monkeypatch,
                                                                  capfd):
    exe = _fake_mpiexec(tmp_path, 1)
    monkeypatch.setattr(distributed.shutil, "which", lambda name, path=None: exe)
    monkeypatch.setenv("OMPI_ALLOW_RUN_AS_ROOT", "1")
    assert distributed.launch_gpus(2, ["analyze", "m.dve"]) == 1
    err = capfd.readouterr().err
    assert "allow_root=1" in err and "hint" not in err


@pytest.mark.skipif(sys.platform == "win32", reason="a script as the launcher")
def test_a_stop_of_dvecost_itself_gets_no_hint(tmp_path, monkeypatch, capfd):
    exe = _fake_mpiexec(tmp_path, 3)
    monkeypatch.setattr(distributed.shutil, "which", lambda name, path=None: exe)
    monkeypatch.setattr(distributed, "_root", lambda: True)
    monkeypatch.delenv("OMPI_ALLOW_RUN_AS_ROOT", raising=False)
    assert distributed.launch_gpus(2, ["analyze", "m.dve"]) == 3
    assert "hint" not in capfd.readouterr().err


def test_a_process_of_an_mpi_run_is_not_ended_early(monkeypatch):
    """After a GPU run the CLI ends its process at once (skipping CUDA's teardown), but not a
    process of an MPI run: MPI_Finalize runs at the interpreter's exit, and Open MPI's mpiexec
    fails a run whose processes skip it (seen with ``analyze --gpus 2`` on a GPU host)."""
    import os
    import types

    import dvecost.cli as cli

    ended = []
    monkeypatch.setattr(os, "_exit", lambda code: ended.append(code))
    monkeypatch.setitem(sys.modules, "cupy", types.ModuleType("cupy"))
    monkeypatch.setattr(sys, "gettrace", lambda: None)
    monkeypatch.setattr(sys, "getprofile", lambda: None)
    monitoring = getattr(sys, "monitoring", None)
    if monitoring is not None:
        monkeypatch.setattr(monitoring, "get_tool", lambda i: None)
    end = getattr(cli, "_end_process")
    end(0)
    assert ended == [0]            # a GPU run alone: ended at once
    ended.clear()
    monkeypatch.setitem(sys.modules, "mpi4py.MPI", types.ModuleType("mpi4py.MPI"))
    end(3)
    assert ended == []             # one of an MPI run's processes: left to finalize
