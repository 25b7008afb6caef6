"""Fetch the JavaScript that the offline HTML graph view inlines (mlirhlo_driver/xla/_vendor/).

XLA's HTML dump loads Graphviz (hpcc-js/wasm) and svg-pan-zoom from a CDN, so it
renders nothing without a network. The driver inlines these npm packages instead
(xla/html_page.py), pinned below by version, by the npm registry's sha512 of the
tarball and by the sha256 of each file taken from it.

    python scripts/vendor_js.py           # npm pack each package, check, write _vendor/
    python scripts/vendor_js.py --check   # no network: the shipped files match the pins

Bumping a version: change it and the tarball's integrity (``npm view NAME@VERSION
dist.integrity``) here; a run prints each file's new sha256, to pin once reviewed.
@viz-js/viz ships no license file: _vendor/viz.LICENSE is written by hand from its
package.json (MIT) and its banner (the Graphviz and Expat it contains).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
import json
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

VENDOR = Path(__file__).resolve().parent.parent / "mlirhlo_driver" / "xla" / "_vendor"

# npm package, version, tarball integrity (sha512, as the registry publishes it),
# {file in the tarball: (name in _vendor/, sha256)}
PACKAGES = [
    ("@viz-js/viz", "3.31.0",
     "sha512-r7zlQdRvcwvIpjHGgs+KNWHeE/P5/Dq7k8ZAKaMCbZqomxCBJV78gVuQYaHzFVca+kB0mX0fMW9UFevCOBG50A==",
     {"package/dist/viz-global.js":
      ("viz-global.js", "c9e0b310f9883910e01c66054b48b7ff4be3d8695141116635e72b0af152692e")}),
    ("svg-pan-zoom", "3.6.2",
     "sha512-JwnvRWfVKw/Xzfe6jriFyfey/lWJLq4bUh2jwoR5ChWQuQoOH8FEh1l/bEp46iHHKHEJWIyFJETbazraxNWECg==",
     {"package/dist/svg-pan-zoom.min.js":
      ("svg-pan-zoom.min.js", "9c8fc41b3359e699990766dd7a943595d234a80c880a90dfc14b920a273b99d8"),
      "package/LICENSE": ("svg-pan-zoom.LICENSE", "a4fbaf0b818914459316cb22e1a9d01e0f8786fc10cfe355077cca048daa028a")}),
]


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _npm_pack(spec: str, workdir: Path) -> bytes:
    out = subprocess.run(["npm", "pack", "--json", "--pack-destination", str(workdir), spec],
                         capture_output=True, text=True, check=True, cwd=workdir).stdout
    return (workdir / json.loads(out)[0]["filename"]).read_bytes()


def fetch() -> int:
    VENDOR.mkdir(parents=True, exist_ok=True)
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, version, integrity, files in PACKAGES:
            tgz = _npm_pack(f"{name}@{version}", Path(tmp))
            got = "sha512-" + base64.b64encode(hashlib.sha512(tgz).digest()).decode()
            if got != integrity:
                print(f"{name}@{version}: tarball {got}, pinned {integrity}", file=sys.stderr)
                return 1
            with tarfile.open(fileobj=io.BytesIO(tgz)) as tar:
                for member, (dest, sha) in files.items():
                    data = tar.extractfile(member).read()
                    if _sha256(data) != sha:
                        print(f"{name}@{version} {member}: sha256 {_sha256(data)}, pinned {sha}",
                              file=sys.stderr)
                        bad += 1
                        continue
                    (VENDOR / dest).write_bytes(data)
                    print(f"{dest}  {len(data)} bytes  {name}@{version}")
    return 1 if bad else check()


def check() -> int:
    bad = 0
    for name, version, _, files in PACKAGES:
        for dest, sha in files.values():
            path = VENDOR / dest
            if not path.is_file() or _sha256(path.read_bytes()) != sha:
                print(f"{path}: missing or not {name}@{version}'s", file=sys.stderr)
                bad += 1
            elif dest.endswith(".js") and b"</script" in path.read_bytes().lower():
                # html_page inlines it in a <script>, which would end there.
                print(f"{path}: holds '</script'", file=sys.stderr)
                bad += 1
    return 1 if bad else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="verify the shipped files, fetch nothing")
    args = ap.parse_args()
    return check() if args.check else fetch()


if __name__ == "__main__":
    sys.exit(main())
