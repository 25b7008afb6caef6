"""The native substrate: jaxlib's adapter, guards for native code that can abort, child processes."""
