"""Site: declared hardware, topology, inventory, validation, binaries, Spack, the scratch
directory, what each node and run is (fingerprints, provenance)."""
