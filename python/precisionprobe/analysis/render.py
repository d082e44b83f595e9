"""A list of JobReports as text: a terminal table (default), CSV, JSON or Markdown.

In the table and Markdown a metric's cell reads
    0.860±0.003   identified estimate, 90% half-width
    0.30..0.32    not identified: the 90% interval (no point value)
    ~0.49         not identified: the blend of the sample window (Table II's overlap mean)
"""
import csv
import html
import io
import json
import re

from .report import METRICS

LEGEND = ("value±h: identified estimate and 90% half-width; a..b: not identified, 90% interval; "
          "~v: not identified, blend of the sample window (Table II), not the layer's own value")
FORMATS = ("table", "csv", "json", "markdown")


def _digits(short):
    return 1 if short == "gpu_util" else 3


def cell(short, value):
    d = _digits(short)
    if value.kind in ("estimate", "blend") and value.value is None:
        return "-"  # (a job on no GPU: nothing to show)
    if value.kind == "estimate":
        half = max(value.value - value.lower90, value.upper90 - value.value)
        return f"{value.value:.{d}f}±{half:.{d}f}"
    if value.kind == "interval":
        return f"{value.lower90:.{d}f}..{value.upper90:.{d}f}"
    if value.kind == "blend":
        return f"~{value.value:.{d}f}"
    return "-"


def shown(text):
    """Text from event files as a terminal or page may show it: control characters (an escape
    sequence in a layer name would drive the terminal) written as Python writes them, \\x1b."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(text))


# What would start a link or an image ('[', ']'), code ('`'), emphasis ('*', a '_' at a word's
# edge: inside a word it is a letter) or an escape ('\\'), written with a backslash before it.
_MARKDOWN_SYNTAX = re.compile(r"[\\`*\[\]]|(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])")


def markdown_text(text):
    """Text from event files as Markdown shows it: as shown(), '<', '>' and '&' as entities, since
    Markdown passes inline HTML through (a layer named <img onerror=...> would be markup), and
    Markdown's own syntax escaped (a layer named ![](https://host/beacon) would load an image)."""
    return _MARKDOWN_SYNTAX.sub(lambda m: "\\" + m.group(0), html.escape(shown(text), quote=False))


def markdown_cell(text):
    """markdown_text in a table cell, where '|' would end the cell."""
    return markdown_text(text).replace("|", "\\|")


def header_cells():
    return ["layer", "direction", "calls", "mean ms", "share"] + [label for _, _, label in METRICS]


def row_cells(row):
    return ([shown(row.name), row.direction, "" if row.calls is None else str(row.calls),
             "" if row.mean_ms is None else f"{row.mean_ms:.3f}", f"{100 * row.share:.1f}%"]
            + [cell(short, row.metrics[short]) for _, short, _ in METRICS])


def emulated_note(job):
    """What a job's counters are where an emulator made them (report.JobReport.emulated), or ''."""
    if job.emulated is None:
        return ""
    profile = f" from profile {shown(job.emulated)}" if job.emulated else ""
    return f"counters EMULATED{profile}, not measured (the layer timings are the run's own)"


def job_summary(job):
    return (f"{job.gpus} GPU(s), {job.gpu_seconds:.1f} GPU-seconds ({job.minutes:.1f} min)"
            + (f", sample window {job.window_ms:g} ms" if job.window_ms else "")
            + (f", {job.parameters:,} parameters" if job.parameters else "")
            + (f"; {emulated_note(job)}" if job.emulated is not None else ""))


def _text_table(header, rows):
    widths = [max(len(str(x)) for x in column) for column in zip(header, *rows)]
    numeric = [False, False] + [True] * (len(header) - 2)

    def line(cells):
        return "  ".join(c.rjust(w) if n else c.ljust(w) for c, w, n in zip(cells, widths, numeric)).rstrip()
    return [line(header), line(["-" * w for w in widths])] + [line(r) for r in rows]


def as_table(jobs, layers=True):
    out = []
    for job in jobs:
        out += [f"job {shown(job.job_id)}: " + job_summary(job), "", "Per layer type:"]
        out += _text_table(header_cells(), [row_cells(r) for r in job.layer_types])
        if layers:
            out += ["", "Per layer:"]
            out += _text_table(header_cells(), [row_cells(r) for r in job.layers])
        # (Findings name layers and jobs too: shown as the tables show them.)
        out += ["", LEGEND, "", "What this says:"] + [f"  - {shown(s)}" for s in job.findings]
        if job.unresolved:
            out += ["", "Not resolved, and what would resolve it:"] + [f"  - {shown(s)}" for s in job.unresolved]
        out.append("")
    return "\n".join(out)


def as_markdown(jobs, layers=True):
    out = []

    def table(rows):
        header = header_cells()
        return (["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
                + ["| " + " | ".join(markdown_cell(c) for c in row_cells(r)) + " |" for r in rows])
    for job in jobs:
        out += [f"## Job {markdown_text(job.job_id)}", "", job_summary(job) + ".", "", "### Per layer type", ""]
        out += table(job.layer_types)
        if layers:
            out += ["", "### Per layer", ""] + table(job.layers)
        out += ["", f"*{LEGEND}*", "", "### What this says", ""] + [f"- {markdown_text(s)}" for s in job.findings]
        if job.unresolved:
            out += ["", "### Not resolved, and what would resolve it", ""] + [f"- {markdown_text(s)}"
                                                                              for s in job.unresolved]
        out.append("")
    return "\n".join(out)


def as_json(jobs, layers=True):
    """The whole report; without layers, each job without its "layers" list."""
    dicts = [job.as_dict() for job in jobs]
    if not layers:
        for job in dicts:
            del job["layers"]
    return json.dumps({"jobs": dicts, "legend": LEGEND}, indent=1)


def as_csv(jobs, layers=True):
    """One line per (job, level, layer or type, direction): its numbers and, per metric, what kind
    of value it is, the value and the interval; without layers, the layer types' lines only."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    columns = ["job_id", "level", "name", "layer_type", "direction", "calls", "mean_ms", "share"]
    for _, short, _ in METRICS:
        columns += [f"{short}_kind", short, f"{short}_lower90", f"{short}_upper90", f"{short}_blend"]
    writer.writerow(columns)
    for job in jobs:
        for level, rows in (("layer_type", job.layer_types), ("layer", job.layers if layers else [])):
            for r in rows:
                line = [job.job_id, level, r.name, r.layer_type, r.direction, r.calls, r.mean_ms, r.share]
                for _, short, _ in METRICS:
                    v = r.metrics[short]
                    line += [v.kind, v.value, v.lower90, v.upper90, v.blend]
                writer.writerow(["" if x is None else x for x in line])
    return buffer.getvalue()


def render(jobs, fmt, layers=True):
    if fmt == "table":
        return as_table(jobs, layers)
    if fmt == "markdown":
        return as_markdown(jobs, layers)
    if fmt == "json":
        return as_json(jobs, layers)
    if fmt == "csv":
        return as_csv(jobs, layers)
    raise ValueError(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
