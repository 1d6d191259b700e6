"""ReFrame site configuration of clusterproof.

One file per system in ``site_config/systems/`` (and in the directory
``$CLUSTERPROOF_SYSTEMS`` names, a site's own, outside the repository); this
file assembles them (``clusterproof.paths.system_files``).
Each system file defines ``system`` (a ReFrame system entry) or ``systems``
(a list of them) and may define ``environments`` (a list of ReFrame
environment entries).

System selection: ReFrame picks the first system whose ``hostnames`` pattern
matches this host; ``local`` matches any host and comes last, so a machine
that is no declared cluster runs the suite on itself. ``--system NAME``
chooses explicitly (``--system emu`` for the local Slurm cluster).

Modes: ``reframe --mode smoke|nightly|acceptance`` (ReFrame's own option);
the list of modes comes from ``clusterproof.modes``, which the checks ask for
the mode of the run.

Results: perflogs, the results database and run reports go under one
directory, ``clusterproof.paths.results_dir()``: ``$CLUSTERPROOF_RESULTS``
(default: ``results/`` in the repository).
"""

import importlib.util
from pathlib import Path

from clusterproof.modes import reframe_modes
from clusterproof.paths import results_dir, system_files
from clusterproof.reframe_io.perflog_fields import perflog_format
from clusterproof.publish.metrics import logging_entries
from clusterproof.site.hardware import processor_from_hardware

_here = Path(__file__).resolve().parent
_repo = _here.parent
# The system files import the clusterproof package, installed (editable) in
# .venv by scripts/setup. (Do not touch sys.path here: ReFrame restores it by
# position after loading this file.)

# Order matters for auto-detection: specific systems first, ``local`` last,
# any other file (``clusterproof init`` writes one) between, in name order.
def _load(path):
    spec = importlib.util.spec_from_file_location(f'clusterproof_site_{path.stem}', path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# One definition of the results directory: clusterproof.paths.results_dir().
_results = results_dir()
_results.mkdir(parents=True, exist_ok=True)

_systems, _environments, _metrics_urls = [], [], {}
for _path in system_files(_here / 'systems'):
    _mod = _load(_path)
    for _entry in getattr(_mod, 'systems', None) or [_mod.system]:
        # figures to a time-series database: optional ``metrics_url`` of the system file
        _metrics_urls[_entry['name']] = getattr(_mod, 'metrics_url', None)
        _sys = dict(_entry)
        _sys.setdefault('prefix', str(_results))
        _sys.setdefault('stagedir', str(_results / 'stage'))
        _sys.setdefault('outputdir', str(_results / 'output'))
        # ReFrame's processor follows from extras['hardware'] where the system
        # file declares none (clusterproof validate checks both agree where it
        # does): ReFrame never detects the machine it runs on for a partition.
        _sys['partitions'] = [
            _part if 'processor' in _part or 'hardware' not in _part.get('extras', {})
            else dict(_part, processor=processor_from_hardware(_part['extras']['hardware']))
            for _part in _sys['partitions']]
        _systems.append(_sys)
    for _env in getattr(_mod, 'environments', []):
        _environments.append(_env)

# Programming environments valid everywhere unless a system file narrows them.
_environments.append({
    'name': 'gnu',
    'cc': 'gcc',
    'cxx': 'g++',
    'ftn': 'gfortran',
    'features': ['openmp'],
    'extras': {'omp_flag': '-fopenmp'},
})

_logging = {
    'handlers': [{
        'type': 'file',
        'name': str(_results / 'reframe.log'),
        'level': 'debug',
        'format': '[%(asctime)s] %(levelname)s: %(check_info)s: %(message)s',
        'append': True,
    }, {
        'type': 'stream',
        'name': 'stdout',
        'level': 'info',
        'format': '%(message)s',
    }],
    'handlers_perflog': [{
        'type': 'filelog',
        'prefix': '%(check_system)s/%(check_partition)s',
        'basedir': str(_results / 'perflogs'),
        'level': 'info',
        # the fields clusterproof reads first, then the figures, then the
        # other loggable variables (clusterproof.reframe_io.perflog_fields.perflog_format)
        **perflog_format(),
        'format_perfvars': ('%(check_perf_var)s=%(check_perf_value)s|'
                            '%(check_perf_unit)s|%(check_perf_ref)s|'
                            '%(check_perf_lower_thres)s|'
                            '%(check_perf_upper_thres)s|'),
        'datefmt': '%Y-%m-%dT%H:%M:%S%z',
        'append': True,
    }],
}

site_configuration = {
    'systems': _systems,
    'environments': _environments,
    # the perflogs for every system; for a system with a metrics URL (its
    # file's ``metrics_url``, or $CLUSTERPROOF_METRICS_URL for all), its
    # figures also go to VictoriaMetrics through ReFrame's httpjson handler
    'logging': logging_entries(_logging, _metrics_urls),
    'general': [{
        'report_file': str(_results / 'reports' / 'run-report-{sessionid}.json'),
        'topology_prefix': str(_results / 'topology'),
        'check_search_path': [str(_repo / 'reframe_checks')],
        'purge_environment': False,
        'clean_stagedir': True,
    }],
    'modes': reframe_modes(),
    'storage': [{
        'enable': True,
        'backend': 'sqlite',
        'sqlite_db_file': str(_results / 'results.db'),
    }],
}
