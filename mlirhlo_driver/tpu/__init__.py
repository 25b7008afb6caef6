"""TPU targets, device-less: topology names, the shipped per-generation specs, the
per-device memory report, and the driver's copy of libtpu (``mlirhlo tpu-plugin install``)."""
