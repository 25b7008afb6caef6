"""jaxlib's XLA: device-less compiles, DebugOptions flags, HLO passes, XLA's stages."""
