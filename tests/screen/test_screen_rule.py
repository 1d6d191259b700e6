"""The screening rule's settings (``site_config/screening.yaml``): read,
looked up per check and figure, refused with the file, key and value."""

import pytest

from clusterproof import ClusterproofError
from clusterproof.paths import SITE_CONFIG
from clusterproof.screen import rule


def test_no_file_and_the_shipped_file_are_the_defaults(tmp_path):
    assert rule.load(tmp_path / 'none.yaml') == rule.Rule()
    shipped = rule.load(SITE_CONFIG / 'screening.yaml')
    assert (shipped.noise_units, shipped.smallest) == (3.5, {'default': 1.5})


def test_a_figure_takes_its_own_then_its_checks_then_the_default(tmp_path):
    path = tmp_path / 'screening.yaml'
    path.write_text('noise_units: 4\nsmallest_slowdown: {fio: 5, stream triad: 1}\n'
                    'repeatability: {stream: 0.15}\n')
    r = rule.load(path)
    assert r.noise_units == 4.0 and r.suspect_units == 3.0
    assert (r.smallest_pct('stream', 'triad'), r.smallest_pct('stream', 'copy'),
            r.smallest_pct('fio', 'write'), r.smallest_pct('hpl', 'gflops')) == (1, 1.5, 5, 1.5)
    assert (r.repeatability_pct('stream', 'copy'), r.repeatability_pct('hpl', 'gflops')) \
        == (0.15, 0.0)


@pytest.mark.parametrize('text, named', [
    ('smallest: {default: 2}', 'smallest'),
    ('smallest_slowdown: {stream: -1}', 'smallest_slowdown: stream: -1'),
    ('smallest_slowdown: {stream: "2 %"}', "smallest_slowdown: stream: '2 %'"),
    ('repeatability: [1, 2]', 'repeatability: expected a mapping'),
    ('noise_units: 0', 'noise_units: 0 is not a number above 0'),
    ('noise_units: [', 'not YAML'),
])
def test_bad_settings_are_refused_naming_file_key_and_value(tmp_path, text, named):
    path = tmp_path / 'screening.yaml'
    path.write_text(text + '\n')
    with pytest.raises(ClusterproofError) as err:
        rule.load(path)
    assert str(path) in str(err.value) and named in str(err.value)
