"""IOR N-to-1 command line (the published pixstor methodology,
docs/ior-mdtest.md): the one source of the arguments for the ReFrame check
(reframe_checks/ior.py) and the standalone job script
(slurm/ior-n-to-1.sbatch, through ``clusterproof ior-args``).

    ior -a POSIX -v -i 1 -d 3 -e -k -o <dir>/tst.file -w -s 1 -t 16m -b <FileSize>
    ior -a POSIX -v -i 1 -d 3 -e -k -o <dir>/tst.file -r -C -s 1 -t 16m -b <FileSize>
"""

from clusterproof import ClusterproofError

#: the two phases, in the order they run, and IOR's option for each
PHASES = {'write': '-w', 'read': '-r'}
#: read reordering: another node's data, random, or none
READ_REORDERS = ('-C', '-Z', '')
#: the shared file, inside the test directory
SHARED_FILE = 'tst.file'


def argv(phase, test_dir, transfer, block, repetitions=1, delay=3, read_reorder='-C',
         direct_io=False):
    """IOR's options (without the program) for one phase, 'write' or 'read'."""
    if phase not in PHASES:
        raise ClusterproofError(f'IOR phase {phase!r}: choose one of {", ".join(PHASES)}')
    if read_reorder not in READ_REORDERS:
        raise ClusterproofError(f'IOR read reordering {read_reorder!r}: choose -C, -Z or '
                                f'nothing')
    opts = ['-a', 'POSIX', '-v', '-i', str(repetitions), '-d', str(delay), '-e', '-k',
            '-o', f'{test_dir}/{SHARED_FILE}', PHASES[phase]]
    if phase == 'read' and read_reorder:
        opts.append(read_reorder)
    opts += ['-s', '1', '-t', str(transfer), '-b', str(block)]
    if direct_io:
        opts.append('--posix.odirect')
    return opts
