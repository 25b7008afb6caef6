"""``python -m mlirhlo_driver ...``: the ``mlirhlo`` command (cli.main, which may leave by os._exit)."""

from .cli.mlirhlo import main

main()
