"""GPU target specs for device-less CUDA compiles: ``stream_executor.GpuTargetConfigProto``
textprotos, one per GPU (``NAME.txtpb``; ``--gpu-spec NAME``), as XLA keeps them in
``xla/tools/hlo_opt/gpu_specs/``. Data only: they ship inside the package as
``mlirhlo_driver/gpu_specs`` and are read through ``mlirhlo_driver.resources``."""
