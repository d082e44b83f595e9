"""read_event_file, the Python tools' reader of event files, keeps what layer_events() keeps:
bytes that are not UTF-8 are no reason to read a compact file otherwise than layer_events()
reads it byte by byte."""
import json
import sqlite3

import pytest

from conftest import extension_path
from precisionprobe._compact_format import MAGIC
from precisionprobe._event_reader import read_event_file

HEADER = ('{"record":"job","job_id":"j","host_name":"node","ip":null,"pod":null,"namespace":null,'
          '"rank":0,"local_rank":0,"world_size":1,"pid":7,"cpu_num":1.0}')


def layer_events(path):
    """(batch, layer, t_start_ns) of the events layer_events() keeps, and its warnings."""
    db = sqlite3.connect(":memory:")
    db.enable_load_extension(True)
    db.load_extension(extension_path())
    rows = db.execute("SELECT batch, layer, t_start_ns FROM layer_events(?) ORDER BY line", (str(path),)).fetchall()
    return rows, json.loads(db.execute("SELECT pp_last_warnings()").fetchone()[0])


def compact_file(path, damaged):
    """A compact file with the line `damaged` (bytes) after a block line and 3 events, then 5
    events, a new block line and 4 more."""
    head = "\n".join([MAGIC.strip(), HEADER, 'L 0 "fc" "Linear"', 'D 0 0 "GPU-1"', "@ 1714000000000000000 0 0"])
    path.write_bytes(head.encode() + b"\n" + b"".join(b"0 f0 %d 10\n" % t for t in range(3))
                     + damaged + b"\n" + b"".join(b"0 f0 %d 10\n" % t for t in range(100, 105))
                     + b"@ 1714000000000000000 0 1\n" + b"".join(b"0 f0 %d 10\n" % t for t in range(200, 204)))
    return path


def test_garbage_that_is_not_utf8_loses_the_events_up_to_the_next_block_line(tmp_path):
    """The line may have been a block line: the 5 events after it cannot be placed in time, so
    both readers skip 6 lines, keep 7 events and name the same first reason."""
    path = compact_file(tmp_path / "events.jsonl", b"\x00\x00garbage{{{\xff\xfe")
    skipped = []
    events = read_event_file(path, skipped)[1]
    rows, warnings = layer_events(path)
    assert [(e["batch"], e["layer"], e["t_start_ns"]) for e in events] == rows
    assert len(events) == 7
    assert [line for line, _ in skipped] == list(range(9, 15))
    assert warnings == [f"layer_events: skipped 6 malformed lines in {path} (first at line 9: "
                        f"{skipped[0][1]})"]
    assert skipped[0][1] == "unknown record type '\\x00'"


@pytest.mark.parametrize("damaged", [
    b"\xff\xfe", b"@ 17140000\xff0000000000 0 5", b'D 1 1 "GPU-\xff"', b'L 1 "r\xe9lu" "ReLU"',
    b"0 f0 50\xff 10", b'{"record":"job","job_id":"\xff"}', b" \xef\xbb\xbf{\xff}", b"\xef\xbb\xbf@ 1 0 1\xc3"])
def test_both_readers_keep_the_same_events_around_a_line_that_is_not_utf8(tmp_path, damaged):
    """Whatever the line was meant to be (a block line, a definition, an event, JSON), the Python
    tools keep exactly the events layer_events() keeps and skip as many lines."""
    path = compact_file(tmp_path / "events.jsonl", damaged)
    skipped = []
    events = read_event_file(path, skipped)[1]
    rows, warnings = layer_events(path)
    assert [(e["batch"], e["layer"], e["t_start_ns"]) for e in events] == rows
    assert skipped[0][0] == 9
    # (The readers word some reasons differently; the lines they skip are the same.)
    n = len(skipped)
    assert len(warnings) == 1
    assert warnings[0].startswith(f"layer_events: skipped {n} malformed line{'s' if n > 1 else ''} in {path} "
                                  "(first at line 9: ")
