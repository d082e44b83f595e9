"""Getting started's "The same by hand" runs as written: its shell blocks in order, in one bash
from the repository's root (the emulator and Prometheus in the background, on the ports the page
names), then its SQL blocks in one sqlite3 shell on the database analyze wrote, then the two
servers stopped as the page says. It writes what the page writes, runs/demo (removed first: it
is the page's own output). Section 1's two commands are the CI job itself.

  PP_EXTENSION=build/precisionprobe python3 -m pytest -q tests/docs/test_getting_started.py
"""
import errno
import re
import shutil
import socket
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def by_hand_blocks():
    text = (ROOT / "docs" / "getting-started.md").read_text()
    start = text.index("## 2. The same by hand")
    section = text[start:text.index("\n## ", start + 1)]
    shell = re.findall(r"```sh\n(.*?)```", section, re.S)
    sql = re.findall(r"```sql\n(.*?)```", section, re.S)
    stop = re.search(r"Stop the two servers afterwards \(`([^`]+)`\)", section).group(1)
    return shell, sql, stop


def table_rows(text, header):
    """The rows of the box table whose header row contains `header`, as lists of cells."""
    lines = text.splitlines()
    first = next(i for i, line in enumerate(lines) if header in line and line.startswith("│"))
    rows = []
    for line in lines[first + 2:]:
        if not line.startswith("│"):
            break
        rows.append([cell.strip() for cell in line.strip("│").split("│")])
    return rows


def port_in_use(port):
    """Whether something listens on 127.0.0.1:port; a listener that no longer accepts (a stuck
    server left by an earlier run) counts too, instead of the connect waiting on it for minutes."""
    with socket.socket() as s:
        s.settimeout(2)
        return s.connect_ex(("127.0.0.1", port)) != errno.ECONNREFUSED


def test_the_by_hand_section_runs_as_written():
    busy = [port for port in (9090, 9400) if port_in_use(port)]
    if busy:
        pytest.skip(f"the page's commands listen on 127.0.0.1:9090 and :9400, and {busy} is in use here")
    shell, sql, stop = by_hand_blocks()
    assert len(shell) == 4 and len(sql) == 3, "the test follows the page's four shell and three SQL blocks"
    assert stop == "kill %1 %2"
    shutil.rmtree(ROOT / "runs" / "demo", ignore_errors=True)
    script = "\n".join([
        "set -euo pipefail",
        # Whatever happens, the two servers the page starts do not outlive the test: asked to
        # stop, then killed if they have not within two seconds.
        "trap 'for p in $(jobs -p); do kill $p 2>/dev/null || true; for i in $(seq 20); do "
        "kill -0 $p 2>/dev/null || break; sleep 0.1; done; kill -9 $p 2>/dev/null || true; done' EXIT",
        *shell,
        "sqlite3 runs/demo/precisionprobe.db <<'SQL'",
        "".join(sql) + "SQL",
        stop,
    ])
    result = subprocess.run(["bash", "-c", script], cwd=ROOT, text=True, capture_output=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    assert "Parse error" not in out + result.stderr and "Runtime error" not in out + result.stderr
    # analyze's report, as the page describes it.
    assert "job demo: 1 GPU(s)" in out and "Per layer type:" in out and "What this says:" in out

    # Table II: the layers the page shows, each forward and backward, and the untracked row.
    layers = {(row[0], row[1]) for row in table_rows(out, "│ mem_mib │")}
    for layer in ["bot_l.0", "emb_l.0", "top_l.4", "loss_fn"]:
        assert {(layer, "1"), (layer, "0")} <= layers, layer
    assert ("(untracked)", "0") in layers

    # sample_alignment: each stretch estimated, the emulated exporter's 300 ms latency plus the
    # scrape's phase (under one 100 ms period), known to well under a millisecond.
    # (A stretch may be poorly determined on a machine busy with other work; most are estimated.)
    stretches = table_rows(out, "│ offset_ms │")
    estimated = [s for s in stretches if s[6] == "estimated"]
    assert len(estimated) >= 2 and len(estimated) * 2 > len(stretches), stretches
    for t_from, offset_ms, timing_ms, samples, repeats, skipped, status in estimated:
        assert 300 <= float(offset_ms) <= 400 and float(timing_ms) < 2, stretches

    # The estimates beside the overlap means: backward EmbeddingBag identified, and each of it and
    # the two Linear directions, where identified, within 5% of the profile's value (whether
    # Linear is claimed depends on the run's step times); the long backward EmbeddingBag calls
    # above their blended overlap mean; every interval inside [0, 1] around its estimate.
    estimates = {(row[0], row[1]): row for row in table_rows(out, "│ dram_estimate │")}
    assert estimates[("EmbeddingBag", "0")][6] == "1", estimates
    for key, truth in [(("EmbeddingBag", "0"), 0.86), (("Linear", "1"), 0.24), (("Linear", "0"), 0.31)]:
        if estimates[key][6] == "1":
            assert abs(float(estimates[key][3]) - truth) < 0.05 * truth, estimates[key]
    assert float(estimates[("EmbeddingBag", "0")][2]) < float(estimates[("EmbeddingBag", "0")][3])
    for row in estimates.values():
        low, high = (float(x) for x in row[4].split("-"))
        assert 0 <= low <= float(row[3]) <= high <= 1, row
