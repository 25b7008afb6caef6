"""Behaviour: a GPU spec's compute capability and ``feature_extension`` give the sm
(ptxas ``-arch``) and PTX ``.target`` XLA uses, for every compute capability
from 6.0 to 12.x.

XLA (``CudaComputeCapability::FromProto``): ``feature_extension`` left out
(UNSPECIFIED) means the accelerated ``a`` target on 9.x and 10.x only, for
backward compatibility; NONE is the plain target; ACCELERATED_FEATURES is
``a`` and FAMILY_COMPATIBLE_FEATURES ``f``. The driver refuses ``a`` below 9.0
and ``f`` below 10.0 (no ptxas targets them). So ``sm_120a`` appears only when
a spec asks for it.

The whole table is checked at gpu_specs.parse_spec; a sample (the field left
out on each side of the 9.x/10.x range and in it, and every extension on 9.0,
10.0 and 12.0) is compiled device-less by XLA, whose PTX must carry that
``.target``.
"""

from __future__ import annotations

import re

import pytest

from mlirhlo_driver import registry
from mlirhlo_driver.cuda import specs as gpu_specs
from mlirhlo_driver.cuda import tools as cuda_tools
from mlirhlo_driver.errors import SpecError
from mlirhlo_driver.inputs import loader as inputs
from tests.conftest import REPO, assert_mentions, stage_options

BASE = (REPO / "gpu_specs" / "h100_sxm.txtpb").read_text()

EXTENSIONS = ("", "NONE", "ACCELERATED_FEATURES", "FAMILY_COMPATIBLE_FEATURES")  # "": field left out

# what the refusal of an extension too new for the compute capability names (its words:
# test_validation_errors_exactly, tests/cuda/test_specs.py)
A_TOO_OLD = ("ACCELERATED_FEATURES", "compute capability 9.0")

F_TOO_OLD = ("FAMILY_COMPATIBLE_FEATURES", "compute capability 10.0")

# compute capability -> (field left out, NONE, ACCELERATED_FEATURES, FAMILY_COMPATIBLE_FEATURES):
# the sm, or what the error a spec gets names
TARGETS = {
    "6.0": ("sm_60", "sm_60", A_TOO_OLD, F_TOO_OLD),
    "6.1": ("sm_61", "sm_61", A_TOO_OLD, F_TOO_OLD),
    "7.0": ("sm_70", "sm_70", A_TOO_OLD, F_TOO_OLD),
    "7.5": ("sm_75", "sm_75", A_TOO_OLD, F_TOO_OLD),
    "8.0": ("sm_80", "sm_80", A_TOO_OLD, F_TOO_OLD),
    "8.6": ("sm_86", "sm_86", A_TOO_OLD, F_TOO_OLD),
    "8.9": ("sm_89", "sm_89", A_TOO_OLD, F_TOO_OLD),
    "9.0": ("sm_90a", "sm_90", "sm_90a", F_TOO_OLD),
    "10.0": ("sm_100a", "sm_100", "sm_100a", "sm_100f"),
    "10.3": ("sm_103a", "sm_103", "sm_103a", "sm_103f"),
    "12.0": ("sm_120", "sm_120", "sm_120a", "sm_120f"),
    "12.1": ("sm_121", "sm_121", "sm_121a", "sm_121f"),
}

# what the spec's compute capability reads as (specs list/show): the suffix only where the file says so
SHOWN = {"": "", "NONE": "", "ACCELERATED_FEATURES": "a", "FAMILY_COMPATIBLE_FEATURES": "f"}


def _spec_text(cc: str, ext: str) -> str:
    major, minor = cc.split(".")
    field = f"cuda_compute_capability {{ major: {major} minor: {minor}" + \
        (f" feature_extension: {ext}" if ext else "") + " }"
    text, n = re.subn(r"cuda_compute_capability \{[^}]*\}", field, BASE)
    assert n == 1
    return text


CASES = [(cc, ext, TARGETS[cc][i]) for cc in TARGETS for i, ext in enumerate(EXTENSIONS)]

SAMPLE = [(cc, "", TARGETS[cc][0]) for cc in ("6.0", "8.9", "9.0", "10.0", "10.3", "12.0", "12.1")] + \
    [(cc, ext, TARGETS[cc][i]) for cc in ("9.0", "10.0", "12.0") for i, ext in enumerate(EXTENSIONS)
     if ext and isinstance(TARGETS[cc][i], str)]


@pytest.fixture(scope="module")
def tanh_module():
    text = ("func.func @main(%a: tensor<128xf32>) -> tensor<128xf32> {\n"
            "  %0 = stablehlo.tanh %a : tensor<128xf32>\n  return %0 : tensor<128xf32>\n}\n")
    return inputs.load("tanh.mlir", data=text.encode())[0].module


@pytest.mark.parametrize("cc, ext, want", CASES, ids=[f"{cc}-{ext or 'unset'}" for cc, ext, _ in CASES])
def test_spec_target(cc, ext, want):
    text = _spec_text(cc, ext)
    if not isinstance(want, str):
        with pytest.raises(SpecError) as e:
            gpu_specs.parse_spec(text, "t.txtpb")
        assert_mentions(e.value.message, *want)
        return
    spec = gpu_specs.parse_spec(text, "t.txtpb")
    assert spec.sm == want
    assert spec.compute_capability == cc + SHOWN[ext]


def test_the_a_suffix_only_where_asked_for_or_xla_defaults_to_it():
    """No compute capability outside 9.x and 10.x gets ``a`` unless its spec says
    ACCELERATED_FEATURES; none gets ``f`` unless it says FAMILY_COMPATIBLE_FEATURES."""
    for cc, row in TARGETS.items():
        for ext, sm in zip(EXTENSIONS, row):
            if not isinstance(sm, str):
                continue
            major = int(cc.split(".")[0])
            assert sm.endswith("a") == (ext == "ACCELERATED_FEATURES" or (ext == "" and major in (9, 10))), (cc, ext)
            assert sm.endswith("f") == (ext == "FAMILY_COMPATIBLE_FEATURES"), (cc, ext)


def test_shipped_specs_follow_the_table():
    for spec in gpu_specs.list_specs():
        cc = spec.compute_capability.rstrip("af")
        ext = spec.proto.gpu_device_info.cuda_compute_capability.feature_extension
        assert spec.sm == TARGETS[cc][ext], spec.name  # the enum's numbers are EXTENSIONS' order


@pytest.mark.parametrize("cc, ext, want", SAMPLE, ids=[f"{cc}-{ext or 'unset'}" for cc, ext, _ in SAMPLE])
def test_xla_emits_that_target(tanh_module, cc, ext, want):
    spec = gpu_specs.parse_spec(_spec_text(cc, ext), "t.txtpb")
    if not cuda_tools.ptxas(*cuda_tools.cuda_data_dir()).can_target(spec.sm):
        pytest.skip(f"the ptxas here cannot assemble {spec.sm} (CUDA 13 dropped sm_60/sm_70)")
    ptx = registry.request(tanh_module, "tanh", stage_options(platform="cuda", gpu_spec=spec)).produce("ptx")
    assert set(re.findall(r"^\.target\s+(\w+)", ptx, re.M)) == {want}
