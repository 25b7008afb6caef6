"""Per-generation TPU figures the compile does not give (HBM capacity and bandwidth, peak
FLOP/s per dtype, ICI bandwidth, TensorCores and chips per host): one TOML file per
generation (``v5e.toml``; libtpu's generation names), each figure with its public source.
Data only: shipped inside the package as ``mlirhlo_driver/tpu_specs``, read through
``mlirhlo_driver.resources``."""
