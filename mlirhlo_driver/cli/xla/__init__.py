"""XLA's own tools (hlo-opt, run_hlo_module, multihost_hlo_runner, ptx-opt), with XLA's flags."""
