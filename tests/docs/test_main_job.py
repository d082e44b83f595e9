"""The README's main job (scripts/main.sh) runs on a machine without a GPU and answers as the paper
did: a shorter training than its default minute (--seconds 20), written to a temporary folder.
scripts/main.sh first runs scripts/build.sh, which finds the extension built.

  python3 -m pytest -q tests/docs/test_main_job.py
"""
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_main_job_runs_and_finds_the_embeddings_memory_bound(tmp_path):
    out = tmp_path / "main"
    result = subprocess.run(["bash", "scripts/main.sh", "--seconds", "20", "--out", str(out)], cwd=ROOT,
                            text=True, capture_output=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    text = result.stdout
    assert "Parse error" not in text + result.stderr and "Runtime error" not in text + result.stderr
    # The SQL behind the answer: alignment, Table II, the estimates beside the overlap means, Table III.
    for heading in ["sample_alignment", "Per layer type (Figure 2)", "job_overview"]:
        assert heading in text, heading
    # The analyze report it ends with, and what it wrote.
    assert "job dlrm-main: 1 GPU(s)" in text and "What this says:" in text
    assert re.search(r"The embedding stage \(EmbeddingBag, forward and backward\) takes \d+% of the GPU "
                     r"time and is memory-bound", text), text[-5000:]
    assert "## Job dlrm-main" in (out / "report.md").read_text()
    for figure in ["figure2a.png", "figure2b.png"]:
        assert (out / figure).read_bytes().startswith(b"\x89PNG"), figure
