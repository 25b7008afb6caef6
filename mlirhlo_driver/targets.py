"""Compile targets: platform, GPU specs and XLA DebugOptions, resolved once for
every front-end (``mlirhlo opt``/``bench-pipeline`` and XLA's ``hlo-opt``).

Promises:

* :func:`resolve` checks everything it is given before anything compiles and
  raises typed errors (errors.py); it prints nothing. What the user should be
  told (a default GPU spec, fields filled into a spec) is kept in
  :attr:`Target.notes` and said by :meth:`Target.say_notes` once the caller's
  own checks have passed, never right before an error line; the caller says
  where notes go (a command line: stderr; Python: the logger).
* Platform names take XLA's spellings too (``CPU``, ``Host``, ``GPU``, ``CUDA``).
* DebugOptions come from ``--debug-options-file`` < ``XLA_FLAGS`` < the
  command line, and are checked against this jaxlib's XLA by name.
* Nothing here imports jax or jaxlib.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import DriverError, FlagError, log_note, param
from .stages.base import StageOptions

TARGET_CONFIG_FLAG = "xla_gpu_target_config_filename"
AUTOTUNE_FLAG = "xla_gpu_load_autotune_results_from"


@dataclass
class Target:
    """What a compile is for: a platform, its GPU specs (CUDA), and XLA's DebugOptions.

    Made by :func:`resolve` for the commands and by :meth:`cpu`, :meth:`cuda` and
    :meth:`of` in Python, so both read XLA_FLAGS, flag files and autotune results
    the same way. A command's target may name several specs (``--gpu-spec a,b``:
    one compile each); a Python target names one.
    """

    platform: str | None                   # cpu, cuda, or None: no XLA compile asked for
    specs: list[Any]                       # GpuSpec per requested spec (cuda), else []
    xla_flags: tuple[tuple[str, Any], ...]
    # Notes for the user (the default spec taken, fields filled into a spec), said once the
    # caller is past its own checks (say_notes).
    notes: list[str] = field(default_factory=list)
    # Temporary files the flags name (an autotune file copied to the extension XLA
    # reads by): they live as long as the target.
    keep: list[Any] = field(default_factory=list, repr=False)

    @classmethod
    def cpu(cls, *, xla_flags: dict[str, Any] | None = None, debug_options_file: str | None = None) -> Target:
        """XLA's CPU backend. ``xla_flags``: DebugOptions fields by name, over
        ``XLA_FLAGS`` and ``debug_options_file`` (FlagError for a name this XLA lacks)."""
        return cls.of("cpu", xla_flags=xla_flags, debug_options_file=debug_options_file)

    @classmethod
    def cuda(cls, gpu_spec: str | None = None, *, xla_flags: dict[str, Any] | None = None,
             autotune_results: str | None = None, debug_options_file: str | None = None) -> Target:
        """XLA's CUDA backend, device-less, for one GPU spec: a shipped name
        (``h100_sxm``; ``mlirhlo specs list``) or a GpuTargetConfigProto file; the
        default spec without one. ``autotune_results``: XLA's AutotuneResults file."""
        if gpu_spec is not None and "," in gpu_spec:
            raise DriverError(f"gpu_spec '{gpu_spec}' names several specs: a Target is one compile target",
                              hint="make one Target per spec")
        return cls.of("cuda", gpu_spec=gpu_spec, xla_flags=xla_flags, autotune_results=autotune_results,
                      debug_options_file=debug_options_file)

    @classmethod
    def of(cls, platform: str, *, gpu_spec: str | None = None, xla_flags: dict[str, Any] | None = None,
           autotune_results: str | None = None, debug_options_file: str | None = None) -> Target:
        """A target by platform name (XLA's spellings too: ``Host``, ``GPU``), resolved as
        every command resolves it (:func:`resolve`). Notes (the default spec used, fields
        filled into a spec) go to the ``mlirhlo_driver`` logger (errors.log_note)."""
        target = resolve(platform, gpu_spec=gpu_spec, cli_flags=dict(xla_flags or {}),
                         debug_options_file=debug_options_file, autotune_results=autotune_results,
                         spec_flag="gpu_spec")
        target.say_notes()
        return target

    @property
    def spec(self) -> Any:
        """The GPU spec (cuda.specs.GpuSpec) of a one-spec CUDA target; None for CPU."""
        return self.specs[0] if self.specs else None

    def options(self, **kw: Any) -> StageOptions:
        """The StageOptions of this target's one compile; DriverError for several specs."""
        if self.platform is None:
            raise DriverError("the target has no platform: XLA stages need cpu or cuda")
        if len(self.specs) > 1:
            raise DriverError(f"the target names {len(self.specs)} GPU specs: compile one at a time",
                              hint="Target.cuda(name) per spec")
        return StageOptions(platform=self.platform, gpu_spec=self.spec, xla_flags=self.xla_flags, **kw)

    def say_notes(self, say: Callable[[str], None] = log_note) -> None:
        """Give each note to ``say`` (default: the logger; a command line: stderr), once.
        A note comes after every usage check, never right before an error line."""
        notes, self.notes = self.notes, []
        for line in notes:
            say(line)

    def stage_options(self, **kw: Any) -> list[tuple[str | None, StageOptions]]:
        """(spec name or None, options) for each compile target."""
        if self.platform == "cuda":
            return [(s.name, StageOptions(platform="cuda", gpu_spec=s,
                                                         xla_flags=self.xla_flags, **kw))
                    for s in self.specs]
        return [(None, StageOptions(platform=self.platform, xla_flags=self.xla_flags, **kw))]

    def options_for(self, platform: str) -> StageOptions:
        """Options to compile for ``platform`` (this target's, or another pipeline a
        tool tries): the first requested spec for CUDA, else the default one, quietly."""
        spec = None
        if platform == "cuda":
            from .cuda import specs as gpu_specs

            spec = self.specs[0] if self.specs else gpu_specs.resolve_spec(gpu_specs.DEFAULT_SPEC)
        return StageOptions(platform=platform, gpu_spec=spec, xla_flags=self.xla_flags)


def platform_name(name: str, flag: str = "platform") -> str:
    """``cpu`` or ``cuda`` from any of XLA's spellings; XLA's interpreter is refused."""
    from .xla.cli_flags import platform

    got = platform(name, flag)
    if got == "interpreter":
        raise DriverError(f"--{flag}={name}: jaxlib has no XLA interpreter backend",
                          hint="use CPU or CUDA; run_hlo_module's reference is the StableHLO interpreter")
    return got


def debug_options(cli_flags: dict[str, Any] | None = None, debug_options_file: str | None = None) -> dict[str, Any]:
    """DebugOptions of a compile or run: ``debug_options_file`` < ``XLA_FLAGS`` < ``cli_flags``,
    each name checked against this jaxlib's XLA (FlagError with a close match)."""
    from .xla import flags as xla_flags

    file_flags = xla_flags.from_file_checked(debug_options_file) if debug_options_file else {}
    flags = xla_flags.merge(file_flags, xla_flags.from_environment(), dict(cli_flags or {}))
    if flags:
        xla_flags.check_names(flags, xla_flags.known_names())
    return flags


def resolve(platform: str | None, *, gpu_spec: str | None = None, cli_flags: dict[str, Any] | None = None,
            debug_options_file: str | None = None, autotune_results: str | None = None,
            needs_spec: bool = True, xla_tool: bool = False, spec_flag: str = "--gpu-spec") -> Target:
    """The target of a command.

    ``gpu_spec`` is a comma list of spec names or files (gpu_specs.resolve_spec);
    ``--xla_gpu_target_config_filename`` names one too. ``needs_spec``: the command
    compiles, so a CUDA target gets the default spec (with a note) if none is named;
    listings need none. ``xla_tool``: XLA's tools' conventions, where a command may compile without
    ``--platform`` (hlo-opt ``--passes`` picks a pipeline): ``XLA_FLAGS`` is always read,
    and flags need no platform. ``spec_flag`` names the spec option in the default-spec note.
    """
    from .xla import flags as xla_flags

    flags_given = dict(cli_flags or {})
    notes: list[str] = []
    config_file = flags_given.pop(TARGET_CONFIG_FLAG, None)
    spec_from_flag = config_file is not None
    if config_file is not None:
        if gpu_spec is not None:
            raise DriverError("give --gpu-spec or --xla_gpu_target_config_filename, not both")
        gpu_spec = str(config_file)
    if platform is not None:
        platform = platform_name(platform)
    elif config_file is not None or gpu_spec is not None:
        platform = "cuda"  # a GPU spec names a CUDA target, as XLA's config file does
    if autotune_results is not None:
        flags_given[AUTOTUNE_FLAG] = autotune_results
    file_flags = xla_flags.from_file_checked(debug_options_file) if debug_options_file else {}
    # XLA_FLAGS may be set for other tools: it matters only when XLA compiles.
    env_flags = xla_flags.from_environment() if platform is not None or xla_tool else {}
    flags = xla_flags.merge(file_flags, env_flags, flags_given)
    if TARGET_CONFIG_FLAG in flags:  # from the file or XLA_FLAGS: the spec, as on the command line
        named = str(flags.pop(TARGET_CONFIG_FLAG))
        if gpu_spec is None:
            gpu_spec, platform, spec_from_flag = named, platform or "cuda", True
    if flags:
        xla_flags.check_names(flags, xla_flags.known_names())
    if platform is None and not xla_tool:
        if flags:
            raise DriverError(f"XLA flags need {param('platform', 'cpu|cuda')}")
    if platform == "cpu" and gpu_spec is not None:
        raise DriverError(f"{param('gpu_spec')} is for {param('platform', 'cuda')}" if not spec_from_flag
                          else "--xla_gpu_target_config_filename is for --platform=CUDA")
    target = Target(platform, [], ())
    path = flags.get(AUTOTUNE_FLAG)
    if path is not None:
        if platform == "cpu" and not xla_tool:
            raise DriverError(f"autotune results are for {param('platform', 'cuda')}")
        flags[AUTOTUNE_FLAG] = autotune_file(str(path), target.keep)
    if platform == "cuda" and needs_spec:
        from .cuda import specs as gpu_specs

        if gpu_spec is None:
            spec = gpu_specs.resolve_spec(gpu_specs.DEFAULT_SPEC)
            notes.append(f"no {spec_flag} given: compiling for {spec.name} ({spec.gpu}, {spec.sm})")
            target.specs = [spec]
        else:
            target.specs = [gpu_specs.resolve_spec(s.strip()) for s in gpu_spec.split(",") if s.strip()]
        # Fields filled in or left out of a spec: said with the other notes, after validation.
        notes += [n for s in target.specs for n in s.notes]
    elif platform == "cuda" and gpu_spec is not None:  # a listing: the spec is still checked
        from .cuda import specs as gpu_specs

        target.specs = [gpu_specs.resolve_spec(s.strip()) for s in gpu_spec.split(",") if s.strip()]
        notes += [n for s in target.specs for n in s.notes]
    target.xla_flags = tuple(sorted(flags.items()))
    target.notes = [n.removeprefix("note: ") for n in notes]
    return target


def autotune_file(path: str, keep: list[Any]) -> str:
    """An autotune results file XLA reads by its content, whatever its extension.

    XLA picks text or binary from the extension (.txt/.textproto/.prototxt/.pbtxt
    are text); ``results.textpb`` from XLA's own documentation would be read
    as binary. A copy with the extension matching the content is passed on
    (kept alive in ``keep``).
    """
    import tempfile

    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise FlagError("no such autotune results file", file=path) from None
    except IsADirectoryError:
        raise FlagError("no such autotune results file", file=path) from None
    except OSError as e:
        raise FlagError(e.strerror or str(e), file=path) from None
    try:
        text = data.decode()
        is_text = not any(ch in text for ch in "\x00\x01\x02\x03\x04\x05\x06\x07")
    except UnicodeDecodeError:
        is_text = False
    suffix = ".pbtxt" if is_text else ".pb"
    if path.endswith((".txt", ".textproto", ".prototxt", ".pbtxt") if is_text else (".pb",)):
        return path
    tmp = tempfile.NamedTemporaryFile(prefix="mlirhlo-autotune-", suffix=suffix)
    tmp.write(data)
    tmp.flush()
    keep.append(tmp)  # removed when the target goes
    return tmp.name


def _user_cuda_dir() -> str | None:
    """The CUDA data dir a user set in XLA_FLAGS; a malformed XLA_FLAGS does not matter here."""
    from .cuda import tools as cuda_tools
    from .xla import flags as xla_flags

    try:
        return xla_flags.from_environment().get(cuda_tools.DATA_DIR_FLAG) or None
    except DriverError:
        return None


def ptxas_in_use() -> tuple[Any, list[Any], str]:
    """(the ptxas XLA will run for CUDA targets, the other ones found, why there is none)."""
    from .cuda import tools as cuda_tools

    user_dir = _user_cuda_dir()
    try:
        ptxas = cuda_tools.ptxas(*cuda_tools.cuda_data_dir(user_dir))
    except DriverError as e:
        return None, cuda_tools.all_ptxas(), e.format().removeprefix("error: ")
    others = [p for p in cuda_tools.all_ptxas(user_dir) if p.path != ptxas.path
              and p.version != ptxas.version]
    return ptxas, others, ""


def cuda_tool_lines(ptxas: Any) -> list[str]:
    """--version's lines for the libdevice XLA links and the nvdisasm 'sass' runs; a second
    nvdisasm line for sm_60/sm_70 where the ptxas in use can target them (CUDA 12 only)."""
    from .cuda import binaries as cuda_binaries
    from .cuda import tools as cuda_tools

    user_dir = _user_cuda_dir()
    try:
        data_dir = cuda_tools.cuda_data_dir(user_dir)[0]
    except DriverError:
        data_dir = user_dir
    found = cuda_tools.libdevice(data_dir)
    lines = [f"libdevice {found}" if found else f"libdevice none ({cuda_tools.fix_hint()})"]
    newest = ptxas.archs[-1] if ptxas is not None and ptxas.archs else "sm_90a"
    try:
        main = cuda_binaries.nvdisasm_for(newest, user_dir)
        lines.append(f"nvdisasm {main.version_str} {main.path}")
    except DriverError as e:
        main = None
        lines.append(f"nvdisasm none usable: {e.format().removeprefix('error: ')}")
    if ptxas is not None and ptxas.can_target("sm_70"):
        try:
            legacy = cuda_binaries.nvdisasm_for("sm_70", user_dir)
            if main is None or legacy.path != main.path:
                lines.append(f"nvdisasm {legacy.version_str} {legacy.path} (for sm_60/sm_70)")
        except DriverError:
            lines.append(f"nvdisasm for sm_60/sm_70 none ({cuda_binaries.LEGACY_SASS_HINT})")
    return lines
