"""Methods: per benchmark, the command lines, input files, sizes and thread counts."""
