"""Build the API reference (HTML) from the docstrings, with pdoc.

    python scripts/api_docs.py [-o DIR]     # default: docs/api (ignored by git)

The reference covers the modules that define the public names, those
``mlirhlo_driver.__all__`` lists (``_LAZY`` in ``mlirhlo_driver/__init__.py``):
``api``, ``targets``, ``errors`` and ``mlir.python_passes`` (``register_pass``,
``PassSet``, ``PythonPass``).
Docstrings are reStructuredText (``:func:``, double backticks), as the code
writes them. Nothing here imports jax or jaxlib: neither do those modules.
tests/scripts/test_api_docs.py builds it and checks that every public name is there.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUTPUT = REPO / "docs" / "api"


def public_modules() -> list[str]:
    """The modules that define the public names, in a stable order."""
    import mlirhlo_driver

    return sorted({f"mlirhlo_driver.{module}" for module in mlirhlo_driver._LAZY.values()})


def build(output: Path = DEFAULT_OUTPUT) -> list[Path]:
    """Render :func:`public_modules` into ``output``; the pages written (index.html first)."""
    import pdoc
    import pdoc.render

    import mlirhlo_driver

    pdoc.render.configure(
        docformat="restructuredtext",
        # The source is in the repository; leaving it out keeps the pages about the contract.
        show_source=False,
        footer_text=f"mlirhlo-driver {mlirhlo_driver.__version__}",
    )
    output.mkdir(parents=True, exist_ok=True)
    pdoc.pdoc(*public_modules(), output_directory=output)
    pages = [output / (name.replace(".", "/") + ".html") for name in public_modules()]
    return [output / "index.html", *pages]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-o", "--output", type=Path, default=DEFAULT_OUTPUT,
                        help=f"directory to write the HTML into (default: {DEFAULT_OUTPUT.relative_to(REPO)})")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(REPO))  # the checkout's package, installed or not
    pages = build(args.output)
    missing = [p for p in pages if not p.is_file()]
    if missing:
        sys.stderr.write("error: pdoc wrote no " + ", ".join(str(p) for p in missing) + "\n")
        return 1
    print(f"{len(pages) - 1} modules: {args.output / 'index.html'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
