"""Checks: what every ReFrame check shares (provenance, references, scratch, failure causes)."""
