"""History kept in CSV files: the header
``timestamp,system,partition,test,figure,value,unit`` (any order; ISO 8601
times, without an offset they are UTC); further columns are provenance, used
to say what changed at a change point.
"""

import csv
import math
from pathlib import Path

from clusterproof import ClusterproofError
from clusterproof.store import history

CSV_COLUMNS = ('timestamp', 'system', 'partition', 'test', 'figure', 'value', 'unit')
#: what an optional ``flags`` column of a CSV history may hold (space-separated):
#: a smoke or emulated figure has its own history, apart from full-size ones
CSV_FLAGS = ('smoke', 'emulated')


def read_csv(path):
    """Rows of one CSV file with the header ``timestamp,system,partition,test,
    figure,value,unit`` (any order). An optional ``flags`` column marks smoke
    or emulated figures, an optional ``session`` column the session id; other
    columns are provenance."""
    path = Path(path)
    try:
        fh = open(path, newline='')
    except OSError as err:
        raise ClusterproofError(f'{path}: cannot read ({err.strerror})') from None
    rows, errors = [], []
    with fh:
        reader = csv.reader(fh)
        try:
            header = [h.strip() for h in next(reader)]
        except StopIteration:
            raise ClusterproofError(f'{path}: empty; the first line must be the header '
                                    f'{",".join(CSV_COLUMNS)}') from None
        missing = [c for c in CSV_COLUMNS if c not in header]
        if missing:
            raise ClusterproofError(f'{path}:1: header lacks {", ".join(missing)} (it must '
                                    f'name {",".join(CSV_COLUMNS)}; further columns are '
                                    f'provenance)')
        col = {name: i for i, name in enumerate(header)}
        extra = [h for h in header if h not in CSV_COLUMNS]
        for cells in reader:
            where = f'{path}:{reader.line_num}'
            if not cells or not any(c.strip() for c in cells):
                continue
            if len(cells) != len(header):
                errors.append(f'{where}: {len(cells)} fields, the header has {len(header)}')
                continue
            get = {c: cells[col[c]].strip() for c in CSV_COLUMNS}
            empty = [c for c in CSV_COLUMNS if c != 'unit' and not get[c]]
            if empty:
                errors.append(f'{where}: empty {", ".join(empty)}')
                continue
            try:
                t = history.parse_time(get['timestamp'])
            except ValueError:
                errors.append(f'{where}: timestamp {get["timestamp"]!r} is not ISO 8601 '
                              f'(e.g. 2026-11-20T01:30:00+00:00)')
                continue
            try:
                value = float(get['value'])
            except ValueError:
                errors.append(f'{where}: value {get["value"]!r} is not a number')
                continue
            if not math.isfinite(value):
                errors.append(f'{where}: value {get["value"]!r} is not finite')
                continue
            prov = {k: cells[col[k]].strip() for k in extra}
            marked = prov.pop('flags', '').replace(';', ' ').replace(',', ' ').split()
            unknown = [x for x in marked if x not in CSV_FLAGS]
            if unknown:
                errors.append(f'{where}: flags {" ".join(unknown)!r} unknown (known: '
                              f'{", ".join(CSV_FLAGS)}, separated by spaces)')
                continue
            flags = tuple(x for x in CSV_FLAGS if x in marked)
            rows.append((get['system'], get['partition'], get['test'], get['figure'],
                         get['unit'], flags, history.Point(t, value, prov.pop('session', ''), where,
                                                   prov)))
    history.refuse(path, errors)
    return rows
