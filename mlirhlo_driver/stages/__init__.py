"""Stages: what a stage is (base.py) and the MLIR-level ones (mlir.py); the populated registry is mlirhlo_driver.registry."""
