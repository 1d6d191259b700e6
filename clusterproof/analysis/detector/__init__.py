"""Change points in the history of each figure, as the nightly run finds them.

A figure's history is its values in session order. Every night the detector
sees only the history up to that night, as a nightly run does, and asks:
did the figure move to a new level in the last few sessions?

1. Its noise is estimated from its own history: a robust scale (the
   interquartile range / 1.349) of the log values about the median of each
   segment between changes, so a relative change is a difference and a few
   outliers do not widen it.
2. Cheap screen: is the Hodges-Lehmann shift (the median of all differences
   between recent and earlier values) of the last ``min_after`` sessions
   against the rest large enough to look at? Most nights stop here.
3. Binary segmentation (ruptures' ``Binseg``, squared error cost on the
   values divided by the noise, penalty ``penalty x log(n)``; computed by
   :func:`~.segmentation.binseg` over prefix sums) places the change points of the window;
   the newest one with at least ``min_after`` sessions after it is the
   candidate.
4. Confirmation: the Hodges-Lehmann shift between the sessions before and
   after the candidate, divided by its standard error, must reach ``z``
   (``EARLY`` x ``z`` while only ``min_after`` sessions follow), and the
   sessions after it must agree with each other (:func:`~.significance.agree`: two bad
   nights among good ones are not a new level). A figure whose history has
   outliers (values more than ``outlier_z`` noise units from its median: a
   busy node, a cold cache) needs one more session after a change.

A reported change starts a new segment: later nights look for the next one.
The size of a change is re-estimated from every session up to the next
change (or the newest), with its standard error and a confidence (one minus
the two-sided p-value of the shift).

A second view, retrospective, segments the whole history at once
(:func:`~.retrospective.segment`): a change the nightly screen did not raise in its first
nights, or years of imported history, is found there; a row of steps that a
trend fits better is one drift, and so is a single step that a ramp fits
better, from the night the ramp began (the onset of a slow degradation).
:func:`~.views.find` matches the two views, says which found each change, and
withdraws the nightly alarms that later sessions disprove. The noise has
a floor from the values' resolution and spread (:func:`~.noise.noise_floor`), and
the levels of the node lists are taken out when they explain the spread
(:func:`~.levels.group_levels`), and so is a periodic component
(:func:`~.levels.periodic_levels`: a weekly cron job, a file system's scheduled
scrub), which must not raise changes.

Not every move is a change of level (:func:`~.classification.classify`): a short excursion
after which the level comes back is one transient, a move to a level the
figure keeps going to and leaving is a flip (listed as nothing), a series
that wanders has its shifts' standard errors widened by the long-run
variance of its residuals (:func:`~.noise.inflation`), and nothing smaller than
``model.Settings.min_change`` (the smallest change that matters) is listed.

A change of the noise alone (a node that became jittery, or was mended) is
a change too (:func:`~.noisechange.noise_changes`, ``kind='noise'``): found on the
session-to-session differences, which a level or a drift does not move.

A figure's minimum detectable change follows from its noise: the shift whose
statistic reaches ``z`` with 95 % probability after ``min_after + 1``
sessions.
A figure whose minimum detectable change exceeds ``max_detectable`` is too
noisy: only its changes larger than that are listed.

The thresholds were tuned on seeds of ``scripts/measure_detection.py`` that
its reported figures do not use; ``docs/changes.md`` has the measured
recall, delay and false alarm rate per noise model.

The modules, one seam each: :mod:`.model` (settings, a change),
:mod:`.noise`, :mod:`.levels` (taken out first), :mod:`.segmentation`,
:mod:`.significance`, :mod:`.nightly` and :mod:`.retrospective` (the two
views), :mod:`.classification` (step, drift, transient, flip),
:mod:`.noisechange`, :mod:`.views` (both matched: :func:`~.views.find`) and
:mod:`.figure` (a figure's noise). docs/changes-method.md has the rules
and their measurements.
"""

