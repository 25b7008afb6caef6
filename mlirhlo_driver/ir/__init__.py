"""The module's representations: XLA's protos, HLO text/proto, literals, and the output formats."""
