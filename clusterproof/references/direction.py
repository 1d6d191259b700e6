"""The direction of a figure and the units a reference may carry.

A smaller value is better as the figure's check declared it or, for history
that declares none, by its unit."""

from clusterproof import ClusterproofError

#: units of figures where a smaller value is better (times and latencies):
#: the direction of history that declares none (see :func:`lower_is_better`)
LOWER_IS_BETTER_UNITS = {'s', 'sec', 'ms', 'msec', 'us', 'usec', 'µs', 'ns', 'nsec',
                         'min', 'h', 'cycles', 'ms/op', 'us/op'}
#: units a reference may carry
KNOWN_UNITS = LOWER_IS_BETTER_UNITS | {
    'MB/s', 'MiB/s', 'GB/s', 'GiB/s', 'kB/s', 'KiB/s', 'TB/s',
    'IOPS', 'ops/s', 'kIOPS', 'Gflop/s', 'Gflops', 'GFlop/s', 'Tflop/s', 'Tflops',
    'GUP/s', 'GUPs', 'msg/s', 'Mmsg/s', '%', 'ratio', 'GiB', 'MiB', 'count',
}


def declared_direction(declared, figure):
    """The direction ``declared`` (``{figure: lower_is_better}``, a test
    case's ``cp_lower_is_better``, see :mod:`clusterproof.reframe_io.figures`)
    gives ``figure``: True or False, None when it declares nothing (empty or
    absent); a figure missing from a declaration is an error."""
    if not declared:
        return None
    try:
        return bool(declared[figure])
    except KeyError:
        raise ClusterproofError(
            f'figure {figure!r} has no declared direction (its test case declares '
            f'{", ".join(sorted(declared)) or "none"})') from None


def lower_is_better(unit, figure='', declared=None):
    """The one direction rule: True for a figure where a smaller value is
    better.

    ``declared`` is what the figure's check declared where it defines the
    figure: the test case's ``{figure: lower_is_better}`` (see
    :func:`declared_direction`), or that figure's True/False as the figure
    store keeps it (its column ``declared_lower_is_better``). It decides. History
    that carries no declaration (None: sessions recorded before the checks
    declared directions, perflogs and CSV files imported from elsewhere) is
    read as such history has always been: time units (``s``, ``us``,
    ``ms/op`` ...) and figures whose name says latency (``lat_*``,
    ``*_latency``) are lower-is-better."""
    if isinstance(declared, dict):
        declared = declared_direction(declared, figure)
    if declared is not None:
        return bool(declared)
    if (unit or '').strip() in LOWER_IS_BETTER_UNITS:
        return True
    name = (figure or '').lower()
    return name.startswith('lat') or name.endswith('latency') or '_lat_' in name


def record_lower_is_better(rec):
    """:func:`lower_is_better` of a result record (or a history): the
    direction its test case declared (``declared_lower_is_better``, the
    figure store's column), if it declared any."""
    return lower_is_better(rec.unit, rec.figure, rec.declared_lower_is_better)
