"""The README's quick start runs as written: its shell block, in bash from the repository's root,
with its SQL block as the standard input of the sqlite3 shell it ends with. It writes what the
quick start writes, runs/quick and runs/quick.emulated (removed first: they are its own outputs).

  PP_EXTENSION=build/precisionprobe python3 -m pytest -q tests/docs/test_quick_start.py
"""
import re
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def quick_start_blocks():
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Quick start"):text.index("\n## ", text.index("## Quick start") + 1)]
    shell = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
    sql = re.search(r"```sql\n(.*?)```", section, re.S).group(1)
    return shell, sql


def test_the_quick_start_runs_as_written():
    shell, sql = quick_start_blocks()
    assert shell.rstrip().endswith("sqlite3 runs/quick.emulated/precisionprobe.db")
    for leftover in ("runs/quick", "runs/quick.emulated"):
        shutil.rmtree(ROOT / leftover, ignore_errors=True)
    result = subprocess.run(["bash", "-euo", "pipefail", "-c", shell], input=sql, cwd=ROOT, text=True,
                            capture_output=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    # analyze's report, then the two SQL tables of the shell.
    assert "job quick: 1 GPU(s)" in out and "Per layer type:" in out and "What this says:" in out
    # The DLRM's embeddings are most of its parameters, as in the paper, and it reads as the paper
    # found: its embedding stage memory-bound (the main job trains the same model).
    assert re.search(r"The embedding stage \(EmbeddingBag, forward and backward\) takes \d+% of the GPU "
                     r"time and is memory-bound", out), out[:4000]
    tables = out[out.index("What this says:"):]
    assert re.search(r"│\s+layer_type\s+│", tables) and re.search(r"│ EmbeddingBag\s+│", tables)
    # Each estimate beside its 90% interval, which is the answer where a row is not identified.
    assert re.search(r"│\s+lower90\s+│\s+upper90\s+│\s+confidence\s+│", tables), tables
    assert re.search(r"│\s+data_num\s+│", tables)
    assert "Parse error" not in out + result.stderr and "Runtime error" not in out + result.stderr
