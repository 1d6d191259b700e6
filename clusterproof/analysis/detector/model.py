"""The detector's settings (:class:`Settings`, their defaults) and what it
finds (:class:`Change`: a step, drift, transient or change of noise, with
its size, standard error and which view found it)."""

import math
from dataclasses import dataclass

#: standard errors of the shift a change must reach
DEFAULT_Z = 4.2
#: sessions after a change before it is reported
DEFAULT_MIN_AFTER = 2
#: sessions before the first judgement of a figure (or after a change)
DEFAULT_MIN_BEFORE = 8
#: sessions of history one night's segmentation sees
DEFAULT_WINDOW = 60
#: segmentation penalty, in units of log(n) (the values are in noise units)
DEFAULT_PENALTY = 3.0
#: a value this many noise units from the median is an outlier
OUTLIER_Z = 6.0
#: minimum detectable change above which a figure is too noisy to judge
DEFAULT_MAX_DETECTABLE = 0.25


@dataclass
class Settings:
    z: float = DEFAULT_Z
    min_after: int = DEFAULT_MIN_AFTER
    min_before: int = DEFAULT_MIN_BEFORE
    window: int = DEFAULT_WINDOW
    penalty: float = DEFAULT_PENALTY
    outlier_z: float = OUTLIER_Z
    max_detectable: float = DEFAULT_MAX_DETECTABLE
    #: the smallest relative change that matters (0.01: one percent): a
    #: change, transient or drift smaller than it is never listed
    min_change: float = 0.0
    #: take a periodic component out first (:func:`periodic_levels`)
    periodic: bool = True
    #: a single step that a ramp fits better is the onset of a slow change
    #: (:func:`_drifts`)
    onsets: bool = True
    #: a figure too noisy to judge (its minimum detectable change above
    #: ``max_detectable``) still lists every change the detector keeps
    #: (off: only those larger than its minimum detectable change, as before)
    noisy_changes: bool = True
    #: a figure with a value of 0 or less is judged on its values
    #: (:func:`~clusterproof.analysis.detector.noise.linear`; off: it is not
    #: judged, as before)
    linear: bool = True
    #: a nightly alarm the whole history does not confirm stays a change only
    #: while its shift reaches ``z + POWER`` standard errors, as a change of
    #: the retrospective view must (off: ``z``, as before)
    confirm_alarms: bool = True
    #: a nightly alarm the whole history does not confirm is judged with the
    #: widening (:func:`~clusterproof.analysis.detector.noise.inflation`) of
    #: the residuals about the confirmed changes and its own place, not with
    #: every other unconfirmed alarm cut out too (off: with all of them, as
    #: before)
    own_widening: bool = True
    #: a row of two or more kept changes in one direction, nightly alarms the
    #: whole history does not confirm among them, is one drift when a trend
    #: fits it better (off: only the retrospective view's rows, as before)
    drift_rows: bool = True
    #: a single step is not made a ramp from its onset when it is abrupt: a
    #: jump at the step's place on top of the ramp fits better by more than
    #: one change's penalty (off: the ramp, as before)
    abrupt_steps: bool = True


@dataclass
class Change:
    """A change point: ``at`` is the index of the first session after it.

    ``view`` says who found it: ``nightly`` (a nightly run would have raised
    it, on the night ``found``), ``retrospective`` (the segmentation of the
    whole history; ``found`` is None) or ``both``. A ``drift`` (``kind``) is
    a slow change from ``at`` to ``end`` (exclusive) at ``rate`` (log units
    per session); its ``shift`` is the whole change. A ``transient`` is an
    excursion from ``at`` to ``end`` (exclusive, at most ``TRANSIENT``
    sessions) after which the level came back: its ``shift`` is the
    excursion's size, and it is not a change of level. A ``noise`` change
    is one of the noise alone (retrospective): its ``shift`` is the log of
    the ratio of the noise after to before."""
    at: int
    found: int | None       # index of the session that revealed it (the night)
    shift: float            # in log units: the size is exp(shift) - 1
    stderr: float           # standard error of the shift (log units)
    n_before: int = 0
    n_after: int = 0
    view: str = 'nightly'
    kind: str = 'step'
    end: int | None = None
    rate: float = 0.0
    #: a change of a figure judged on its values, not their logarithms (one
    #: with a value of 0 or less): ``shift`` and ``rate`` are shares of its
    #: typical magnitude
    linear: bool = False

    @property
    def change(self):
        """Signed relative size: -0.079 is 7.9 % lower (of a ``linear``
        change: 7.9 % of the figure's typical magnitude lower)."""
        return self.shift if self.linear else math.expm1(self.shift)

    @property
    def uncertainty(self):
        """Standard error of the relative size."""
        return self.stderr if self.linear else abs(math.exp(self.shift)) * self.stderr

    @property
    def relative_rate(self):
        """A drift's relative change per session."""
        return self.rate if self.linear else math.expm1(self.rate)

    @property
    def z(self):
        return abs(self.shift) / self.stderr if self.stderr > 0 else math.inf

    @property
    def confidence(self):
        """One minus the two-sided p-value of the shift (normal approximation)."""
        return 1.0 - math.erfc(self.z / math.sqrt(2))

    @property
    def delay(self):
        return None if self.found is None else self.found - self.at
