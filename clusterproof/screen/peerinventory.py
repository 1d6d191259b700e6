"""A node's inventory against its peers': the typical value of each
inventory figure among the peers and the mismatches of a node with it,
compared as the inventory check compares a node with the declaration.
"""

from clusterproof.screen.stats import peer_stats
from clusterproof.site import inventory as inv

#: units of the inventory figures
INVENTORY_UNITS = {'memory_gib': 'GiB', 'slurm_memory_mib': 'MiB'}

#: inventory figures compared between peers (names as ``extras['hardware']``)
INVENTORY_FIGURES = inv.EXACT_FIELDS + ('memory_gib',) + inv.SLURM_FIELDS


def inventory_mismatches(node, found, typical):
    """Mismatches (``site.inventory.Mismatch``) of a node's inventory
    figures ``found`` with its peers' ``typical`` ones, compared as the
    inventory check compares a node with the declaration (memory within
    ``inventory.memory_bounds``, the rest equal); each says "peers"."""
    problems = inv.compare_hardware(node, typical, found)
    out = []
    for p in problems:
        note = p.note
        if p.field in ('memory_gib', 'slurm_memory_mib') and _number(found.get(p.field)) \
                and found[p.field] < typical.get(p.field, 0):
            note = 'less memory than its peers: a missing or failed DIMM shows here'
        out.append(inv.Mismatch(p.node, p.field, f'{_num(p.expected)} (peers)', _num(p.found),
                                note))
    return out


def mismatch_text(m):
    """``slurm_memory_mib 1024, peers 2048 (less memory ...)``: a mismatch
    with the peers, without the node name (the row has it)."""
    text = f'{m.field} {m.found}, peers {str(m.expected).replace(" (peers)", "")}'
    return f'{text} ({m.note})' if m.note else text


def _number(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def typical_inventory(values):
    """The peers' value of each inventory figure: the median of what the
    nodes report (``{figure: [values]}``)."""
    out = {}
    for fig, vals in values.items():
        stats = peer_stats(vals)
        if stats is not None:
            out[fig] = stats.median
    return out


def _num(x):
    """``2048`` for 2048.0; other values as they are."""
    if isinstance(x, float) and x.is_integer():
        return int(x)
    return x
