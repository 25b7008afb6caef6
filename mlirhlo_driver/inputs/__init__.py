"""Every input format read into one StableHLO module; self-checking modules."""
