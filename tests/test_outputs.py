"""Output paths that are not plain files: links, pipes, devices, sockets, /dev/stdout.

A regular file (or a new path) is written atomically; renaming over anything else would
replace it with a file (a root run once turned /dev/null into one). These tests never
touch the machine's own devices: they make their own nodes in tmp_path.
"""

from __future__ import annotations

import os
import shlex
import socket
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.conftest import DATA, MLIRHLO, REPO, assert_mentions, assert_one_line_error


@pytest.fixture(scope="module")
def mlir_file(add_mlir_file) -> Path:
    return add_mlir_file


def one_line_error(proc: subprocess.CompletedProcess, contains: str = "") -> str:
    err = proc.stderr.decode(errors="replace")
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert proc.returncode == 2, (proc.returncode, err)
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert contains in lines[0], lines[0]
    assert proc.stdout == b""
    return lines[0]


SOFTMAX = DATA / "softmax.vhlo"


def _opt(cli, out):
    return cli("opt", SOFTMAX, "--no-cache", "-o", out)


def _expected(cli, tmp_path) -> bytes:
    r = _opt(cli, tmp_path / "plain.mlir")
    assert r.code == 0, r.err
    data = (tmp_path / "plain.mlir").read_bytes()
    assert b"stablehlo.divide" in data
    return data


# Direct tests of outputs.py's contract (no compile): modes, parents, failures, descriptor
# paths, standard output and the cache's recorder.


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    yield
    os.umask(old)


def test_output_under_a_regular_file_is_refused_by_name(cli, mlir_file, tmp_path):
    # check_output_path walks up to the first existing ancestor: here a file, not a directory.
    blocker = tmp_path / "blocker"
    blocker.write_text("x")
    r = cli("opt", mlir_file, "-o", blocker / "sub" / "out.mlir")
    assert_one_line_error(r, facts=(f"{blocker} is not a directory",))
    assert blocker.read_text() == "x"


def test_a_failed_rename_is_one_error_and_an_interrupt_stays_one(tmp_path, monkeypatch):
    """write_atomic: an OSError while the file is being put in place (a full disk, a quota)
    becomes a DriverError naming the path, with no temp file left; anything else (Ctrl-C)
    goes on as it is, the temp file removed too."""
    import errno
    import os

    from mlirhlo_driver import outputs
    from mlirhlo_driver.errors import DriverError

    target = tmp_path / "out.mlir"

    def full(*_a, **_k):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(outputs.os, "replace", full)
    with pytest.raises(DriverError) as e:
        outputs.write_atomic(target, "module {}\n")
    assert e.value.file == str(target)
    assert_mentions(e.value.message, "No space left on device")
    assert list(tmp_path.iterdir()) == []

    def interrupted(*_a, **_k):
        raise KeyboardInterrupt

    monkeypatch.setattr(outputs.os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        outputs.write_atomic(target, "module {}\n")
    assert list(tmp_path.iterdir()) == []


def test_write_that_fails_midway_leaves_nothing(tmp_path):
    # A file-size limit (1 KiB, set by the shell: no fork-time hook in this
    # multithreaded process) makes the write fail with EFBIG after the first bytes.
    out = tmp_path / "big.mlir"
    command = " ".join(shlex.quote(str(a)) for a in [*MLIRHLO, "opt", DATA / "mlp_train_step.before_optimizations.txt",
                                                      "-o", out])
    proc = subprocess.run(["bash", "-c", f"ulimit -f 1 && exec {command}"], capture_output=True,
                          timeout=300, cwd=str(REPO))
    one_line_error(proc, f"{out}: cannot write: File too large")
    assert list(tmp_path.iterdir()) == [], "no partial file, no temp file"


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
    assert_one_line_error(r, at=str(path), facts=("No such device or address",))
    assert stat.S_ISSOCK(os.stat(path).st_mode)


def test_a_directory_is_one_error_line(cli, tmp_path):
    assert_one_line_error(_opt(cli, tmp_path), at=str(tmp_path), facts=("is a directory", "file name"))


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
    assert e.value.file == str(tmp_path / "out.mlir")
    assert_mentions(e.value.message, "No space left on device")
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


def test_a_new_file_gets_the_mode_a_plain_open_would(tmp_path, umask_022):
    """0666 less the umask (mkstemp's 0600 is not kept): 0644 under umask 022, 0666 under 0."""
    from mlirhlo_driver import outputs

    outputs.write_atomic(tmp_path / "out.txt", "x")
    assert stat.S_IMODE(os.stat(tmp_path / "out.txt").st_mode) == 0o644
    os.umask(0)
    outputs.write_atomic(tmp_path / "open.txt", b"x")
    assert stat.S_IMODE(os.stat(tmp_path / "open.txt").st_mode) == 0o666
    assert (tmp_path / "out.txt").read_bytes() == b"x" and sorted(p.name for p in tmp_path.iterdir()) == [
        "open.txt", "out.txt"]


def test_missing_parent_directories_are_made(tmp_path):
    """An output under folders that do not exist yet: they are made, the file written."""
    from mlirhlo_driver import outputs

    out = tmp_path / "a" / "b" / "out.mlir"
    outputs.check_output_path(out)
    outputs.write_atomic(out, "text")
    assert out.read_text() == "text" and os.listdir(out.parent) == ["out.mlir"]
    outputs.write_atomic(out, "again")  # the folders exist now: no error
    assert out.read_text() == "again"


def test_a_file_in_the_way_of_a_parent_is_refused_before_any_work(tmp_path):
    """A path under a regular file: the error names the file that is not a directory, however
    deep the missing folders below it go."""
    from mlirhlo_driver import outputs
    from mlirhlo_driver.errors import DriverError

    blocker = tmp_path / "file"
    blocker.write_text("x")
    for out in (blocker / "out.mlir", blocker / "a" / "b" / "out.mlir"):
        with pytest.raises(DriverError) as e:
            outputs.write_atomic(out, "x")
        assert e.value.file == str(out)
        assert_mentions(e.value.message, f"{blocker} is not a directory")
    assert blocker.read_text() == "x"
    with pytest.raises(DriverError) as e:
        outputs.check_output_path(tmp_path)
    assert e.value.file == str(tmp_path)
    assert_mentions(e.value.message, "is a directory")
    outputs.check_output_path(tmp_path / "new" / "deeper" / "out.mlir")  # nothing in the way: fine
    outputs.check_output_path("relative-out.mlir")


@pytest.mark.golden
@pytest.mark.parametrize("where, line", [
    ("file/out.mlir", "error: {out}: cannot write: {tmp}/file is not a directory"),
    ("file/a/b/out.mlir", "error: {out}: cannot write: {tmp}/file is not a directory"),
    ("", "error: {out}: is a directory; expected an output file name"),
    ("loop", "error: {out}: cannot write: Too many levels of symbolic links"),
    (None, "error: refusing to write binary output to a terminal (use -o FILE)"),
])
def test_output_refusals_exactly(tmp_path, monkeypatch, where, line):
    """Golden: an output that cannot be written where it was asked for (None: binary to a terminal)."""
    from mlirhlo_driver import outputs
    from mlirhlo_driver.errors import DriverError

    (tmp_path / "file").write_text("x")
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    out = tmp_path / where if where else tmp_path
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    with pytest.raises(DriverError) as e:
        if where is None:
            outputs.write_stdout(b"\x00")
        else:
            outputs.write_atomic(out, "x")
    assert e.value.format() == line.format(out=out, tmp=tmp_path)


def test_a_symlink_loop_is_one_error_naming_the_path(tmp_path):
    """os.stat fails on a link loop: DriverError with the OS's reason, nothing written."""
    from mlirhlo_driver import outputs
    from mlirhlo_driver.errors import DriverError

    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    with pytest.raises(DriverError) as e:
        outputs.write_atomic(loop, "x")
    assert e.value.file == str(loop)
    assert_mentions(e.value.message, "Too many levels of symbolic links")
    assert os.listdir(tmp_path) == ["loop"]


def test_a_failed_rename_leaves_no_temp_file(tmp_path, monkeypatch):
    """The rename fails: DriverError with the reason; an interrupt is passed on as it is; either
    way the temp file is gone and the old file is untouched."""
    import errno

    from mlirhlo_driver import outputs
    from mlirhlo_driver.errors import DriverError

    out = tmp_path / "out.txt"
    out.write_text("old")

    def fail(*_a):
        raise OSError(errno.EXDEV, os.strerror(errno.EXDEV))

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(DriverError) as e:
        outputs.write_atomic(out, "new")
    assert e.value.file == str(out)
    assert_mentions(e.value.message, "Invalid cross-device link")
    assert os.listdir(tmp_path) == ["out.txt"] and out.read_text() == "old"

    def interrupt(*_a):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", interrupt)
    with pytest.raises(KeyboardInterrupt):
        outputs.write_atomic(out, "new")
    assert os.listdir(tmp_path) == ["out.txt"] and out.read_text() == "old"


@pytest.mark.parametrize("path, named", [
    ("/dev/stdout", True), ("/dev/stderr", True), ("/dev/fd/1", True), ("/dev/fd/12", True),
    ("/proc/self/fd/1", True), ("/proc/thread-self/fd/2", True), ("/proc/4242/fd/7", True),
    ("/dev/stdin2", False), ("/dev/fd/x", False), ("/dev/fd/1/x", False), ("/proc/self/fd", False),
    ("/proc/abc/fd/1", False), ("/dev/null", False), ("/tmp/dev/stdout", False)])
def test_descriptor_paths_are_recognised_by_name(path, named):
    """Which paths name an open descriptor: /dev/std{out,err}, /dev/fd/N, /proc/{self,thread-self,PID}/fd/N."""
    from pathlib import Path

    from mlirhlo_driver import outputs

    assert outputs._names_a_descriptor(Path(path)) is named


def test_links_to_a_descriptor_path_are_followed_as_the_kernel_would(tmp_path):
    """A chain of links (relative ones too) to /proc/self/fd/1 names a descriptor; a chain
    longer than the kernel's 40 links does not, nor does a link loop."""
    from mlirhlo_driver import outputs

    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "to_fd").symlink_to("/proc/self/fd/1")
    (tmp_path / "rel").symlink_to("d/to_fd")
    assert outputs._names_a_descriptor(tmp_path / "rel") is True
    assert outputs._names_a_descriptor(tmp_path / "d" / "plain") is False

    def chain(n: int, name: str):
        (tmp_path / f"{name}{n}").symlink_to("/dev/stdout")
        for i in range(n - 1, 0, -1):
            (tmp_path / f"{name}{i}").symlink_to(tmp_path / f"{name}{i + 1}")
        return tmp_path / f"{name}1"

    assert outputs._names_a_descriptor(chain(39, "short")) is True   # 39 links, then the name: 40 looks
    assert outputs._names_a_descriptor(chain(40, "long")) is False   # the name would be the 41st
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    assert outputs._names_a_descriptor(tmp_path / "a") is False


def test_a_descriptor_path_on_a_file_appends_to_it(tmp_path):
    """/proc/self/fd/N open on a regular file: written through, appended, never replaced; a
    plain link to the same file is written atomically instead (replaced)."""
    from mlirhlo_driver import outputs

    target = tmp_path / "log.txt"
    target.write_bytes(b"before\n")
    with open(target, "ab") as f:
        ino = os.stat(target).st_ino
        outputs.write_atomic(f"/proc/self/fd/{f.fileno()}", "after\n")
        outputs.write_atomic(f"/dev/fd/{f.fileno()}", b"more\n")
    assert target.read_bytes() == b"before\nafter\nmore\n" and os.stat(target).st_ino == ino
    assert sorted(p.name for p in tmp_path.iterdir()) == ["log.txt"]


def test_the_sink_is_stdout_one_file_or_a_dump_directory(tmp_path, capsys):
    """outputs.Sink, the one writer: outputs to stdout at once, texts joined by '// -----' lines;
    for -o held and written at the end (one as it is, several joined), refused early when the
    path cannot be a file; files under the dump directory, or at a path as given; streamed to a FIFO."""
    from mlirhlo_driver import outputs
    from mlirhlo_driver.errors import DriverError

    out = outputs.Sink()
    out.emit("a")
    out.emit("b\n")
    out.finish()
    assert capsys.readouterr().out == "a\n// -----\nb\n" and out.written == []
    one = outputs.Sink(str(tmp_path / "one.txt"))
    one.emit(b"\x00bytes")
    assert not (tmp_path / "one.txt").exists()  # held until finish
    one.finish()
    assert (tmp_path / "one.txt").read_bytes() == b"\x00bytes" and one.written == [str(tmp_path / "one.txt")]
    several = outputs.Sink(str(tmp_path / "several.txt"))
    several.emit("x")
    several.emit("y")
    several.finish()
    assert (tmp_path / "several.txt").read_text() == "x\n// -----\ny\n"
    (tmp_path / "d").mkdir()
    with pytest.raises(DriverError, match="is a directory"):
        outputs.Sink(str(tmp_path / "d")).check()
    dumps = outputs.Sink(dump_dir=str(tmp_path / "dump"))
    assert dumps.file("m.ptx", "ptx") == str(tmp_path / "dump" / "m.ptx")
    assert dumps.file(tmp_path / "elsewhere.ll", "ll") == str(tmp_path / "elsewhere.ll")
    assert (tmp_path / "dump" / "m.ptx").read_text() == "ptx" and dumps.written[1] == str(tmp_path / "elsewhere.ll")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    streamed = outputs.Sink(str(fifo))
    streamed.emit("through the pipe")
    streamed.finish()
    reader.join(timeout=60)
    assert got == [b"through the pipe"] and fifo.exists() and not fifo.is_file()


@pytest.mark.parametrize("data, printed", [("one", "one\n"), ("one\n", "one\n"), ("", ""),
                                           ("a\nb", "a\nb\n"), ("a\n\n", "a\n\n")])
def test_text_to_stdout_ends_with_exactly_one_newline_added_at_most(capsys, data, printed):
    """Text gets a final newline if it lacks one; nothing is printed for nothing."""
    from mlirhlo_driver import outputs

    outputs.write_stdout(data)
    assert capsys.readouterr().out == printed


def test_binary_to_stdout_is_written_as_is_but_never_to_a_terminal(capfd, monkeypatch):
    """Bytes go to stdout's buffer unchanged; a terminal is refused with a hint to use -o."""
    from mlirhlo_driver import outputs
    from mlirhlo_driver.errors import DriverError

    outputs.write_stdout(b"\x00\x01no newline")
    assert capfd.readouterr().out == "\x00\x01no newline"
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    with pytest.raises(DriverError) as e:
        outputs.write_stdout(b"\x00")
    assert_mentions(e.value.message, "binary", "terminal")
    assert_mentions(e.value.hint, "-o FILE")
    outputs.write_stdout("text is fine on a terminal")
    assert capfd.readouterr().out == "text is fine on a terminal\n"
