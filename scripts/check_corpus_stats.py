"""Counts over a check-file corpus run (scripts/make_check_corpus.py), for the closing note.

    mlirhlo run DIR --jobs 1 --json run.json
    mlirhlo opt DIR --platform cuda --gpu-spec h100_sxm --stage hlo,ptx --dump-dir DUMP --jobs 1
    python scripts/check_corpus_stats.py run.json DUMP

Prints: files, run statuses (and ``checked_values`` where the report has it),
files whose optimized HLO entry computation has no parameter, files whose PTX
holds no kernel (``.entry``) or that wrote none, and each failure.
"""

from __future__ import annotations

import collections
import json
import re
import sys
from pathlib import Path

_ENTRY = re.compile(r"^ENTRY[^\n]*\{\n(.*?)^\}", re.M | re.S)


def main() -> None:
    run_json, dump = sys.argv[1], Path(sys.argv[2])
    rows = json.loads(Path(run_json).read_text())
    rows = rows["modules"] if isinstance(rows, dict) and "modules" in rows else rows
    status = collections.Counter(r["status"] for r in rows)
    print(f"files: {len(rows)}")
    print("run: " + ", ".join(f"{k} {v}" for k, v in sorted(status.items())))
    if any("checked_values" in r for r in rows):
        cv = collections.Counter(r.get("checked_values") or "-" for r in rows)
        print("checked_values: " + ", ".join(f"{k} {v}" for k, v in sorted(cv.items())))
        kept = [r for r in rows if r.get("kept_constants")]
        print(f"files with kept constants: {len(kept)}")
    for r in rows:
        if r["status"] not in ("ok", "ran"):
            print(f"  {r['status']}: {r['module']}: {r['message'][:300]}")
    names = sorted(r["module"] for r in rows)
    no_param, no_kernel, no_ptx = [], [], []
    for name in names:
        hlo = dump / f"{name}.hlo"
        if hlo.exists():
            m = _ENTRY.search(hlo.read_text())
            if m and "parameter(" not in m.group(1):
                no_param.append(name)
        ptx = sorted(dump.glob(f"{name}.*ptx")) or sorted(dump.glob(f"{name}.ptx"))
        if not ptx:
            no_ptx.append(name)
        elif not any(".entry" in p.read_text() for p in ptx):
            no_kernel.append(name)
    print(f"optimized HLO without an entry parameter: {len(no_param)}")
    print(f"PTX without a kernel (.entry): {len(no_kernel)}")
    print(f"no PTX written (opt failed): {len(no_ptx)}")
    for label, group in (("no parameter", no_param), ("no kernel", no_kernel), ("no PTX", no_ptx)):
        if group:
            print(f"  {label}: " + " ".join(group[:400]))


if __name__ == "__main__":
    main()
