"""``mlirhlo spmd-run`` (and multihost_hlo_runner over several nodes): an SPMD run laid out
over processes, checked and carried out (execute/spmd.py partitions, compiles and runs one
process's part). The module is read as every command reads one (core.program).

Promises: :func:`spmd_options` and :func:`check` raise typed errors
(errors.py) before jax starts or a worker is spawned; :func:`run` returns the
run's exit status (0: the outputs match, 1: a mismatch or a failed run, 2: bad
input found by a worker), as spmd.supervise does for worker processes.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from typing import Any

from ..errors import DriverError


@dataclass(frozen=True)
class SpmdLaunch:
    """Where and how many processes run the module, and what comes out besides the report."""

    source: str                                # the module: a file, or package.module:function
    input_format: str | None = None
    args: str | None = None                    # argument specs of a JAX function
    arg_sharding: tuple[str, ...] = ()         # PARAM=SHARDING, as HLO spells it
    dump_output: str | None = None             # .npz of the gathered outputs
    num_processes: int = 1
    process_id: int | None = None
    coordinator: str | None = None             # HOST:PORT of process 0
    launch_local: int | None = None            # start N processes on 127.0.0.1
    timeout: float = 300.0                     # seconds a distributed run may take


def spmd_options(flags: dict[str, Any], *, argument_mode: str | None = None, inputs_npz: str | None = None,
                 partitioner: str | None = None, arg_sharding: tuple[str, ...] = (), **fields: Any) -> Any:
    """spmd.SpmdOptions from the command line's values (``fields`` by their SpmdOptions
    names) and its ``--xla_*`` flags (over XLA_FLAGS); checks what needs no module."""
    from ..execute import spmd
    from ..targets import debug_options, platform_name

    flags = debug_options(flags)
    if "platform" in fields:
        fields["platform"] = platform_name(fields["platform"])
        if fields["platform"] not in ("cpu", "tpu"):
            raise DriverError(f"--platform {fields['platform']}: spmd-run runs on host devices (cpu) or the TPU "
                              "chips attached here (tpu)")
    if inputs_npz and argument_mode is not None:
        raise DriverError("give --inputs or --argument-mode, not both")
    options = spmd.SpmdOptions(partitioner=partitioner.lower() if partitioner else None,
                               argument_mode=argument_mode or "random", inputs_npz=inputs_npz,
                               xla_flags=tuple(sorted(flags.items())), **fields)
    spmd.check_options(options)
    if arg_sharding and options.per_device_module:
        raise DriverError("--arg-sharding is for modules that XLA partitions, not already partitioned ones")
    if arg_sharding and options.num_partitions == 1:
        raise DriverError("--arg-sharding needs --num-partitions > 1")
    return options


def check(launch: SpmdLaunch, options: Any) -> None:
    """The process layout against the options; an output file that cannot be written."""
    from ..execute import spmd

    if launch.dump_output:
        from .. import outputs

        outputs.check_output_path(launch.dump_output)
    procs = launch.launch_local or launch.num_processes
    spmd.check_devices_per_process(options, procs)
    if launch.launch_local is not None:
        if launch.launch_local < 2:
            raise DriverError("--launch-local needs at least 2 processes")
        if launch.num_processes != 1 or launch.process_id is not None or launch.coordinator is not None:
            raise DriverError("give --launch-local N, or --num-processes/--process-id/--coordinator, not both")
    elif launch.num_processes > 1:
        if launch.process_id is None or launch.coordinator is None:
            raise DriverError("--num-processes needs --process-id and --coordinator HOST:PORT")
        if not 0 <= launch.process_id < launch.num_processes:
            raise DriverError(f"--process-id must be 0 to {launch.num_processes - 1}")
    elif launch.num_processes < 1:
        raise DriverError("--num-processes must be >= 1")
    elif launch.process_id is not None or launch.coordinator is not None:
        raise DriverError("--process-id and --coordinator need --num-processes > 1")
    if procs > 1 and options.num_devices % procs:
        raise DriverError(f"{options.num_devices} devices cannot be split evenly over {procs} processes")
    if launch.timeout <= 0:
        raise DriverError("--timeout must be > 0")
    if options.platform != "cpu":
        from ..execute import engine

        if procs > 1:
            raise DriverError(f"--platform {options.platform} runs in one process, on the chips attached here",
                              hint="drop --launch-local/--num-processes")
        engine.require_devices(options.platform)


def with_shardings(options: Any, specs: tuple[str, ...] | list[str]) -> Any:
    from ..execute import spmd

    if not specs:
        return options
    return replace(options, arg_shardings=tuple(spmd.parse_arg_sharding(s) for s in specs))


def load_one(source: str, input_format: str | None, args: str | None) -> Any:
    """The one module of ``source`` (a core.program.Program)."""
    from ..core.program import InputOptions, programs

    found = programs([source], InputOptions(input_format, args=args))
    if len(found) != 1:
        raise DriverError(f"spmd-run takes one module; {source} gives {len(found)}")
    return found[0]


def run(launch: SpmdLaunch, options: Any) -> int:
    """:func:`check`, then run: in this process (its report on stdout), or as worker
    processes relayed by spmd.supervise. Returns the exit status."""
    from ..execute import spmd

    check(launch, options)
    options = with_shardings(options, launch.arg_sharding)
    spmd.command_host_devices(options.num_devices, options.platform)  # this process: a JAX function's mesh
    if (launch.launch_local or launch.num_processes) == 1:
        return _in_process(launch, options)
    # The module is checked here first: a bad input is one error, not one per process.
    spmd.prepare(load_one(launch.source, launch.input_format, launch.args), options)
    return launch_processes(launch, options)


def launch_processes(launch: SpmdLaunch, options: Any, *, what: str = "processes") -> int:
    """Start ``launch.launch_local`` processes on 127.0.0.1, or this host's one process of
    ``launch.num_processes``, and relay them (spmd.supervise). ``what`` names them in the note."""
    from ..execute import spmd

    if launch.launch_local is not None:
        address = f"127.0.0.1:{spmd.free_port()}"
        cfgs = spmd.worker_configs(launch.source, launch.input_format, launch.args, options,
                                   num_processes=launch.launch_local, process_ids=list(range(launch.launch_local)),
                                   coordinator=address, timeout=launch.timeout, dump_output=launch.dump_output)
        sys.stderr.write(f"note: {launch.launch_local} {what}, coordinator {address}\n")

        def started(pid: int, os_pid: int) -> None:
            sys.stderr.write(f"note: process {pid} is pid {os_pid}\n")
            sys.stderr.flush()

        return spmd.supervise(cfgs, prefixed=True, on_start=started)
    cfgs = spmd.worker_configs(launch.source, launch.input_format, launch.args, options,
                               num_processes=launch.num_processes, process_ids=[launch.process_id or 0],
                               coordinator=launch.coordinator or "", timeout=launch.timeout,
                               dump_output=launch.dump_output)
    return spmd.supervise(cfgs, prefixed=False)


def _in_process(launch: SpmdLaunch, options: Any) -> int:
    from .. import outputs
    from ..execute import spmd

    loaded = load_one(launch.source, launch.input_format, launch.args)
    try:
        report = spmd.run_in_process(loaded, options)
    except DriverError as e:
        raise spmd.about_module(e, launch.source) from None  # its compile or run failed: say which file
    sys.stdout.write(spmd.format_report(report) + "\n")
    sys.stdout.flush()
    if launch.dump_output:
        outputs.write_atomic(launch.dump_output, spmd.outputs_npz(report))
    return 0 if report.report.passed else 1


def check_host_port(value: str) -> tuple[str, int]:
    """(host, port) of ``HOST:PORT`` (an IPv6 host in brackets), with a port a
    coordinator can listen on (1-65535)."""
    import re

    m = re.match(r"^(\[[0-9a-fA-F:.]+\]|[^:\s\[\]]+):(\d{1,5})$", value)
    if not m:
        raise DriverError(f"'{value}' is not HOST:PORT, e.g. 10.0.0.1:1234")
    if not 1 <= int(m.group(2)) <= 65535:
        raise DriverError(f"port {int(m.group(2))} is not 1-65535")
    return m.group(1), int(m.group(2))
