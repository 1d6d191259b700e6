"""Shared by the HPCC tests: what a passed HPCC case holds, on ``local``
(tests/benchmarks/test_hpcc.py) and across the nodes of the local Slurm
cluster (tests/suite/test_suite_emu.py)."""


def check_passed(case, ranks):
    """A passed HPCC case of ``ranks`` ranks, every figure above 0."""
    assert case['result'] == 'pass', case.get('fail_reason')
    assert case['num_tasks'] == ranks
    perf = {k.split(':')[-1]: v[0] for k, v in case['perfvalues'].items()}
    assert set(perf) == {'HPL_Tflops', 'StarDGEMM_Gflops', 'StarSTREAM_Triad', 'SingleSTREAM_Triad',
                         'PTRANS_GBs', 'MPIRandomAccess_GUPs', 'MPIFFT_Gflops'}
    assert all(v > 0 for v in perf.values())
    assert case['binary_version'] == '1.5.0'
    assert case['cp_smoke'] is True
