"""Figures declared where they are defined: ReFrame's performance functions
with the direction of each figure (a smaller value better, or a larger).

A check defines a figure with :func:`performance_figure` instead of
ReFrame's ``@performance_function``, or :func:`performance_figure_function`
instead of ``sn.make_performance_function`` for figures made at run time::

    @performance_figure('us', lower_is_better=True)
    def lat_p99(self):
        ...

:class:`clusterproof.checklib.base.ClusterproofCheck` records the declarations
of its figures with every test case (its variable ``cp_lower_is_better``,
``{figure: true|false}``, in ReFrame's run report, results database and
perflog); :func:`clusterproof.references.direction.lower_is_better` reads them
there. A figure of a clusterproof check without a declaration fails the test
case, naming the figure (:func:`declared`).
"""

import functools

import reframe.utility.sanity as sn
from reframe.core.builtins import performance_function
from reframe.core.exceptions import ReframeError

#: the attribute of a deferred performance expression that holds its direction
_ATTR = 'cp_lower_is_better'


def _valid(lower_is_better):
    if not isinstance(lower_is_better, bool):
        raise TypeError(f'lower_is_better must be True or False, not {lower_is_better!r}')
    return lower_is_better


def _declare(expr, lower_is_better):
    setattr(expr, _ATTR, _valid(lower_is_better))
    return expr


def performance_figure(unit, *, lower_is_better, perf_key=None):
    """ReFrame's ``@performance_function(unit)`` that also declares which way
    the figure is better (``lower_is_better``: True for times and latencies,
    False for throughputs, rates and counts)."""
    _valid(lower_is_better)
    as_reframe = performance_function(unit, perf_key=perf_key)

    def decorate(func):
        perf_fn = as_reframe(func)

        @functools.wraps(perf_fn)       # keeps ReFrame's _rfm_perf_key
        def declared_fn(*args, **kwargs):
            return _declare(perf_fn(*args, **kwargs), lower_is_better)
        return declared_fn
    return decorate


def performance_figure_function(expr, unit, *, lower_is_better):
    """``sn.make_performance_function(expr, unit)`` with the figure's direction."""
    return _declare(sn.make_performance_function(expr, unit), lower_is_better)


class UndeclaredFigure(ReframeError):
    """A figure defined without its direction."""


def declared(perf_variables, check):
    """``{figure: lower_is_better}`` of a test's ``perf_variables``; a figure
    defined without a direction (plain ``@performance_function``) is an
    :class:`UndeclaredFigure` naming it and the check ``check``."""
    out, missing = {}, []
    for name, expr in perf_variables.items():
        value = getattr(expr, _ATTR, None)
        if value is None:
            missing.append(name)
        else:
            out[name] = value
    if missing:
        raise UndeclaredFigure(
            f'{check}: figure(s) {", ".join(sorted(missing))} declare no direction: define '
            f'them with clusterproof.reframe_io.figures.performance_figure(unit, '
            f'lower_is_better=...) (or performance_figure_function) instead of '
            f'ReFrame\'s performance_function')
    return out
