"""The run's own settings as a cause: the variables and parameters of a test
case that a session changed, named with where the value came from; the
number of nodes and the mode beside them; read from the recorded results
database, whose fourth session ran with ``-S block_size=512``."""

import json
import shutil

from clusterproof.analysis import attribution, runsettings
from clusterproof.store.history import Point, setvars
from results_helpers import REPO


def _point(settings, cmdline='reframe -r', nodes='n1', mode='nightly'):
    return Point(0.0, 1.0, provenance={'settings': json.dumps(settings),
                                       'setvars': setvars(cmdline),
                                       'job_nodelist': nodes, 'mode': mode})


def test_the_command_line_settings_in_every_form():
    got = setvars("reframe -c x -r -S block_size=512 -S Stream.num_threads=4 "
                  "--setvar=copy_mib=64 --setvar 'repeats=2' -Sa=1 -n Stream "
                  "--report-file /r/run-report-nightly-20261128-190000.json")
    assert json.loads(got) == {'block_size': '512', 'num_threads': '4', 'copy_mib': '64',
                               'repeats': '2', 'a': '1'}
    assert setvars('') == '' and setvars('reframe -r --report-file x.json') == ''
    assert json.loads(setvars("reframe -S 'x=1")) == {"'x": '1'}


def test_a_setting_changed_on_the_command_line_is_named_with_its_origin():
    before = [_point({'block_size': '1M', 'copy_mib': 512})] * 3
    after = [_point({'block_size': '512', 'copy_mib': 512},
                    'reframe -r -S block_size=512')] * 2
    assert runsettings.changes(before, after) == [
        'block_size: 1M -> 512 (set on the command line)']
    # back to the default: no longer set there
    assert runsettings.changes(after, before) == [
        'block_size: 512 -> 1M (no longer set on the command line)']
    # changed in the check itself (no -S): named without an origin
    assert runsettings.changes(before, [_point({'block_size': '4M', 'copy_mib': 512})]) == [
        'block_size: 1M -> 4M']


def test_a_setting_that_varies_from_session_to_session_is_not_named():
    before = [_point({'seed': 1}), _point({'seed': 2})]
    after = [_point({'seed': 3})]
    assert runsettings.changes(before, after) == []
    assert runsettings.changes([], after) == []
    assert runsettings.changes(before[:1], [_point({})]) == ['seed: 1 -> (not set)']


def test_the_run_settings_come_first_then_node_count_and_mode():
    before = [_point({'num_tasks': 1}, nodes='n1')] * 2
    after = [_point({'num_tasks': 4}, nodes='n1,n2,n3,n4', mode='acceptance')] * 2
    got = attribution.cause_at(before + after, 2)
    assert got[0] == 'num_tasks: 1 -> 4'
    assert 'node count: 1 -> 4' in got and 'mode: nightly -> acceptance' in got
    assert not [line for line in got if line.startswith(('settings', 'setvars'))]


def test_the_recorded_slowed_night_names_its_block_size(tmp_path):
    """The recorded database (tests/data/results/README.md): three nights,
    then one with -S block_size=512; each figure of it names the setting."""
    from clusterproof.store import history
    shutil.copy(REPO / 'tests' / 'data' / 'results' / 'results.db', tmp_path / 'results.db')
    hists = [h for h in history.from_database(tmp_path / 'results.db') if not h.flags]
    assert len(hists) == 4
    for h in hists:
        assert attribution.cause_at(h.points, 3) == [
            'block_size: 1M -> 512 (set on the command line)'], h.key
        # the third session: the project's revision changed, no setting did
        assert [x.split(':')[0] for x in attribution.cause_at(h.points, 2)] == ['cp_git_rev']


def test_a_recorded_provenance_variable_is_left_to_its_own_attribution():
    """``cp_fingerprint`` is a variable of the test case too, but what the
    check recorded, not what the session set: the attribution names it once,
    in the words of the fingerprint, never as a setting."""
    def point(fp):
        p = _point({'block_size': '1M', 'cp_fingerprint': fp})
        p.provenance['cp_fingerprint'] = fp
        return p
    before, after = [point('n3=aaaa')] * 2, [point('n3=bbbb')] * 2
    assert runsettings.changes(before, after) == ['cp_fingerprint: n3=aaaa -> n3=bbbb']
    assert runsettings.changes(before, after, provenance={'cp_fingerprint'}) == []
