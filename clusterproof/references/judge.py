"""The one judge of reference values: ``site_config/references/<system>.yaml``
in ReFrame's external-reference (``$ref``) format.

Everything that reads or applies a reference goes through this package, one
module per part: :mod:`~clusterproof.references.entries` loads and validates a
file (``load``, ``validate_file``) and gives an entry's absolute bounds
(``bounds``); :mod:`~clusterproof.references.lookup` finds the entry of a
measured figure as ReFrame does (``lookup``) and the references a system
declares (``declared``, what ``acceptance`` walks);
:mod:`~clusterproof.references.direction` gives the direction of a figure as
its check declared it (``lower_is_better``, ``record_lower_is_better``); this
module gives the verdict (:class:`Verdict`, :func:`judge`; a figure record's
against its system's references: :func:`judge_record`). ``compare``,
``report``, ``acceptance``, ``bless`` and the checks (``checklib.base``, at
set-up) use them, each name from the module that defines it; none of them
reads the YAML, parses an entry or applies a bound on its own.

Each top-level key is a check's class name; under it an optional ``$index``
(test attributes such as ``threads``) and, per index value, figures as
``[value, lower, upper, unit]`` lists: ``lower`` and ``upper`` are fractions
of the value (``-0.1`` = 10 % below), ``null`` for no bound. Throughputs get
a lower bound only, latencies an upper bound only. An entry
``['$xfail', 'reason', [value, lower, upper, unit]]`` is an expected failure
(ReFrame's syntax): this module is the only one that knows it; everything
else gets a :class:`Reference` whose ``xfail`` holds the reason, and the
verdicts ``xfail`` (failed as expected, not a regression) and ``xpass``
(met the reference although a failure was expected: the mark is stale, a
failure as in ReFrame).
"""

import enum
import math
from dataclasses import dataclass

from clusterproof.references.direction import record_lower_is_better
from clusterproof.references.entries import Reference
from clusterproof.references.lookup import found_reference, lookup, references_for


# -- judging ------------------------------------------------------------------

class Verdict(enum.StrEnum):
    """The one verdict vocabulary: of a figure, a test case, an acceptance
    item (of the declared references or of a contract), a screened node and
    a node probed for persistent memory. :func:`judge` and every judge
    (``analysis.compare``, ``acceptance``,
    ``screen.judge``, ``site.pmem``) give one, with its reason in a
    :class:`Judgement`. Its value is the one text every output and every
    record shows; :attr:`failing` and :attr:`bucket` say what it counts as
    (nothing parses the text back; :meth:`read` reads a recorded one)."""
    PASS = 'pass'                   # inside the bounds; a node like its peers; a fit node
    REGRESSION = 'REGRESSION'       # beyond the bound on the worse side
    OUT_OF_BOUNDS = 'OUT-OF-BOUNDS'  # beyond a bound on the better side (ReFrame fails it too)
    XFAIL = 'xfail'                 # beyond a bound of a $xfail reference: failed as expected
    XPASS = 'xpass'                 # met a $xfail reference: a stale mark, a failure
    FAILED = 'FAILED'               # nothing measured, the check failed, the node unfit (reason)
    SKIPPED = 'skipped'             # the test case was skipped
    NO_REF = 'no-ref'               # nothing to judge against
    NOT_JUDGED = 'not judged'       # a smoke or emulated figure shown beside a real reference
    MISSING = 'missing'             # in the base session, not in the new one; a node without result
    NOT_ACCEPTED = 'not accepted'   # acceptance: smoke or emulated figures are never accepted
    SLOW = 'slow'                   # screening: a node worse than its peers or its reference
    FAIL = 'fail'                   # a contract's committed item that missed its commitment
    NOT_MEASURED = 'not measured'   # a contract's item without any run
    INVALID = 'invalid'             # a contract's item with runs, too few of them valid
    REPORTED = 'reported'           # a contract's informative item: reported, never judged

    @property
    def failing(self):
        """True for a verdict that fails a comparison, an acceptance or a
        screening (``xpass`` as ReFrame counts it: an expected failure that
        did not happen)."""
        return self in _FAILING

    @property
    def bucket(self):
        """The :class:`Bucket` this verdict is counted in (the report's
        counts, ``analysis.morning.BUCKETS``), else its own text."""
        return _BUCKETS.get(self, self.value)

    @classmethod
    def read(cls, text):
        """The verdict a record or an output spelled ``text``, old spellings
        included (a screening before the one vocabulary wrote ``ok`` and
        ``failed``, a comparison ``not-judged``); a ValueError naming the
        text when it is none."""
        if isinstance(text, cls):
            return text
        text = str(text)
        found = _OLD_SPELLINGS.get(text, text)
        try:
            return cls(found)
        except ValueError:
            raise ValueError(f'{text!r} is not a verdict (known: '
                             f'{", ".join(v.value for v in cls)})') from None


class Bucket(enum.StrEnum):
    """What a verdict is counted as on the report's first screen: the name
    of the verdict it counts with, in lower case and words (``REGRESSION``
    is counted as ``regression``, ``OUT-OF-BOUNDS`` as ``out of bounds``,
    ``no-ref`` with ``not judged``)."""
    PASS = Verdict.PASS.value
    REGRESSION = Verdict.REGRESSION.lower()
    FAILED = Verdict.FAILED.lower()
    SKIPPED = Verdict.SKIPPED.value
    NOT_JUDGED = Verdict.NOT_JUDGED.value
    OUT_OF_BOUNDS = Verdict.OUT_OF_BOUNDS.lower().replace('-', ' ')


_FAILING = frozenset({Verdict.REGRESSION, Verdict.OUT_OF_BOUNDS, Verdict.XPASS,
                      Verdict.FAILED, Verdict.NOT_ACCEPTED, Verdict.SLOW, Verdict.FAIL,
                      Verdict.NOT_MEASURED, Verdict.INVALID})
_BUCKETS = {Verdict.PASS: Bucket.PASS, Verdict.REGRESSION: Bucket.REGRESSION,
            Verdict.FAILED: Bucket.FAILED, Verdict.SKIPPED: Bucket.SKIPPED,
            Verdict.NO_REF: Bucket.NOT_JUDGED, Verdict.NOT_JUDGED: Bucket.NOT_JUDGED,
            Verdict.OUT_OF_BOUNDS: Bucket.OUT_OF_BOUNDS}
#: spellings written before the one vocabulary, read as the verdict they meant
_OLD_SPELLINGS = {'ok': 'pass', 'failed': 'FAILED', 'not-judged': 'not judged'}
#: verdicts that fail a comparison, an acceptance or a screening
FAILING = tuple(v for v in Verdict if v.failing)


@dataclass(frozen=True)
class Judgement:
    """A :class:`Verdict` with its ``reason`` (why an item failed, which
    bound a figure crossed; '' when nothing needs saying), the absolute
    ``bounds`` (low, high) it was judged against, the ``reference`` (a
    :class:`~clusterproof.references.entries.Reference`; None: none) it was
    judged against or shown beside, and the ``flags`` the judging raised
    (``emulated-ref``, ``ref-changed``, why a test case measured nothing)."""
    verdict: Verdict
    reason: str = ''
    bounds: tuple = (None, None)
    reference: object = None
    flags: tuple = ()

    @property
    def failing(self):
        return self.verdict.failing

    def __str__(self):
        return f'{self.verdict} ({self.reason})' if self.reason else str(self.verdict)


def judge(value, ref, lower, upper, lower_is_better, xfail=None):
    """The :class:`Judgement` of ``value`` against ``ref`` with relative
    thresholds ``lower`` and ``upper`` and an expected failure's reason
    ``xfail``: :func:`judge_reference` of the
    :class:`~clusterproof.references.entries.Reference` they make
    (``no-ref`` without ``ref``)."""
    if ref is None:
        return Judgement(Verdict.NO_REF)
    return judge_reference(value, Reference(ref, lower, upper, xfail=xfail), lower_is_better)


def judge_reference(value, reference, lower_is_better, flags=()):
    """The :class:`Judgement` of ``value`` against a :class:`Reference`, as
    ReFrame judges a performance figure: ``pass`` inside its bounds;
    outside, ``REGRESSION`` on the worse side and ``OUT-OF-BOUNDS`` on the
    better side (a throughput above its upper bound: ReFrame fails it, and
    so does this judge; the reason says so: re-bless or widen the bound);
    ``no-ref`` without a reference (None, or one without a value);
    ``FAILED`` without a finite value. For an expected failure (the
    reference's ``xfail``, the reason of a ``$xfail`` entry), as ReFrame:
    ``xfail`` where it would fail, ``xpass`` where it would pass. ``flags``:
    what the caller noted beside the verdict, carried by the Judgement."""
    if reference is None or reference.value is None:
        return Judgement(Verdict.NO_REF, flags=flags)
    lo, hi = reference.limits
    if value is None or not math.isfinite(value):
        return Judgement(Verdict.FAILED, 'no finite value', (lo, hi), reference, flags)
    verdict, why = _beyond(value, lo, hi, lower_is_better)
    if reference.xfail and verdict == Verdict.PASS:
        verdict, why = Verdict.XPASS, f'met a reference marked $xfail ({reference.xfail})'
    elif reference.xfail:
        verdict, why = Verdict.XFAIL, f'{why}; expected: {reference.xfail}'
    return Judgement(verdict, why, (lo, hi), reference, flags)


def _beyond(value, lo, hi, lower_is_better):
    """``(verdict, why)`` of a finite ``value`` against the absolute bounds
    ``lo`` and ``hi`` (None: unbounded): ``pass`` inside them."""
    if lo is not None and value < lo:
        return _crossed(f'below the lower bound {lo:.5g}',
                        not lower_is_better or (hi is not None and value > hi))
    if hi is not None and value > hi:
        return _crossed(f'above the upper bound {hi:.5g}', lower_is_better)
    return Verdict.PASS, ''


def _crossed(why, worse):
    if worse:
        return Verdict.REGRESSION, why
    return Verdict.OUT_OF_BOUNDS, f'{why}, on the better side; ReFrame fails it too'


def judge_record(rec, refs_by_system):
    """The :class:`Judgement` of figure record ``rec`` against the references
    of its system (:func:`~clusterproof.references.lookup.found_reference`;
    ``refs_by_system`` caches the parsed files), as ``compare`` judges it:
    an emulated figure only against references blessed from emulated runs
    (flagged ``emulated-ref``), else shown beside its system's own reference,
    ``not judged``; a smoke figure shown beside its reference, ``not
    judged``; a figure that ReFrame judged against another reference when it
    ran flagged ``ref-changed``."""
    return _judged(rec, record_lower_is_better(rec), found_reference(refs_by_system, rec))


def _judged(rec, lower_is_better, found):
    reference, emulated_ref = found
    flags = ('emulated-ref',) if emulated_ref else ()
    if reference is None:
        return Judgement(Verdict.NO_REF, flags=flags)
    if rec.smoke or (rec.emulated and not emulated_ref):
        return Judgement(Verdict.NOT_JUDGED, reference=reference, flags=flags)
    if not rec.emulated and not reference.same_as(rec.ran_against):
        flags += ('ref-changed',)
    return judge_reference(rec.value, reference, lower_is_better, flags)


def judge_against(rec, base, refs_by_system, tolerance):
    """The :class:`Judgement` of figure record ``rec`` against ``base``, the
    value of the same figure in another session: within the thresholds of
    its reference where it has one (an emulated figure's only from the file
    blessed from emulated runs), else within ``tolerance`` (a fraction) on
    its worse side."""
    return _within(rec, base, tolerance,
                   lookup(references_for(refs_by_system, rec.system, rec.emulated), rec))


def _within(rec, base, tolerance, found):
    lower_is_better = record_lower_is_better(rec)
    lower, upper = (found.lower, found.upper) if found else (None, None)
    if lower is None and upper is None:
        lower, upper = (None, tolerance) if lower_is_better else (-tolerance, None)
    return judge_reference(rec.value, Reference(base, lower, upper), lower_is_better)
