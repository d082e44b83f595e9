"""`analyze --html DIR`: the report as one self-contained page, DIR/index.html (its figures
embedded as data URIs, so the file alone can be mailed or attached), with the figures also as
DIR/<job>-share.png and DIR/<job>-metrics.png; a device or named pipe as DIR gets the page alone."""
import base64
import hashlib
import html
import os
import re
import stat
import tempfile
from pathlib import Path

from . import figures
from .render import LEGEND, header_cells, job_summary, row_cells

STYLE = """
body { font-family: sans-serif; margin: 2em; max-width: 70em; color: #222; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0 1.5em; }
th, td { padding: 0.2em 0.6em; border-bottom: 1px solid #ddd; text-align: right; }
th:nth-child(-n+2), td:nth-child(-n+2) { text-align: left; }
.legend { color: #555; font-size: 0.85em; }
img { max-width: 100%; }
"""


# The most characters of a job id kept in its figures' names: a name may have 255 bytes, and the
# figure's suffix and _replace's temporary name add some 40 to it.
_MOST_NAME_CHARS = 160


def _file_name(job_id):
    """A file name for the job's figures: its id where that is one, else the id made safe (and
    cut short where long) and a digest of it (so that "a b" and "a_b" do not share figures)."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", job_id).lstrip(".") or "job"
    if safe == job_id and len(safe) <= _MOST_NAME_CHARS:
        return safe
    return f"{safe[:_MOST_NAME_CHARS]}-{hashlib.sha1(job_id.encode()).hexdigest()[:8]}"


def _table(rows):
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header_cells())
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row_cells(r)) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _replace(path, write):
    """Calls write(file) with a binary file open on a new temporary file beside path, then renames
    it over path: a browser or a web server serving DIR sees the old file or the new one, never
    part of one (a full disk or a file-size limit mid-write, a process killed). The temporary
    file is made new (O_EXCL, a random name), so that a link someone else left under its name in
    a shared DIR is never followed. A write that fails leaves the old file and no temporary one,
    and the error names path."""
    path = Path(path)
    temporary = None
    try:
        while temporary is None:
            candidate = path.with_name(f".{path.stem}.{os.getpid()}.{os.urandom(4).hex()}.tmp{path.suffix}")
            try:
                fd = os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
                temporary = candidate
            except FileExistsError:
                continue
        with os.fdopen(fd, "wb") as f:
            write(f)
        os.replace(temporary, path)
        temporary = None  # (the name is path's now; another process may make a file under it)
    except OSError as e:
        raise OSError(e.errno, e.strerror, str(path)) from None
    finally:
        if temporary is not None:
            temporary.unlink(missing_ok=True)


def _image(path):
    data = base64.b64encode(Path(path).read_bytes()).decode("ascii")
    return f'<img alt="{html.escape(Path(path).stem)}" src="data:image/png;base64,{data}">'


def write_html(jobs, directory, layers=True):
    """Writes DIR/index.html and the PNGs; returns the page's path. What is neither a file nor a
    folder (/dev/null, /dev/stdout, a named pipe) gets the page alone, written in place as
    export's --openmetrics writes it: its figures are embedded, drawn in a temporary folder."""
    try:
        mode = os.stat(directory).st_mode
    except OSError:
        mode = None  # (nothing there yet: made below)
    if mode is not None and not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
        with tempfile.TemporaryDirectory(prefix="precisionprobe-html-") as figures_dir:
            text = _page(jobs, Path(figures_dir), layers)
        with open(directory, "w", encoding="utf-8") as f:
            f.write(text)
        return Path(directory)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    page = directory / "index.html"
    text = _page(jobs, directory, layers)
    _replace(page, lambda f: f.write(text.encode("utf-8")))
    return page


def _page(jobs, directory, layers):
    """The page, its figures drawn as PNG files in directory."""
    parts = []
    for job in jobs:
        name = _file_name(job.job_id)
        share, metrics = directory / f"{name}-share.png", directory / f"{name}-metrics.png"
        _replace(share, lambda f: figures.share_figure(job, f))
        _replace(metrics, lambda f: figures.metrics_figure(job, f))
        parts += [f"<h2>Job {html.escape(job.job_id)}</h2>", f"<p>{html.escape(job_summary(job))}</p>",
                  "<h3>What this says</h3><ul>" + "".join(f"<li>{html.escape(s)}</li>" for s in job.findings)
                  + "</ul>", _image(share), "<h3>Per layer type</h3>", _table(job.layer_types),
                  f'<p class="legend">{html.escape(LEGEND)}</p>', _image(metrics)]
        if job.unresolved:
            parts.append("<h3>Not resolved, and what would resolve it</h3><ul>"
                         + "".join(f"<li>{html.escape(s)}</li>" for s in job.unresolved) + "</ul>")
        if layers:
            parts += ["<h3>Per layer</h3>", _table(job.layers)]
    return ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>precisionprobe report</title>"
            f"<style>{STYLE}</style></head><body><h1>precisionprobe report</h1>\n" + "\n".join(parts) + "\n</body></html>\n")
