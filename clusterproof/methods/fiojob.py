"""The published "worst case" fio job on persistent memory, generated from
parameters.

The published job (fio 3.18, DAX-mounted DCPMM)::

    [global]
    blocksize=4k  sync=1  direct=1  buffered=0  ioengine=libpmem
    group_reporting=1  directory=/mnt/nvdimm/  lat_percentiles=1
    iodepth=1  loops=10
    [randread_8files]   rw=randread   filesize=1G  numjobs=4
    [randwrite_8files]  rw=randwrite  filesize=1G  numjobs=4

run one section at a time (``fio --section=randwrite_8files job.fio``).
Three engine variants share it:

``libpmem``  fsdax: files under a DAX mount (``directory=``)
``dev-dax``  a device-DAX character device (``filename=/dev/daxX.Y``): the
             block size is rounded up to the device's alignment, ``direct=0``,
             and each job works on its own ``filesize`` slice of the device
``psync``    the plain-storage baseline on the scratch file system (the same
             job with ``ioengine=psync``; ``direct=1`` keeps the page cache out)

Sizes, loops and job counts come from the mode (:func:`mode_params`).

fio >= 3.26 prepopulates a new file before a libpmem job and, for an engine
that cannot extend files, does not know the file's size: it writes until the
file system is full. The files of a libpmem job must therefore exist at their
final size before fio starts: :func:`layout_files` lists them, the check
creates them with ``fallocate``.
"""

import re
from dataclasses import dataclass

from clusterproof import ClusterproofError
from clusterproof.modes import by_mode

SECTIONS = ('randread_8files', 'randwrite_8files')
RW = {'randread_8files': 'randread', 'randwrite_8files': 'randwrite'}
ENGINES = ('libpmem', 'dev-dax', 'psync')

KiB, MiB, GiB = 1024, 1024 ** 2, 1024 ** 3

#: per mode: file size per job (bytes), loops, jobs per section
MODE_PARAMS = {
    'smoke': {'filesize': 16 * MiB, 'loops': 1, 'numjobs': 2},
    'nightly': {'filesize': 1 * GiB, 'loops': 2, 'numjobs': 4},
    'acceptance': {'filesize': 1 * GiB, 'loops': 10, 'numjobs': 4},     # as published
}

#: device-DAX alignment when the device does not say (the usual 2 MiB)
DEFAULT_DEVDAX_ALIGN = 2 * MiB

# fio separates several directories/files with ':'; job files are line based.
_SAFE_PATH = re.compile(r'^/[A-Za-z0-9._/+=@%,-]*$')


def mode_params(mode=None):
    """``{'filesize': bytes, 'loops': n, 'numjobs': n}`` of the mode."""
    return dict(by_mode(MODE_PARAMS, mode))


def fio_size(nbytes):
    """Bytes as fio reads them (``1G``, ``16M``, ``4k``; fio's default
    kb_base=1024 makes these binary units)."""
    for unit, factor in (('G', GiB), ('M', MiB), ('k', KiB)):
        if nbytes % factor == 0:
            return f'{nbytes // factor}{unit}'
    return str(nbytes)


def check_path(path, what):
    """An absolute path fio and a job script can carry unchanged."""
    text = str(path)
    if not _SAFE_PATH.match(text) or '//' in text or '/../' in text + '/':
        bad = sorted({ch for ch in text if not re.match(r'[A-Za-z0-9._/+=@%,-]', ch)})
        detail = f'characters {", ".join(repr(c) for c in bad)} not allowed' if bad else \
            'must be an absolute, normalised path'
        raise ClusterproofError(
            f'fio job: {what} {text!r}: {detail} (fio splits names at ":", job files are '
            'line based; use letters, digits and . _ / + = @ % , - only)')
    return text


def _positive_int(value, what):
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ClusterproofError(f'fio job: {what}={value!r}: want a whole number > 0')
    return value


@dataclass(frozen=True)
class FioJob:
    """One generated job file: the published global options, two sections."""
    engine: str
    target: str                 # directory (libpmem, psync) or device (dev-dax)
    filesize: int               # bytes per job
    numjobs: int
    loops: int
    blocksize: int = 4 * KiB

    def __post_init__(self):
        if self.engine not in ENGINES:
            raise ClusterproofError(f'fio job: engine {self.engine!r}: choose one of '
                                    f'{", ".join(ENGINES)}')
        check_path(self.target, 'device' if self.engine == 'dev-dax' else 'directory')
        _positive_int(self.filesize, 'filesize')
        _positive_int(self.numjobs, 'numjobs')
        _positive_int(self.loops, 'loops')
        _positive_int(self.blocksize, 'blocksize')
        if self.filesize % self.blocksize:
            raise ClusterproofError(
                f'fio job: filesize={self.filesize} is not a multiple of '
                f'blocksize={self.blocksize}')

    @property
    def total_bytes(self):
        """Bytes the files (or device slices) of one section occupy."""
        return self.filesize * self.numjobs

    def global_options(self):
        opts = [('blocksize', fio_size(self.blocksize)), ('sync', 1)]
        if self.engine == 'dev-dax':
            opts += [('direct', 0)]
        else:
            opts += [('direct', 1), ('buffered', 0)]
        opts += [('ioengine', self.engine), ('group_reporting', 1)]
        if self.engine == 'dev-dax':
            opts += [('filename', self.target)]
        else:
            opts += [('directory', self.target)]
        opts += [('lat_percentiles', 1), ('iodepth', 1), ('loops', self.loops)]
        return opts

    def section_options(self, section):
        opts = [('rw', RW[section])]
        if self.engine == 'dev-dax':
            # one device, numjobs slices of it
            opts += [('size', fio_size(self.filesize)),
                     ('offset_increment', fio_size(self.filesize))]
        else:
            opts += [('filesize', fio_size(self.filesize))]
        return opts + [('numjobs', self.numjobs)]

    def render(self):
        """The job file's text."""
        lines = ['[global]'] + [f'{k}={v}' for k, v in self.global_options()]
        for section in SECTIONS:
            lines += ['', f'[{section}]'] + [f'{k}={v}' for k, v in self.section_options(section)]
        return '\n'.join(lines) + '\n'

    def layout_files(self, section):
        """``[(path, size)]`` of the files one section uses (fio's names
        ``<section>.<job>.0``); none for dev-dax."""
        if section not in SECTIONS:
            raise ClusterproofError(f'fio job: no section {section!r} (have '
                                    f'{", ".join(SECTIONS)})')
        if self.engine == 'dev-dax':
            return []
        return [(f'{self.target}/{section}.{job}.0', self.filesize)
                for job in range(self.numjobs)]


def worst_case_job(engine, target, mode=None, **overrides):
    """The published job for ``engine`` on ``target`` with the mode's sizes;
    ``overrides`` (filesize, numjobs, loops, devdax_align) win over the mode."""
    params = mode_params(mode)
    align = overrides.pop('devdax_align', None)
    unknown = set(overrides) - {'filesize', 'numjobs', 'loops'}
    if unknown:
        raise ClusterproofError(f'fio job: unknown parameter(s) {", ".join(sorted(unknown))}')
    params.update({k: v for k, v in overrides.items() if v is not None})
    blocksize = 4 * KiB
    if engine == 'dev-dax':
        align = _positive_int(align or DEFAULT_DEVDAX_ALIGN, 'devdax alignment')
        blocksize = -(-blocksize // align) * align
        params['filesize'] = max(-(-params['filesize'] // align) * align, align)
    return FioJob(engine=engine, target=target, blocksize=blocksize, **params)
