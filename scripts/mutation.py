#!/usr/bin/env python
"""Mutation testing: do the tests notice a plausible one-line regression?

    python scripts/mutation.py [-n 60] [--seed 0] [--jobs 1] [--timeout 900] [--modules a,b]
    python scripts/mutation.py --list            # the mutation sites per module, nothing run

Samples N mutants across the package with a fixed seed, spread round-robin over
the modules that have test files of their own (tests/<folder>/test_<module>*.py). A mutant changes one AST node: a comparison
(``==``/``!=``, ``<``/``<=``, ``in``/``not in``, ``is``/``is not``), ``and``/``or``,
an arithmetic operator, a number (n -> n+1), ``True``/``False``, drops a
``not``, negates an ``if``/``while`` condition, or makes a ``return`` give None.
Docstrings and other strings are left alone.

For each mutant it runs the test files mapped to the mutated module (tests_for: its
own files, the files that import it, and for a front-end the end-to-end tests; ``pytest -x``) and counts the mutant *killed* when a test fails or the run
times out. A mutant those files miss then meets the rest of the suite: it is
*killed* when a test there fails with it and passes without it, *survived*
when the whole suite passes (``--no-whole-suite`` stops at the mapped files).
A test that kills its own process with the mutant (a native crash) counts as
failing, and so does a test file that cannot be imported with it. It prints the kill rate and each
survivor (module:line, what changed) to look at: an unguarded behaviour (write
a test of that behaviour), or an equivalent mutant (add it to EQUIVALENT with
the reason; those are run too, left out of the rate and listed apart).

Nothing in the working tree is touched: the package, tests and data are copied
to a temporary directory first (one copy per job), mutants are written there,
and tests run with that copy first on PYTHONPATH and a fresh copy of the user's
driver cache as $XDG_CACHE_HOME (a mutant's bad probe stays in its run). Tests that already fail on
the unmutated copy are deselected, so work in progress elsewhere does not count
as kills. Offline tool, CPU heavy: minutes per mutant for the slow test files.
"""

from __future__ import annotations

import argparse
import ast
import functools
import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PKG = "mlirhlo_driver"

# Where a module's tests are (CONTRIBUTING.md, "Where a test goes"): its own files,
# tests/<its folder>/test_<module>.py and test_<module>_<behaviour>.py (a package's
# __init__.py: test_init*.py), then every test file that imports it by name. The front-ends
# (cli/, commands/, __main__.py) are reached through the command line, which the end-to-end
# tests (tests/e2e/) drive by main(argv) or a subprocess without importing them.
FRONT_ENDS = ("cli/", "commands/", "__main__.py")
E2E = "e2e"
# What a module no test file speaks for or imports runs: the first thing a user does.
FALLBACK = f"{E2E}/test_opt.py"


# Mutants that change no observable behaviour, keyed by site_key: (module, the
# mutated line's text as in the source, stripped; the change as printed). They
# still run (a kill means the entry is wrong: it is reported), but are left out
# of the kill rate and listed apart with the reason. Only truly equivalent
# mutants belong here; an untested behaviour needs a test instead.
EQUIVALENT: dict[tuple[str, str, str], str] = {
    ("inputs/loader.py", "while start < len(text):", "Lt -> LtE"):
        "at start == len(text) the extra pass finds no newline, reads an empty line and moves past "
        "the end: the same result",
    ("batch/run_report.py",
     "Console(width=max(100, len(max((r.name for r in reports), key=len)) + 60), markup=False,", "100 -> 101"):
        "the summary table is at most its longest name plus about 53 columns wide (borders, status, "
        "and four numbers of 10 characters at most), so a console of 100 or 101 columns never wraps "
        "it; it does not expand to the console's width",
    ("listings.py", 'f"{s.memory_bandwidth / 1e9:.0f} GB/s",', "1000000000.0 -> 1000000001.0"):
        "the table lists the shipped specs only, whose bandwidths are whole GB/s: a part-per-billion "
        "smaller figure still rounds to the same number for every one of them",
    ("inputs/checks.py", "pos = n if j < 0 else j", "Lt -> LtE"):
        "j is where the '//' comment starting at pos ends: -1 (no newline) or past pos + 1, never 0",
    ("execute/spmd.py", "if time.time() + 0.2 >= deadline:", "GtE -> Gt"):
        "the two differ only when time.time() + 0.2 equals the deadline to the last bit of a "
        "float; the probe then gives up one 0.2 s poll later, still before its caller's deadline",
    ("execute/engine.py", "for flat in np.flatnonzero(bad.reshape(-1))[: examples + 1]:", "1 -> 2"):
        "the slice only bounds the work: of the first examples + 1 mismatches at most one is the "
        "worst, which is skipped, and the loop stops at `examples`; a longer slice gives the same examples",
    ("_native/jaxlib.py", "return ArrayImpl(aval, GSPMDSharding.get_replicated(all_devices), buffers, committed=True,",
     "True -> False"):
        "the array goes straight to execute_sharded, which takes its buffers as they lie; commitment only "
        "steers jax.jit's device placement, which never sees it",
    ("execute/spmd.py", 'print(f"process {me} of {n}: joined the run at {cfg.coordinator}", flush=True)',
     "True -> False"):
        "as below: the line is only later, the worker flushes before os._exit",
    ("execute/spmd.py", "flush=True)", "True -> False"):
        "a worker's progress line then reaches the supervisor later, not in another order or "
        "form: every worker line goes through the one stdout buffer, which worker_main flushes "
        "before os._exit",
    ("cuda/kernels.py", "Console(file=buf, width=1000, no_color=True, highlight=False, emoji=False, "
                        "markup=False).print(table)",
     "True -> False"):
        "rich writes no colour codes to a StringIO, which is no terminal, whatever no_color says",
    ("cuda/specs.py", "minor = info.cuda_compute_capability.minor if cc else 0", "0 -> 1"):
        "reached only for a spec without a compute capability (cc 0), where _reported_since_0_12 "
        "gives nothing for any minor: no (0, minor) is in the table and 0 < 8",
    ("batch/opt.py", "timing: bool = False", "False -> True"):
        "a default for direct constructions only: run_opt, the one caller, always passes timing= "
        "(the --timing flag, which tests/e2e/test_opt.py and tests/batch/test_opt.py check on and off)",
    ("batch/opt.py", "several: bool = False                      # more than one module: timing tables get titles",
     "False -> True"):
        "a default for direct constructions only: run_opt, the one caller, always passes several= "
        "(len(tasks) > 1), which test_batch's timing titles check",
    ("cuda/binaries.py", "self._assembled = True", "True -> False"):
        "the flag only saves work: a second call takes XLA's cubins again and assembles the "
        "others again with the same ptxas and options, which gives the same bytes "
        "(test_cubins_are_xlas_own_and_ptxas_remakes_them)",
    ("cuda/binaries.py", 'cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") '
     'else os.cpu_count() or 1', "1 -> 2"):
        "reached only where os.sched_getaffinity is missing and os.cpu_count() is None; "
        "ptxas's thread count changes no code",
    ("cuda/binaries.py", 'cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") '
     'else os.cpu_count() or 1', "Or -> And"):
        "the else branch never runs: ptxas runs only with a jax CUDA plugin, which is built for "
        "Linux alone, and Linux always has os.sched_getaffinity",
    ("cuda/kernels.py", "by_regs = 1 << 30", "30 -> 31"): "1 << 30 stands for 'no limit'; 1 << 31 does too",
    ("xla/summary.py", '"memory": {k: int(art.memory_stats.get(k, 0)) for k in MEMORY_FIELDS},', "0 -> 1"):
        "the default is never taken: summarize runs only after a compile that made an executable, "
        "and every supported jaxlib's CompiledMemoryStats has all six fields (0.9.0 and 0.12.0.1 checked)",
    ("cuda/kernels.py", "by_smem = limits.smem_per_sm // smem if smem else 1 << 30", "30 -> 31"):
        "1 << 30 stands for 'no limit'; 1 << 31 does too",
    ("xla/flags.py", 'if not stripped or stripped.startswith("#"):', "Or -> And"):
        "blank and comment lines skipped early are skipped again by the field loop below "
        "(its first check breaks on an empty or '#' rest of line); nothing else reaches it",
    ("core/cache.py", "return cache_dir() / key[:2] / (key + _SUFFIX)", "2 -> 3"):
        "the fan-out directory of a private cache: _entry_path is the one place entries are named, "
        "for writing, reading and pruning alike, so a three-character fan-out finds every entry it wrote",
    ("mlir/passes.py", "if 3 <= len(m) <= 64)", "LtE -> Lt #2"):
        "the bound only keeps the scan cheap: jaxlib's longest pass name has 47 characters "
        "(sdy-update-non-divisible-input-output-shardings, 0.12.0.1), so no name of exactly 64 is lost",
    ("mlir/passes.py", "if 3 <= len(m) <= 64)", "64 -> 65"):
        "as the entry above: no pass name comes near 64 characters, so a bound of 65 finds the same passes",
    ("_native/isolate.py", "chunk = os.read(fd, min(n, 1 << 20))", "20 -> 21"):
        "the chunk size only bounds one read: the loop reads until n bytes have come, whatever "
        "each read returns, so 2 MiB chunks give the same bytes",
    ("commands/xla_tools.py", "return 0", "return None"):
        "hlo_opt's code goes to the front-end's sys.exit (cli/xla/tools.py _entry), where None is exit 0 "
        "too; --list-stages prints the same lines either way",
    ("ir/fusions.py", 'frame_id = getattr(md, "stack_frame_id", 0)', "0 -> 1"):
        "the default is never read: OpMetadata has stack_frame_id in both supported jaxlibs "
        "(0.9.0 and 0.12.0.1 checked)",
    ("ir/protos.py", 'if line is not None and 0 < line <= text.count("\\n") + 1:', "1 -> 2"):
        "the line comes from text_format's ParseError, whose tokenizer reads text.split('\\n'): "
        "it never reports a line past the last one, so the wider bound is never reached",
    ("ir/protos.py", "for length in range(6, min(128, end - 1)):", "6 -> 7"):
        "a descriptor's file name ends in '.proto' (6 bytes), so length 6 would be a file named "
        "'.proto' alone; no proto file is, so starting the scan at 7 finds the same files",
    ("mlir/passes.py", "tmp.write_text(json.dumps([asdict(p) for p in found], indent=0))", "0 -> 1"):
        "only the whitespace of the private pass-list cache file changes; its one reader, "
        "json.loads in native_passes, gets the same rows",
    ("cuda/kernels.py", "Console(file=buf, width=1000, no_color=True, highlight=False, emoji=False, "
                        "markup=False).print(table)",
     "False -> True"):
        "highlight only adds styles, and no_color=True drops every style from the text",
    ("core/diff.py", 'width = max([len(_kernel_name(x["kernel"], x["launch"])) for x in k["only_a"] + k["only_b"]] + [0])',
     "0 -> 1"):
        "the default width is taken only when no kernel is on one side only, and then no row is padded to it",
    ("ir/hlo_proto.py", "if _last_sniff is not None and _last_sniff[0] == buf:  # detect_format, then the loader",
     "0 -> 1"):
        "a memo of the last sniff: comparing the bytes with the cached answer (a str or None) never "
        "matches, so the sniff is done again and gives the same answer, only later",
    ("execute/run.py", "got, _, _ = engine.run_xla(_on_platform(probe, options), arrays, options.target, 1)", "1 -> 2"):
        "the bisect probe's iteration count: a second run of the same executable on the same inputs gives "
        "the same outputs, and its times are discarded",
    # Timing only: these change how long a wait may last, never what is reported; a test could
    # see them only by timing the run, which the suite does not do (scripts/bench_*.py measure).
    ("execute/spmd.py", "t.join(timeout=5)", "5 -> 6"):
        "the relays are joined after _stop has ended every worker, so their pipes are closed and "
        "each reader has already seen EOF; the bound matters only for a pipe a grandchild still "
        "holds, and then only how long the join waits, not what was relayed",
    ("execute/spmd.py", "end = time.time() + 0.5", "0.5 -> 1.5"):
        "the grace that lets the peers of a dead process fail by themselves before they are "
        "stopped: they fail within milliseconds (a collective's connection resets), so a longer "
        "grace changes when they are stopped, not which one is blamed",
    ("core/diff.py", "return round(b - a, 4) if isinstance(a, float) or isinstance(b, float) else b - a",
     "4 -> 5"):
        "the one float field a side holds is occupancy, already rounded to 4 places "
        "(Occupancy.to_dict), and memory and buffer fields are ints: the difference of two "
        "4-place values rounds the same to 4 or 5 places (every pair w/m, w'/m for m <= 256 checked)",
    ("ir/hlo_proto.py", 'why = ": " + e.message.split(": ", 1)[-1]  # "malformed HloModuleProto: <why>"', "1 -> 2"):
        "the two splits differ only if the reason after 'malformed HloModuleProto: ' holds another "
        "': ', and it cannot: protos builds it from fixed phrases, numbers and schema field paths, "
        "none from the input's bytes (20,000 randomly corrupted module protos: the same messages)",
    ("ir/decompose.py", "self.next = max((i.id & 0xFFFFFFFF for i in comp.instructions), default=-1) + 1",
     "1 -> 2"):
        "the default is for a computation without instructions, and none reaches the builder: it "
        "is made for the computation holding the while and for the loop's body and condition, "
        "which hold their parameter",
    ("ir/decompose.py", "self.next = max((i.id & 0xFFFFFFFF for i in comp.instructions), default=-1) + 1",
     "1 -> 2 #2"):
        "the added instructions' ids start one later, leaving a gap: still unique and in their "
        "computation, the HLO text of the rewritten module is byte-identical, and its one caller "
        "(_preprocess) hands the proto to the loader, whose StableHLO drops the ids",
    ("xla/pass_log.py", "total = spent or 1  # the % column's divisor: no pass took time, so every row is 0%",
     "1 -> 2"):
        "the divisor is taken only when every row's time is 0 us, and 0 over 1 or over 2 is 0.0%; "
        "the title prints what was spent, not the divisor (test_a_table_of_no_time_says_zero_ms_and_zero_percent)",
    ("ir/literals.py", 'return "inf" if x > 0 else "-inf"', "0 -> 1"):
        "x is +inf or -inf on this line (np.isinf above): inf > 0 and inf > 1 alike, -inf neither",
    ("cuda/ptx.py", "edits.append(_Edit(lineno, start + 1, 0, start + 1, end - start))", "1 -> 2 #2"):
        "the edit removes text (new_len 0), and _map_col reads old_col only for a column inside "
        "the new text (new_col <= col < new_col + new_len): never, so old_col is never read",
    ("cuda/ptx.py", "edits.append(_Edit(lineno, start + 1, 0, start + 1, end - start))", "Add -> Sub #2"):
        "the edit removes text (new_len 0), and _map_col reads old_col only for a column inside "
        "the new text (new_col <= col < new_col + new_len): never, so old_col is never read",
    ("cuda/ptx.py", "man = bits & ((1 << f.mbits) - 1)", "1 -> 2 #3"):
        "the wider mask (2 << mbits) - 1 adds only bit mbits, the exponent's lowest bit: a normal "
        "number ORs that bit in on the next line anyway, a subnormal has it 0; it differs only for "
        "x86_fp80's explicit bit, which never reaches _bits_value (_exact_in is called for half, "
        "bfloat, float and double). Checked on every half and bfloat pattern and 200,000 random "
        "float and double ones: the same value",
    ("cuda/specs.py", 'before = lines[line - 1][:col - 1] if 0 < line <= len(lines) else ""', "Lt -> LtE"):
        "the line is ParseError.GetLine(), which text_format reports 1-based (its tokenizer's line + 1): "
        "never 0, so '0 <= line' admits nothing more",
    ("cuda/ptx.py", "if Fraction(n, d) < Fraction(2) ** e:", "Lt -> LtE"):
        "the two differ only at an exact power of two, where e is then one too high; the carry "
        "step after rounding gives back the same mantissa and exponent",
    ("cuda/ptx.py", "man = bits & ((1 << f.mbits) - 1)", "1 -> 2"):
        "the wider mask keeps the format's lowest exponent bit, which lands on the double's lowest "
        "exponent bit: that bit always has the same value (the exponent offset, 896 for float, is even, "
        "and inf/NaN set it anyway)",
    ("cuda/ptx.py", "man &= (1 << f.mbits) - 1", "1 -> 2 #2"):
        "a subnormal's mantissa has been shifted left at least once, so bit 0 is already 0 when it is masked",
    ("cuda/ptx.py", 'bits = _special_bits("inf", neg, 0, f)', "0 -> 1"):
        "the inf case returns before the payload is read",
    ("cuda/ptx.py", 'name = m.group(1) if m else os.path.basename(path).rsplit("-", 2)[-2]', "2 -> 3"):
        "[-2] of rsplit is the same for any split count of 2 or more",
    ("inputs/loader.py", 'at = text.find("mhlo.", at + 5)', "5 -> 6"):
        '"mhlo." cannot overlap itself: an occurrence starting at at + 5 follows a ".", which already '
        "rules it out as an op name",
    ("inputs/loader.py", "lut = np.zeros(256, np.int8)", "256 -> 257"):
        "the table is indexed by bytes, 0 to 255: an extra entry is never read",
    ("inputs/loader.py", "lut[list(_BRACKETS[:4])] = 1", "4 -> 5"):
        "the fifth bracket is ')', which the next line sets to -1 anyway",
    ("mlir/pipeline.py", "for n in range(1, len(flat) + 1):", "1 -> 2 #2"):
        "the extra step runs flat[:len(flat) + 1], the whole pipeline again: it ran one step earlier, "
        "and had it failed the loop would have returned then",
    ("core/diff.py", 'return ""', "return None"):
        "the text goes only into a rich table cell, and rich renders None as an empty cell "
        "(Table.add_row documents it): the table is byte-identical",
    ("core/diff.py", 'width = max([len(x["name"]) for x in f["only_a"] + f["only_b"] + f["kind_changed"]] + [0])',
     "0 -> 1"):
        "the default counts only when no fusion row is printed (fusion names are never empty), "
        "as for the kernel list's width",
    ("execute/engine.py", "window[d] = updates[w] if w is not None else 1", "1 -> 2"):
        "the else needs update_window_dims shorter than the operand's non-inserted dimensions; "
        "StableHLO's verifier refuses such a scatter, so no module that loads reaches it",
    ("execute/engine.py", "mm = compare(valid, full[target], 0, rtol, atol)", "0 -> 1"):
        "the index only sets the mismatch's output number, which this message does not use",
    ("execute/spmd.py", "if not message and (code < 0 or code > 2 or terminated):  # died without saying why",
     "Lt -> LtE"):
        "the failing code is never 0 here: it comes from a code outside (None, 0), a timeout's 1, "
        "or a dead process's (below 0 or above 2)",
    ("execute/spmd.py", "return code if 0 < code <= 2 else 1", "Lt -> LtE"):
        "as above: the failing code is never 0 here",
    ("cuda/tools.py", "dropped = self.version >= (13,) and 0 <= sm_number(sm) < CUDA13_OLDEST_SM", "GtE -> Gt"):
        "a probed version has at least two parts (its pattern is V(\\d+(?:\\.\\d+)+)), and (13, x) > (13,) "
        "for every x: only a hand-made version (13,) tells them apart",
    ("cuda/tools.py", "out, _ = p.communicate(timeout=30)", "30 -> 31"):
        "only a ptxas that hangs between 30 and 31 seconds sees the difference: a bound on waiting, "
        "like the timing-only waits below",
    ("ir/protos.py", "if pos >= end:", "GtE -> Gt"):
        "at pos == end the next read, sec[pos], raises IndexError, which is caught and also gives None",
    ("ir/protos.py", "for length in range(6, min(128, end - 1)):", "128 -> 129"):
        "a 128-byte name takes a two-byte length, so its 0x0A tag sits one byte before the place the "
        "one-byte length check looks at: no bytes pass the check and give a matching name",
    ("ir/protos.py", "if lower and len(message) > 1 and message[0].isupper() and message[1].islower():", "1 -> 2"):
        "the two differ only for a message of exactly 2 characters, which text_format never gives",
    ("ir/hlo_proto.py", "while pos < len(buf) and shift < 35:", "35 -> 36"):
        "the extra step reads a sixth length byte, a length upb refuses to decode: the sniff gives None either way",
    ("ir/hlo_proto.py",
     'return "HloProto" if after == len(buf) or (after < len(buf) and buf[after] == 0x1A) else None', "Lt -> LtE"):
        "after == len(buf) has already returned through the or's first half",
    ("xla/flags.py", "positions[name] = (lineno, at + 1, (value_at + 1 if value_at >= 0 else at) + 1)", "0 -> 1"):
        "value_at is -1 or past the flag's '--xla_' (the first '=' after it): never 0",
    ("xla/flags.py", "positions[name] = (lineno, at + 1, (value_at + 1 if value_at >= 0 else at) + 1)", "GtE -> Gt"):
        "value_at is -1 or past the flag's '--xla_' (the first '=' after it): never 0",
    ("xla/flags.py", "while pos < len(line):", "Lt -> LtE"):
        "at pos == len(line), line[pos:] is empty and the loop's first statement breaks out",
    ("ir/decompose.py", "parts += [s.SerializeToString(deterministic=True) for s in operand_shapes]", "True -> False"):
        "a ShapeProto has no map fields: its bytes are the same either way",
    ("ir/decompose.py", "parts.append(body.SerializeToString(deterministic=True))", "True -> False"):
        "one callee serializes to the same bytes each time, and two callees never match (their ids "
        "are part of the body)",
    ("ir/decompose.py", "new_cid = max((c.id for c in msg.computations), default=0) + 1", "0 -> 1"):
        "a module always has a computation: the default is never taken",
    ("ir/decompose.py",
     "next_local = {c.id: max((i.id & 0xFFFFFFFF for i in c.instructions), default=0) + 1", "0 -> 1"):
        "a computation always has instructions (HLO with an empty one does not load): the default is never taken",
    ("ir/decompose.py", 'c = new("constant", scalar, [], label.replace("zeros", "zero", 1))', "1 -> 2"):
        'the label holds "zeros" once',
    ("ir/decompose.py", "body_id, cond_id = list(w.called_computation_ids)[:2]", "2 -> 3"):
        "a while calls exactly two computations, its body and its condition",
    ("ir/decompose.py", "body_id, cond_id = list(w.called_computation_ids)[:2]", "2 -> 3 #2"):
        "a while calls exactly two computations, its body and its condition",
    ("ir/literals.py", "if not minor_to_major or minor_to_major == list(range(len(dims) - 1, -1, -1)):", "1 -> 2"):
        "the row-major test is a shortcut: the general path transposes a row-major literal to the same array",
    ("ir/literals.py", "if not minor_to_major or minor_to_major == list(range(len(dims) - 1, -1, -1)):", "Sub -> Add"):
        "the row-major test is a shortcut: the general path transposes a row-major literal to the same array",
    ("ir/literals.py", "if not minor_to_major or minor_to_major == list(range(len(dims) - 1, -1, -1)):",
     "1 -> 2 #2"):
        "the row-major test is a shortcut: the general path transposes a row-major literal to the same array",
    ("ir/literals.py", "if not minor_to_major or minor_to_major == list(range(len(dims) - 1, -1, -1)):",
     "1 -> 2 #3"):
        "the row-major test is a shortcut: the general path transposes a row-major literal to the same array",
    ("ir/literals.py", 'rows = ",\\n".join("  " + block(r, depth + 1, index + (i,)) for i, r in enumerate(x))',
     "1 -> 2"):
        "depth is only compared with 0, and a nested call's depth is never 0 either way",
    ("ir/literals.py", 'rows = ",\\n".join("  " + block(r, depth + 1, index + (i,)) for i, r in enumerate(x))',
     "Add -> Sub"):
        "depth is only compared with 0, and a nested call's depth is never 0 either way",
    ("ir/literals.py", 'inner = ",\\n".join(block(r, depth + 1, index + (i,)) for i, r in enumerate(x))', "1 -> 2"):
        "depth is only compared with 0, and a nested call's depth is never 0 either way",
    ("ir/literals.py", 'inner = ",\\n".join(block(r, depth + 1, index + (i,)) for i, r in enumerate(x))',
     "Add -> Sub"):
        "depth is only compared with 0, and a nested call's depth is never 0 either way",
    ("core/cache.py",
     'fd, self._tmp = tempfile.mkstemp(prefix=f".{key[:16]}.", suffix=".tmp", dir=self.path.parent)', "16 -> 17"):
        "only a temporary file's name prefix: 'cache clear' removes temporary files by */.*.tmp, "
        "which matches either way",
    ("batch/opt.py", "width = max((len(r.name) for r in failed), default=0)", "0 -> 1"):
        "the width is only used to print failed rows, so the list is never empty when it matters",
    ("cuda/specs.py", "for digits in range(1, 10):", "1 -> 2"):
        "a value whose 1-digit form reads back as the same float32 gives the same number at 2 digits",
    ("cuda/specs.py", "cc_at: Pos | None = field(default=None, compare=False, repr=False)  # in the file",
     "False -> True"):
        "cc_at is a function of the spec's text, which is compared already: no two specs differ in it alone",
    ("cuda/roofline.py",
     'if isinstance(cost, dict) and cost.get("flops", 0) >= 0 and cost.get("bytes accessed", 0) >= 0:', "0 -> 1"):
        "the default stands for a missing key, and 0 and 1 both pass >= 0",
    ("cuda/roofline.py",
     'if isinstance(cost, dict) and cost.get("flops", 0) >= 0 and cost.get("bytes accessed", 0) >= 0:', "0 -> 1 #3"):
        "the default stands for a missing key, and 0 and 1 both pass >= 0",
    ("ir/fusions.py", "new_cid = max((c.id for c in msg.computations), default=0) + 1", "0 -> 1"):
        "the default only counts for a module without computations, where nothing is isolated",
    ("_native/isolate.py", "return (-code) & 0x7F if code < 0 else code << 8", "0 -> 1"):
        "returncode is an int: the change moves only 0 to the other branch, and (-0) & 0x7F == 0 << 8",
    ("cli/app.py",
     'metavar="FILE...", help="Files, globs, directories, or package.module:function (with --args).", '
     'show_default=False)]', "False -> True"):
        "the argument's default is None, for which typer shows nothing: run --help is byte-identical",
    ("commands/spmd_run.py", "if procs > 1 and options.num_devices % procs:", "Gt -> GtE"):
        "procs is at least 1 here, and num_devices % 1 is 0: the two differ in nothing",
    ("execute/pass_bisect.py", "result = PassBisect([], len(candidates), 0, already_disabled=sorted(already))",
     "0 -> 1"):
        "both of find's return paths set result.trials again before returning",
    ("batch/run_report.py",
     "Console(width=max(100, len(max((r.name for r in reports), key=len)) + 60), markup=False,", "60 -> 61"):
        "as for the 100 on this line: the table is narrower than its longest name plus 60, so one "
        "more column never wraps it (checked with a 90-character name and the widest figures)",
    ("cuda/binaries.py", 'version = tuple(int(x) for x in job.ptxas_version.split(".")[:2])', "2 -> 3"):
        "a probed version is numbers only (its pattern is V(\\d+(?:\\.\\d+)+)), and a third number never "
        "changes how it compares with (12, 8)",
    ("_native/cluster.py",
     'futures = {client.submit(run_task, blob, task, timeout, pure=False, key=f"mlirhlo-{batch}-{i}"): i',
     "False -> True"):
        "Dask's pure only chooses how a task's key is made when none is given, and each task is given "
        "its own key here",
    ("xla/pass_log.py", "if o.is_pipeline and len(stack) > 1 and stack[-1][1] == name:", "Gt -> GtE"):
        "a pass is a pipeline only when its entry was pushed above the top-level pipeline's, which "
        "leaves only through its own timer or a top-level reset (that clears every open pass): a "
        "closing nested pipeline always sees two entries or more (600,000 random logs parsed alike)",
    ("ir/emit.py", "chlo = sorted(set(re.findall(r\"\\bchlo\\.[a-z_]+\", module.operation.get_asm(large_elements_limit=1))))",
     "1 -> 2"):
        "the limit only elides constants' values in the text searched for CHLO op names; a "
        "constant's value is numbers and never spells 'chlo.'",
    ("mlir/builtin_passes.py",
     "return [int(x) for x in re.findall(r\"-?\\d+\", str(op.attributes[key]).split(\":\", 1)[-1])]", "1 -> 2"):
        "the dims attribute prints as array<i64: 1, 0>, with one colon: one or two splits give the "
        "same last piece",
    ("outputs.py", "mask = os.umask(0)", "0 -> 1"):
        "_umask only reads the mask: the next line puts the old one straight back, so the value set "
        "between the two calls is never used",
}

_SWAP_CMP = {ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE,
             ast.GtE: ast.Gt, ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot, ast.IsNot: ast.Is}
_SWAP_BIN = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.FloorDiv, ast.Div: ast.Mult,
             ast.FloorDiv: ast.Mult, ast.Mod: ast.FloorDiv}


# Each operator's text in the source (a pattern for the one looked for, the text written for the new one).
_CMP_TEXT = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=",
             ast.In: "in", ast.NotIn: "not in", ast.Is: "is", ast.IsNot: "is not"}
_CMP_TOKEN = {**{k: re.escape(v) for k, v in _CMP_TEXT.items()},
              ast.In: r"\bin\b", ast.NotIn: r"\bnot\s+in\b", ast.Is: r"\bis\b", ast.IsNot: r"\bis\s+not\b"}
_BIN_TEXT = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%"}


_MEMOIZERS = {"lru_cache", "cache", "cached_property"}


def _decorator_name(node: ast.AST) -> str:
    if isinstance(node, ast.Call):
        node = node.func
    return node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")


class Mutator(ast.NodeTransformer):
    """Visits mutation sites in a fixed order; mutates the ``target``-th one (or none: -1).

    ``sites`` collects (lineno, description) for every site seen, so the same
    class both lists sites and applies one.
    """

    def __init__(self, target: int = -1) -> None:
        self.target = target
        self.sites: list[tuple[int, str]] = []
        # Per site: inside a function body (runs when called), or at import (module and class
        # level, decorators, defaults): every test relies on those, whichever imported first.
        self.in_call: list[bool] = []
        self._depth = 0
        self.applied: str | None = None
        # How the mutant edits the source text (mutant_source): the kind, then its nodes.
        self.edit: tuple | None = None

    def _site(self, node: ast.AST, what: str) -> bool:
        index = len(self.sites)
        self.sites.append((getattr(node, "lineno", 0), what))
        self.in_call.append(self._depth > 0)
        if index == self.target:
            self.applied = what
            return True
        return False

    # Docstrings, annotations and type-checking blocks hold no behaviour.
    def _body(self, node):
        body = node.body
        if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) \
                and isinstance(body[0].value.value, str):
            node.body = [body[0]] + [self.visit(n) for n in body[1:]]
        else:
            node.body = [self.visit(n) for n in body]
        return node

    def visit_Module(self, node):
        return self._body(node)

    def visit_FunctionDef(self, node):
        node.decorator_list = [self.visit(d) for d in node.decorator_list]
        node.args = self.visit(node.args)
        # A memoized function's body runs once per process, under whichever test called it
        # first: the tests that rely on its result are not the ones that ran it. Such a body
        # counts as import time.
        step = 0 if any(_decorator_name(d) in _MEMOIZERS for d in node.decorator_list) else 1
        self._depth += step
        try:
            return self._body(node)
        finally:
            self._depth -= step

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node):
        return self._body(node)

    def visit_arg(self, node):
        return node

    def visit_keyword(self, node):
        # dataclasses' field(repr=...) only changes how an object prints: every such
        # mutant is equivalent, so none is drawn.
        if node.arg == "repr":
            return node
        return self.generic_visit(node)

    def visit_AnnAssign(self, node):
        if node.value is not None:
            node.value = self.visit(node.value)
        return node

    def visit_If(self, node):
        if isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            return node
        self.generic_visit(node)
        if self._site(node, "negate if condition"):
            self.edit = ("negate", node.test)
            node.test = ast.UnaryOp(ast.Not(), node.test)
        return node

    def visit_While(self, node):
        self.generic_visit(node)
        if self._site(node, "negate while condition"):
            self.edit = ("negate", node.test)
            node.test = ast.UnaryOp(ast.Not(), node.test)
        return node

    def visit_Compare(self, node):
        self.generic_visit(node)
        for i, op in enumerate(node.ops):
            new = _SWAP_CMP.get(type(op))
            if new and self._site(node, f"{type(op).__name__} -> {new.__name__}"):
                self.edit = ("op", (([node.left, *node.comparators][i], node.comparators[i]),),
                             _CMP_TOKEN[type(op)], _CMP_TEXT[new])
                node.ops[i] = new()
        return node

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        new = ast.Or if isinstance(node.op, ast.And) else ast.And
        if self._site(node, f"{type(node.op).__name__} -> {new.__name__}"):
            old = "and" if isinstance(node.op, ast.And) else "or"
            self.edit = ("op", tuple(zip(node.values, node.values[1:])), rf"\b{old}\b", "or" if old == "and" else "and")
            node.op = new()
        return node

    def visit_BinOp(self, node):
        self.generic_visit(node)
        if isinstance(node.left, ast.Constant) and isinstance(node.left.value, str):
            return node  # "%" formatting, string concatenation
        new = _SWAP_BIN.get(type(node.op))
        if new and self._site(node, f"{type(node.op).__name__} -> {new.__name__}"):
            self.edit = ("op", ((node.left, node.right),), re.escape(_BIN_TEXT[type(node.op)]), _BIN_TEXT[new])
            node.op = new()
        return node

    def visit_AugAssign(self, node):
        self.generic_visit(node)
        new = _SWAP_BIN.get(type(node.op))
        if new and self._site(node, f"{type(node.op).__name__}= -> {new.__name__}="):
            self.edit = ("op", ((node.target, node.value),), re.escape(_BIN_TEXT[type(node.op)] + "="),
                         _BIN_TEXT[new] + "=")
            node.op = new()
        return node

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.Not) and self._site(node, "drop 'not'"):
            self.edit = ("drop-not", node, node.operand)
            return node.operand
        return node

    def visit_Constant(self, node):
        v = node.value
        if isinstance(v, bool):
            if self._site(node, f"{v} -> {not v}"):
                self.edit = ("text", node, repr(not v))
                return ast.copy_location(ast.Constant(not v), node)
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            if self._site(node, f"{v!r} -> {v + 1!r}"):
                self.edit = ("text", node, repr(v + 1))
                return ast.copy_location(ast.Constant(v + 1), node)
        return node

    def visit_Return(self, node):
        self.generic_visit(node)
        if node.value is not None and not (isinstance(node.value, ast.Constant) and node.value.value is None):
            if self._site(node, "return None"):
                self.edit = ("text", node.value, "None")
                node.value = ast.Constant(None)  # as written by the edit: the same as a bare return
        return node


def sites_of(path: Path) -> list[tuple[int, str]]:
    m = Mutator()
    m.visit(ast.parse(path.read_text()))
    return m.sites


def mutant_source(path: Path, index: int) -> tuple[str, str]:
    """The module with its index-th site mutated, and the change as printed.

    Only the mutated token or expression is rewritten in the text: the rest of the file
    (comments, formatting, line numbers) stays as written, so the linter and any test
    that reads the source see a one-line regression, not a reformatted module. The edit
    is checked against the mutated tree; where it could not stand for it, the whole
    module is printed from the tree instead.
    """
    text = path.read_text()
    m = Mutator(index)
    tree = m.visit(ast.parse(text))
    ast.fix_missing_locations(tree)
    assert m.applied is not None and m.edit is not None, (path, index)
    raw = text.encode()
    starts = [0]
    for line in raw.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))

    def span(node: ast.AST) -> tuple[int, int]:  # ast's columns count UTF-8 bytes
        return starts[node.lineno - 1] + node.col_offset, starts[node.end_lineno - 1] + node.end_col_offset

    edits: list[tuple[int, int, bytes]] = []
    kind, *rest = m.edit
    if kind == "negate":
        a, b = span(rest[0])
        edits.append((a, b, b"not (" + raw[a:b] + b")"))
    elif kind == "op":
        # The operator lies between its operands, among parentheses, spaces and comments.
        pairs, token, new = rest
        for left, right in pairs:
            a, b = span(left)[1], span(right)[0]
            gap = raw[a:b].decode()
            masked = re.sub(r"#[^\n]*", lambda c: " " * len(c.group()), gap)
            found = re.search(token, masked)
            if found:
                edits.append((a + len(gap[:found.start()].encode()), a + len(gap[:found.end()].encode()),
                              new.encode()))
    elif kind == "drop-not":
        a = span(rest[0])[0]
        found = re.match(rb"not\s*", raw[a:])
        if found:
            edits.append((a, a + found.end(), b""))
    else:  # "text": the node's whole text
        a, b = span(rest[0])
        lines = raw[a:b].count(b"\n")
        # A text over several lines keeps them (in parentheses), so the lines below keep their numbers.
        edits.append((a, b, f"({rest[1]}{chr(10) * lines})".encode() if lines else rest[1].encode()))
    for a, b, new_text in sorted(edits, reverse=True):
        raw = raw[:a] + new_text + raw[b:]
    spliced = raw.decode()
    try:
        same = bool(edits) and ast.dump(ast.parse(spliced)) == ast.dump(tree)
    except SyntaxError:
        same = False
    return (spliced if same else ast.unparse(tree) + "\n"), m.applied


def site_key(mod: str, lines: list[str], line: int, what: str, seen: dict) -> tuple[str, str, str]:
    """(module, the mutated line's text, change): names a site by what it mutates, not by where.

    Line numbers and site indices move whenever someone edits the module; the
    text of the line does not, so samples and EQUIVALENT entries stay put
    across unrelated edits. A repeat of the same (text, change) in one module
    gets a "#2", "#3" suffix.
    """
    text = lines[line - 1].strip() if 0 < line <= len(lines) else ""
    key = (mod, text, what)
    seen[key] = seen.get(key, 0) + 1
    return (mod, text, what) if seen[key] == 1 else (mod, text, f"{what} #{seen[key]}")


def package_modules(base: Path = REPO) -> list[str]:
    """Every module of the package, as paths under it (``cuda/specs.py``)."""
    root = base / PKG
    return sorted(str(p.relative_to(root)) for p in root.rglob("*.py") if "__pycache__" not in p.parts)


def test_files(base: Path = REPO) -> list[str]:
    """Every test file, as a path under tests/ (``cuda/test_specs.py``)."""
    root = base / "tests"
    return sorted(str(p.relative_to(root)) for p in root.rglob("test_*.py") if "data" not in p.relative_to(root).parts)


def own_tests(mod: str, base: Path = REPO) -> list[str]:
    """A module's own test files, found by the layout: for ``cuda/specs.py``,
    tests/cuda/test_specs.py and tests/cuda/test_specs_*.py (paths under tests/)."""
    path = Path(mod)
    stem = "init" if path.name == "__init__.py" else path.stem
    folder = base / "tests" / path.parent
    found = [folder / f"test_{stem}.py"] + sorted(folder.glob(f"test_{stem}_*.py"))
    return [str(p.relative_to(base / "tests")) for p in found if p.is_file()]


def importers(mod: str, base: Path = REPO) -> list[str]:
    """The test files that import a module by name (``mlirhlo_driver.cuda.specs`` or ``from
    mlirhlo_driver.cuda import specs``); for a package's __init__.py, the package itself, and
    for the top-level one and api.py (whose names it exports), ``import mlirhlo_driver``."""
    dotted = f"{PKG}." + mod.removesuffix(".py").replace("/", ".")
    if dotted.endswith(".__init__"):
        dotted = dotted.removesuffix(".__init__")
    package, _, name = dotted.rpartition(".")
    forms = [] if dotted == PKG else [rf"{re.escape(dotted)}\b"]
    if package:
        forms.append(rf"from {re.escape(package)} import [^\n]*\b{re.escape(name)}\b")
    if mod in ("__init__.py", "api.py"):
        forms.append(rf"^\s*import {PKG}\b(?!\.)")
    pattern = re.compile("|".join(forms), re.M)
    return [t for t in test_files(base) if pattern.search((base / "tests" / t).read_text())]


def command_tests(mod: str, base: Path = REPO) -> list[str]:
    """The end-to-end tests of the command a module is named after: tests/e2e/test_opt.py and
    test_opt_*.py for ``batch/opt.py`` or ``cli/opt.py``."""
    return own_tests(f"{E2E}/{Path(mod).name}", base) if Path(mod).name != "__init__.py" else []


def users(mod: str, base: Path = REPO) -> list[str]:
    """The package's modules that import ``mod`` (relative or absolute imports, at any depth
    in their source), as paths under the package."""
    target = mod.removesuffix(".py").replace("/", ".").removesuffix(".__init__")
    return [other for other, names in _imports(str(base)).items() if other != mod and target in names]


@functools.lru_cache(maxsize=4)
def _imports(base: str) -> dict[str, set[str]]:
    """Module -> the dotted names (under the package) it imports, modules and their members."""
    out = {}
    for other in package_modules(Path(base)):
        here = other.removesuffix(".py").replace("/", ".").split(".")
        names: set[str] = set()
        for node in ast.walk(ast.parse((Path(base) / PKG / other).read_text())):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    module = ".".join(here[:len(here) - node.level] + ([node.module] if node.module else []))
                elif (node.module or "").startswith(PKG):
                    module = node.module.removeprefix(PKG).lstrip(".")
                else:
                    continue
                names.add(module)
                names.update(f"{module}.{a.name}".lstrip(".") for a in node.names)
            elif isinstance(node, ast.Import):
                names.update(a.name.removeprefix(PKG).lstrip(".") for a in node.names if a.name.startswith(PKG + "."))
        out[other] = names
    return out


def tests_for(mod: str, base: Path = REPO) -> list[str]:
    """The test files that should notice a regression in a module, computed from the layout
    (nothing to keep by hand): its own files first (the fastest to fail), the end-to-end tests
    of the command it is named after, then the files that import it, then, for a front-end,
    the other end-to-end tests; for a module none of these name, the own and command tests of
    the package's modules that import it. Paths under tests/."""
    found = own_tests(mod, base) + command_tests(mod, base) + importers(mod, base)
    if mod.startswith(FRONT_ENDS):
        found += [t for t in test_files(base) if t.startswith(E2E + "/")]
    if not found:  # a helper module no test names: the tests of the modules that use it
        found = [t for user in users(mod, base) for t in own_tests(user, base) + command_tests(user, base)]
    return list(dict.fromkeys(found))


def commit_seed(rev: str = "HEAD") -> tuple[int, str]:
    """A seed from a commit's hash: a sample nobody picked, the same for everyone at that commit."""
    proc = subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"], cwd=REPO,
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"error: --commit: '{rev}' names no commit of this repository")
    sha = proc.stdout.strip()
    return int(sha[:12], 16), sha


def weighted_sample(n: int, seed: int, modules: list[str], base: Path = REPO) -> list[tuple[str, int, int, str]]:
    """(module, site index, line, description): each draw picks a module with probability
    in proportion to its lines, then one of its sites not drawn yet (seeded, so repeatable)."""
    import random

    rng = random.Random(seed)
    pools: dict[str, list[tuple[int, int, str]]] = {}
    weights: dict[str, int] = {}
    for mod in modules:
        path = base / PKG / mod
        sites = [(i, line, what) for i, (line, what) in enumerate(sites_of(path))]
        if sites:
            rng.shuffle(sites)
            pools[mod], weights[mod] = sites, len(path.read_text().splitlines())
    out = []
    while len(out) < n and pools:
        names = sorted(pools)
        mod = rng.choices(names, weights=[weights[m] for m in names])[0]
        i, line, what = pools[mod].pop()
        out.append((mod, i, line, what))
        if not pools[mod]:
            del pools[mod]
    return out


def _rank(seed: int, *parts: str) -> str:
    return hashlib.sha256("\x00".join([str(seed), *parts]).encode()).hexdigest()


def sample(n: int, seed: int, modules: list[str], base: Path = REPO) -> list[tuple[str, int, int, str]]:
    """(module, site index, line, description), round-robin over the modules, fixed seed.

    Each site is ranked by a hash of the seed and its site_key, so an edit to one
    line changes only that line's mutants' places in the sample, not the whole draw.
    """
    pools = {}
    for mod in modules:
        path = base / PKG / mod
        lines = path.read_text().splitlines()
        seen: dict = {}
        sites = [(i, line, what, site_key(mod, lines, line, what, seen))
                 for i, (line, what) in enumerate(sites_of(path))]
        pools[mod] = sorted(sites, key=lambda s: _rank(seed, *s[3]))
    order = sorted(modules, key=lambda m: _rank(seed, m))
    out = []
    while len(out) < n and any(pools.values()):
        for mod in order:
            if pools[mod] and len(out) < n:
                i, line, what, _ = pools[mod].pop(0)
                out.append((mod, i, line, what))
    return out


def key_of(mod: str, index: int, base: Path = REPO) -> tuple[str, str, str]:
    """site_key of the index-th site of a module (for the EQUIVALENT lookup)."""
    path = base / PKG / mod
    lines = path.read_text().splitlines()
    seen: dict = {}
    for i, (line, what) in enumerate(sites_of(path)):
        key = site_key(mod, lines, line, what, seen)
        if i == index:
            return key
    raise IndexError(index)


def make_copy(dest: Path) -> Path:
    """The package, its data folders (gpu_specs/, pipelines/: package data kept at the root),
    tests and scripts, and the docs whose blocks and links tests/test_readme.py checks (with
    the site's mkdocs.yml and CI's script, whose test command it compares): what the tests
    read, nothing else."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache")
    for name in (PKG, "gpu_specs", "pipelines", "tests", "scripts", "docs", ".ci"):
        if (REPO / name).exists():
            shutil.copytree(REPO / name, dest / name, ignore=ignore)
    for name in ("pyproject.toml", "README.md", "CONTRIBUTING.md", "ARCHITECTURE.md", "mkdocs.yml"):
        if (REPO / name).exists():
            shutil.copy(REPO / name, dest / name)
    return dest


def _env(copy: Path) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(copy) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


HOOKS = Path(__file__).resolve().parent / "mutation_hooks"


def _private_cache(copy: Path) -> Path:
    """A fresh $XDG_CACHE_HOME for one test run, holding a copy of the user's driver cache: a
    mutant that writes a bad probe or pass list must not reach the user's cache, nor the next
    mutant's run; the copy keeps the probes' answers, so no run pays for them again."""
    xdg = copy / ".mutation-xdg"
    shutil.rmtree(xdg, ignore_errors=True)
    user = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mlirhlo-driver"
    if user.is_dir():
        try:
            shutil.copytree(user, xdg / "mlirhlo-driver")
        except (shutil.Error, OSError):
            pass  # an entry written meanwhile: what was copied is a cache all the same
    xdg.mkdir(exist_ok=True)
    return xdg


def run_tests(copy: Path, tests: list[str], timeout: float, deselect: list[str] = (),
              stop_first: bool = True, select: list[str] | None = None,
              collect_only: bool = False) -> tuple[str, str, list[str]]:
    """('passed' | 'failed' | 'timeout' | 'error', pytest's output tail, the ids of the tests that
    failed, errored or killed the test process, and the paths of the test files that could not
    be collected).

    ``tests`` are files under tests/; ``select``, test ids (``tests/...::name``, or a file's
    path for all its tests) to run instead. Both lists go through the mutation_pytest plugin's
    files, not pytest's output or command line: ids can hold spaces, and a line's tests can be
    thousands. ``collect_only``: only collect them.
    """
    env = _env(copy)
    env["XDG_CACHE_HOME"] = str(_private_cache(copy))
    env["PYTHONPATH"] += os.pathsep + str(HOOKS)
    failed_file = copy / ".mutation-failed"
    failed_file.write_text("")
    env["MUTATION_FAILED"] = str(failed_file)
    running_file = copy / ".mutation-running"
    running_file.write_text("")
    env["MUTATION_RUNNING"] = str(running_file)
    args = [f"tests/{t}" for t in tests]
    if select is not None:
        listing = copy / ".mutation-select"
        listing.write_text("\n".join(select) + "\n")
        env["MUTATION_SELECT"] = str(listing)
        args = sorted({t.split("::")[0] for t in select})
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "mutation_pytest", "-rfE",
           "--no-header", *(["-x"] if stop_first else []), *(["--collect-only"] if collect_only else []), *args]
    for d in deselect:
        cmd += ["--deselect", d]
    proc = subprocess.Popen(cmd, cwd=copy, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        out = None
    finally:
        # The test run's own group: whatever a mutant (or a failing test) left running goes too.
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        proc.wait()
    failed = set(failed_file.read_text().splitlines()) - {""}
    if out is None:
        return "timeout", "", sorted(failed)
    if proc.returncode < 0 and running_file.read_text():
        failed.add(running_file.read_text())  # it died of a signal inside this test (a segfault)
    failed = sorted(failed)
    status = {0: "passed", 1: "failed", 5: "no-tests"}.get(proc.returncode, "error")
    return status, out, failed


def baseline_failures(copy: Path, tests: list[str], timeout: float) -> list[str] | None:
    """Test ids failing on the unmutated copy; None when the files do not even run (collection errors)."""
    status, _, failed = run_tests(copy, tests, timeout, stop_first=False)
    if status not in ("passed", "failed"):
        return None
    return failed


def baselines(copies: list[Path], files: list[str], timeout: float) -> Iterator[tuple[str, list[str] | None, float]]:
    """(file, its failing test ids or None, seconds) for each test file run unmutated, in order,
    as many at once as there are copies. Each run has a copy to itself: its failure list,
    running-test record and private cache live there, and two runs sharing them would mix up
    each other's."""
    import concurrent.futures as cf
    import queue

    idle: queue.Queue = queue.Queue()
    for c in copies:
        idle.put(c)

    def one(name: str) -> tuple[str, list[str] | None, float]:
        copy = idle.get()
        try:
            started = time.monotonic()
            return name, baseline_failures(copy, [name], timeout), time.monotonic() - started
        finally:
            idle.put(copy)

    with cf.ThreadPoolExecutor(len(copies)) as pool:
        yield from pool.map(one, files)


STYLE_TESTS = ("tests/test_architecture.py::test_ruff_is_clean",)


def confirm(copy: Path, target: Path, source: str, original: str, mapped: list[str], timeout: float,
            tries: int = 3, select: list[str] | None = None, timeout_kills: bool = False) -> tuple[str, str]:
    """A survivor of its mapped tests against the rest of the suite: ('failed', 'by TEST') when a
    test fails with the mutant, passes without it and fails with it again when run alone, else
    ('passed', why).

    The mapped files are a fast first filter, not the definition: the suite guards a behaviour
    wherever its test lives. A test that fails without the mutant too (work in progress, a flaky
    or machine-bound test) is deselected and the rest run again, at most ``tries`` times.
    A timeout here counts as survived: only a failing test is taken as a kill.

    ``select``: these test ids (the tests that run the mutated line) instead of the rest of the suite;
    ``timeout_kills``: their run is bounded by their own measured time, so running past it is a hang
    the mutant caused: ('timeout', ...), a kill as in the mapped files.
    """
    rest = [] if select is not None else [t for t in test_files(copy) if t not in mapped]
    # A lint finding on the mutated line is style, not a behaviour the suite guards.
    deselected: list[str] = list(STYLE_TESTS)
    for _ in range(tries):
        target.write_text(source)
        try:
            status, _, failing = run_tests(copy, rest, timeout, deselected, select=select)
        finally:
            target.write_text(original)
        unmutated_failing = [t for t in deselected if t not in STYLE_TESTS]
        if status == "passed" or status == "no-tests":
            return "passed", ("the tests that run it pass" if select is not None else "the whole suite passes") + (
                f" (but {', '.join(unmutated_failing)}, failing without the mutant too, or only once with it)"
                if unmutated_failing else "")
        if status == "timeout":
            if timeout_kills:
                return "timeout", f"the tests that run it ran past {timeout:.0f} s"
            return "passed", "the tests timed out: not counted as a kill"
        if not failing:
            return "passed", f"the tests ended '{status}' with no failing test named"
        unloadable = [t for t in failing if "::" not in t]
        if unloadable:
            # A test file that cannot be imported with the mutant (a call at its top level
            # raises) stops the run before any test: a kill when it imports without it.
            files = [t.removeprefix("tests/") for t in unloadable]
            if run_tests(copy, files, timeout, collect_only=True)[0] == "passed":
                target.write_text(source)
                try:
                    _, _, again = run_tests(copy, files, timeout, collect_only=True)
                finally:
                    target.write_text(original)
                if again:
                    return "failed", "killed by " + ", ".join(unloadable) + " (it cannot be imported)"
            return "passed", "test files that cannot be imported without the mutant too: " + ", ".join(unloadable)
        # The mutant is gone from the copy: does the test pass without it, and fail again with it
        # when run alone? A test that fails only under the load of the whole run (a timing bound)
        # is flaky, not a kill.
        clean, _, _ = run_tests(copy, [], timeout, stop_first=False, select=failing)
        if clean == "passed":
            target.write_text(source)
            try:
                again, _, refailed = run_tests(copy, [], timeout, stop_first=False, select=failing)
            finally:
                target.write_text(original)
            if again in ("failed", "error") and refailed:  # error: the test killed its process
                return "failed", "killed by " + ", ".join(failing)
        deselected += failing
    return "passed", "tests failing without the mutant too, or only once with it: " + ", ".join(
        t for t in deselected if t not in STYLE_TESTS)


def statement_lines(text: str) -> dict[int, int]:
    """Line -> the first line of the innermost statement holding it: coverage records a
    statement by its first line, a mutation site by its own."""
    starts: dict[int, int] = {}
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.stmt):
            for line in range(node.lineno, (node.end_lineno or node.lineno) + 1):
                if starts.get(line, 0) < node.lineno:  # nested statements start later
                    starts[line] = node.lineno
    return starts


def statement_span(text: str, line: int) -> range:
    """The lines of the innermost statement holding ``line`` (a simple statement, or a compound
    one's header up to its body)."""
    best: ast.stmt | None = None
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.stmt) and node.lineno <= line <= (node.end_lineno or node.lineno):
            if best is None or node.lineno >= best.lineno:
                best = node
    if best is None:
        return range(line, line + 1)
    body = getattr(best, "body", None)
    end = body[0].lineno - 1 if isinstance(body, list) and body and body[0].lineno > best.lineno \
        else best.end_lineno or best.lineno
    return range(best.lineno, max(end, line) + 1)


def _unchanged_lines(old: str | None, new: str, span: range) -> dict[int, int] | None:
    """New line -> old line for the lines of ``span``, when each is unchanged from ``old``
    (difflib's matching blocks); None when one changed, or there is no old source."""
    import difflib

    if old is None:
        return None
    a, b = old.splitlines(), new.splitlines()
    moved: dict[int, int] = {}
    for block in difflib.SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks():
        for k in range(block.size):
            moved[block.b + k + 1] = block.a + k + 1
    if any(n not in moved for n in span):
        return None
    return {n: moved[n] for n in span}


def build_covmap(out: Path, timeout: float) -> int:
    """Runs the whole suite once under coverage, each test's lines under its id (in its
    subprocesses too), and writes OUT: per module, its source's hash and, per line, the
    tests that ran it; per test, its time. Needs the coverage package."""
    import json

    try:
        import coverage
    except ImportError:
        raise SystemExit("error: --build-covmap needs coverage (pip install coverage)") from None
    root = Path(tempfile.mkdtemp(prefix="mlirhlo-covmap-"))
    try:
        copy = make_copy(root / "copy")
        data, rc = root / "data", root / "coveragerc"
        durations, fixtures = root / "durations.json", root / "fixtures.json"
        data.mkdir()
        # context: each process's lines carry the test that started it (MUTATION_TEST, set by the
        # plugin); _exit and fork: the native-code helpers' forked children are measured too.
        rc.write_text(f"[run]\nsource = {PKG}\nparallel = true\ndata_file = {data / '.coverage'}\n"
                      "context = ${MUTATION_TEST}\npatch =\n    _exit\n    fork\n")
        env = _env(copy)
        env["PYTHONPATH"] += os.pathsep + str(HOOKS)
        env.update(COVERAGE_PROCESS_START=str(rc), MUTATION_DURATIONS=str(durations),
                   MUTATION_FIXTURES=str(fixtures))
        # Not sysmon: it stops reporting a line after its first run, so only the first test to run
        # a line would be recorded for it.
        env["COVERAGE_CORE"] = "ctrace"
        started = time.monotonic()
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p",
                               "mutation_pytest", "--no-header", "tests"], cwd=copy, env=env, timeout=timeout,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        print(proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else "(no output)",
              f"({time.monotonic() - started:.0f} s)", flush=True)
        cov = coverage.Coverage(config_file=str(rc), data_file=str(data / ".coverage"))
        cov.combine([str(data)])
        cov.save()
        measured = coverage.CoverageData(basename=str(data / ".coverage"))
        measured.read()
        # A shared fixture's lines belong to every test that uses it (the plugin's labels).
        users: dict[str, list[str]] = {}
        for test, labels in (json.loads(fixtures.read_text()) if fixtures.exists() else {}).items():
            for label in labels:
                users.setdefault(label, []).append(test)
        tests: dict[str, int] = {}
        modules: dict[str, dict] = {}
        pkg_root = (copy / PKG).resolve()
        for name in measured.measured_files():
            path = Path(name).resolve()
            if not path.is_relative_to(pkg_root):
                continue
            lines: dict[str, list[int]] = {}
            for line, contexts in (measured.contexts_by_lineno(name) or {}).items():
                # A context is the test's id as it is: no static context in the suite's own process
                # (so no "static|dynamic" join), no dynamic one in a subprocess. Ids may hold "|".
                ids = sorted({tests.setdefault(t, len(tests)) for c in contexts if c
                              for t in users.get(c, [] if c.startswith("fixture ") else [c])})
                if ids:
                    lines[str(line)] = ids
            text = path.read_text()
            # The source too: a later edit elsewhere in the module keeps its other lines' tests.
            modules[str(path.relative_to(pkg_root))] = {
                "sha256": hashlib.sha256(text.encode()).hexdigest(), "lines": lines, "source": text}
        times = json.loads(durations.read_text()) if durations.exists() else {}
        out.write_text(json.dumps({"tests": sorted(tests, key=tests.get), "seconds": times, "modules": modules}))
        print(f"{out}: {len(tests)} tests over {len(modules)} modules", flush=True)
        return 0
    finally:
        shutil.rmtree(root, ignore_errors=True)


class Covmap:
    """``--build-covmap``'s file: which tests run a site's line."""

    def __init__(self, path: Path) -> None:
        import json

        raw = json.loads(path.read_text())
        self.tests: list[str] = raw["tests"]
        self.seconds: dict[str, float] = raw.get("seconds", {})
        self.modules: dict[str, dict] = raw["modules"]

    def covering(self, mod: str, index: int, base: Path) -> list[str] | None:
        """The ids of the tests that run site ``index`` of ``mod``; [] when no test does; None
        when the map cannot say: the site's statement changed since the map was built (or the
        module did, in a map without sources), or the site runs at import (module level, a
        default, a decorator), which every test relies on. An unchanged statement in an edited
        module keeps its tests (an edit elsewhere could change who calls it: a rare miss, on
        the side of a survivor)."""
        path = base / PKG / mod
        entry = self.modules.get(mod)
        text = path.read_text()
        if entry is None:  # no test imported it at all
            return []
        m = Mutator()
        m.visit(ast.parse(text))
        line = m.sites[index][0]
        if not m.in_call[index]:
            return None
        first = statement_lines(text).get(line, line)
        if entry["sha256"] != hashlib.sha256(text.encode()).hexdigest():
            moved = _unchanged_lines(entry.get("source"), text, statement_span(text, line))
            if moved is None:
                return None
            first, line = moved.get(first, first), moved.get(line, line)
        ids = set(entry["lines"].get(str(first), [])) | set(entry["lines"].get(str(line), []))
        return [self.tests[i] for i in sorted(ids)]

    def limit(self, ids: list[str], cap: float) -> float:
        """Seconds the tests may take with a mutant: a few times their measured time (a loaded
        machine: generous factor and floor), at most ``cap``."""
        return min(cap, max(120.0, 5 * sum(self.seconds.get(t, 1.0) for t in ids)))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=60, help="mutants to sample (default 60)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", "-j", type=int, default=1, help="mutants tested at once (one copy each)")
    ap.add_argument("--timeout", type=float, default=900,
                    help="most seconds per mutant's test run (within it: 5x the unmutated run, at least "
                         "120 s); past it: killed")
    ap.add_argument("--modules", help="comma list of module files (default: every one with test files of its own)")
    ap.add_argument("--commit", nargs="?", const="HEAD", metavar="REV",
                    help="draw over the whole package, weighted by lines, seeded by REV's hash (default HEAD); "
                         "modules without test files of their own run the test files that import them")
    ap.add_argument("--list", action="store_true", help="print the sites per module and the sample; run nothing")
    ap.add_argument("--no-whole-suite", dest="whole_suite", action="store_false",
                    help="count a mutant that passes its mapped tests as survived without running the rest of "
                         "the suite (default: the rest runs, and only a mutant the whole suite misses survives)")
    ap.add_argument("--whole-suite-timeout", type=float, default=3600,
                    help="most seconds for the rest of the suite on one mutant; past it the mutant counts as "
                         "survived (a slow machine must not pass for a kill)")
    ap.add_argument("--build-covmap", type=Path, metavar="FILE",
                    help="run the whole suite once under coverage (needs the coverage package) and write FILE: "
                         "which tests run each line; nothing else is done")
    ap.add_argument("--covmap", type=Path, metavar="FILE",
                    help="a --build-covmap FILE of this tree: a mutant inside a function that its mapped files "
                         "miss runs the other tests that run its line instead of the rest of the suite (none: "
                         "survived); one at import time or in a memoized function, or in a module changed since, "
                         "runs as without it")
    ap.add_argument("--screen", action="store_true",
                    help="with --covmap, a quick screen: each mutant runs only the tests that run its line "
                         "(no baselines, no mapped files, no whole suite); a site the map cannot say about is "
                         "left unjudged. For finding weak spots; the sample's rate is the full judge's")
    args = ap.parse_args()
    if args.screen and not args.covmap:
        ap.error("--screen needs --covmap")
    if args.build_covmap:
        return build_covmap(args.build_covmap, args.whole_suite_timeout)
    covmap = Covmap(args.covmap) if args.covmap else None

    if args.commit:
        args.seed, sha = commit_seed(args.commit)
        print(f"commit {sha}: seed {args.seed}", flush=True)
        modules = args.modules.split(",") if args.modules else package_modules()
        tests = {m: tests_for(m) for m in modules}
        untested = [m for m in modules if not tests[m] and sites_of(REPO / PKG / m)]
        if untested:
            print(f"no test file is {', '.join(untested)}'s or imports it: their mutants run {FALLBACK}", flush=True)
        tests = {m: t or [FALLBACK] for m, t in tests.items()}
        draw = weighted_sample
    else:
        modules = args.modules.split(",") if args.modules else [
            m for m in package_modules() if own_tests(m) and sites_of(REPO / PKG / m)]
        tests = {m: tests_for(m) for m in modules}
        unknown = [m for m in modules if not tests[m]]
        if unknown:
            ap.error(f"no test file is {unknown}'s or imports them (CONTRIBUTING.md: where a test goes)")
        draw = sample
    if args.list:
        chosen = draw(args.n, args.seed, modules)
        for mod in modules:
            print(f"{mod}: {len(sites_of(REPO / PKG / mod))} sites")
        for mod, i, line, what in chosen:
            eq = " (EQUIVALENT)" if key_of(mod, i) in EQUIVALENT else ""
            print(f"  {mod}:{line} #{i} {what}{eq}")
        return 0

    root = Path(tempfile.mkdtemp(prefix="mlirhlo-mutation-"))
    skipped: list = []
    try:
        copies = [make_copy(root / f"copy{j}") for j in range(max(1, args.jobs))]
        # Sites are counted on the copy: the working tree may change while this runs.
        chosen = draw(args.n, args.seed, modules, copies[0])
        check = subprocess.run([sys.executable, "-c", f"import {PKG}; print({PKG}.__file__)"], cwd=copies[0],
                               env=_env(copies[0]), capture_output=True, text=True)
        if not check.stdout.strip().startswith(str(copies[0])):
            raise SystemExit(f"the copy does not shadow the installed package: {check.stdout}{check.stderr}")
        # Tests that fail without any mutant are left out of every mutant's run. Each test file's
        # baseline runs once (files are shared between modules), the jobs' worth at a time.
        import concurrent.futures as cf

        # With a covmap, a site inside a function that its mapped files miss then runs the other
        # tests that run its line; the others (None) the rest of the suite, as without one.
        cover = {(m, i): covmap.covering(m, i, copies[0]) if covmap else None for m, i, *_ in chosen}
        files = [] if args.screen else sorted({f for m, *_ in chosen for f in tests[m]})

        base: dict[str, tuple[list[str] | None, float]] = {}
        for name, failing, secs in baselines(copies, files, args.timeout * 3):
            base[name] = (failing, secs)
            print(f"baseline {name}: " + ("does not run; its modules' mutants are skipped" if failing is None
                  else f"{len(failing)} failing, {secs:.0f} s" + (f" ({', '.join(failing)})" if failing else "")),
                  flush=True)
        deselect: dict[tuple[str, ...], list[str] | None] = {}
        limit: dict[tuple[str, ...], float] = {}
        for key in {tuple(tests[m]) for m, *_ in chosen} if not args.screen else ():
            runs = [base[t][0] for t in key]
            deselect[key] = None if any(r is None for r in runs) else sorted({f for r in runs for f in r})
            # A mutant that makes these tests hang is killed at a few times their normal run, not
            # after the full --timeout (the machine may be loaded: generous factor and floor).
            limit[key] = min(args.timeout, max(120.0, 5 * sum(base[t][1] for t in key)))
        skipped = [] if args.screen else [c for c in chosen if deselect[tuple(tests[c[0]])] is None]
        chosen = [c for c in chosen if c not in skipped]

        # Keys now, from the unmutated copy: mutants are written into the copies below.
        keys = {(m, i): key_of(m, i, copies[0]) for m, i, *_ in chosen}
        results = []
        equivalent: list = []
        pending = list(enumerate(chosen))

        def one(job: int, k: int, mutant) -> tuple:
            mod, i, line, what = mutant
            target = copies[job] / PKG / mod
            original = target.read_text()
            source, applied = mutant_source(target, i)
            started = time.monotonic()
            if args.screen:
                ids = cover[(mod, i)]
                if not ids:
                    return k, mutant, "unexecuted" if ids == [] else "unjudged", 0.0, \
                        "no test runs this line" if ids == [] else "the map cannot say (import time, memoized)"
                status, by = confirm(copies[job], target, source, original, [], covmap.limit(ids, args.timeout),
                                     select=ids, timeout_kills=True)
                return k, mutant, status, time.monotonic() - started, f"{len(ids)} tests run it; {by}"
            target.write_text(source)
            try:
                status, _, _ = run_tests(copies[job], tests[mod], limit[tuple(tests[mod])],
                                        deselect[tuple(tests[mod])])
            finally:
                target.write_text(original)
            by = ""
            ids = cover[(mod, i)]
            if status == "passed" and ids is not None:
                # Its mapped files pass: the other tests that run its line (their own limit: a
                # hang there is the mutant's too).
                rest = [t for t in ids if t.split("::")[0].removeprefix("tests/") not in tests[mod]]
                if not rest:
                    return k, mutant, "unexecuted" if not ids else "passed", time.monotonic() - started, \
                        "no test runs this line" if not ids else "no test outside its mapped files runs this line"
                status, by = confirm(copies[job], target, source, original, [], covmap.limit(rest, args.timeout),
                                     select=rest, timeout_kills=True)
                by = f"{len(rest)} more tests run it; {by}"
            elif status == "passed" and args.whole_suite:
                status, by = confirm(copies[job], target, source, original, tests[mod], args.whole_suite_timeout)
            return k, mutant, status, time.monotonic() - started, by

        free = list(range(len(copies)))
        with cf.ThreadPoolExecutor(len(copies)) as pool:
            futures = {}
            while pending or futures:
                while pending and free:
                    job = free.pop()
                    k, mutant = pending.pop(0)
                    futures[pool.submit(one, job, k, mutant)] = job
                done, _ = cf.wait(futures, return_when=cf.FIRST_COMPLETED)
                for f in done:
                    free.append(futures.pop(f))
                    k, (mod, i, line, what), status, secs, by = f.result()
                    if status == "no-tests":
                        print(f"no tests ran for {mod}:{line} {what}; left out", flush=True)
                        continue
                    if status == "unjudged":
                        print(f"unjudged {mod}:{line} {what} ({by}); left out", flush=True)
                        continue
                    killed = status in ("failed", "timeout", "error")
                    reason = EQUIVALENT.get(keys[(mod, i)])
                    if reason is not None:
                        equivalent.append((mod, line, what, status, killed, reason))
                        print(f"[equivalent] {'KILLED  ' if killed else 'survived'} {mod}:{line} {what} "
                              f"({status}, {secs:.0f} s)", flush=True)
                        continue
                    results.append((mod, line, what, status, killed))
                    print(f"[{len(results)}/{len(chosen)}] {'killed  ' if killed else 'SURVIVED'} {mod}:{line} "
                          f"{what} ({status}, {secs:.0f} s{'; ' + by if by else ''})", flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)

    killed = sum(r[4] for r in results)
    print(f"\nkill rate: {killed}/{len(results)} = {100 * killed / max(len(results), 1):.1f}%")
    by_status: dict[str, int] = {}
    for r in results:
        by_status[r[3]] = by_status.get(r[3], 0) + 1
    print("by outcome: " + ", ".join(f"{k} {v}" for k, v in sorted(by_status.items())))
    if skipped:
        print(f"skipped (their tests do not run unmutated): {len(skipped)}: "
              + ", ".join(f"{m}:{ln}" for m, _, ln, _ in skipped))
    per_module: dict[str, list[int]] = {}
    for mod, _, _, _, was_killed in results:
        per_module.setdefault(mod, [0, 0])[0 if was_killed else 1] += 1
    print("per module (killed/sampled):")
    for mod, (k, s) in sorted(per_module.items(), key=lambda kv: (kv[1][0] / sum(kv[1]), kv[0])):
        print(f"  {mod:32s} {k}/{k + s} = {100 * k / (k + s):.0f}%")
    survivors = [r for r in results if not r[4]]
    if survivors:
        print("survivors:")
        for mod, line, what, _, _ in sorted(survivors):
            print(f"  {PKG}/{mod}:{line}: {what}")
    if equivalent:
        print(f"equivalent (left out of the rate): {len(equivalent)}")
        for mod, line, what, status, killed, reason in sorted(equivalent):
            print(f"  {PKG}/{mod}:{line}: {what}: {reason}"
                  + (f" -- BUT KILLED ({status}): not equivalent, fix the EQUIVALENT entry" if killed else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
