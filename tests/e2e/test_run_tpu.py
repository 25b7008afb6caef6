"""``mlirhlo run --platform tpu``: no TPU is attached here, and TPU support is device-less
compiles: one line, exit 2, pointing at them; nothing is run or faked."""

from __future__ import annotations

from tests.conftest import DATA, assert_mentions, assert_one_line_error


def test_run_on_tpu_is_one_line_pointing_at_device_less_compiles(cli):
    r = cli("run", DATA / "tpu" / "matmul_tanh.mlir", "--platform", "tpu")
    assert_mentions(assert_one_line_error(r, code=2), "no TPU is attached", "mlirhlo opt --platform tpu")
