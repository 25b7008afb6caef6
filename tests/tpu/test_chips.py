"""tpu/chips.py: the TPU chips on the PCI bus, read from sysfs without libtpu or jax."""

from __future__ import annotations

from mlirhlo_driver.tpu import chips


def _bus(root, devices):
    for addr, vendor, device in devices:
        d = root / addr
        d.mkdir(parents=True)
        (d / "vendor").write_text(vendor + "\n")
        (d / "device").write_text(device + "\n")
    return str(root)


def test_a_v5e_chip_is_the_v5e_1x1_slice(tmp_path):
    root = _bus(tmp_path, [("0000:00:04.0", "0x1ae0", "0x0063"), ("0000:00:04.1", "0x1ae0", "0x0063"),
                           ("0000:00:05.0", "0x8086", "0x0063")])
    found = chips.attached(root)
    assert found == chips.Chips("v5e", 1)  # function .1 and another vendor's device are not chips
    assert found.topology().name == "v5e:1x1"


def test_four_chips_make_cloud_tpus_slices(tmp_path):
    four = _bus(tmp_path / "a", [(f"0000:00:0{i}.0", "0x1ae0", "0x0063") for i in range(4)])
    assert chips.attached(four).topology().name == "v5e:2x2"
    v5p = _bus(tmp_path / "b", [(f"0000:00:0{i}.0", "0x1ae0", "0x0062") for i in range(4)])
    assert chips.attached(v5p).topology().name == "v5p:2x2x1"


def test_no_google_device_is_no_chip(tmp_path):
    assert chips.attached(_bus(tmp_path, [("0000:00:01.0", "0x10de", "0x2330")])) is None
    assert chips.attached(str(tmp_path / "absent")) is None
