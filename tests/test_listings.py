"""The listing texts (listings.py): the stage table, the pass catalogue and the GPU spec
table, exactly as every front-end prints them."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest

from mlirhlo_driver import installed, listings, registry, resources, targets
from mlirhlo_driver.cuda import specs as gpu_specs
from mlirhlo_driver.cuda import tools as cuda_tools

PLUGIN = textwrap.dedent('''
    import mlirhlo_driver


    @mlirhlo_driver.register_pass("aa-listed-pass", anchor="builtin.module", description="a pass for the listing")
    def listed(module_op):
        pass
''')

PTXAS = cuda_tools.Ptxas("/cuda/bin/ptxas", (12, 9, 86),
                         ("sm_50", "sm_60", "sm_70", "sm_80", "sm_86", "sm_90", "sm_90a"), "pip")
OLD_PTXAS = cuda_tools.Ptxas("/old/bin/ptxas", (11, 8, 89), ("sm_50", "sm_90"), "PATH")

SPEC_TABLE = """\
name                gpu                    cc     target   SMs  memory   bandwidth  ptxas
a10                 NVIDIA A10             8.6    sm_86    72   22 GiB   600 GB/s   ok
a100_pcie_80        NVIDIA A100 80GB PCIe  8.0    sm_80    108  79 GiB   1935 GB/s  ok
a100_sxm_40         NVIDIA A100-SXM4-40GB  8.0    sm_80    108  39 GiB   1555 GB/s  ok
a100_sxm_80         NVIDIA A100-SXM4-80GB  8.0    sm_80    108  79 GiB   2039 GB/s  ok
b200                NVIDIA B200            10.0a  sm_100a  148  178 GiB  7700 GB/s  no
h100_pcie           NVIDIA H100 PCIe       9.0a   sm_90a   114  79 GiB   2000 GB/s  ok
h100_sxm (default)  NVIDIA H100 80GB HBM3  9.0a   sm_90a   132  79 GiB   3350 GB/s  ok
h200                NVIDIA H200            9.0a   sm_90a   132  141 GiB  4800 GB/s  ok
l4                  NVIDIA L4              8.9    sm_89    58   22 GiB   300 GB/s   no
p100                Tesla P100-SXM2-16GB   6.0    sm_60    56   16 GiB   732 GB/s   ok
t4                  Tesla T4               7.5    sm_75    40   15 GiB   320 GB/s   no
v100                Tesla V100-SXM2-16GB   7.0    sm_70    80   16 GiB   900 GB/s   ok
ptxas: 12.9.86 /cuda/bin/ptxas (pip; targets sm_50..sm_90a)
  not used: 11.8.89 /old/bin/ptxas (PATH; targets sm_50..sm_90)
"""


@pytest.mark.parametrize("platform", [None, "cpu", "cuda"])
def test_stage_table_columns_are_padded_to_the_longest_entry(platform):
    """One row per stage: name and '.ext' padded to their longest, the level to 4, two
    spaces between columns, then the description."""
    stages = registry.available(platform)
    width = max(len(s.name) for s in stages)
    ext_width = max(len(s.ext) for s in stages) + 1
    want = "".join(f"{s.name.ljust(width)}  {('.' + s.ext).ljust(ext_width)}  {s.level.ljust(4)}  {s.description}\n"
                   for s in stages)
    assert listings.stage_table(platform) == want
    rows = want.splitlines()
    # The longest name and the longest extension are each followed by exactly two spaces.
    assert any(r.startswith(max((s.name for s in stages), key=len) + "  .") for r in rows)
    longest_ext = "." + max((s.ext for s in stages), key=len)
    assert any(f"  {longest_ext}  {s.level.ljust(4)}  " in r for r in rows for s in stages)


def test_stage_table_golden_without_a_platform():
    """The MLIR-level stages, exactly."""
    assert listings.stage_table(None) == (
        "stablehlo                 .stablehlo.mlir            mlir  StableHLO after the pass pipeline "
        "(the default stage)\n"
        "stablehlo-bytecode        .stablehlo.mlirbc          mlir  the same module as MLIR bytecode\n"
        "vhlo                      .vhlo                      mlir  StableHLO portable artifact "
        "(VHLO bytecode; --target-version)\n"
        "mhlo                      .mhlo.mlir                 mlir  the module legalized to MHLO\n"
        "hlo-before-optimizations  .before_optimizations.txt  mlir  HLO text of the module as XLA receives it\n")


@pytest.fixture(scope="module")
def catalog_with_plugin(tmp_path_factory):
    """The pass catalogue with a plugin pass loaded, and the catalogue after it is unloaded."""
    from mlirhlo_driver.mlir import passes

    path = tmp_path_factory.mktemp("plugin") / "listed.py"
    path.write_text(PLUGIN)
    listings.load_plugins([str(path)])
    try:
        with_plugin, catalog = listings.pass_catalog(), dict(passes.all_passes())
    finally:
        listings.load_plugins(None)
    return with_plugin, catalog, listings.pass_catalog()


def test_pass_catalog_sections_count_and_align_their_passes(catalog_with_plugin):
    """Native passes, then Python passes (a loaded plugin's among them), each counted in its
    header, sorted, with the anchor at one column; then the named pipelines."""
    from mlirhlo_driver.mlir import pipeline

    text, catalog, _ = catalog_with_plugin
    width = max(len(n) for n in catalog)
    native = sorted(p.name for p in catalog.values() if p.origin != "python")
    written = sorted(p.name for p in catalog.values() if p.origin == "python")
    assert "aa-listed-pass" in written and "aa-listed-pass" not in native and "canonicalize" in native
    assert text.endswith("\n") and not text.endswith("\n\n")
    lines = text.split("\n")[:-1]
    assert lines[0] == f"# {len(native)} passes accepted by the installed jaxlib (name, anchor, description)"
    py_header = lines.index(f"# {len(written)} passes written in Python (built in, plugins, entry points)")
    assert lines[py_header - 1] == "" and [ln.split()[0] for ln in lines[1:py_header - 1]] == native
    pipe_header = lines.index("# named pipelines (--pipeline @NAME)")
    assert lines[pipe_header - 1] == ""
    assert [ln.split()[0] for ln in lines[py_header + 1:pipe_header - 1]] == written
    assert f"{'aa-listed-pass':<{width}}  {'builtin.module':<15} a pass for the listing" in lines
    assert f"{'canonicalize':<{width}}  {'any':<15} Canonicalize operations" \
           " (folding and canonicalization patterns)" in lines
    named = pipeline.named_pipelines()
    assert lines[pipe_header + 1:] == [ln for p in named for ln in
                                       (f"@{p.name}".ljust(width) + f"  {p.summary}", " " * width + f"  {p.spec}")]
    assert lines[pipe_header + 1].index(named[0].summary) == width + 2


def test_load_plugins_none_unloads_the_plugins_loaded_before(catalog_with_plugin):
    """load_plugins(None): no plugin file, so the earlier plugin's pass is gone again."""
    text, _, after = catalog_with_plugin
    assert "aa-listed-pass" in text and "aa-listed-pass" not in after
    written = [ln for ln in after.split("\n") if ln.endswith("passes written in Python (built in, plugins, entry points)")]
    count = int(written[0].split()[1])
    assert f"# {count + 1} passes written in Python" in text


def test_spec_table_golden_with_a_ptxas_in_use(monkeypatch):
    """The shipped specs, the default marked, memory in GiB, bandwidth in GB/s, 'ok' where the
    ptxas in use can target the spec; that ptxas and the others found below."""
    monkeypatch.setattr(targets, "ptxas_in_use", lambda: (PTXAS, [OLD_PTXAS], ""))
    assert listings.spec_table() == SPEC_TABLE


def test_spec_table_json_gives_each_spec_with_its_ptxas_verdict(monkeypatch):
    """--json: one object per spec, its fields and the ptxas in use (null when none)."""
    specs = gpu_specs.list_specs()
    monkeypatch.setattr(targets, "ptxas_in_use", lambda: (PTXAS, [OLD_PTXAS], ""))
    text = listings.spec_table(as_json=True)
    assert text.endswith("]\n") and text.startswith('[\n  {\n    "name": ')
    rows = json.loads(text)
    assert rows == [{**s.to_dict(), "ptxas": {"path": "/cuda/bin/ptxas", "version": "12.9.86", "source": "pip",
                                               "can_target": s.sm in PTXAS.archs}} for s in specs]
    assert {r["name"]: r["ptxas"]["can_target"] for r in rows}["b200"] is False
    assert {r["name"]: r["ptxas"]["can_target"] for r in rows}["v100"] is True
    monkeypatch.setattr(targets, "ptxas_in_use", lambda: (None, [OLD_PTXAS], "none here"))
    assert json.loads(listings.spec_table(as_json=True)) == [{**s.to_dict(), "ptxas": None} for s in specs]


# ---------------------------------- what the listings read: entry points, data folders


def _dist_with_entry_points(site, version: str, entry_points: str):
    info = site / f"aa_listed-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: aa-listed\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(entry_points)
    return info


def test_entry_points_of_a_group_are_sorted_with_their_versions(private_site):
    """installed.entry_points: (name, value, version) of the group's entry points, sorted by
    name; an edit of entry_points.txt in place is seen (the record is keyed on it)."""
    info = _dist_with_entry_points(private_site, "1.5", "[aa.listed]\nzeta = pkg.z:run\nalpha = pkg.a\n\n"
                                                         "[other.group]\nbeta = pkg.b\n")
    assert installed.entry_points("aa.listed") == (("alpha", "pkg.a", "1.5"), ("zeta", "pkg.z:run", "1.5"))
    assert installed.entry_points("aa.listed") == (("alpha", "pkg.a", "1.5"), ("zeta", "pkg.z:run", "1.5"))
    assert installed.entry_points("aa.no.such.group") == ()
    (info / "entry_points.txt").write_text("[aa.listed]\nalpha = pkg.a\n")
    assert installed.entry_points("aa.listed") == (("alpha", "pkg.a", "1.5"),)
    assert installed.versions(("aa-listed", "aa-not-installed")) == {"aa-listed": "1.5", "aa-not-installed": None}


def test_the_record_holds_the_newest_variants_only(private_site, tmp_path):
    """One record file per interpreter under the cache folder; it keeps at most _VARIANTS (16)
    variants, newest first; a request scanned again on the same sys.path replaces its variant."""
    import sys
    import zlib

    assert installed._VARIANTS == 16
    record = tmp_path / "xdg" / "mlirhlo-driver" / f"installed-{zlib.crc32(sys.executable.encode()):08x}.json"
    requests = [("versions", f"aa-dist-{i}") for i in range(18)]
    for request in requests:
        installed._facts(request)
    variants = json.loads(record.read_text())["variants"]
    assert [tuple(v["request"]) for v in variants] == requests[::-1][:16]
    _dist_with_entry_points(private_site, "1.0", "")  # an install: request 10 is scanned again
    assert installed._facts(requests[10])["versions"] == {"aa-dist-10": None}
    variants = json.loads(record.read_text())["variants"]
    assert len(variants) == 16 and tuple(variants[0]["request"]) == requests[10]
    assert [tuple(v["request"]) for v in variants].count(requests[10]) == 1
    assert sorted(p.name for p in record.parent.iterdir()) == [record.name]  # no temp file left


def test_a_sys_path_entry_is_stamped_by_its_distributions_or_its_size_and_time(tmp_path):
    """A folder: its metadata folders by name (other files do not count); a zip: size and
    mtime; a missing entry: None."""
    folder = tmp_path / "site"
    folder.mkdir()
    for name in ("b-1.0.dist-info", "a-2.0.egg-info", "c.egg-link", "module.py", "pkg", "d.dist-info.bak"):
        (folder / name).mkdir() if "." not in name or name.endswith("info") else (folder / name).write_text("")
    assert installed._entry_stamp(str(folder)) == ["a-2.0.egg-info", "b-1.0.dist-info", "c.egg-link"]
    archive = tmp_path / "site.zip"
    archive.write_bytes(b"PK\x05\x06" + bytes(18))
    st = os.stat(archive)
    assert installed._entry_stamp(str(archive)) == [22, st.st_mtime_ns]
    assert installed._entry_stamp(str(tmp_path / "missing")) is None
    assert installed._stat(str(tmp_path / "missing")) is None


def test_the_cache_folder_follows_xdg_cache_home(monkeypatch, tmp_path):
    """$XDG_CACHE_HOME/mlirhlo-driver, ~/.cache/mlirhlo-driver without it (or when empty),
    and a name in it."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert resources.cache_dir() == tmp_path / "xdg" / "mlirhlo-driver"
    assert resources.cache_dir("ptxas-probe.json") == tmp_path / "xdg" / "mlirhlo-driver" / "ptxas-probe.json"
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for unset in (True, False):
        if unset:
            monkeypatch.delenv("XDG_CACHE_HOME")
        else:
            monkeypatch.setenv("XDG_CACHE_HOME", "")
        assert resources.cache_dir() == tmp_path / "home" / ".cache" / "mlirhlo-driver"
        assert resources.cache_dir("") == tmp_path / "home" / ".cache" / "mlirhlo-driver"


def test_data_folders_are_the_packages_own_on_a_file_system():
    """A checkout or a wheel on disk: the data folder itself, no copy (in the checkout, at the
    repository's root)."""
    import mlirhlo_driver.gpu_specs

    assert resources.data_dir("gpu_specs") == Path(mlirhlo_driver.gpu_specs.__file__).parent
    assert resources.data_dir("gpu_specs") == Path(resources.__file__).parent.parent / "gpu_specs"
    assert (resources.data_dir("gpu_specs") / "h100_sxm.txtpb").is_file()


def test_a_zipped_data_folder_is_copied_out_file_by_file(tmp_path):
    """A zipped install: the folder's files copied to a temporary folder of that name (its
    subfolders are not data); a folder missing from the zip gives an empty folder."""
    import zipfile

    archive = tmp_path / "pkg.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("mlirhlo_driver/gpu_specs/a.txtpb", "spec a\n")
        z.writestr("mlirhlo_driver/gpu_specs/b.txtpb", b"\x00spec b")
        z.writestr("mlirhlo_driver/gpu_specs/sub/c.txtpb", "nested\n")
    root = zipfile.Path(archive, "mlirhlo_driver/")
    out = resources._extracted(root / "gpu_specs", "gpu_specs")
    assert out.name == "gpu_specs" and out.parent.name.startswith("mlirhlo-driver-")
    assert sorted(p.name for p in out.iterdir()) == ["a.txtpb", "b.txtpb"]
    assert (out / "a.txtpb").read_text() == "spec a\n" and (out / "b.txtpb").read_bytes() == b"\x00spec b"
    empty = resources._extracted(root / "pipelines", "pipelines")
    assert empty.is_dir() and list(empty.iterdir()) == [] and empty.parent != out.parent


def test_data_dir_copies_a_folder_that_is_not_on_the_file_system(tmp_path, monkeypatch):
    """data_dir: a package inside a zip (no Path) gives the copied-out folder."""
    import zipfile

    archive = tmp_path / "pkg.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("mlirhlo_driver/pipelines/p.txt", "pipeline\n")
    monkeypatch.setattr(resources.resources, "files",
                        lambda package: zipfile.Path(archive, package.replace(".", "/") + "/"))
    got = resources.data_dir.__wrapped__("pipelines")  # past the per-process memo
    assert got.name == "pipelines" and (got / "p.txt").read_text() == "pipeline\n"


def test_a_copied_out_folder_is_removed_at_exit_even_if_already_gone(tmp_path):
    """The temporary copy goes when the process ends; one removed meanwhile is no error."""
    import subprocess
    import sys

    code = textwrap.dedent(f"""
        import shutil, sys, zipfile
        from mlirhlo_driver import resources
        with zipfile.ZipFile({str(tmp_path / "pkg.zip")!r}, "w") as z:
            z.writestr("pkg/gpu_specs/a.txtpb", "a")
        out = resources._extracted(zipfile.Path({str(tmp_path / "pkg.zip")!r}, "pkg/gpu_specs/"), "gpu_specs")
        print(out)
        if sys.argv[1] == "gone":
            shutil.rmtree(out.parent)
    """)
    for how in ("kept", "gone"):
        proc = subprocess.run([sys.executable, "-c", code, how], capture_output=True, text=True, timeout=120,
                              cwd=str(Path(resources.__file__).parent.parent))
        assert proc.returncode == 0 and proc.stderr == "", proc.stderr
        out = Path(proc.stdout.strip())
        assert out.name == "gpu_specs" and not out.parent.exists()
