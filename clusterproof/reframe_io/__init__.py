"""Everything that knows ReFrame's internals."""
