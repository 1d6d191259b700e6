"""Where things are: the repository, the results directory, the site config."""

import os
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SITE_CONFIG = REPO / 'site_config'
SETTINGS_FILE = SITE_CONFIG / 'settings.py'
#: reference values, one YAML file per system; ``CLUSTERPROOF_REFERENCES`` names
#: another directory (a site's own references, kept outside the repository)
REFERENCES_DIR = Path(os.environ.get('CLUSTERPROOF_REFERENCES', SITE_CONFIG / 'references'))
CHECKS_DIR = REPO / 'reframe_checks'
CHECK_SOURCES = CHECKS_DIR / 'src'


def references_dir():
    """Where ``<system>.yaml`` reference files live: ``CLUSTERPROOF_REFERENCES``
    or ``site_config/references/`` of the repository."""
    return Path(os.environ.get('CLUSTERPROOF_REFERENCES', REFERENCES_DIR)).resolve()


def results_dir():
    """The one directory that holds perflogs, the results database, run
    reports, stage and output directories. ``CLUSTERPROOF_RESULTS`` sets it;
    the default is ``results/`` in the repository."""
    return Path(os.environ.get('CLUSTERPROOF_RESULTS', REPO / 'results')).resolve()


def results_db():
    return results_dir() / 'results.db'


def perflog_dir():
    return results_dir() / 'perflogs'
