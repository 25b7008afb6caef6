"""tpu/chips.py: the TPU chips on the PCI bus, read from sysfs without libtpu or jax."""

from __future__ import annotations

from mlirhlo_driver.tpu import chips


def _bus(root, devices, opened=None):
    """A sysfs PCI folder under root/sys and a /dev under root/dev: each chip in its own vfio
    group, whose /dev/vfio node exists for the first ``opened`` (default: all)."""
    for i, (addr, vendor, device) in enumerate(devices):
        d = root / "sys" / addr
        d.mkdir(parents=True)
        (d / "vendor").write_text(vendor + "\n")
        (d / "device").write_text(device + "\n")
        group = root / "groups" / str(i)
        group.mkdir(parents=True)
        (d / "iommu_group").symlink_to(group)
        if opened is None or i < opened:
            (root / "dev" / "vfio").mkdir(parents=True, exist_ok=True)
            (root / "dev" / "vfio" / str(i)).write_text("")
    return str(root / "sys"), str(root / "dev")


def test_a_v5e_chip_is_the_v5e_1x1_slice(tmp_path):
    root = _bus(tmp_path, [("0000:00:04.0", "0x1ae0", "0x0063"), ("0000:00:04.1", "0x1ae0", "0x0063"),
                           ("0000:00:05.0", "0x8086", "0x0063")])
    found = chips.attached(*root)
    assert found == chips.Chips("v5e", 1)  # function .1 and another vendor's device are not chips
    assert found.topology().name == "v5e:1x1"


def test_four_chips_make_cloud_tpus_slices(tmp_path):
    four = _bus(tmp_path / "a", [(f"0000:00:0{i}.0", "0x1ae0", "0x0063") for i in range(4)])
    assert chips.attached(*four).topology().name == "v5e:2x2"
    v5p = _bus(tmp_path / "b", [(f"0000:00:0{i}.0", "0x1ae0", "0x0062") for i in range(4)])
    assert chips.attached(*v5p).topology().name == "v5p:2x2x1"


def test_no_google_device_is_no_chip(tmp_path):
    assert chips.attached(*_bus(tmp_path, [("0000:00:01.0", "0x10de", "0x2330")])) is None
    assert chips.attached(str(tmp_path / "absent")) is None


def test_only_the_chips_lent_here_count(tmp_path, monkeypatch):
    # measured on a lent v5e: a v5litepod-4's four chips on the bus, one vfio group open
    four = [(f"0000:00:0{8 + i}.0", "0x1ae0", "0x0063") for i in range(4)]
    assert chips.attached(*_bus(tmp_path / "a", four, opened=1)) == chips.Chips("v5e", 1)
    assert chips.attached(*_bus(tmp_path / "b", four, opened=0)) is None
    monkeypatch.setenv("TPU_VISIBLE_CHIPS", "0,1")
    assert chips.attached(*_bus(tmp_path / "c", four)) == chips.Chips("v5e", 2)


def test_a_chip_behind_the_accel_driver_counts_where_its_node_exists(tmp_path):
    sys_dir = tmp_path / "sys" / "0000:00:04.0"
    (sys_dir / "accel" / "accel0").mkdir(parents=True)
    (sys_dir / "vendor").write_text("0x1ae0\n")
    (sys_dir / "device").write_text("0x005e\n")
    (tmp_path / "dev").mkdir()
    assert chips.attached(str(tmp_path / "sys"), str(tmp_path / "dev")) is None
    (tmp_path / "dev" / "accel0").write_text("")
    chips.attached.cache_clear()
    assert chips.attached(str(tmp_path / "sys"), str(tmp_path / "dev")) == chips.Chips("v4", 1)
