"""execute/runner_files.py: the files XLA's runners read and write (run headers,
ExecutionOptions, output literals).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import assert_mentions

_TWO_BY_TWO = ("device_assignment { replica_count: 2 computation_count: 2 "
               "computation_devices { replica_device_ids: [3, 1] } "
               "computation_devices { replica_device_ids: [2, 0] } }")


def test_header_counts_come_from_the_first_64_kib_header_line(tmp_path):
    """replica_count and num_partitions of the HloModule line (each alone, or neither), found within
    the file's first 64 KiB; a missing file or no header is (None, None)."""
    from mlirhlo_driver.execute.runner_files import header_counts as _header_counts

    def counts(text: str):
        path = tmp_path / "m.hlo"
        path.write_text(text)
        return _header_counts(str(path))

    assert counts("HloModule m, replica_count=2, num_partitions=4\n\nENTRY e {}\n") == (2, 4)
    assert counts("// a comment\nHloModule m, num_partitions=8\nreplica_count=3\n") == (None, 8)
    assert counts("HloModule m, replica_count=16\n") == (16, None)
    assert counts("HloModule m, xreplica_count=2\n") == (None, None)
    assert counts("module @m {}\n") == (None, None)
    header = "HloModule m, replica_count=2\n"  # its count ends at byte 28
    fits = "/" * ((1 << 16) - 29) + "\n"  # the count's last digit is the 65536th byte
    assert counts(fits + header) == (2, None)
    assert counts("/" + fits + header) == (None, None)  # cut short at 64 KiB: no digit left
    assert _header_counts(str(tmp_path / "missing.hlo")) == (None, None)


def test_dump_output_literals_names_each_device_and_literal(tmp_path):
    """XLA's DumpOutput naming: task, device and literal inserted before the last '.' part, each
    file one literal's text; devices in order."""
    from types import SimpleNamespace

    import numpy as np

    from mlirhlo_driver.execute.runner_files import dump_output_literals as _dump_output_literals

    report = SimpleNamespace(device_outputs={
        1: [np.array([1, 2], np.int32)], 0: [np.float32(0.5).reshape(()), np.array([True])]})
    base = tmp_path / "out.v1.txt"
    written = _dump_output_literals(report, str(base), 3)
    names = [str(tmp_path / n) for n in ("out.v1.task_3.device_0.literal_0.txt", "out.v1.task_3.device_0.literal_1.txt",
                                         "out.v1.task_3.device_1.literal_0.txt")]
    assert written == names
    assert [Path(n).read_text() for n in names] == ["f32[] 0.5\n", "pred[1] {true}\n", "s32[2] {1, 2}\n"]


def test_execution_options_device_assignment_and_debug_options():
    """ExecutionOptions' device assignment maps logical device replica * partitions + partition to
    its id (none: empty); one naming a device twice is refused. Its scalar DebugOptions become
    flags (enums by name), less xla_dump_to."""
    from mlirhlo_driver.errors import DriverError
    from mlirhlo_driver.execute.runner_files import device_ids as _device_ids
    from mlirhlo_driver.execute.runner_files import execution_debug_flags as _execution_debug_flags
    from mlirhlo_driver.ir import protos

    def eo(text: str):
        return protos.parse_text(text, "xla.ExecutionOptions")

    two_by_two = eo(_TWO_BY_TWO)
    assert _device_ids(two_by_two, 2, 2, "eo") == (3, 2, 1, 0)
    assert _device_ids(eo("num_replicas: 2"), 2, 1, "eo") == ()
    with pytest.raises(DriverError) as e:
        _device_ids(two_by_two, 2, 1, "eo")
    assert e.value.file == "eo"
    assert_mentions(e.value.message, "device_assignment", "2 replicas x 2 computations", "2 x 1")
    twice = eo("device_assignment { replica_count: 1 computation_count: 2 "
               "computation_devices { replica_device_ids: 1 } computation_devices { replica_device_ids: 1 } }")
    with pytest.raises(DriverError) as e:
        _device_ids(twice, 1, 2, "eo")
    assert e.value.file == "eo"
    assert_mentions(e.value.message, "device_assignment", "twice")
    flags = _execution_debug_flags(eo('debug_options { xla_cpu_enable_fast_math: true xla_dump_to: "d" '
                                      "xla_backend_optimization_level: 2 xla_step_marker_location: "
                                      "STEP_MARK_AT_TOP_LEVEL_WHILE_LOOP }"), "eo")
    assert flags == {"xla_cpu_enable_fast_math": True, "xla_backend_optimization_level": 2,
                     "xla_step_marker_location": "STEP_MARK_AT_TOP_LEVEL_WHILE_LOOP"}


@pytest.mark.golden
@pytest.mark.parametrize("text, replicas, partitions, message", [
    (_TWO_BY_TWO, 2, 1, "error: eo: device_assignment is 2 replicas x 2 computations; the run has 2 x 1"),
    ("device_assignment { replica_count: 1 computation_count: 2 computation_devices { replica_device_ids: 1 } "
     "computation_devices { replica_device_ids: 1 } }", 1, 2, "error: eo: device_assignment names a device twice"),
])
def test_device_assignment_refusals_exactly(text, replicas, partitions, message):
    """An ExecutionOptions' device assignment the run cannot use: the golden of device_ids' errors."""
    from mlirhlo_driver.errors import DriverError
    from mlirhlo_driver.execute.runner_files import device_ids
    from mlirhlo_driver.ir import protos

    with pytest.raises(DriverError) as e:
        device_ids(protos.parse_text(text, "xla.ExecutionOptions"), replicas, partitions, "eo")
    assert e.value.format("params") == message
