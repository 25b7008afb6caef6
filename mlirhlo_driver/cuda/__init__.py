"""CUDA targets without a GPU: specs, tools, binaries, kernels, PTX."""
