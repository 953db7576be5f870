"""floorplan on BOTS's inputs (Cppless figures 5.2, 5.3)."""

from common import FAN_OUT_HEADER, fan_out_rows, load, table


def render(data, plots):
    records = load(data, "floorplan")
    rows = fan_out_rows(records, lambda p: f"{p['input']} (cutoff {p['cutoff']})")
    for row, record in zip(rows, records):
        row[0] += f", area {record['summary']['result']}"
    return table(FAN_OUT_HEADER, rows)
