"""Output paths that are not plain files: links, pipes, devices, sockets, /dev/stdout.

A regular file (or a new path) is written atomically; renaming over anything else would
replace it with a file (a root run once turned /dev/null into one). These tests never
touch the machine's own devices: they make their own nodes in tmp_path.
"""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
import threading

import pytest
from conftest import DATA, REPO, assert_one_line_error

SOFTMAX = DATA / "softmax.vhlo"


def _opt(cli, out):
    return cli("opt", SOFTMAX, "--no-cache", "-o", out)


def _expected(cli, tmp_path) -> bytes:
    r = _opt(cli, tmp_path / "plain.mlir")
    assert r.code == 0, r.err
    data = (tmp_path / "plain.mlir").read_bytes()
    assert b"stablehlo.divide" in data
    return data


def test_a_symlink_is_kept_and_its_target_written(cli, tmp_path):
    want = _expected(cli, tmp_path)
    (tmp_path / "elsewhere").mkdir()
    target = tmp_path / "elsewhere" / "target.mlir"
    target.write_text("old")
    link = tmp_path / "link.mlir"
    link.symlink_to(target)
    r = _opt(cli, link)
    assert r.code == 0, r.err
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_bytes() == want
    # Written atomically in the target's directory: no temp file left in either.
    assert sorted(p.name for p in (tmp_path / "elsewhere").iterdir()) == ["target.mlir"]


def test_a_dangling_symlink_creates_its_target(cli, tmp_path):
    want = _expected(cli, tmp_path)
    link = tmp_path / "link.mlir"
    link.symlink_to(tmp_path / "new.mlir")
    assert _opt(cli, link).code == 0
    assert link.is_symlink() and (tmp_path / "new.mlir").read_bytes() == want


def test_a_fifo_is_streamed_to_its_reader(cli, tmp_path):
    want = _expected(cli, tmp_path)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    r = _opt(cli, fifo)
    reader.join(timeout=60)
    assert r.code == 0, r.err
    assert not reader.is_alive() and got == [want]
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


@pytest.mark.skipif(os.geteuid() != 0, reason="making a device node needs root")
def test_a_character_device_stays_a_device(cli, tmp_path):
    node = tmp_path / "null"
    os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # our own node for the null device
    r = _opt(cli, node)
    assert r.code == 0, r.err
    assert stat.S_ISCHR(os.stat(node).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["null"]  # no temp file beside it


@pytest.mark.parametrize("stdout_to", ["pipe", "file"])
def test_a_descriptor_path_writes_to_the_descriptor(tmp_path, stdout_to):
    """``-o /dev/stdout``: the bytes go where stdout goes (a pipe, or a file the shell
    redirected it to), and no link or file is replaced. The path is a link of our own to
    /proc/self/fd/1, as /dev/stdout is: a regression must not replace the machine's."""
    link = tmp_path / "stdout"
    link.symlink_to("/proc/self/fd/1")
    argv = [sys.executable, "-m", "mlirhlo_driver", "opt", str(SOFTMAX), "--no-cache", "-o", str(link)]
    if stdout_to == "pipe":
        proc = subprocess.run(argv, capture_output=True, timeout=300, cwd=str(REPO))
        out = proc.stdout
    else:
        target = tmp_path / "redirected.txt"
        with open(target, "wb") as f:
            f.write(b"before\n")
            f.flush()
            proc = subprocess.run(argv, stdout=f, stderr=subprocess.PIPE, timeout=300, cwd=str(REPO))
        out = target.read_bytes()
        assert out.startswith(b"before\n")  # appended, as a shell's >> or a later write would be
    assert proc.returncode == 0, proc.stderr
    assert b"stablehlo.divide" in out
    assert link.is_symlink() and sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["stdout"] + (["redirected.txt"] if stdout_to == "file" else []))


def test_a_socket_is_one_error_line(cli, tmp_path):
    path = tmp_path / "sock"
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(path))
        r = _opt(cli, path)
    assert_one_line_error(r, contains=f"error: {path}: cannot write: No such device or address")
    assert stat.S_ISSOCK(os.stat(path).st_mode)


def test_a_directory_is_one_error_line(cli, tmp_path):
    assert_one_line_error(_opt(cli, tmp_path),
                          contains=f"error: {tmp_path}: is a directory; expected an output file name")


def test_no_room_for_the_temp_file_is_the_oss_reason(tmp_path, monkeypatch):
    """The temp file cannot be made (a full disk): the OS's reason, without errno's decoration,
    and nothing written."""
    import errno
    import tempfile

    from mlirhlo_driver import outputs
    from mlirhlo_driver.errors import DriverError

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(tempfile, "mkstemp", full)
    with pytest.raises(DriverError) as e:
        outputs.write_atomic(tmp_path / "out.mlir", "x")
    assert (e.value.file, e.value.message) == (str(tmp_path / "out.mlir"), "cannot write: No space left on device")
    assert list(tmp_path.iterdir()) == []


def test_a_regular_file_is_replaced_atomically(cli, tmp_path):
    want = _expected(cli, tmp_path)
    out = tmp_path / "out.mlir"
    out.write_text("old")
    before = os.stat(out).st_ino
    assert _opt(cli, out).code == 0
    assert out.read_bytes() == want and os.stat(out).st_ino != before  # renamed into place


def test_dump_numbers_share_one_width_so_names_sort_in_order():
    from mlirhlo_driver import outputs

    assert [outputs.dump_number(i, 10) for i in (0, 9)] == ["000", "009"]
    assert [outputs.dump_number(i, 1000) for i in (0, 999)] == ["000", "999"]
    assert [outputs.dump_number(i, 1001) for i in (0, 7, 1000)] == ["0000", "0007", "1000"]
    names = [outputs.dump_number(i, 12345) for i in range(12345)]
    assert sorted(names) == names and {len(n) for n in names} == {5}
