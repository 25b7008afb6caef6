"""MLIR pass pipelines: textual specs, the pass catalog, passes written in Python."""
