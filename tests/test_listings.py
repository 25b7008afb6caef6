"""The listing texts (listings.py): the stage table, the pass catalogue and the GPU spec
table, exactly as every front-end prints them."""

from __future__ import annotations

import json
import textwrap

import pytest

from mlirhlo_driver import listings, registry, targets
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
gb200               NVIDIA GB200           10.0a  sm_100a  152  184 GiB  7928 GB/s  no
gb300               NVIDIA GB300           10.3a  sm_103a  152  277 GiB  7928 GB/s  no
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


@pytest.fixture(scope="module")
def catalog_with_plugin(tmp_path_factory):
    """The pass catalogue with a plugin's pass set, and the catalogue without one (after it)."""
    from mlirhlo_driver.mlir import passes

    path = tmp_path_factory.mktemp("plugin") / "listed.py"
    path.write_text(PLUGIN)
    loaded = listings.load_plugins([str(path)])
    with_plugin, catalog = listings.pass_catalog(loaded), dict(passes.all_passes(loaded))
    return with_plugin, catalog, listings.pass_catalog(listings.load_plugins(None))


def test_version_text_lists_every_tool_one_per_line(fake_versions):
    """--version: the driver, jax lines, the ptxas in use (version, path, where from), the CUDA tools, llvmlite."""
    from mlirhlo_driver import __version__
    from mlirhlo_driver.listings import version_text

    assert version_text() == (f"mlirhlo-driver {__version__}\njax 0.1\njaxlib 0.1\n"
                              "libtpu 0.2 (the driver's copy, /tpu)\n"
                              "ptxas 12.8.93 /cuda/bin/ptxas (nvidia-cuda-nvcc)\n"
                              "libdevice for /cuda/bin/ptxas\nnvdisasm none\nllvmlite 0.44.0\n")


def test_version_text_without_ptxas_or_llvmlite(fake_versions):
    """No usable ptxas: why; llvmlite missing: said so, not a crash."""
    from mlirhlo_driver import __version__
    from mlirhlo_driver.listings import version_text

    fake_versions.update(ptxas=None, llvmlite=None)
    assert version_text() == (f"mlirhlo-driver {__version__}\njax 0.1\njaxlib 0.1\n"
                              "libtpu 0.2 (the driver's copy, /tpu)\n"
                              "ptxas none usable: no CUDA found\nlibdevice for None\nnvdisasm none\n"
                              "llvmlite not installed\n")


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


def test_a_catalogue_without_the_plugins_lists_none_of_their_passes(catalog_with_plugin):
    """load_plugins(None): no plugin file, so a catalogue made after one with a plugin lists the
    built-in and installed passes only."""
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


def test_the_spec_table_names_the_ptxas_in_use_or_why_there_is_none(monkeypatch):
    from types import SimpleNamespace

    from mlirhlo_driver import listings, targets

    monkeypatch.setattr(targets, "ptxas_in_use", lambda: (None, [], "no ptxas on PATH or in pip's nvidia packages"))
    lines = listings.spec_table().splitlines()
    assert lines[-1] == "ptxas: none usable: no ptxas on PATH or in pip's nvidia packages"
    assert all(ln.endswith("  no") for ln in lines[1:-1])
    found = SimpleNamespace(version_str="12.9.86", path="/opt/ptxas", source="pip nvidia-cuda-nvcc-cu12",
                            can_target=lambda sm: sm == "sm_80", arch_range=lambda: "sm_50-sm_90a")
    monkeypatch.setattr(targets, "ptxas_in_use", lambda: (found, [], ""))
    lines = listings.spec_table().splitlines()
    assert lines[-1] == "ptxas: 12.9.86 /opt/ptxas (pip nvidia-cuda-nvcc-cu12; targets sm_50-sm_90a)"
    assert any(" sm_80 " in ln and ln.endswith("  ok") for ln in lines)
