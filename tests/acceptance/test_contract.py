"""The acceptance contract file: every shipped contract validates, and bad
input is refused with an error naming the file, the key and the value; an
item naming a check, a parameter or a figure the checks do not have (as
ReFrame loads them) is refused with the nearest real names."""

import re
import subprocess

import pytest

from clusterproof import ClusterproofError
from clusterproof.acceptance import contract
from clusterproof.acceptance import run as contract_run
from clusterproof.paths import CHECKS_DIR, SETTINGS_FILE
from clusterproof.reframe_io import runner
from conftest import REPO, VENV_BIN, WAIT_S

GOOD = '''
system: emu
items:
  - id: triad
    check: Stream
    parameters: {placement: cores}
    figure: triad
    committed: 100
    unit: MB/s
    tolerance: -5%
'''


def write(tmp_path, text, name='c.yaml'):
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.slow
def test_every_shipped_contract_validates():
    files = contract.shipped()
    assert {f.stem for f in files} >= {'local-cluster', 'minerva', 'pixstor', 'pmserver'}
    for f in files:
        # its system and partition exist, and the checks have every check,
        # parameter value and figure it names (as ReFrame loads them)
        c = contract_run.load(f)
        assert c.name == f.stem and c.items


@pytest.fixture(scope='module')
def emu_cases():
    """The test cases ReFrame loads from reframe_checks on emu in mode
    acceptance (``reframe --describe``), as the contract ``GOOD`` is checked."""
    env = runner.reframe_env(config=SETTINGS_FILE)
    env.pop('CLUSTERPROOF_MODE', None)
    cases = runner.describe(['-c', str(CHECKS_DIR), '--system', 'emu', '--mode', 'acceptance'],
                            env=env)
    assert {'Stream', 'IorSharedFile', 'Hpl'} <= {x.check for x in cases}
    return cases


@pytest.mark.parametrize('old, new, words', [
    ('check: Stream', 'check: Strem',
     "c.yaml: items[0] (triad): check: no check 'Strem' on emu in mode acceptance "
     "(nearest: 'Stream'; known: "),
    ('figure: triad', 'figure: triadd',
     "c.yaml: items[0] (triad): figure: check Stream (placement=cores) has no figure 'triadd' "
     "(nearest: 'triad', 'add'; known: add, copy, scale, triad, triad_efficiency)"),
    ('{placement: cores}', '{placement: core}',
     "c.yaml: items[0] (triad): parameters.placement: check Stream has no test case with "
     "placement=core on emu in mode acceptance (nearest: 'cores'; known: cores, l3)"),
    ('{placement: cores}', '{placment: cores}',
     "c.yaml: items[0] (triad): parameters.placment: check Stream has no parameter 'placment' "
     "(nearest: 'placement'; known: membind, placement)"),
], ids=['check', 'figure', 'parameter-value', 'parameter'])
def test_names_the_checks_do_not_have_are_refused(tmp_path, emu_cases, old, new, words):
    c = contract.load(write(tmp_path, GOOD.replace(old, new)))
    with pytest.raises(ClusterproofError) as err:
        contract.check_names(c, emu_cases, 'emu in mode acceptance')
    assert words in str(err.value)
    assert contract.check_names(contract.load(write(tmp_path, GOOD)), emu_cases) is not None


@pytest.mark.slow
@pytest.mark.parametrize('command', ['validate', 'acceptance'])
def test_the_commands_refuse_a_misspelt_contract_before_anything_runs(tmp_path, command):
    """``validate --contract`` and ``acceptance --contract``: exit 2, one line
    naming the file, the item and the nearest real name; nothing run."""
    path = write(tmp_path, GOOD.replace('check: Stream', 'check: Strem'))
    args = {'validate': ['validate', '--system', 'emu', '--contract', str(path)],
            'acceptance': ['acceptance', '--contract', str(path)]}[command]
    env = dict(runner.reframe_env(config=SETTINGS_FILE),
               CLUSTERPROOF_RESULTS=str(tmp_path / 'results'))
    proc = subprocess.run([str(VENV_BIN / 'clusterproof'), *args], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=WAIT_S)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.startswith(f'clusterproof {command}: error: {path}: items[0] (triad): '
                                  "check: no check 'Strem' on emu in mode acceptance "
                                  "(nearest: 'Stream'; "), proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert not (tmp_path / 'results' / 'results.db').exists()


def test_defaults_and_tolerance(tmp_path):
    c = contract.load(write(tmp_path, GOOD))
    assert (c.name, c.mode, c.allow, c.reuse_within_days) == ('c', 'acceptance', (), 30.0)
    item = c.items[0]
    assert (item.kind, item.statistic, item.repetitions) == ('committed', 'median', 3)
    assert (item.lower, item.upper) == (-0.05, None)
    assert item.parameters == {'placement': 'cores'}
    both = contract.load(write(tmp_path, GOOD.replace('-5%', "'-5%/+10%'")))
    assert (both.items[0].lower, both.items[0].upper) == (-0.05, 0.10)


@pytest.mark.parametrize('old, new, key, words', [
    ('tolerance: -5%', 'tolerance: five', 'items[0].tolerance', "want '-5%'"),
    ('tolerance: -5%', 'tolerance: -150%', 'items[0].tolerance', 'between -100% and 0%'),
    ('tolerance: -5%', '', 'items[0].tolerance', 'required'),
    ('committed: 100', 'committed: lots', 'items[0].committed', 'want a number'),
    ('unit: MB/s', 'unit: furlongs', 'items[0].unit', 'unknown unit'),
    ('figure: triad', 'figure: triad\n    kind: binding', 'items[0].kind',
     'want one of committed, informative'),
    ('figure: triad', 'figure: triad\n    statistic: mode', 'items[0].statistic',
     'want one of median, best, mean'),
    ('figure: triad', 'figure: triad\n    repetitions: 0', 'items[0].repetitions',
     'want at least 1'),
    ('figure: triad', 'figure: triad\n    colour: red', 'items[0].colour', 'unknown key'),
    ('figure: triad', 'figure: triad\n    validity: {min_runtime_s: soon}',
     'items[0].validity.min_runtime_s', 'want a number'),
    ('figure: triad', 'figure: triad\n    validity: {min_data_ram_ratio: 2}',
     'items[0].validity.min_data_ram_ratio', 'needs data_variable'),
    ('figure: triad', 'figure: triad\n    validity: {fast: true}',
     'items[0].validity.fast', 'unknown key'),
    ('figure: triad', 'figure: triad\n    modifications: {threads: {min: 8, max: 2}}',
     'items[0].modifications.threads', 'min is above max'),
    ('figure: triad', 'figure: triad\n    modifications: {threads: lots}',
     'items[0].modifications.threads', "want 'any'"),
    ('system: emu', '', 'system', 'required'),
    ('system: emu', 'system: emu\nmode: fast', 'mode', 'want one of smoke'),
    ('system: emu', 'system: emu\nallow: [cheating]', 'allow', 'want a list of smoke'),
    ('id: triad', 'id: two words', 'items[0].id', 'no spaces'),
])
def test_bad_input_names_file_key_and_value(tmp_path, old, new, key, words):
    path = write(tmp_path, GOOD.replace(old, new))
    with pytest.raises(ClusterproofError) as err:
        contract.load(path)
    text = str(err.value)
    assert text.startswith(f'{path}: {key}: '), text
    assert words in text


def test_second_item_with_the_same_id(tmp_path):
    body = GOOD.split('items:\n')[1]
    path = write(tmp_path, GOOD + body)
    with pytest.raises(ClusterproofError, match=r'items\[1\]\.id: the same id as items\[0\] '
                                                r"\(found 'triad'\)"):
        contract.load(path)


def test_not_yaml_and_missing_file(tmp_path):
    with pytest.raises(ClusterproofError, match=r'c\.yaml:2: not valid YAML'):
        contract.load(write(tmp_path, 'system: emu\n  items: [\n'))
    with pytest.raises(ClusterproofError, match='cannot read the contract'):
        contract.load(tmp_path / 'absent.yaml')
    with pytest.raises(ClusterproofError, match=r'items: want a non-empty list'):
        contract.load(write(tmp_path, 'system: emu\nitems: []\n'))


def test_a_system_or_partition_the_site_lacks_is_refused(tmp_path):
    path = write(tmp_path, GOOD.replace('system: emu', 'system: nowhere'))
    with pytest.raises(ClusterproofError, match=r"c\.yaml: system: unknown system 'nowhere'"):
        contract.check_site(contract.load(path))
    path = write(tmp_path, GOOD.replace('system: emu', 'system: emu\npartition: gpu'))
    with pytest.raises(ClusterproofError, match=r"c\.yaml: partition: system emu has no "
                                                r"partition 'gpu'"):
        contract.check_site(contract.load(path))


def test_reframe_selects_only_the_items_test_cases(tmp_path):
    """The -n patterns, matched as ReFrame matches them (its display name
    without spaces, re.search), and one -n per distinct test."""
    from clusterproof.acceptance.run import name_pattern, reframe_args
    c = contract.load(write(tmp_path, GOOD.replace('{placement: cores}',
                                                   '{placement: cores, membind: local}')))
    pattern = re.compile(name_pattern(c.items[0]))
    for name, want in (('Stream %placement=cores %membind=local', True),
                       ('Stream %membind=local %placement=cores', True),
                       ('Stream %placement=cores %membind=localx', False),
                       ('Stream %placement=l3 %membind=local', False),
                       ('StreamBuild ~emu:srun+gnu', False)):
        assert bool(pattern.search(name.replace(' ', ''))) == want, name
    args = reframe_args(c, [c.items[0], c.items[0]])
    assert args.count('-n') == 1 and args[args.index('--mode') + 1] == 'acceptance'
    assert args[args.index('--system') + 1] == 'emu'
