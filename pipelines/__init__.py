"""Named pass pipelines (``NAME.pipeline``: ``#`` header lines, then MLIR's textual pipeline),
used as ``--pipeline @NAME``. Data only: they ship inside the package as
``mlirhlo_driver/pipelines`` and are read through ``mlirhlo_driver.resources``."""
