"""Two jobs' reports side by side, per layer type, direction and metric: both values, the
difference, and whether it exceeds the combined uncertainty.

Each value's uncertainty is its 90% half-width (identified estimates and intervals; an interval
is taken at its middle). Two independent 90% half-widths combine as sqrt(a^2 + b^2); a
difference beyond that is 'yes'. A blend has no uncertainty the data can give: a comparison
involving one is 'unknown', whatever the difference.
"""
import csv
import io
import json
import math

from .render import cell, emulated_note, markdown_cell, shown
from .report import METRICS


def _center_half(value):
    if value.kind == "estimate":
        return value.value, max(value.value - value.lower90, value.upper90 - value.value)
    if value.kind == "interval":
        return (value.lower90 + value.upper90) / 2, (value.upper90 - value.lower90) / 2
    if value.kind == "blend":
        return value.value, None
    return None, None


def comparison_warnings(a, b):
    """What a reader of compare_jobs(a, b) should know first, one line each: a run on no GPU
    (its rows are missing), and two runs with no layer type in common (every row is missing on
    one side: not two runs of one model)."""
    warnings = []
    for which, report in (("RUN_A", a), ("RUN_B", b)):
        if not report.gpus:
            warnings.append(f"{which} (job {report.job_id}) ran on no GPU: it has no share of GPU time and no metric, "
                            "so its rows are missing (`precisionprobe analyze RUN_DIR --emulate dlrm` replays it on an "
                            "emulated GPU)")
    emulated = [(which, report) for which, report in (("RUN_A", a), ("RUN_B", b)) if report.emulated is not None]
    if len(emulated) == 1:
        which, report = emulated[0]
        warnings.append(f"{which} (job {report.job_id}): {emulated_note(report)}, and the other side's are not "
                        "known to be: the metrics' differences may be the profile's against the GPU's, not the runs'")
    elif emulated and a.emulated != b.emulated:
        warnings.append(f"both sides' counters are EMULATED, from different profiles ({shown(a.emulated or '?')}, "
                        f"{shown(b.emulated or '?')}): the metrics' differences are the profiles', not the runs'")
    elif emulated:
        warnings.append(f"both sides' counters are EMULATED (profile {shown(a.emulated or '?')}): the metrics differ "
                        "only as the layer timings of the two runs make the same profile's values blend")
    types_a, types_b = ({r.name for r in report.layer_types if r.direction != "untracked"} for report in (a, b))
    if types_a and types_b and not types_a & types_b:
        def listed(types):
            names = sorted(types)
            return ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
        warnings.append(f"RUN_A (job {a.job_id}) and RUN_B (job {b.job_id}) have no layer type in common, so every row "
                        f"is missing on one side: compare two runs of one model (RUN_A: {listed(types_a)}; "
                        f"RUN_B: {listed(types_b)})")
    return warnings


def compare_jobs(a, b):
    """Rows (dicts) for every (layer type, direction, metric) of either job, then the shares."""
    rows_a = {(r.name, r.direction): r for r in a.layer_types}
    rows_b = {(r.name, r.direction): r for r in b.layer_types}
    out = []
    for key in sorted(set(rows_a) | set(rows_b), key=lambda k: (k[0] == "(untracked)", k)):
        ra, rb = rows_a.get(key), rows_b.get(key)
        # A job on no GPU has no share of GPU time (0% by construction): missing, like an absent row.
        shared_a, shared_b = ra if a.gpus else None, rb if b.gpus else None
        share = {"layer_type": key[0], "direction": key[1], "metric": "share",
                 "a": shared_a.share if shared_a else None, "b": shared_b.share if shared_b else None,
                 "a_kind": "measured" if shared_a else None, "b_kind": "measured" if shared_b else None,
                 "a_shown": _fmt(shared_a.share, "share") if shared_a else "-",
                 "b_shown": _fmt(shared_b.share, "share") if shared_b else "-",
                 "combined90": None}
        share["difference"] = share["b"] - share["a"] if shared_a and shared_b else None
        # Durations are measured, not estimated.
        share["exceeds_uncertainty"] = "measured" if share["difference"] is not None else "missing"
        out.append(share)
        for _, short, _ in METRICS:
            ca, ha = _center_half(ra.metrics[short]) if ra else (None, None)
            cb, hb = _center_half(rb.metrics[short]) if rb else (None, None)
            row = {"layer_type": key[0], "direction": key[1], "metric": short, "a": ca, "b": cb,
                   "a_kind": ra.metrics[short].kind if ra else None, "b_kind": rb.metrics[short].kind if rb else None,
                   # As analyze shows them: v±h identified, lo..hi an interval, ~v a blend.
                   "a_shown": cell(short, ra.metrics[short]) if ra else "-",
                   "b_shown": cell(short, rb.metrics[short]) if rb else "-",
                   "difference": cb - ca if ca is not None and cb is not None else None, "combined90": None}
            if row["difference"] is None:
                row["exceeds_uncertainty"] = "missing"
            elif ha is None or hb is None:
                row["exceeds_uncertainty"] = "unknown"
            else:
                row["combined90"] = math.hypot(ha, hb)
                row["exceeds_uncertainty"] = "yes" if abs(row["difference"]) > row["combined90"] else "no"
            out.append(row)
    return out


def _fmt(x, metric):
    if x is None:
        return "-"
    if metric == "share":
        return f"{100 * x:.1f}%"
    return f"{x:.1f}" if metric == "gpu_util" else f"{x:.3f}"


def render_comparison(a, b, rows, fmt):
    if fmt == "json":
        return json.dumps({"a": a.job_id, "b": b.job_id, "rows": rows}, indent=1)
    if fmt == "csv":
        buffer = io.StringIO()
        names = ["layer_type", "direction", "metric", "a", "b", "difference", "combined90", "exceeds_uncertainty",
                 "a_kind", "b_kind"]  # (the kinds last: the columns before keep their places)
        writer = csv.DictWriter(buffer, names, extrasaction="ignore", lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        return buffer.getvalue()
    header = ["layer type", "direction", "metric", f"A {shown(a.job_id)}", f"B {shown(b.job_id)}", "B - A",
              "beyond 90%"]
    cells = [[shown(r["layer_type"]), r["direction"], r["metric"], r.get("a_shown") or _fmt(r["a"], r["metric"]),
              r.get("b_shown") or _fmt(r["b"], r["metric"]), _fmt(r["difference"], r["metric"]),
              r["exceeds_uncertainty"]] for r in rows]
    if fmt == "markdown":
        escaped = [[markdown_cell(c) for c in line] for line in [header] + cells]
        return "\n".join(["| " + " | ".join(escaped[0]) + " |", "|" + "|".join("---" for _ in header) + "|"]
                         + ["| " + " | ".join(c) + " |" for c in escaped[1:]]) + "\n"
    widths = [max(len(x) for x in col) for col in zip(header, *cells)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip() for line in [header] + cells]
    lines.append("")
    lines.append("values as analyze shows them: v±h identified, lo..hi an interval (B - A takes its middle), "
                 "~v a blend.")
    lines.append("beyond 90%: yes/no whether |B - A| exceeds the combined 90% half-widths; unknown where one "
                 "side is a blend (no uncertainty); measured: call durations, no estimate involved.")
    return "\n".join(lines) + "\n"
