"""The library the ReFrame checks (reframe_checks/) use: what every check shares (provenance, references, scratch, failure causes)."""
