"""The compact event format from the hook client's side: the probe writes it by default,
layer_events reads back exactly what JSON Lines of the same run give, the JSON setting still
works, and a file removed mid-run is followed by one that decodes on its own."""
import collections
import json
import os
import sqlite3

import pytest
import torch

from conftest import extension_path
from precisionprobe._compact_format import MAGIC, CompactFormatter
from precisionprobe._event_format import EventFormatter, chosen_event_format
from precisionprobe._event_reader import EventFormatError, read_event_file
from precisionprobe._event_writer import HEADER, EventWriter
from precisionprobe._job_identity import JobIdentity
from precisionprobe._layer_names import ModuleInfo

COLUMNS = ("job_id, host_name, ip, pod, namespace, gpu_uuid, gpu, rank, local_rank, world_size, "
           "pid, epoch, batch, layer, layer_type, forward, t_start_ns, t_end_ns, cpu_num, t_start, "
           "t_end")
Row = collections.namedtuple("Row", COLUMNS)
IDENTITY = JobIdentity(job_id="j", host_name="node", ip="10.0.0.1", pod="p", namespace="ml",
                       rank=1, local_rank=1, world_size=2, pid=77, cpu_num=4.0)


def items():
    """A queue's worth of events: two layers (one with a name needing JSON escapes), two batches."""
    layers = [ModuleInfo("top_l.0", "Linear", True), ModuleInfo('blocks["a b"].é', "ReLU", True)]
    t0 = 1714000000000000000
    out = []
    for batch in range(2):
        for i, info in enumerate(layers):
            start = t0 + batch * 10_000_000 + i * 1_000_000
            out.append((info, True, batch, 0, start, start + 250_000, None))
        out.append((layers[0], False, batch, 0, t0 + batch * 10_000_000 - 5, t0 + batch * 10_000_000, None))
    return out


def write(path, formatter, events, header='{"record":"job","job_id":"j","host_name":"node",'
          '"ip":"10.0.0.1","pod":"p","namespace":"ml","rank":1,"local_rank":1,"world_size":2,'
          '"pid":77,"cpu_num":4.0}\n'):
    writer = EventWriter(str(path.parent), path.name, formatter)
    writer.put((HEADER, header))
    for item in events:
        writer.put(item)
    writer.close()
    return writer


def layer_events(path):
    db = sqlite3.connect(":memory:")
    db.enable_load_extension(True)
    db.load_extension(extension_path())
    rows = db.execute(f"SELECT {COLUMNS} FROM layer_events(?)", (str(path),)).fetchall()
    warnings = db.execute("SELECT pp_last_warnings()").fetchone()[0]
    return rows, warnings


def test_the_setting_chooses_the_format():
    assert chosen_event_format(environ={}) == "compact"
    assert chosen_event_format(environ={"PRECISIONPROBE_EVENT_FORMAT": "JSON"}) == "json"
    assert chosen_event_format("compact", environ={"PRECISIONPROBE_EVENT_FORMAT": "json"}) == "compact"
    with pytest.raises(ValueError, match="environment variable PRECISIONPROBE_EVENT_FORMAT is 'xml', not one of "
                                         "compact, json"):
        chosen_event_format(environ={"PRECISIONPROBE_EVENT_FORMAT": "xml"})


def test_compact_file_reads_back_as_the_json_lines_of_the_same_events(tmp_path):
    write(tmp_path / "compact.jsonl", CompactFormatter(IDENTITY), items())
    write(tmp_path / "json.jsonl", EventFormatter(IDENTITY), items())
    text = (tmp_path / "compact.jsonl").read_text()
    assert text.startswith(MAGIC)
    assert '\nL 1 "blocks[\\"a b\\"].\\u00e9" "ReLU"\n' in text
    assert "\n0 b0 -5 5\n" in text  # a start before the block's base
    # The Python reader: the same dicts as json.loads of the JSON lines.
    assert read_event_file(tmp_path / "compact.jsonl") == read_event_file(tmp_path / "json.jsonl")
    # The extension: the same rows, no warnings.
    assert layer_events(tmp_path / "compact.jsonl") == layer_events(tmp_path / "json.jsonl")
    assert len(layer_events(tmp_path / "compact.jsonl")[0]) == 6
    assert os.path.getsize(tmp_path / "compact.jsonl") < os.path.getsize(tmp_path / "json.jsonl") / 2


def test_probe_writes_compact_by_default_and_json_when_asked(tmp_path, fresh_probe):
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1))
    for event_format in (None, "json"):
        out = tmp_path / (event_format or "default")
        fresh_probe.attach(job_id="j", out=str(out), clock="cpu", summary="never",
                           event_format=event_format)
        for _ in range(3):
            model(torch.randn(2, 4)).sum().backward()
        written, dropped = fresh_probe.detach()
        assert (written, dropped) == (18, 0)
        (path,) = out.glob("*.jsonl")
        first_line = path.read_text().splitlines()[0]
        assert (first_line == MAGIC.strip()) == (event_format is None)
        headers, events = read_event_file(path)
        assert len(headers) == 1 and len(events) == 18
        rows, warnings = layer_events(path)
        assert warnings == "[]"
        # layer_events gives what the JSON of the decoded events says, field for field.
        assert [row[:19] for row in rows] == [
            tuple(int(v) if isinstance(v, bool) else v for v in e.values()) for e in events]


def writer_past_three_events(tmp_path):
    """A compact writer in tmp_path/out that has written its header and three of items() to
    events.jsonl: (the writer, the folder, all of items())."""
    out = tmp_path / "out"
    writer = EventWriter(str(out), "events.jsonl", CompactFormatter(IDENTITY), stderr=open(os.devnull, "w"))
    header = ('{"record":"job","job_id":"j","host_name":"node","ip":"10.0.0.1","pod":"p",'
              '"namespace":"ml","rank":1,"local_rank":1,"world_size":2,"pid":77,"cpu_num":4.0}\n')
    events = items()
    writer.put((HEADER, header))
    for item in events[:3]:
        writer.put(item)
    writer._drain(final=False)
    return writer, out, events


def test_a_file_after_a_removed_one_starts_with_everything_its_events_need(tmp_path):
    writer, out, events = writer_past_three_events(tmp_path)
    os.remove(out / "events.jsonl")
    for item in events[3:]:
        writer.put(item)
    writer.close()
    headers, decoded = read_event_file(out / "events.jsonl")
    assert len(headers) == 1 and len(decoded) == len(events) - 3
    assert [e["layer"] for e in decoded] == [i[0].name for i in events[3:]]
    assert (writer.written, writer.dropped) == (3, 3)


def test_a_file_cut_short_in_place_starts_again_with_everything_its_events_need(tmp_path):
    """logrotate's copytruncate copies the file and cuts it to nothing: the writer, appending, goes
    on at its start, where its event lines would name a job header and definitions no longer in
    the file (a compact reader could decode none of them)."""
    writer, out, events = writer_past_three_events(tmp_path)
    os.truncate(out / "events.jsonl", 0)
    for item in events[3:]:
        writer.put(item)
    writer.close()
    headers, decoded = read_event_file(out / "events.jsonl")
    assert len(headers) == 1 and [e["layer"] for e in decoded] == [i[0].name for i in events[3:]]
    rows, warnings = layer_events(out / "events.jsonl")
    assert warnings == "[]" and len(rows) == len(events) - 3


def test_unknown_version_is_an_error_naming_the_file(tmp_path):
    path = tmp_path / "v9.jsonl"
    path.write_text("#precisionprobe-events compact 9\n")
    with pytest.raises(EventFormatError, match=r"v9.jsonl line 1: event format 'compact 9' is not one"):
        read_event_file(path)


def test_python_tools_skip_the_lines_that_layer_events_skips(tmp_path):
    """The emulator's reader (read_event_file) leaves out what layer_events leaves out, for the
    same reasons: an event that names no GPU or layer, one missing a field or with one of the
    wrong type, text that is not UTF-8, and the torn last line of a killed job (JSON or
    compact); without a list to note them in, the first is an error."""
    header = ('{"record":"job","job_id":"j","host_name":"node","ip":null,"pod":null,"namespace":null,'
              '"rank":0,"local_rank":0,"world_size":1,"pid":7,"cpu_num":1.0}')

    def event(**change):
        e = {"job_id": "j", "host_name": "node", "ip": None, "pod": None, "namespace": None,
             "gpu_uuid": "GPU-1", "gpu": 0, "rank": 0, "local_rank": 0, "world_size": 1, "pid": 7,
             "epoch": 0, "batch": 0, "layer": "fc", "layer_type": "Linear", "forward": True,
             "t_start_ns": 1714000000000000000, "t_end_ns": 1714000000000250000, "cpu_num": 1.0}
        e.update(change)
        return json.dumps({k: v for k, v in e.items() if v != "drop"})

    path = tmp_path / "events.jsonl"
    path.write_text("\n".join([header, event(), event(gpu_uuid=""), event(t_end_ns="drop"), event(layer="")])
                    + "\n" + event()[:40])
    skipped = []
    headers, events = read_event_file(path, skipped)
    assert len(headers) == 1 and len(events) == 1
    assert skipped[:3] == [(3, "field 'gpu_uuid' is empty"), (4, "missing field 't_end_ns'"),
                           (5, "field 'layer' is empty")]
    assert skipped[3][0] == 6 and skipped[3][1].startswith("incomplete last line (invalid JSON")
    rows, warnings = layer_events(path)
    assert len(rows) == 1
    assert "skipped 4 malformed lines" in warnings and "first at line 3: field 'gpu_uuid' is empty" in warnings
    with pytest.raises(EventFormatError, match=r"events.jsonl line 3: field 'gpu_uuid' is empty"):
        read_event_file(path)

    compact = tmp_path / "compact.jsonl"
    compact.write_text(f"{MAGIC.strip()}\n{header}\n" 'L 0 "" "Linear"\nL 1 "fc" "Linear"\nD 0 0 "GPU-1"\n'
                       "@ 1714000000000000000 0 0\n0 f0 0 1000\n1 f0 2000 1000\n1 f0 4000 10")  # torn from 1000
    skipped = []
    assert len(read_event_file(compact, skipped)[1]) == 1
    assert skipped == [(7, "layer id 0 has an empty NAME"), (9, "incomplete last line (no newline)")]
    rows, warnings = layer_events(compact)
    assert len(rows) == 1 and "skipped 2 malformed lines" in warnings

    # The types layer_events wants, and text that is not UTF-8.
    typed = tmp_path / "typed.jsonl"
    typed.write_bytes("\n".join([header, event(forward=1), event(t_start_ns="1714000000000000000"),
                                 event(gpu=True), event(cpu_num=None)]).encode() + b"\n"
                      + event(layer="fc\u00e9").encode().replace(b"\\u00e9", b"\xe9") + b"\n" + event().encode() + b"\n")
    skipped = []
    assert len(read_event_file(typed, skipped)[1]) == 1
    assert [reason for _, reason in skipped] == [
        "field 'forward' is not true or false", "field 't_start_ns' is not an integer",
        "field 'gpu' is not an integer or null", "field 'cpu_num' is not a number", "invalid UTF-8"]
    rows, warnings = layer_events(typed)
    assert len(rows) == 1 and "skipped 5 malformed lines" in warnings


def test_a_damaged_line_costs_only_the_events_it_may_have_placed_in_both_readers(tmp_path):
    """A line that is not an event and reads as nothing (a damaged block line, say) leaves the
    events after it without a time up to the next block line; a damaged definition loses only
    its own id's events (a later definition may skip it). read_event_file keeps exactly the
    events layer_events keeps."""
    header = ('{"record":"job","job_id":"j","host_name":"node","ip":null,"pod":null,"namespace":null,'
              '"rank":0,"local_rank":0,"world_size":1,"pid":7,"cpu_num":1.0}')
    path = tmp_path / "damaged.jsonl"
    path.write_text("\n".join([
        MAGIC.strip(), header, 'L 0 "fc" "Linear"', 'D 0 0 "GPU-1"', "@ 1714000000000000000 0 0",
        "0 f0 0 1000",                                               # line 6: read
        "\0\0 1714000000000000000 0 1", "0 f0 2000 1000",             # 7 damaged '@', 8 time unknown
        "@ 1714000000000000000 0 2", "0 f0 4000 1000",               # 10: read
        'L 1 "relu', 'L 2 "fc2" "Linear"',                           # 11 damaged, 12 skips id 1
        "@ 1714000000000000000 0 3", "1 f0 6000 1000", "2 f0 8000 1000"]) + "\n")  # 14 lost, 15 read
    skipped = []
    events = read_event_file(path, skipped)[1]
    assert [(e["batch"], e["layer"], e["t_start_ns"] - 1714000000000000000) for e in events] == [
        (0, "fc", 0), (2, "fc", 4000), (3, "fc2", 8000)]
    assert [line for line, _ in skipped] == [7, 8, 11, 14]
    rows, warnings = layer_events(path)
    assert [(row.batch, row.layer) for row in map(Row._make, rows)] == [(0, "fc"), (2, "fc"), (3, "fc2")]
    assert "skipped 4 malformed lines" in warnings


@pytest.mark.parametrize("line", [
    " 1714000000000000000 0 1", "\t@ 1714000000000000000 0 1", "\ufeff@ 1 0 1", "x", "  ", "\x0c",
    '{"job_id":"j","host_name":"node","ip":null,"pod":null,"namespace":null,"gpu_uuid":"GPU-1","gpu":0,"rank":0,'
    '"local_rank":0,"world_size":1,"pid":7,"epoch":0,"batch":9,"layer":"z","layer_type":"Linear","forward":true,'
    '"t_start_ns":5,"t_end_ns":6,"cpu_num":1.0}',
    '{"job_id":"j","host_name":"node","ip":null,"pod":null,"namespace":null,"gpu_uuid":"GPU-1","gpu":0,"rank":0,'
    '"local_rank":0,"world_size":1,"pid":7,"epoch":0,"batch":9,"layer":"caf\\udce9","layer_type":"Linear",'
    '"forward":true,"t_start_ns":5,"t_end_ns":6,"cpu_num":1.0}',
    'L 99999999999999999999 "x" "y"', 'L ١ "x" "y"', 'L 1 "\\ud800" "y"', 'D 1 99999999999999999999 "GPU-2"',
    "0 f-1 100 10", "+0 f0 1 1", "0 f0 +1 1", "0 f0 99999999999999999999 10", "0 f0 9223372036854775000 10"])
def test_both_readers_keep_the_same_events_around_any_odd_line(tmp_path, line):
    """Whatever one line holds (blanks or a BOM before a record, ids or times past 64 bits, signs,
    digits that are not ASCII, a lone surrogate), the Python tools keep exactly the events that
    layer_events keeps, with the same times and batches."""
    header = ('{"record":"job","job_id":"j","host_name":"node","ip":null,"pod":null,"namespace":null,'
              '"rank":0,"local_rank":0,"world_size":1,"pid":7,"cpu_num":1.0}')
    path = tmp_path / "odd.jsonl"
    path.write_text(f"{MAGIC.strip()}\n{header}\n" 'L 0 "fc" "Linear"\nD 0 0 "GPU-1"\n@ 1714000000000000000 0 0\n'
                    f"0 f0 0 10\n{line}\n0 f0 100 10\n" + "\ufeff" + line + "\n0 f0 200 10\n")
    events = read_event_file(path, [])[1]
    rows, _ = layer_events(path)
    assert [(e["batch"], e["layer"], e["t_start_ns"]) for e in events] == \
        [(row.batch, row.layer, row.t_start_ns) for row in map(Row._make, rows)]
