"""XLA's cubins, their disassembly and per-kernel resources (the cubin/sass/kernels stages).

The cubins come from the compile itself: the driver points XLA's kernel cache
(``xla_gpu_kernel_cache_file``) into the compile's dump directory, and XLA
writes there, per kernel, the cubin of its kernel module as XLA's own ptxas made
it (``xla.gpu.CompilationCacheProto``). Kernel modules that XLA does not cache
(sort kernels, modules with no kernel) are assembled again from XLA's dumped
PTX with the ptxas XLA runs (``cuda_tools.ptxas``) and the options XLA passes
it: openxla/xla ``xla/stream_executor/cuda/subprocess_compilation.cc``,
``CompileGpuAsmUsingPtxAs``: ``ptxas <ptx> -o <cubin> -arch=<sm> --warn-on-spills``,
then ``AppendArgsFromOptions``: ``-O0`` when ``xla_gpu_disable_gpuasm_optimizations``
is set, then the user's extra flags (``xla_gpu_ptx_compiler_extra_flags`` in
this jaxlib). Both give the same bytes (tests/cuda/test_binaries.py checks it).

``sass`` and ``kernels`` assemble XLA's PTX once more, for a group of compiles
at a time (:func:`assemble_many`): one ptxas run with ``-v``, whose report gives
every kernel's registers, stack frame, spills and barriers (``-v`` only
reports), into one ELF that one nvdisasm disassembles. nvdisasm spends about
0.2 s of CPU starting up and reads one ELF, so a batch runs it once per group,
not once per kernel module. Static shared memory is read from each module's own
cubin (:meth:`Assembly.shared_sizes`).

SASS comes from ``nvdisasm``. pip's ``nvidia-cuda-nvdisasm`` is CUDA 13, which
reads cubins for sm_75 and newer only; for sm_60/sm_70 (CUDA 12 only) the CUDA
12.8 copy that Triton 3.3..3.6 bundles (the ``legacy-sass`` extra), or a CUDA 12
toolkit's, is used.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass, field, replace
from typing import Any

from ..errors import DriverError, StageError, ToolchainError
from .tools import sm_number

# ELF e_machine of NVIDIA cubins (EM_CUDA).
EM_CUDA = 190
PTX_ENTRY = re.compile(r"^\s*(?:\.visible\s+)?\.entry\s+([\w$]+)", re.M)


@dataclass(frozen=True)
class KernelResources:
    """One kernel's resources: what ``ptxas -v`` reports, shared memory from its cubin."""

    name: str
    registers: int
    stack_frame: int      # bytes per thread (local memory ptxas reserves)
    spill_stores: int     # bytes
    spill_loads: int      # bytes
    shared: int           # static shared memory, bytes (the cubin's .nv.shared.<kernel> section)
    barriers: int = 0


@dataclass
class KernelModule:
    """One of XLA's PTX files: named after the first kernel it defines."""

    name: str
    ptx_key: str
    kernels: list[str]
    ptx: str = field(repr=False)
    cubin: bytes = field(default=b"", repr=False)  # once assembled
    log: str = field(default="", repr=False)


@dataclass
class Assembly:
    """A compile's kernel modules, XLA's cubins of them, and how XLA assembles them for one sm."""

    sm: str
    ptxas: Any  # cuda_tools.Ptxas
    args: tuple[str, ...]  # XLA's options (without -v)
    modules: list[KernelModule]
    kernel_cache: bytes | None = field(default=None, repr=False)  # the file XLA's kernel cache wrote
    _assembled: bool = field(default=False, repr=False)
    _xla_cubins: dict[str, bytes] | None = field(default=None, repr=False)

    @property
    def xla_cubins(self) -> dict[str, bytes]:
        """Kernel -> its module's cubin from XLA's kernel cache (decoded on first use: sass
        and ptx never need it)."""
        if self._xla_cubins is None:
            self._xla_cubins = xla_cubins(self.kernel_cache)
        return self._xla_cubins

    def modules_assembled(self) -> list[KernelModule]:
        """The modules with their cubins: XLA's own where its kernel cache holds them,
        the others assembled here as XLA does (on first call)."""
        if not self._assembled:
            missing = [m for m in self.modules if not _take_xla_cubin(m, self.xla_cubins, self.sm)]
            _assemble_modules(self, missing)
            self._assembled = True
        return self.modules

    def shared_sizes(self) -> dict[str, int]:
        """Kernel -> the size of its ``.nv.shared.<kernel>`` section in its module's cubin
        (kernels with no static shared memory have none)."""
        out = {}
        for m in self.modules_assembled():
            sizes = elf_section_sizes(m.cubin)
            out.update({k: sizes[f".nv.shared.{k}"] for k in m.kernels if f".nv.shared.{k}" in sizes})
        return out


def ptxas_options(sm: str, xla_flags: dict[str, Any]) -> list[str]:
    """XLA's ptxas options for ``sm`` under these DebugOptions (see the module docstring)."""
    args = [f"-arch={sm}", "--warn-on-spills"]
    if _truthy(xla_flags.get("xla_gpu_disable_gpuasm_optimizations")):
        args.append("-O0")
    extra = xla_flags.get("xla_gpu_ptx_compiler_extra_flags")
    if isinstance(extra, str):
        args += extra.split()
    elif extra:
        args += [str(x) for x in extra]
    return args


def _truthy(value: Any) -> bool:
    return value is True or str(value).lower() in ("true", "1")


def kernel_module_name(ptx: str, fallback: str) -> str:
    """The first kernel (in name order) a PTX file defines, as the ``ptx`` stage names sections."""
    kernels = sorted(set(PTX_ENTRY.findall(ptx)))
    return kernels[0] if kernels else fallback


def _first_error(log: str, code: int) -> str:
    lines = log.strip().splitlines()
    return next((ln for ln in lines if "error" in ln or "fatal" in ln), lines[0] if lines else f"exit {code}").strip()


def xla_cubins(kernel_cache: bytes | None) -> dict[str, bytes]:
    """Kernel name -> the cubin of its kernel module, from the kernel cache file XLA wrote
    (``xla.gpu.CompilationCacheProto``: entries keyed by kernel name, each with its
    module's ``binary``). Empty when there is none, or it cannot be read: the
    modules are then assembled here."""
    if not kernel_cache:
        return {}
    from google.protobuf.message import DecodeError

    from ..errors import DriverError
    from ..ir import protos

    try:
        cache = protos.message_class("xla.gpu.CompilationCacheProto").FromString(kernel_cache)
    except (KeyError, DecodeError, DriverError):
        return {}
    return {name: entry.binary for name, entry in cache.entries.items() if entry.binary}


def _take_xla_cubin(module: KernelModule, cubins: dict[str, bytes], sm: str) -> bool:
    """Give ``module`` XLA's cubin if the cache has one ELF for all its kernels, for ``sm``."""
    found = {cubins.get(k) for k in module.kernels}
    if len(found) != 1 or None in found:
        return False
    cubin = found.pop()
    try:
        sections = elf_section_sizes(cubin)
        if elf_sm(cubin) != sm_number(sm) or any(f".text.{k}" not in sections for k in module.kernels):
            return False
    except StageError:
        return False
    module.cubin = cubin
    return True


def prepare(ptx_files: list[tuple[str, bytes]], sm: str, xla_flags: dict[str, Any],
            kernel_cache: bytes | None = None) -> Assembly:
    """The non-empty PTX files, the ptxas XLA runs, XLA's options and XLA's cubins
    (from ``kernel_cache``, the file XLA's kernel cache wrote); nothing assembled yet.

    Raises ToolchainError when no ptxas can target ``sm``.
    """
    from . import tools as cuda_tools

    user_dir = str(xla_flags.get("xla_gpu_cuda_data_dir") or "") or None
    tool = cuda_tools.check_target(sm, user_dir)
    modules = []
    for key, data in ptx_files:
        text = data.decode("utf-8", "replace")
        if text.strip():  # XLA writes empty PTX for modules with no kernels
            modules.append(KernelModule(kernel_module_name(text, key), key,
                                        sorted(set(PTX_ENTRY.findall(text))), text))
    modules.sort(key=lambda m: m.name)
    return Assembly(sm, tool, tuple(ptxas_options(sm, xla_flags)), modules, kernel_cache)


def _assemble_modules(asm: Assembly, modules: list[KernelModule]) -> None:
    """Assemble ``modules`` as XLA does; fills their cubin and log."""
    for m, (cubin, log) in zip(modules, _run_ptxas_each(asm, modules)):
        m.cubin, m.log = cubin, log


def _run_ptxas_each(asm: Assembly, modules: list[KernelModule]) -> list[tuple[bytes, str]]:
    """(cubin, ptxas output) of each module: one ptxas per module with XLA's options,
    all started at once: each runs for milliseconds to a second, and cores may be free."""
    if not modules:
        return []
    out = []
    with tempfile.TemporaryDirectory(prefix="mlirhlo-ptxas-") as tmp:
        procs = []
        for i, m in enumerate(modules):
            src = os.path.join(tmp, f"{i}.ptx")
            with open(src, "w") as f:
                f.write(m.ptx)
            procs.append(subprocess.Popen([asm.ptxas.path, src, "-o", os.path.join(tmp, f"{i}.cubin"),
                                           *asm.args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                          stdin=subprocess.DEVNULL))
        for i, (m, proc) in enumerate(zip(modules, procs)):
            stdout, stderr = proc.communicate()
            log = (stdout + stderr).decode("utf-8", "replace")
            if proc.returncode != 0:
                for other in procs:
                    other.kill()
                    other.wait()
                raise StageError(f"ptxas {asm.ptxas.version_str} failed on kernel module '{m.name}' "
                                 f"for {asm.sm}: {_first_error(log, proc.returncode)}")
            with open(os.path.join(tmp, f"{i}.cubin"), "rb") as f:
                out.append((f.read(), log))
    return out


# ``ptxas -v`` lines (CUDA 11.8 .. 13 spell them the same way):
#   ptxas info    : Compiling entry function 'k' for 'sm_90a'
#   ptxas info    : Function properties for k
#       16 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads
#   ptxas info    : Used 40 registers, used 1 barriers, 1024 bytes smem, 384 bytes cmem[0]
_COMPILING = re.compile(r"Compiling entry function '([^']+)'")
_PROPS = re.compile(r"Function properties for ([\w$.]+)")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")
_SMEM = re.compile(r"(\d+) bytes smem")
_BARRIERS = re.compile(r"used (\d+) barriers")


def parse_ptxas_log(log: str) -> dict[str, KernelResources]:
    """Per-kernel resources from a ``ptxas -v`` report (entry functions only)."""
    frames: dict[str, tuple[int, int, int]] = {}
    used: dict[str, tuple[int, int, int]] = {}
    entry = props = None
    for line in log.splitlines():
        m = _COMPILING.search(line)
        if m:
            entry = m.group(1)
            continue
        m = _PROPS.search(line)
        if m:
            props = m.group(1)
            continue
        m = _FRAME.search(line)
        if m and props is not None:
            frames[props] = (int(m.group(1)), int(m.group(2)), int(m.group(3)))
            props = None
            continue
        m = _USED.search(line)
        if m and entry is not None:
            smem = _SMEM.search(line)
            bars = _BARRIERS.search(line)
            used[entry] = (int(m.group(1)), int(smem.group(1)) if smem else 0,
                           int(bars.group(1)) if bars else 0)
            entry = None
    return {name: KernelResources(name, regs, *frames.get(name, (0, 0, 0)), smem, bars)
            for name, (regs, smem, bars) in used.items()}


# ------------------------------------------------------------------ ELF facts

def elf_sm(cubin: bytes) -> int:
    """The SM number (70, 90, 100, ...) a cubin's ELF header says it is for.

    Raises StageError when the data is not a 64-bit little-endian CUDA ELF.
    The header layout is the ELF standard's; NVIDIA keeps the SM in e_flags:
    bits 0-7 in ELF ABI version 7 (what ptxas 12.9 writes up to sm_90a), bits 8-15
    in version 8 (sm_100 and newer); measured on ptxas 12.9 cubins for every shipped sm.
    """
    import struct

    if len(cubin) < 64 or cubin[:4] != b"\x7fELF" or cubin[4] != 2 or cubin[5] != 1:
        raise StageError("not a 64-bit little-endian ELF file")
    machine, = struct.unpack_from("<H", cubin, 0x12)
    if machine != EM_CUDA:
        raise StageError(f"ELF e_machine is {machine}, not EM_CUDA ({EM_CUDA})")
    flags, = struct.unpack_from("<I", cubin, 0x30)
    return (flags >> 8) & 0xFF if cubin[8] >= 8 else flags & 0xFF


def elf_section_sizes(cubin: bytes) -> dict[str, int]:
    """Section name -> size of an ELF64 little-endian file (the ELF standard's section
    header table: e_shoff at 0x28, e_shentsize/e_shnum/e_shstrndx at 0x3A)."""
    import struct

    try:
        shoff, = struct.unpack_from("<Q", cubin, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", cubin, 0x3A)
        headers = [struct.unpack_from("<IIQQQQ", cubin, shoff + i * shentsize) for i in range(shnum)]
        names_at = headers[shstrndx][4]
        out = {}
        for name_off, _type, _flags, _addr, _offset, size in headers:
            start = names_at + name_off
            out[cubin[start:cubin.index(b"\0", start)].decode("ascii", "replace")] = size
        return out
    except (struct.error, ValueError, IndexError):
        raise StageError("ptxas wrote a cubin whose ELF section table cannot be read") from None


# ------------------------------------------------------------------ nvdisasm

@dataclass(frozen=True)
class Nvdisasm:
    path: str
    version: tuple[int, ...]

    @property
    def version_str(self) -> str:
        return ".".join(map(str, self.version))

    def reads(self, sm: str) -> bool:
        """Whether this nvdisasm disassembles cubins for ``sm`` (NVIDIA's release notes:
        CUDA 13.0 dropped sm_50..sm_72 from the offline tools; sm_90 came in 11.8,
        sm_100 in 12.8)."""
        n = sm_number(sm)
        if self.version >= (13,) and n < 75:
            return False
        if n >= 100:
            return self.version >= (12, 8)
        if n >= 90:
            return self.version >= (11, 8)
        return True


# Triton's wheels bundle an nvdisasm: CUDA 12.8's in 3.3..3.6, the only pip copy that
# reads sm_60/sm_70 cubins (pip's nvidia-cuda-nvdisasm is CUDA 13); the legacy-sass extra.
# Which nvdisasm serves which sm, and why, is the kernels page's: the hint names it.
TRITON_REQUIREMENT = "triton>=3.3,<3.7"
LEGACY_SASS_HINT = (f"pip install 'mlirhlo-driver[legacy-sass]', i.e. '{TRITON_REQUIREMENT}', which bundles "
                    "CUDA 12.8's nvdisasm; or put a CUDA 12 toolkit's bin/ on PATH; docs/commands/kernels.md")
NVDISASM_REQUIREMENT = "nvidia-cuda-nvdisasm>=13.2"


@functools.lru_cache(maxsize=None)
def _nvdisasm_version(path: str, mtime_ns: int) -> tuple[int, ...] | None:
    from . import tools as cuda_tools

    # On disk beside ptxas's probes (--version names it: one process less per start).
    try:
        st = os.stat(path)
    except OSError:
        return None
    key = f"nvdisasm|{os.path.realpath(path)}|{st.st_size}|{mtime_ns}|{st.st_ino}"
    cacheable = not cuda_tools._is_script(path)
    cache = cuda_tools._read_cache() if cacheable else {}
    if isinstance(cache.get(key), dict) and "version" in cache[key]:
        return tuple(cache[key]["version"])
    try:
        out = subprocess.run([path, "--version"], capture_output=True, timeout=30).stdout.decode()
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r"release [\d.]+, V(\d+(?:\.\d+)+)", out)
    version = tuple(int(x) for x in m.group(1).split(".")) if m else None
    if version is not None and cacheable:
        cache[key] = {"version": list(version)}
        cuda_tools._write_cache(cache)
    return version


def nvdisasm_for(sm: str, data_dir: str | None = None) -> Nvdisasm:
    """The first nvdisasm here that reads ``sm`` cubins; ToolchainError if none does."""
    from . import tools as cuda_tools

    found = []
    for path in cuda_tools.nvdisasm_candidates(data_dir):
        version = _nvdisasm_version(path, os.stat(path).st_mtime_ns)
        if version is None:
            continue
        tool = Nvdisasm(path, version)
        if tool.reads(sm):
            return tool
        found.append(tool)
    searched = ", ".join(cuda_tools.nvdisasm_searched(data_dir))
    if not found:
        raise ToolchainError(f"no nvdisasm found; searched {searched}",
                             hint=f"pip install '{NVDISASM_REQUIREMENT}'")
    seen = ", ".join(f"{t.version_str} at {t.path}" for t in found)
    if sm_number(sm) < 75:
        raise ToolchainError(f"no nvdisasm here reads {sm} cubins (CUDA 13's dropped sm_50..sm_72): "
                             f"found {seen}; searched {searched}", hint=LEGACY_SASS_HINT)
    raise ToolchainError(f"no nvdisasm here reads {sm} cubins (too old): found {seen}; searched {searched}",
                         hint=f"pip install '{NVDISASM_REQUIREMENT}'")


@dataclass(frozen=True)
class PtxJob:
    """One compile's kernel modules as PTX and how XLA assembles them, picklable (a
    batch worker makes it; the batch's process may finish it with others)."""

    sm: str
    ptxas: str                     # the ptxas XLA runs (path)
    ptxas_version: str
    args: tuple[str, ...]          # XLA's ptxas options
    data_dir: str | None           # the user's xla_gpu_cuda_data_dir, where nvdisasm is looked for first
    modules: tuple[tuple[str, tuple[str, ...], str], ...] = ()  # (kernel module, its kernels, PTX)


def ptx_job(assembly: Assembly, data_dir: str | None = None) -> PtxJob:
    return PtxJob(assembly.sm, assembly.ptxas.path, assembly.ptxas.version_str, assembly.args, data_dir,
                  tuple((m.name, tuple(m.kernels), m.ptx) for m in assembly.modules))


@dataclass(frozen=True)
class GroupResult:
    """What a job got from its group's run."""

    resources: dict[str, KernelResources]     # kernel -> ptxas -v's figures (shared: -v's own)
    sass: list[tuple[str, str]] | DriverError | None = None  # (kernel module, SASS text), when asked


def assemble_many(jobs: list[PtxJob], *, disassemble: bool) -> list[GroupResult | DriverError]:
    """Each job's ``ptxas -v`` figures and, with ``disassemble``, its SASS, or the error
    it failed with: one ptxas run, and one nvdisasm, for all jobs that share an sm and tools.

    nvdisasm spends ~0.2 s of CPU on start-up (sm_90a; 0.07 s for sm_60) and reads
    one ELF, and XLA's cubins are one ELF per kernel module; ptxas costs ~10 ms a
    process. So the PTX of every job is assembled again by one ptxas run, with
    XLA's options and ``-v`` (which only reports), into one ELF; a job's
    module-level names get a prefix first (``__mlirhlo<j>_``), as different
    compiles reuse kernel names. ptxas assembles each entry on its own, and a name
    does not change its code (tests compare it with XLA's cubins). The SASS text
    is then made independent of the group (:func:`_canonical`). When a group's
    ptxas fails, each of its jobs is tried alone, so the error is the failing
    module's. No usable nvdisasm fails only the SASS (``GroupResult.sass``).
    """
    out: list[GroupResult | DriverError | None] = [None] * len(jobs)
    groups: dict[tuple[Any, ...], list[int]] = {}
    tools: dict[int, Nvdisasm | DriverError | None] = {}
    for i, job in enumerate(jobs):
        if not job.modules:
            out[i] = GroupResult({}, [] if disassemble else None)
            continue
        tools[i] = None
        if disassemble:
            try:
                tools[i] = nvdisasm_for(job.sm, job.data_dir)
            except ToolchainError as e:
                tools[i] = e
        # A name already holding the prefix could be renamed into another: such jobs go alone.
        alone = any(_PREFIX in ptx for _, _, ptx in job.modules)
        tool_key = tools[i] if not isinstance(tools[i], DriverError) else str(tools[i])
        key = (job.sm, job.ptxas, job.args, tool_key, i if alone else None)
        groups.setdefault(key, []).append(i)
    for members in groups.values():
        group = [jobs[i] for i in members]
        tool = tools[members[0]]
        try:
            results: list[GroupResult | DriverError] = list(_run_group(group, tool))
        except StageError as e:
            results = [e] if len(group) == 1 else [_run_alone(job, tool) for job in group]
        for i, result in zip(members, results):
            out[i] = result
    return out  # type: ignore[return-value]


def _run_alone(job: PtxJob, tool: Nvdisasm | DriverError | None) -> GroupResult | DriverError:
    try:
        return _run_group([job], tool)[0]
    except StageError as e:
        return e


_PREFIX = "__mlirhlo"
_IDENT = r"(?<![\w$%])[A-Za-z_$%][\w$%]*"
# Module-scope names a PTX file defines (PTX ISA: "Identifiers", "State Spaces"):
# kernels and functions, and variables declared at column 0 (LLVM indents the ones
# inside functions). Registers, labels and parameters are local to their function.
_PTX_FUNCTION = re.compile(rf"^[ \t]*(?:\.(?:visible|extern|weak|common)\s+)*"
                           rf"\.(?:entry|func)\s+(?:\([^)]*\)\s*)?({_IDENT})", re.M)
_PTX_VARIABLE = re.compile(rf"^(?:\.(?:visible|extern|weak|common)\s+)*"
                           rf"\.(?:global|const|shared|tex|texref|surfref|samplerref)\b[^;{{}}=]*?"
                           rf"({_IDENT})\s*(?:\[[^\]]*\]\s*)*(?:=|;)", re.M)


def _renamed(ptx: str, prefix: str) -> str:
    """``ptx`` with each module-scope name it defines prefixed, wherever it appears."""
    names = set(_PTX_FUNCTION.findall(ptx)) | set(_PTX_VARIABLE.findall(ptx))
    if not prefix or not names:
        return ptx
    pattern = re.compile(r"(?<![\w$%])(" + "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
                         + r")(?![\w$%])")
    return pattern.sub(lambda m: prefix + m.group(1), ptx)


def group_prefixes(count: int) -> list[str]:
    """The name prefix of each job in a group of ``count`` (none when alone)."""
    return [f"{_PREFIX}{j}_" if count > 1 else "" for j in range(count)]


def assemble_group(jobs: list[PtxJob]) -> tuple[bytes, str]:
    """One ELF of every job's kernels (job j's names prefixed: :func:`group_prefixes`) and
    its ``-v`` report, from one ptxas run with the first job's tool and options (a
    group shares them)."""
    first = jobs[0]
    with tempfile.TemporaryDirectory(prefix="mlirhlo-ptxas-") as tmp:
        sources = []
        for j, (job, prefix) in enumerate(zip(jobs, group_prefixes(len(jobs)))):
            for k, (_, _, ptx) in enumerate(job.modules):
                sources.append(os.path.join(tmp, f"{j}_{k}.ptx"))
                with open(sources[-1], "w") as f:
                    f.write(_renamed(ptx, prefix))
        elf = os.path.join(tmp, "all.cubin")
        proc = subprocess.run([first.ptxas, *sources, "-o", elf, *first.args, "-v", *_threads(first)],
                              capture_output=True, stdin=subprocess.DEVNULL)
        log = (proc.stdout + proc.stderr).decode("utf-8", "replace")
        if proc.returncode != 0:
            raise StageError(f"ptxas {first.ptxas_version} failed for {first.sm}: "
                             f"{_first_error(log, proc.returncode)}")
        with open(elf, "rb") as f:
            return f.read(), log


def _threads(job: PtxJob) -> list[str]:
    """ptxas's own threads over the group's functions (``--split-compile``, in ptxas 12.8,
    12.9 and 13.0 here): the same code (tests compare it with XLA's cubins), in less time."""
    try:
        version = tuple(int(x) for x in job.ptxas_version.split(".")[:2])
    except ValueError:
        return []
    if version < (12, 8):
        return []
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return ["--split-compile", str(cores)]


def _run_group(jobs: list[PtxJob], tool: Nvdisasm | DriverError | None) -> list[GroupResult]:
    """One ptxas run over every job's PTX; with a tool, one nvdisasm of its ELF; cut per job."""
    elf, log = assemble_group(jobs)
    report = parse_ptxas_log(log)
    prefixes = group_prefixes(len(jobs))
    resources = []
    for job, prefix in zip(jobs, prefixes):
        mine = {}
        for _, kernels, _ in job.modules:
            for k in kernels:
                if prefix + k in report:
                    mine[k] = replace(report[prefix + k], name=k)
        resources.append(mine)
    if tool is None or isinstance(tool, DriverError):
        return [GroupResult(r, tool) for r in resources]
    try:
        sass = _disassemble(elf, jobs, prefixes, tool)
    except StageError as e:
        return [GroupResult(r, e) for r in resources]
    return [GroupResult(r, s) for r, s in zip(resources, sass)]


def _disassemble(elf: bytes, jobs: list[PtxJob], prefixes: list[str], tool: Nvdisasm) -> list[list[tuple[str, str]]]:
    with tempfile.TemporaryDirectory(prefix="mlirhlo-sass-") as tmp:
        path = os.path.join(tmp, "all.cubin")
        with open(path, "wb") as f:
            f.write(elf)
        # -c: code sections only (the ELF's data sections are not SASS). -ndf: no dataflow
        # analysis; nvdisasm 13 skips it on ptxas 12.9 cubins anyway (same text), yet spends
        # a quarter of its time on it.
        proc = subprocess.run([tool.path, "-c", "-ndf", path], capture_output=True, stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        err = proc.stderr.decode("utf-8", "replace")
        raise StageError(f"nvdisasm {tool.version_str} failed on {jobs[0].sm} cubins: "
                         f"{_first_error(err, proc.returncode)}")
    header, sections = _text_sections(proc.stdout.decode("utf-8", "replace"))
    out = []
    for job, prefix in zip(jobs, prefixes):
        parts = []
        for name, kernels, _ in job.modules:
            missing = [k for k in kernels if prefix + k not in sections]
            if missing:
                raise StageError(f"nvdisasm {tool.version_str} printed no code for kernel '{missing[0]}'")
            parts.append((name, header + "".join(sections[prefix + k] for k in kernels)))
        out.append(_canonical(parts, prefix))
    return out


_BANNER = re.compile(r"^//-+ (\S+) +-+$", re.M)


def _text_sections(text: str) -> tuple[str, dict[str, str]]:
    """nvdisasm's text cut at its section banners: the ELF header lines, and kernel ->
    its ``.text.<kernel>`` section. Other sections (the SYMBOLS list of the whole ELF)
    are left out: they belong to no one kernel."""
    cuts = list(_BANNER.finditer(text))
    header = text[:cuts[0].start()] if cuts else text
    sections = {}
    for i, m in enumerate(cuts):
        if m.group(1).startswith(".text."):
            body = text[m.start():(cuts[i + 1].start() if i + 1 < len(cuts) else len(text))]
            # Two blank lines end a section, as between nvdisasm's sections; its last has none.
            sections[m.group(1)[len(".text."):]] = body.rstrip("\n") + "\n\n\n"
    return header, sections


_LABEL = re.compile(r"\.L_x_\d+\b")


def _canonical(parts: list[tuple[str, str]], prefix: str) -> list[tuple[str, str]]:
    """One compile's SASS as it reads whatever else was in the ELF: the name prefix
    removed, banners unpadded (nvdisasm pads names to the ELF's longest), and labels
    (numbered ELF-wide by nvdisasm) numbered in order of appearance, across the
    compile's kernel modules so that each label stays unique in its file."""
    numbers: dict[str, str] = {}

    def number(m: re.Match[str]) -> str:
        return numbers.setdefault(m.group(0), f".L_x_{len(numbers)}")

    out = []
    for name, text in parts:
        if prefix:
            text = text.replace(prefix, "")
        text = _BANNER.sub(lambda m: f"//{'-' * 21} {m.group(1)} {'-' * 26}", text)
        out.append((name, _LABEL.sub(number, text)))
    return out
