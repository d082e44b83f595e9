#!/usr/bin/env python3
"""Regenerates the results shown in docs/*.md by running the examples, or checks them.

In a document, a fence whose info string is `sql run` is an example: it runs in the sqlite3
shell with the extension loaded, from the repository's root, against the test Prometheus
(tests/fixtures/servers.py), and the `output` fence right after it holds what it printed
(created if missing). All examples of one document run in one shell, in order, so settings
and tables carry over. Ports and temporary paths are shown in a stable form.

  docs/generate.py            rewrite the output blocks
  docs/generate.py --check    fail, listing each example whose output differs (CTest runs this)
Options: --env-dir DIR uses servers already started (CTest's fixture); --extension PATH.
Without --env-dir it starts the test servers itself (tests.fixtures.servers), which needs the
repository's root and python/ on PYTHONPATH: from the root,
  PYTHONPATH=$PWD:$PWD/python docs/generate.py
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MARK = "<<<pp-doc-example-{}>>>"
FENCE = re.compile(r"^```sql run[^\n]*\n(.*?)^```\n(?:\n?```output\n.*?^```\n)?", re.S | re.M)


def run_examples(blocks, extension, env):
    """Runs the blocks in one shell; returns each block's combined output."""
    script = [f".load {extension}", ".mode box", ".bail off"]
    for i, sql in enumerate(blocks):
        script += [f".print {MARK.format(i)}", sql]
    script.append(f".print {MARK.format(len(blocks))}")
    # stdbuf keeps stdout and stderr in order, so an error shows where its example printed it.
    result = subprocess.run(["stdbuf", "-o0", "-e0", "sqlite3", ":memory:"], input="\n".join(script) + "\n",
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT,
                            env=env, timeout=600)
    text = result.stdout
    outputs = []
    for i in range(len(blocks)):
        start = text.index(MARK.format(i)) + len(MARK.format(i)) + 1
        end = text.index(MARK.format(i + 1))
        outputs.append(text[start:end])
    return outputs


def normalize(text, servers):
    for name, url in servers.items():
        text = text.replace(url, "http://127.0.0.1:9090" if name == "prometheus_url" else f"http://127.0.0.1:<{name}>")
    text = re.sub(r"Runtime error near line \d+", "Runtime error", text)
    text = re.sub(r"Parse error near line \d+", "Parse error", text)
    return text.rstrip("\n") + "\n"


def process(doc, extension, env, servers, check):
    source = doc.read_text()
    blocks = [m.group(1) for m in FENCE.finditer(source)]
    if not blocks:
        return []
    outputs = [normalize(o, servers) for o in run_examples(blocks, extension, env)]
    pieces, last, k = [], 0, 0
    for m in FENCE.finditer(source):
        pieces.append(source[last:m.start()])
        pieces.append(f"```sql run\n{m.group(1)}```\n```output\n{outputs[k]}```\n")
        last, k = m.end(), k + 1
    pieces.append(source[last:])
    updated = "".join(pieces)
    if updated == source:
        return []
    if check:
        old = [o for o in re.findall(r"```output\n(.*?)```\n", source, re.S)]
        return [f"{doc.relative_to(ROOT)}: example {i + 1} shows\n{old[i] if i < len(old) else '(nothing)'}"
                f"but prints\n{outputs[i]}" for i in range(len(blocks))
                if i >= len(old) or old[i] != outputs[i]] or [f"{doc.relative_to(ROOT)} differs"]
    doc.write_text(updated)
    print(f"updated {doc.relative_to(ROOT)}")
    return []


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--env-dir", type=Path)
    parser.add_argument("--extension", default="build/precisionprobe")
    parser.add_argument("docs", nargs="*", type=Path)
    args = parser.parse_args()

    env_dir, started = args.env_dir, False
    if env_dir is None:
        from tests.fixtures import servers as fixture
        env_dir, started = Path(tempfile.mkdtemp(prefix="pp-docs-")), True
        fixture.start(env_dir)
    try:
        info = json.loads((env_dir / "env.json").read_text())
        servers = {k: v for k, v in info.items() if k.endswith("_url")}
        env = dict(os.environ, PRECISIONPROBE_PROMETHEUS_URL=info["prometheus_url"])
        problems = []
        for doc in sorted(args.docs or (ROOT / "docs").rglob("*.md")):
            problems += process(doc.resolve(), args.extension, env, servers, args.check)
        for p in problems:
            print("DIFFERS: " + p)
        if args.check:
            print(f"{'FAIL' if problems else 'ok'}: docs examples {'differ from' if problems else 'match'} "
                  "the behaviour (run docs/generate.py to regenerate)")
        return 1 if problems else 0
    finally:
        if started:
            fixture.stop(env_dir)


if __name__ == "__main__":
    sys.exit(main())
