#!/usr/bin/env python3
"""Captures real responses as fuzz seeds: fuzz/corpus/prom_response/*.

    tests/fixtures/servers.py start --env-dir /tmp/env
    python3 fuzz/capture_corpus.py --env-dir /tmp/env
    tests/fixtures/servers.py stop --env-dir /tmp/env

Queries the test Prometheus, VictoriaMetrics and hostile server (tests/fixtures) the way the
extension does, and keeps each body that is small (a seed over 4 KB would raise libFuzzer's
input size limit for the whole run). Error statuses are kept as a first line "HTTP <status>",
as prom_response_fuzz reads them. Files are named SERVER-WHAT, so a rerun replaces them.
"""
import argparse
import json
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

CORPUS = Path(__file__).resolve().parent / "corpus" / "prom_response"
LIMIT = 4096


def fetch(url, form=None):
    data = urllib.parse.urlencode(form).encode() if form is not None else None
    try:
        with urllib.request.urlopen(url, data=data, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--env-dir", required=True)
    args = parser.parse_args()
    env = json.loads((Path(args.env_dir) / "env.json").read_text())
    t0, uuid = env["T0"], env["UUID0"]
    util = f'DCGM_FI_DEV_GPU_UTIL{{UUID="{uuid}"}}'
    requests = {
        "range": ("/api/v1/query_range", {"query": util, "start": t0, "end": t0 + 20, "step": 5}),
        "range-fraction": ("/api/v1/query_range",
                           {"query": f'DCGM_FI_PROF_SM_ACTIVE{{UUID="{uuid}"}}', "start": t0 + 0.25,
                            "end": t0 + 3.25, "step": 1.5}),
        "range-empty": ("/api/v1/query_range", {"query": "no_such_metric", "start": t0, "end": t0 + 60,
                                                 "step": 15}),
        "range-nan": ("/api/v1/query_range", {"query": f"{util} / 0 - {util} / 0", "start": t0,
                                               "end": t0 + 2, "step": 1}),
        "range-inf": ("/api/v1/query_range", {"query": f"{util} / 0", "start": t0 + 1, "end": t0 + 2,
                                               "step": 1}),
        "samples": ("/api/v1/query", {"query": f"{util}[4s]", "time": t0 + 4}),
        "samples-labels": ("/api/v1/query", {"query": "pp_test_labels[2s]", "time": t0 + 2}),
        "instant-vector": ("/api/v1/query", {"query": util, "time": t0 + 4}),
        "instant-scalar": ("/api/v1/query", {"query": "1.5", "time": t0}),
        "bad-query": ("/api/v1/query_range", {"query": "rate(", "start": t0, "end": t0 + 1, "step": 1}),
        "bad-step": ("/api/v1/query_range", {"query": util, "start": t0, "end": t0 + 86400 * 365,
                                              "step": 1}),
        "series": ("/api/v1/series", {"match[]": util, "start": t0, "end": t0 + 60}),
        "series-labels": ("/api/v1/series", {"match[]": "pp_test_labels", "start": t0, "end": t0 + 60}),
        "label-values": ("/api/v1/label/UUID/values", None),
        "label-names": ("/api/v1/label/__name__/values", None),
        "label-values-match": ("/api/v1/label/gpu/values?match%5B%5D=" + urllib.parse.quote(util), None),
    }
    kept = 0
    for server in ("prometheus", "victoria"):
        base = env[f"{server}_url"]
        for what, (path, form) in requests.items():
            status, body = fetch(base + path, form)
            kept += save(f"{server}-{what}", status, body)
    hostile = env["hostile_url"]
    for mode in ("html", "execution", "unavailable", "warn", "truncated", "vector", "notnumber",
                 "notnumber-utf8", "labels", "badutf8", "surrogate"):
        status, body = fetch(f"{hostile}/{mode}/api/v1/query_range",
                             {"query": "hostile", "start": 1700000000, "end": 1700000001, "step": 1})
        kept += save(f"hostile-{mode}", status, body)
    print(f"kept {kept} seeds in {CORPUS}")


def save(name, status, body):
    data = (b"" if status == 200 else f"HTTP {status}\n".encode()) + body
    if len(data) > LIMIT:
        print(f"skipped {name}: {len(data)} bytes")
        return 0
    CORPUS.mkdir(parents=True, exist_ok=True)
    (CORPUS / name).write_bytes(data)
    return 1


if __name__ == "__main__":
    main()
