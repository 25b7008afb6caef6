"""Running modules: XLA against a reference, self-checks, SPMD, pass timing."""
