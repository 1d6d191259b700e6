"""Site: declared hardware, topology, inventory, validation, binaries, Spack."""
