#!/usr/bin/env python3
"""What storing layer events costs SQLite per refresh, by layout: the per-event SQL work of a
refresh of one new 8-GPU minute at the production rate (480,000 events), with pp_events as it is
beside the layout it was and those it could have become, so that the storage behind the refresh
is chosen on figures.

  rows     pp_events as versions before blocks made it: one row of 23 columns per event (the
           job, host, pod, GPU UUID, layer and file as text), indexed by (GPU, start), by (file,
           line) and, while not folded, by a partial index on (GPU, start);
  pp_events  the table as it is (src/attribution/events_table.cpp: blocks of up to a second of
           one process's events), through SQL as a user's statements reach it: the import is an
           INSERT of rows (the engine's own import packs the decoded lines in C++, and its fold
           decodes blocks in C++ too, without these per-row costs), marking folded and the
           retention's delete are the engine's statements on pp_events_blocks;
  narrow   one row per event with the texts replaced by integer ids (a dictionary per kind) and
           the same three indexes;
  narrow-fp  the same rows without the flag and its partial index: each GPU's fold point
           instead, as the blocks have (what rows cost apart from the flag);
  blocks   one row per event file and second: the GPU, job, first start, last end and count, and
           the second's events packed into a BLOB (layer id, direction, start and duration as
           offsets, batch: 15 bytes an event). The flag of what is folded becomes each GPU's fold
           point, so marking folded writes one row per GPU.

Each operation runs per GPU in its own transaction (WAL, as pp_refresh's commit), on a file
database: import (INSERT from rows already decoded: layer_events' own time is left out, and the
blocks' packing, done here by numpy, is timed apart), mark folded, each job's span on its GPU
(min, max, count), a scan of the minute's events that reads the columns the fold reads
(the blocks: their BLOBs' bytes), and the retention's delete of the minute. The events are the
first minute of `bench/attribution_data.py --production` (8 GPUs, 4 jobs), generated into a
temporary directory. The blocks' scan fetches their bytes; unpacking them is C++ work, which
the decode line estimates by layer_events' time to read the same events from the hook client's
compact files (the same kind of encoding, its file reading and parsing included).

Left out, and the same for every layout: decoding the files (layer_events); for the layouts
with ids, looking the texts' ids up (done before the timing, as an import would keep them in
memory) and the dictionaries' few rows, which are TEMP tables here. The blocks keep less per
event than the rows (no line number, epoch or CPU count; durations as 32-bit ns, so a call over
4.29 s would need a wider field), and every layout's operations take whole minutes, so no block
is split by a fold point or a retention cut.

  PYTHONPATH=python /usr/bin/python3 bench/event_rows.py [--runs 3] [--extension build/precisionprobe]
"""
import argparse
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
COLUMNS = ("job_id, host_name, ip, pod, namespace, gpu_uuid, gpu, rank, pid, epoch, batch, layer, layer_type, forward, "
           "t_start_ns, t_end_ns, t_start, t_end, cpu_num, source_file, line")
# Marking a GPU's events folded where a fold point stands for the flag: one row per GPU.
MARK_FOLD_POINT = ("INSERT INTO fold_points(gpu, through_ns) VALUES (?, ?) "
                   "ON CONFLICT (gpu) DO UPDATE SET through_ns = excluded.through_ns")
BLOCK_RECORD = np.dtype([("layer", "<u2"), ("forward", "u1"), ("start", "<u4"), ("duration", "<u4"), ("batch", "<u4")])


def connect(path, extension):
    conn = sqlite3.connect(path, isolation_level=None)
    conn.enable_load_extension(True)
    conn.load_extension(extension)
    conn.execute("PRAGMA journal_mode = WAL")
    return conn


def timed(conn, statements):
    """Runs (sql, params) pairs in one transaction each; returns the seconds of all of them."""
    total = 0.0
    for sql, params in statements:
        start = time.perf_counter()
        conn.execute("BEGIN")
        conn.execute(sql, params).fetchall()
        conn.execute("COMMIT")
        total += time.perf_counter() - start
    return total


def source_rows(conn, events_dir):
    conn.execute(f"CREATE TEMP TABLE src AS SELECT {COLUMNS} FROM layer_events(?) ORDER BY gpu_uuid, t_start_ns",
                 (str(events_dir),))
    for kind, column in (("files", "source_file"), ("gpus", "gpu_uuid"), ("jobs", "job_id"), ("layers", "layer")):
        conn.execute(f"CREATE TEMP TABLE {kind} AS SELECT DISTINCT {column} AS name FROM temp.src ORDER BY 1")
        conn.execute(f"CREATE UNIQUE INDEX temp.{kind}_name ON {kind}(name)")
    conn.execute("""CREATE TEMP TABLE ids AS
        SELECT f.rowid AS file, g.rowid AS gpu, j.rowid AS job, l.rowid AS layer, s.forward, s.epoch, s.batch,
               s.t_start_ns, s.t_end_ns, s.cpu_num, s.line
          FROM temp.src s JOIN temp.files f ON f.name = s.source_file JOIN temp.gpus g ON g.name = s.gpu_uuid
          JOIN temp.jobs j ON j.name = s.job_id JOIN temp.layers l ON l.name = s.layer""")
    return conn.execute("SELECT count(*) FROM temp.src").fetchone()[0]


def gpus_of(conn):
    return [(r[0], r[1], r[2]) for r in conn.execute(
        "SELECT g.rowid, g.name, max(s.t_start_ns) FROM temp.gpus g JOIN temp.src s ON s.gpu_uuid = g.name GROUP BY 1")]


ROWS_TABLE = """
CREATE TABLE pp_events(
  id INTEGER PRIMARY KEY, job_id TEXT NOT NULL, host_name TEXT, ip TEXT, pod TEXT, namespace TEXT,
  gpu_uuid TEXT NOT NULL, gpu INTEGER, rank INTEGER, pid INTEGER, epoch INTEGER, batch INTEGER,
  layer TEXT NOT NULL, layer_type TEXT, forward INTEGER NOT NULL, t_start_ns INTEGER NOT NULL, t_end_ns INTEGER NOT NULL,
  t_start REAL NOT NULL, t_end REAL NOT NULL, cpu_num REAL, source_file TEXT NOT NULL, line INTEGER NOT NULL,
  folded INTEGER NOT NULL DEFAULT 0, UNIQUE (source_file, line));
CREATE INDEX pp_events_by_gpu_time ON pp_events(gpu_uuid, t_start_ns);
CREATE INDEX pp_events_unfolded ON pp_events(gpu_uuid, t_start_ns) WHERE folded = 0;"""


def run_table(conn, gpus, blocks):
    """The rows layout (blocks False) or pp_events as it is (blocks True)."""
    if blocks:
        conn.execute("SELECT pp_install_views()")
    else:
        conn.executescript(ROWS_TABLE)
    t = {"import": timed(conn, [(f"INSERT INTO pp_events({COLUMNS}) SELECT {COLUMNS} FROM temp.src WHERE gpu_uuid = ?",
                                 (uuid,)) for _, uuid, _ in gpus])}
    mark = ("UPDATE pp_events_blocks SET folded_through_ns = max(coalesce(folded_through_ns, ?2), ?2) "
            "WHERE gpu_uuid = ?1 AND first_start_ns <= ?2 AND (folded_through_ns IS NULL OR folded_through_ns < last_start_ns)"
            if blocks else "UPDATE pp_events SET folded = 1 WHERE gpu_uuid = ?1 AND t_start_ns <= ?2 AND folded = 0")
    t["mark folded"] = timed(conn, [(mark, (uuid, last)) for _, uuid, last in gpus])
    t["job spans"] = timed(conn, [("SELECT job_id, min(t_start_ns), max(t_end_ns), count(*) FROM pp_events "
                                   "WHERE gpu_uuid = ? AND t_start_ns <= ? GROUP BY job_id", (uuid, last))
                                  for _, uuid, last in gpus])
    t["fold's scan"] = timed(conn, [("SELECT sum(t_end_ns - t_start_ns), count(job_id), count(layer), sum(forward), "
                                     "count(layer_type) FROM pp_events WHERE gpu_uuid = ? AND t_start_ns <= ?",
                                     (uuid, last)) for _, uuid, last in gpus])
    t["bytes"] = conn.execute("SELECT page_count * page_size FROM pragma_page_count, pragma_page_size").fetchone()[0]
    delete = ("DELETE FROM pp_events_blocks WHERE gpu_uuid = ?1 AND last_start_ns <= ?2 AND folded_through_ns >= last_start_ns"
              if blocks else "DELETE FROM pp_events WHERE gpu_uuid = ?1 AND t_start_ns <= ?2 AND folded = 1")
    t["retention delete"] = timed(conn, [(delete, (uuid, last)) for _, uuid, last in gpus])
    return t


def run_narrow(conn, gpus, flag=True):
    """Narrow rows; with flag=False without the folded flag and its partial index, each GPU's
    fold point instead, as the blocks have (what rows cost apart from the flag)."""
    conn.executescript(f"""
        CREATE TABLE ev(id INTEGER PRIMARY KEY, file INTEGER NOT NULL, gpu INTEGER NOT NULL, job INTEGER NOT NULL,
                        layer INTEGER NOT NULL, forward INTEGER NOT NULL, epoch INTEGER, batch INTEGER,
                        t_start_ns INTEGER NOT NULL, t_end_ns INTEGER NOT NULL, cpu_num REAL, line INTEGER NOT NULL
                        {", folded INTEGER NOT NULL DEFAULT 0" if flag else ""});
        CREATE INDEX ev_by_gpu_time ON ev(gpu, t_start_ns);
        {"CREATE INDEX ev_unfolded ON ev(gpu, t_start_ns) WHERE folded = 0;" if flag else ""}
        CREATE UNIQUE INDEX ev_line ON ev(file, line);
        {"" if flag else "CREATE TABLE fold_points(gpu INTEGER PRIMARY KEY, through_ns INTEGER NOT NULL);"}""")
    cols = "file, gpu, job, layer, forward, epoch, batch, t_start_ns, t_end_ns, cpu_num, line"
    t = {"import": timed(conn, [(f"INSERT INTO ev({cols}) SELECT {cols} FROM temp.ids WHERE gpu = ?", (g,))
                                for g, _, _ in gpus])}
    mark = "UPDATE ev SET folded = 1 WHERE gpu = ? AND t_start_ns <= ? AND folded = 0" if flag else MARK_FOLD_POINT
    t["mark folded"] = timed(conn, [(mark, (g, last)) for g, _, last in gpus])
    t["job spans"] = timed(conn, [("SELECT job, min(t_start_ns), max(t_end_ns), count(*) FROM ev "
                                   "WHERE gpu = ? AND t_start_ns <= ? GROUP BY job", (g, last)) for g, _, last in gpus])
    t["fold's scan"] = timed(conn, [("SELECT sum(t_end_ns - t_start_ns), count(job), count(layer), sum(forward) FROM ev "
                                     "WHERE gpu = ? AND t_start_ns <= ?", (g, last)) for g, _, last in gpus])
    t["bytes"] = conn.execute("SELECT page_count * page_size FROM pragma_page_count, pragma_page_size").fetchone()[0]
    t["retention delete"] = timed(conn, [("DELETE FROM ev WHERE gpu = ? AND t_start_ns <= ?"
                                          + (" AND folded = 1" if flag else ""), (g, last)) for g, _, last in gpus])
    return t


def pack_blocks(conn):
    """One BLOB per (file, second) of the events, by numpy; returns the rows and the seconds it took."""
    rows = np.array(conn.execute("SELECT file, gpu, job, layer, forward, batch, t_start_ns, t_end_ns FROM temp.ids "
                                 "ORDER BY file, t_start_ns").fetchall(), dtype=np.int64)
    start = time.perf_counter()
    second = rows[:, 6] // 10**9
    cut = np.flatnonzero((np.diff(rows[:, 0]) != 0) | (np.diff(second) != 0)) + 1
    blocks = []
    for part in np.split(rows, cut):
        first = int(part[0, 6])
        packed = np.empty(len(part), dtype=BLOCK_RECORD)
        packed["layer"], packed["forward"] = part[:, 3], part[:, 4]
        packed["start"], packed["duration"], packed["batch"] = part[:, 6] - first, part[:, 7] - part[:, 6], part[:, 5]
        blocks.append((int(part[0, 0]), int(part[0, 1]), int(part[0, 2]), first, int(part[:, 7].max()), len(part),
                       packed.tobytes()))
    return blocks, time.perf_counter() - start


def run_blocks(conn, gpus):
    conn.executescript("""
        CREATE TABLE ev_blocks(gpu INTEGER NOT NULL, first_ns INTEGER NOT NULL, file INTEGER NOT NULL,
                               job INTEGER NOT NULL, last_ns INTEGER NOT NULL, events INTEGER NOT NULL, data BLOB NOT NULL,
                               PRIMARY KEY (gpu, first_ns, file)) WITHOUT ROWID;
        CREATE TABLE fold_points(gpu INTEGER PRIMARY KEY, through_ns INTEGER NOT NULL);""")
    blocks, pack_s = pack_blocks(conn)
    t = {"import": pack_s}
    for g, _, _ in gpus:  # each GPU's blocks in one transaction, as the other layouts' rows
        start = time.perf_counter()
        conn.execute("BEGIN")
        conn.executemany("INSERT INTO ev_blocks(file, gpu, job, first_ns, last_ns, events, data) VALUES (?, ?, ?, ?, ?, ?, ?)",
                         [b for b in blocks if b[1] == g])
        conn.execute("COMMIT")
        t["import"] += time.perf_counter() - start
    t["pack (numpy)"] = pack_s
    t["mark folded"] = timed(conn, [(MARK_FOLD_POINT, (g, last)) for g, _, last in gpus])
    t["job spans"] = timed(conn, [("SELECT job, min(first_ns), max(last_ns), sum(events) FROM ev_blocks "
                                   "WHERE gpu = ? AND first_ns <= ? GROUP BY job", (g, last)) for g, _, last in gpus])
    t["fold's scan"] = timed(conn, [("SELECT data FROM ev_blocks WHERE gpu = ? AND first_ns <= ?", (g, last))
                                    for g, _, last in gpus])  # fetched: every byte read (length() would not)
    t["bytes"] = conn.execute("SELECT page_count * page_size FROM pragma_page_count, pragma_page_size").fetchone()[0]
    t["retention delete"] = timed(conn, [("DELETE FROM ev_blocks WHERE gpu = ? AND first_ns <= ?", (g, last))
                                         for g, _, last in gpus])
    return t


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="runs of each layout; the best is printed")
    parser.add_argument("--extension", default=str(ROOT / "build" / "precisionprobe"))
    args = parser.parse_args()
    layouts = {"rows": lambda conn, gpus: run_table(conn, gpus, blocks=False),
               "pp_events": lambda conn, gpus: run_table(conn, gpus, blocks=True), "narrow": run_narrow,
               "narrow-fp": lambda conn, gpus: run_narrow(conn, gpus, flag=False), "blocks": run_blocks}
    operations = ["import", "mark folded", "job spans", "fold's scan", "retention delete"]
    with tempfile.TemporaryDirectory(prefix="pp-event-rows-") as tmp:
        data = Path(tmp) / "data"
        subprocess.run([sys.executable, str(ROOT / "bench" / "attribution_data.py"), "--production", "--minutes", "1",
                        "--dir", str(data)], check=True, capture_output=True)
        best, decode = {}, float("inf")
        for run in range(args.runs):
            conn = connect(":memory:", args.extension)
            start = time.perf_counter()
            conn.execute("SELECT count(*), sum(t_end_ns - t_start_ns), count(layer) FROM layer_events(?)",
                         (str(data / "events"),)).fetchone()
            decode = min(decode, time.perf_counter() - start)
            conn.close()
            for name, layout in layouts.items():
                path = Path(tmp) / f"{name}-{run}.db"
                conn = connect(str(path), args.extension)
                events = source_rows(conn, data / "events")
                result = layout(conn, gpus_of(conn))
                conn.close()
                os.remove(path)
                kept = best.setdefault(name, result)
                for key, value in result.items():
                    kept[key] = min(kept[key], value)
    print(f"one new minute of 8 GPUs at 1,000 events/s each: {events:,} events (bench/attribution_data.py --production "
          f"--minutes 1); SQLite {sqlite3.sqlite_version}; best of {args.runs} runs; ms, per GPU in its own transaction")
    others = [n for n in layouts if n != "rows"]
    print(f"{'':>18}" + "".join(f"{name:>10}" for name in layouts) + "   rows / " + ", ".join(others))
    pad = " " * 10 * (len(layouts) - 1)
    for op in operations + ["all of these"]:
        values = {n: 1e3 * (sum(best[n][o] for o in operations) if op == "all of these" else best[n][op]) for n in layouts}
        print(f"{op:>18}" + "".join(f"{values[n]:>10.1f}" for n in layouts) + "   "
              + "  ".join(f"{values['rows'] / max(values[n], 1e-3):>7.1f}x" for n in others))
    print(f"{'  of it: pack':>18}{pad}{1e3 * best['blocks']['pack (numpy)']:>10.1f}   (numpy, in the blocks' import)")
    print(f"{'decode (C++)':>18}{pad}{1e3 * decode:>10.1f}   (layer_events reading the hook client's compact "
          "files of the same events: what unpacking blocks would add, not in the table)")
    print(f"{'bytes/event':>18}" + "".join(f"{best[n]['bytes'] / events:>10.1f}" for n in layouts) + "   "
          + "  ".join(f"{best['rows']['bytes'] / best[n]['bytes']:>7.1f}x" for n in others))


if __name__ == "__main__":
    main()
