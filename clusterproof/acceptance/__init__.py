"""Acceptance of a system against a procurement contract, and the report its parties sign."""
