"""Screenings remembered: one row per node, check, figure and component of
every screening (``clusterproof screen``), kept beside the figure store in
``<store>/screenings/<screening id>.parquet``, one file per screening
(written whole or not at all; the same screening judged again replaces
its file). The columns are :data:`SCHEMA`: the node's value, its peers'
median and one noise unit, its distance in noise units and percent, the
verdict, the screening and when. ``screen.memory`` reads them back to say
"slow in 3 of the last 4 screenings" and to name a node persistently at
the tail.
"""

import math
from pathlib import Path

import polars as pl

from clusterproof import ClusterproofError, paths

DIRECTORY = 'screenings'

SCHEMA = {
    'screening': pl.Utf8,       # the screening id (its findings name it)
    'time': pl.Float64,         # when it was judged (unix time)
    'system': pl.Utf8,
    'partition': pl.Utf8,
    'node': pl.Utf8,
    'check': pl.Utf8,
    'figure': pl.Utf8,
    'component': pl.Utf8,       # '' for the whole node
    'value': pl.Float64,        # null: the check failed on the node
    'median': pl.Float64,       # the peers'
    'noise_pct': pl.Float64,    # one noise unit, percent of the median
    'noise_units': pl.Float64,  # signed, negative = worse
    'percent': pl.Float64,      # signed, negative = worse
    'verdict': pl.Utf8,
}


def path_of(store):
    return Path(store) / DIRECTORY


def rows_of(verdicts, system, screening_id, when):
    """The rows of a screening's node verdicts (``screen.verdicts.NodeVerdict``):
    one per measured figure (the inventory's hardware figures aside)."""
    out = []
    for nv in verdicts:
        for fv in nv.figures:
            s = fv.sample
            if s.check == 'inventory' or s.pair:
                continue
            peers = fv.group or fv.peers
            out.append({'screening': screening_id, 'time': float(when), 'system': system,
                        'partition': nv.partition, 'node': nv.node, 'check': s.check,
                        'figure': s.figure, 'component': s.component,
                        'value': s.value, 'median': peers.median if peers else None,
                        'noise_pct': _finite(fv.noise_pct),
                        'noise_units': _finite(fv.noise_units),
                        'percent': _finite(fv.percent), 'verdict': str(fv.verdict)})
    return out


def _finite(x):
    return x if x is not None and math.isfinite(x) else None


def write(store, rows, screening_id):
    """Keep a screening's ``rows`` (:func:`rows_of`) in ``store``."""
    if '/' in screening_id or screening_id.startswith('.'):
        raise ClusterproofError(f'screening id {screening_id!r}: not a file name')
    directory = path_of(store)
    directory.mkdir(parents=True, exist_ok=True)
    df = pl.DataFrame(rows, schema=SCHEMA)
    paths.replace_synced(directory / f'{screening_id}.parquet', lambda tmp: df.write_parquet(tmp))


def read(store, system=None):
    """Every remembered row of ``store`` (of ``system`` when given), oldest
    first; [] when none."""
    files = sorted(path_of(store).glob('*.parquet'))
    if not files:
        return []
    try:
        df = pl.concat([pl.read_parquet(f) for f in files], how='vertical_relaxed')
    except (OSError, pl.exceptions.PolarsError) as err:
        raise ClusterproofError(f'{path_of(store)}: unreadable screening history ({err}); '
                                'remove the file it names') from None
    if system is not None:
        df = df.filter(pl.col('system') == system)
    return df.sort('time').to_dicts()
