"""Methods: per benchmark, the command lines, input files, sizes and thread counts; what every
check's job shares (the MPI environment, the test directories, why a job failed)."""
