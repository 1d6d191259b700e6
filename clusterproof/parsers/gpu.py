"""The GPUs a node reports: ``nvidia-smi -L``, ``rocm-smi`` and the cards
of ``/sys/class/drm``, as pure functions over their text (the inventory
runs them on each node: :func:`clusterproof.site.inventory.gpu_report`).
Text that is not such output raises :class:`ParseError` (a ValueError)."""

import os
import re

from clusterproof.parsers import ParseError

#: PCI vendors of the GPUs counted from /sys/class/drm
GPU_VENDORS = {'0x10de': 'NVIDIA', '0x1002': 'AMD'}

_NVIDIA_LINE = re.compile(r'^GPU (\d+): (.*?) \(UUID: ([^)]*)\)\s*$')


def parse_nvidia_smi_list(text, source='nvidia-smi -L'):
    """``[{'index', 'model', 'uuid'}]`` of the GPUs in ``nvidia-smi -L``
    output; the indented ``MIG ... Device`` lines under a GPU are not GPUs.
    A line that starts like a GPU but is not one is an error naming it."""
    gpus = []
    for num, line in enumerate(text.splitlines(), 1):
        if not line.startswith('GPU '):
            continue
        m = _NVIDIA_LINE.match(line)
        if not m:
            raise ParseError(f'{source}, line {num}: not a GPU line: {line[:100]!r}')
        gpus.append({'index': int(m.group(1)), 'model': m.group(2), 'uuid': m.group(3)})
    return gpus


def parse_rocm_smi(text, source='rocm-smi'):
    """The GPU indices ``rocm-smi`` lists: the rows of its concise table
    (``0       [0x74a1 : 0x00]  35.0°C ...``, or ``0  35.0c ...`` before
    ROCm 6) or its ``GPU[0] : ...`` lines, whichever it prints."""
    indices = set(int(m) for m in re.findall(r'^GPU\[(\d+)\]', text, re.M))
    table = False
    for line in text.splitlines():
        if re.match(r'^\s*(Device|GPU)\s', line) and not line.startswith('GPU['):
            table = True
            continue
        if table and line.startswith('====') and 'End of' in line:
            table = False
        if table:
            m = re.match(r'^(\d+)\s+\S', line)
            if m:
                indices.add(int(m.group(1)))
    if not indices and 'ROCm System Management Interface' not in text:
        raise ParseError(f'{source}: not rocm-smi output: {text.strip()[:100]!r}')
    return sorted(indices)


def drm_gpus(root='/sys/class/drm'):
    """``[(card, vendor)]`` of the NVIDIA and AMD cards under ``root``
    (``card0``, not its connectors ``card0-HDMI-A-1``); None when ``root``
    does not exist."""
    if not os.path.isdir(root):
        return None
    out = []
    for name in sorted(os.listdir(root)):
        if not re.fullmatch(r'card\d+', name):
            continue
        try:
            with open(os.path.join(root, name, 'device', 'vendor')) as fh:
                vendor = fh.read().strip().lower()
        except OSError:
            continue
        if vendor in GPU_VENDORS:
            out.append((name, GPU_VENDORS[vendor]))
    return out
