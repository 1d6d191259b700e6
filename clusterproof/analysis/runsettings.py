"""What a session itself changed in a test case: its variables and
parameters as ReFrame's run report records them (the scalar attributes of
the test case, :func:`clusterproof.reframe_io.database.test_attrs`), and
which of them the session's command line set (``-S name=value``,
``-S Check.name=value``, ``--setvar``:
:func:`clusterproof.store.history.setvars`).

A point of a figure's history carries them in its provenance
(:class:`clusterproof.store.history.Point`): ``settings``, the attributes
as JSON text, and ``setvars``, those its session's command line set.
:func:`changes` names the attributes whose value was one in every session
before a change and another one in every session after it:
``block_size: 1M -> 512 (set on the command line)``. An attribute whose
value differs from session to session (on either side) is never named.
"""

import json

#: the provenance keys this module reads
SETTINGS, SETVARS = 'settings', 'setvars'


def changes(before, after, provenance=()):
    """Lines naming each variable or parameter of the test case that had one
    value in every point of ``before`` and another in every point of
    ``after`` (points with a provenance, see the module's docstring), with
    where the new value came from. A variable that is also one of the
    ``provenance`` keys (``cp_fingerprint``, ``cp_mpi_library``: what the
    check recorded, not what the session set) is left to the attribution
    of provenance, which names it in its own words."""
    old = [_settings(p) for p in before]
    new = [_settings(p) for p in after]
    if not old or not new:
        return []
    out = []
    for name in sorted(set().union(*old, *new) - set(provenance)):
        was = {json.dumps(s.get(name)) for s in old}
        now = {json.dumps(s.get(name)) for s in new}
        if len(was) == 1 and len(now) == 1 and was != now:
            out.append(f'{name}: {_text(old[0].get(name))} -> {_text(new[0].get(name))}'
                       f'{_origin(name, before, after)}')
    return out


def _settings(point):
    return _json(point.provenance.get(SETTINGS))


def _json(text):
    """The mapping of JSON ``text`` ({} for none or another value)."""
    try:
        got = json.loads(text or '{}')
    except ValueError:
        return {}
    return got if isinstance(got, dict) else {}


def _text(value):
    return '(not set)' if value is None else str(value)


def _origin(name, before, after):
    """`` (set on the command line)`` when every session after set ``name``
    on its command line and not every one before did; `` (no longer set on
    the command line)`` the other way round; else nothing."""
    set_after = all(name in _json(p.provenance.get(SETVARS)) for p in after)
    set_before = all(name in _json(p.provenance.get(SETVARS)) for p in before)
    if set_after and not set_before:
        return ' (set on the command line)'
    if set_before and not set_after:
        return ' (no longer set on the command line)'
    return ''
