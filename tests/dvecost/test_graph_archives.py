"""Damaged ``.npz`` archives behind ``dvecost cycle`` and ``statespace.load_graph``.

Each case takes a good archive and damages it at the byte level, as a hostile or unlucky file
would be: the "encrypted" flag bit set, an unknown compression method, a member whose data is
cut short, a CRC that does not match, a deflate stream garbled, a member that is not ``.npy``,
an object array. Whatever layer fails (zip, zlib, NumPy's ``.npy`` reader), the user gets exit
code 2 and one line naming the file and what is wrong, never a traceback. The byte offsets
below follow the zip format (APPNOTE 4.3.7 local header, 4.3.12 central directory header).
"""

from __future__ import annotations

import io
import json
import struct
import zipfile

import numpy as np
import pytest

from dve.errors import ConfigurationError
from dvecost.cli import main

CSR = {"indptr": np.array([0, 1, 2]), "indices": np.array([1, 0]), "cost": np.array([3, 5]),
       "time": np.array([1, 1])}

#: 4 states (x = 0..3), 7 transitions.
LOOP = ("byte x; process P { state a; init a; trans a -> a { guard x < 3; effect x = x + 1; "
        "cost 2; }, a -> a { cost x; }; } system async;")


def _pack(members: dict[str, bytes], method: int = zipfile.ZIP_STORED) -> bytes:
    """A zip of ``members`` (small: no zip64 records, so sizes sit in the headers)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=method) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buf.getvalue()


def _npy(a: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, a, allow_pickle=True)
    return buf.getvalue()


def _entries(data: bytes) -> list[tuple[int, int]]:
    """(local header offset, central directory header offset) of each member."""
    out, at = [], 0
    while (cen := data.find(b"PK\x01\x02", at)) >= 0:
        out.append((struct.unpack_from("<I", data, cen + 42)[0], cen))
        at = cen + 4
    return out


def _data_span(data: bytes, loc: int, cen: int) -> tuple[int, int]:
    """Where a member's stored (compressed) bytes lie: ``data[start:start + size]``."""
    name_len, extra_len = struct.unpack_from("<HH", data, loc + 26)
    return loc + 30 + name_len + extra_len, struct.unpack_from("<I", data, cen + 20)[0]


def encrypted(data: bytes) -> bytes:
    """Set general-purpose flag bit 0 ("encrypted") in every local and central header."""
    b = bytearray(data)
    for loc, cen in _entries(data):
        b[loc + 6] |= 1
        b[cen + 8] |= 1
    return bytes(b)


def unknown_method(data: bytes, method: int = 99) -> bytes:
    """Say that the first member is compressed by ``method`` (local and central headers)."""
    b = bytearray(data)
    loc, cen = _entries(data)[0]
    struct.pack_into("<H", b, loc + 8, method)
    struct.pack_into("<H", b, cen + 10, method)
    return bytes(b)


def bad_crc(data: bytes) -> bytes:
    """Change the CRC-32 recorded for the first member (local and central headers)."""
    b = bytearray(data)
    loc, cen = _entries(data)[0]
    for off in (loc + 14, cen + 16):
        struct.pack_into("<I", b, off, struct.unpack_from("<I", b, off)[0] ^ 0x5A5A5A5A)
    return bytes(b)


def flipped_byte(data: bytes) -> bytes:
    """Flip the last byte of the first member's stored data (its array data when stored)."""
    b = bytearray(data)
    start, size = _data_span(data, *_entries(data)[0])
    b[start + size - 1] ^= 0xFF
    return bytes(b)


def cut_member(data: bytes) -> bytes:
    """Keep only the first half of the first member's stored bytes, with consistent headers
    (sizes and offsets updated): the zip is well formed, its member data is not."""
    loc, cen = _entries(data)[0]
    start, size = _data_span(data, loc, cen)
    drop = size - size // 2
    b = bytearray(data[:start + size // 2] + data[start + size:])
    for off in (loc + 18, cen - drop + 20):   # compressed size: local, central (moved)
        struct.pack_into("<I", b, off, size // 2)
    for _, c in _entries(bytes(b)):
        off = struct.unpack_from("<I", b, c + 42)[0]
        if off > loc:
            struct.pack_into("<I", b, c + 42, off - drop)
    eocd = bytes(b).rindex(b"PK\x05\x06")
    struct.pack_into("<I", b, eocd + 16, struct.unpack_from("<I", b, eocd + 16)[0] - drop)
    return bytes(b)


def garbled_deflate(data: bytes) -> bytes:
    """Overwrite the middle of the first member's deflate stream with 0xFF bytes."""
    b = bytearray(data)
    start, size = _data_span(data, *_entries(data)[0])
    for k in range(start + size // 4, start + 3 * size // 4):
        b[k] = 0xFF
    return bytes(b)


def _plain(method=zipfile.ZIP_STORED) -> bytes:
    return _pack({f"{k}.npy": _npy(v) for k, v in CSR.items()}, method)


def _saved_graph(tmp_path, method=zipfile.ZIP_STORED) -> bytes:
    """A state graph saved by ``explore --save``, repacked without zip64 records."""
    path = tmp_path / "saved.npz"
    assert main(["explore", str(_write(tmp_path / "m.dve", LOOP)), "-q", "--save",
                 str(path)]) == 0
    with zipfile.ZipFile(path) as z:
        return _pack({n: z.read(n) for n in z.namelist()}, method)


def _write(path, content):
    if isinstance(content, str):
        path.write_text(content)
    else:
        path.write_bytes(content)
    return path


def _refused(path, capsys, *words) -> str:
    """``dvecost cycle path`` (and with --json) exits 2, one error line naming the file."""
    for extra in ([], ["--json"]):
        code = main(["cycle", str(path), *extra])
        out, err = capsys.readouterr()
        assert code == 2, err
        assert out == "" and "Traceback" not in err
        assert err.startswith(f"dvecost: error: {path}") and err.count("\n") == 1, err
        for w in words:
            assert w in err, err
    return err


DAMAGE = [
    (encrypted, zipfile.ZIP_STORED, ["is encrypted"]),
    (unknown_method, zipfile.ZIP_STORED, ["compression method 99", "not read"]),
    (bad_crc, zipfile.ZIP_STORED, ["Bad CRC-32"]),
    (bad_crc, zipfile.ZIP_DEFLATED, ["Bad CRC-32"]),
    (flipped_byte, zipfile.ZIP_STORED, ["Bad CRC-32"]),
    (cut_member, zipfile.ZIP_STORED, ["not a readable .npz file"]),
    (cut_member, zipfile.ZIP_DEFLATED, ["not a readable .npz file"]),
    (garbled_deflate, zipfile.ZIP_DEFLATED, ["not a readable .npz file"]),
]


@pytest.mark.parametrize("damage, method, words", DAMAGE,
                         ids=[f"{d.__name__}-{m}" for d, m, _ in DAMAGE])
def test_damaged_plain_arrays_are_input_errors(tmp_path, capsys, damage, method, words):
    good = _write(tmp_path / "good.npz", _plain(method))
    assert main(["cycle", str(good), "--json"]) == 0    # the undamaged file reads
    assert json.loads(capsys.readouterr().out)["exact"] == "4"
    _refused(_write(tmp_path / "bad.npz", damage(good.read_bytes())), capsys, *words)


@pytest.mark.parametrize("damage, method, words", DAMAGE,
                         ids=[f"{d.__name__}-{m}" for d, m, _ in DAMAGE])
def test_damaged_saved_graphs_are_input_errors(tmp_path, capsys, damage, method, words):
    from statespace import load_graph
    good = _write(tmp_path / "good.npz", _saved_graph(tmp_path, method))
    capsys.readouterr()
    assert load_graph(good).n_states == 4
    bad = _write(tmp_path / "bad.npz", damage(good.read_bytes()))
    with pytest.raises(ConfigurationError, match="bad.npz"):
        load_graph(bad)
    _refused(bad, capsys, *words)


def test_encrypted_member_is_named(tmp_path, capsys):
    bad = _write(tmp_path / "g.npz", encrypted(_plain()))
    err = _refused(bad, capsys)
    assert "member 'indptr.npy' is encrypted" in err


@pytest.mark.parametrize("member, words", [
    (b"not an npy member at all", ["not a readable .npz file"]),
    (_npy(np.array([{"a": 1}, 2], dtype=object)), ["array 'indptr' holds Python objects"]),
])
def test_members_numpy_cannot_read_are_input_errors(tmp_path, capsys, member, words):
    arrays = {f"{k}.npy": _npy(v) for k, v in CSR.items()}
    arrays["indptr.npy"] = member
    _refused(_write(tmp_path / "g.npz", _pack(arrays)), capsys, *words)


def test_bzip2_and_lzma_members_are_read(tmp_path, capsys):
    for method in (zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA):
        p = _write(tmp_path / f"g{method}.npz", _plain(method))
        assert main(["cycle", str(p), "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["exact"] == "4"


def test_an_unreadable_path_is_an_input_error(tmp_path, capsys):
    for path, words in ((tmp_path / "none.npz", "no such file"),
                        (tmp_path, "is a directory")):
        assert main(["cycle", str(path)]) == 2
        err = capsys.readouterr().err
        assert words in err and "Traceback" not in err
