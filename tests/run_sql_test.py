#!/usr/bin/env python3
"""Runs one SQL test file through the sqlite3 shell with the extension loaded.

Two kinds of file:
  * plain files: every row the file's statements print must be exactly `1`, and at least one
    row must be printed (a file that checks nothing fails);
  * files with `-- error: TEXT` lines: each block that follows such a line runs in a fresh
    shell, after the lines before the first marker (the setup), and must fail with an error
    message containing TEXT.
`${NAME}` in a file is replaced by the value NAME from the servers' env.json (see
tests/fixtures/servers.py), e.g. ${T0}, and ${SOURCE_DIR} by the repository's root; the chosen server's URL is put in
PRECISIONPROBE_PROMETHEUS_URL, so files never name a port.
"""
import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path


def substitute(text, env):
    def value(match):
        key = match.group(1)
        if key not in env:
            sys.exit(f"{match.group(0)} is not a value of env.json")
        return str(env[key])
    return re.sub(r"\$\{([A-Za-z0-9_]+)\}", value, text)


def run_shell(extension, sql, environ, echo=False):
    script = f".bail on\n.load {extension}\n{'.echo on' if echo else ''}\n{sql}\n"
    return subprocess.run(["sqlite3", ":memory:"], input=script, capture_output=True, text=True,
                          env=environ, timeout=300)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--extension", required=True)
    parser.add_argument("--env-dir", required=True)
    parser.add_argument("--server", default="prometheus")
    parser.add_argument("file")
    args = parser.parse_args()

    env_file = Path(args.env_dir) / "env.json"
    env = json.loads(env_file.read_text()) if env_file.exists() else {}
    environ = dict(os.environ)
    if f"{args.server}_url" in env:
        environ["PRECISIONPROBE_PROMETHEUS_URL"] = env[f"{args.server}_url"]
    env["SERVER"] = args.server
    env["SOURCE_DIR"] = str(Path(__file__).resolve().parent.parent)
    text = substitute(Path(args.file).read_text(), env)

    parts = re.split(r"^-- error: (.*)$", text, flags=re.M)
    failures = 0
    if len(parts) == 1:
        result = run_shell(args.extension, text, environ)
        rows = result.stdout.splitlines()
        bad = [r for r in rows if r.strip() != "1"]
        if result.returncode != 0 or result.stderr or bad or not rows:
            print(f"FAIL {args.file}: exit {result.returncode}\nstderr: {result.stderr}"
                  f"\nrows that are not 1: {bad}\nrows: {len(rows)}")
            # Again with each statement echoed before its rows, to show which check failed.
            echoed = run_shell(args.extension, text, environ, echo=True).stdout.splitlines()
            for i, line in enumerate(echoed):
                if line.strip() in bad:
                    print("failing check:\n  " + "\n  ".join(echoed[max(0, i - 4):i + 1]))
            return 1
        print(f"ok {args.file}: {len(rows)} checks")
        return 0

    setup = parts[0]
    cases = list(zip(parts[1::2], parts[2::2]))
    for expected, block in cases:
        result = run_shell(args.extension, setup + block, environ)
        if result.returncode == 0 or expected.strip() not in result.stderr:
            failures += 1
            print(f"FAIL expected error containing {expected.strip()!r}\nSQL: {block.strip()}\n"
                  f"exit {result.returncode}, stderr: {result.stderr.strip()}")
    print(f"{len(cases) - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
