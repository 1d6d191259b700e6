"""``/proc/mounts``: device, mount point, file system type and options of
every mount (octal escapes such as ``\\040`` decoded)."""

import re
from dataclasses import dataclass

from clusterproof.parsers import ParseError


@dataclass(frozen=True)
class Mount:
    device: str
    path: str
    fstype: str
    options: tuple


def _unescape(field):
    return re.sub(r'\\([0-7]{3})', lambda m: chr(int(m.group(1), 8)), field)


def parse(text, source='/proc/mounts'):
    """Mounts from the text of /proc/mounts (octal escapes such as ``\\040``
    in paths are decoded)."""
    mounts = []
    for num, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        fields = line.split()
        if len(fields) < 4:
            raise ParseError(f'{source}, line {num}: want device, path, type, options: {line!r}')
        mounts.append(Mount(_unescape(fields[0]), _unescape(fields[1]), fields[2],
                            tuple(fields[3].split(','))))
    return mounts
