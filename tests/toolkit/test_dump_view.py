"""`dump --format table` lines (toolkit.dump_view) from hand-built entries: each kind read through its
declaration (`documents.FileEntry`, ...), any other kind printed member by member."""
from __future__ import annotations

import io
from typing import Any

from rich.console import Console

from replog.toolkit.dump_view import print_entries

FILE = {"kind": "file", "path": "/x/00000000000000000000.log", "file_kind": "kafka-segment", "size": 120}
BATCH = {"kind": "batch", "path": "/x", "position": 0, "base_offset": 5, "last_offset": 6, "count": 2,
         "partition_leader_epoch": 3, "magic": 2, "codec": "none", "crc": 7, "crc_valid": False, "size": 90,
         "first_timestamp": 1, "max_timestamp": 2, "timestamp_type": "CreateTime", "producer_id": -1,
         "producer_epoch": -1, "base_sequence": -1, "last_sequence": -1, "is_transactional": False,
         "is_control": False, "delete_horizon_ms": None}
RECORD = {"kind": "record", "path": "/x", "offset": 5, "position": 0, "timestamp": 1, "timestamp_type": "CreateTime",
          "key_size": -1, "value_size": 2, "sequence": -1, "is_control": False, "key": None,
          "value": {"undecodable": True, "hex": "ff00"}, "headers": [{"key": "h", "value": "v"}]}
MARKER = {**RECORD, "offset": 6, "key_size": 4, "value_size": 6, "is_control": True, "key": "ab", "value": "cd",
          "headers": [], "control_type": "COMMIT", "coordinator_epoch": 0}
FINDING = {"kind": "finding", "code": "KAFKA_CRC_MISMATCH", "severity": "error", "path": "/x", "position": None,
           "offset": 5, "message": "bad [crc]"}
OTHER = {"kind": "index_entry", "path": "/x.index", "offset": 5, "position": 0}


def lines(entries: list[dict[str, Any]], print_data: bool) -> list[str]:
    out = io.StringIO()
    print_entries(entries, Console(file=out, width=400, color_system=None, highlight=False), print_data)
    return out.getvalue().splitlines()


def test_each_kind_has_its_line() -> None:
    got = lines([FILE, BATCH, FINDING, OTHER], print_data=False)
    assert got[0] == "Dumping /x/00000000000000000000.log (kafka-segment, 120 bytes)", got[0]
    assert got[1].startswith("base_offset: 5 last_offset: 6 count: 2 base_sequence: -1"), got[1]
    assert got[1].endswith("codec: none crc: 7 isvalid: false"), got[1]
    assert got[2] == "ERROR KAFKA_CRC_MISMATCH  offset 5: bad [crc]", f"a finding without a position: {got[2]}"
    assert got[3] == "index_entry offset: 5 position: 0", f"another kind, member by member: {got[3]}"


def test_records_show_their_data_only_when_asked() -> None:
    bare, data = lines([RECORD, MARKER], print_data=False), lines([RECORD, MARKER], print_data=True)
    assert bare[0] == ("| offset: 5 timestamp: 1 key_size: -1 value_size: 2 sequence: -1 header_keys: "
                       '["h"]'), f"no key or payload without --print-data: {bare[0]}"
    assert data[0] == bare[0] + " payload: <hex:ff00>", f"a null key left out, undecodable bytes as hex: {data[0]}"
    assert bare[1].endswith("control_type: COMMIT coordinator_epoch: 0"), f"a control record's type: {bare[1]}"
    assert data[1] == bare[1] + " key: ab payload: cd", f"a control record with its key and payload: {data[1]}"
