"""The fields of the perflog handler (``site_config/settings.py``): which
of them clusterproof reads first, and which loggable variables are left out.
A module of its own, without the perflog reader's imports (polars, numpy):
ReFrame loads the site configuration, and so this, in every run.
"""


#: the fields of the perflog (``site_config/settings.py``) that clusterproof
#: reads, first: none can hold ``|`` (names, flags, hashes, versions, paths)
PERFLOG_FIELDS = ('job_completion_time', 'result', 'system', 'partition', 'environ',
                  'display_name', 'jobid', 'job_nodelist', 'cp_mode', 'cp_smoke',
                  'cp_emulated', 'binary_path', 'binary_version', 'cp_binary_sha256',
                  'spack_spec', 'spack_lock_hash', 'cp_mpi_library', 'cp_fingerprint',
                  'cp_config_hash', 'cp_git_rev')
#: loggable variables that hold the job script's shell text (``|| exit 2``,
#: pipes): not in the perflog (the job script and the results database keep
#: them); in a perflog written before, a ``|`` in one of them shifted the
#: fields after it, and :func:`read_perflog` reads such lines around them
SHELL_FIELDS = ('prebuild_cmds', 'postbuild_cmds', 'prerun_cmds', 'postrun_cmds',
                'executable', 'executable_opts')


def perflog_format():
    """``format`` and ``ignore_keys`` of the perflog handler: the fields of
    :data:`PERFLOG_FIELDS` and ReFrame's version, then the figures
    (``name=value|unit|ref|lower|upper``), then every other loggable
    variable (``%(check_#ALL)s``) less :data:`SHELL_FIELDS`. A ``|`` in a
    variable of that tail can shift only the tail, never a field read."""
    return {
        'format': '|'.join(f'%(check_{f})s' for f in PERFLOG_FIELDS)
                  + '|reframe %(version)s|%(check_perfvalues)s|%(check_#ALL)s',
        'ignore_keys': [f'check_{f}' for f in (*PERFLOG_FIELDS, 'perfvalues', *SHELL_FIELDS)],
    }
