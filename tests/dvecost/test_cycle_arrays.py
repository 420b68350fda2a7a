"""``dvecost cycle`` on a ``.npz`` of plain arrays whose lengths disagree (issue 28): refused
with exit 2 in every mode, even where the mode does not read the array."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dvecost.cli import main


def _npz(path, **arrays):
    np.savez(path, **arrays)
    return str(path)


@pytest.mark.parametrize("key,n", [("time", 3), ("time", 1), ("cost", 3), ("cost", 1)])
@pytest.mark.parametrize("mode", [[], ["--ratio"], ["--min"], ["--json"], ["--ratio", "--json"]])
def test_a_cost_or_time_array_of_the_wrong_length_is_refused(tmp_path, capsys, key, n, mode):
    arrays = dict(indptr=np.array([0, 1, 2]), indices=np.array([1, 0]),
                  cost=np.array([3, 1]), time=np.array([1, 1]))
    arrays[key] = np.arange(1, n + 1)
    p = _npz(tmp_path / "g.npz", **arrays)
    assert main(["cycle", p, *mode]) == 2
    out, err = capsys.readouterr()
    words = f"'{key}' has {n} entries, expected one per edge (2"
    assert p in err and words in err and "Traceback" not in err
    assert "maximal" not in out and "minimal" not in out


def test_matching_arrays_are_answered(tmp_path, capsys):
    p = _npz(tmp_path / "g.npz", indptr=np.array([0, 1, 2]), indices=np.array([1, 0]),
             cost=np.array([3, 1]), time=np.array([1, 3]))
    assert main(["cycle", p, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["exact"] == "2"
    assert main(["cycle", p, "--ratio", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["exact"] == "1"
