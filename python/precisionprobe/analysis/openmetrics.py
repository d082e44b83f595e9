"""JobReports as OpenMetrics text: the per-layer-type profile for Prometheus and what reads it.

exposition(reports) is what `precisionprobe export --openmetrics` writes and what `precisionprobe
serve` answers on /metrics. Low cardinality by design: per job and per (layer type, direction),
never per layer or per call, so a job adds some 30 series per (layer type, direction) it ran,
however many layers and calls its model has.

Every family is a gauge (a job's totals are read anew from a database that a refresh may fold
again, and untracked time can shrink when late events arrive: not a counter), carries HELP and
TYPE, and UNIT where its name ends in one; numbers are in base units (seconds, bytes, ratios of
0..1: GPU_UTIL's percent is divided by 100). No timestamps: node-exporter's textfile collector
refuses them, and a scrape's time is the time of the value. The text is valid OpenMetrics 1.0
(`# EOF` last) and, because it uses gauges only, also valid Prometheus text format 0.0.4, which
is what the textfile collector and `promtool check metrics` parse (there `# UNIT` and `# EOF` are
comments).

What a number is shows in its name, never only in a label: `..._ratio` is an identified estimate
(absent when the estimator did not identify the value), `..._lower90_ratio` and
`..._upper90_ratio` its 90% interval (whenever the estimator gave one), `..._blend_ratio` the
overlap mean of the sample windows, which blends every layer that shared them and is never the
layer type's own value. precisionprobe_layer_type_identified says per metric which it is.
docs/export.md lists every family with its labels.
"""
import math
from dataclasses import dataclass

from .report import METRICS, UNTRACKED

PREFIX = "precisionprobe"
CONTENT_TYPE = "application/openmetrics-text; version=1.0.0; charset=utf-8"
TEXT_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"  # the same text, for older scrapers
JOB_LABELS = ("job_id",)
TYPE_LABELS = ("job_id", "layer_type", "direction")
PERCENT = {"gpu_util"}  # metrics the report gives in percent; exported as ratios
GIB = 2 ** 30
FIELD = {short: field for field, short, _ in METRICS}
LABEL = {short: label for _, short, label in METRICS}


@dataclass(frozen=True)
class Family:
    name: str
    unit: str        # '' when the value has none (counts, 0/1)
    help: str
    labels: tuple
    samples: object  # JobReport -> iterable of (label values, number or None)

    def __post_init__(self):
        assert not self.unit or self.name.endswith("_" + self.unit), self.name
        assert '"' not in self.help and "\\" not in self.help, self.name


def _ratio(short, x):
    if x is None:
        return None
    return x / 100 if short in PERCENT else x


def _job(value_of):
    return lambda job: [((job.job_id,), value_of(job))]


def _per_type(value_of):
    return lambda job: [((job.job_id, row.layer_type, row.direction), value_of(row)) for row in job.layer_types]


def _on_gpu(value_of):
    """A per-type value of GPU time: none for a job that ran on no GPU (it has no GPU time)."""
    return lambda job: [(labels, x if job.gpus else None) for labels, x in _per_type(value_of)(job)]


def _metric_name(short):
    return f"{LABEL[short]} ({FIELD[short]}{' / 100' if short in PERCENT else ''})"


def _job_families():
    families = [
        Family(f"{PREFIX}_job_gpus", "", "GPUs the job ran on", JOB_LABELS, _job(lambda j: j.gpus)),
        Family(f"{PREFIX}_job_gpu_seconds", "seconds",
               "GPU time of the job: its span (first event to last) on each GPU, summed", JOB_LABELS,
               _job(lambda j: j.gpu_seconds if j.gpus else None)),
        Family(f"{PREFIX}_job_busy_ratio", "ratio",
               "Share of the job's GPU time that a kernel ran (time-weighted mean DCGM_FI_DEV_GPU_UTIL / 100); "
               "the GPU was idle the rest", JOB_LABELS, _job(lambda j: j.busy_share)),
    ]
    for _, short, _ in METRICS:
        if short in PERCENT:
            continue  # GPU_UTIL is the busy ratio above
        families.append(Family(
            f"{PREFIX}_job_{short}_ratio", "ratio",
            f"{_metric_name(short)} of the job: time-weighted mean over its span, measured (not an estimate)",
            JOB_LABELS, _job(lambda j, s=short: j.job_metrics.get(s))))
    families += [
        Family(f"{PREFIX}_job_gpu_memory_used_bytes", "bytes",
               "GPU memory in use (DCGM_FI_DEV_FB_USED), mean over the job's samples", JOB_LABELS,
               _job(lambda j: None if j.gpu_mem_gib is None else j.gpu_mem_gib * GIB)),
        Family(f"{PREFIX}_job_gpu_memory_used_peak_bytes", "bytes",
               "GPU memory in use (DCGM_FI_DEV_FB_USED), largest sample of the job", JOB_LABELS,
               _job(lambda j: None if j.gpu_mem_peak_gib is None else j.gpu_mem_peak_gib * GIB)),
        Family(f"{PREFIX}_job_sample_window_seconds", "seconds",
               "Length of the DCGM sample window the job's GPUs were read with", JOB_LABELS,
               _job(lambda j: None if j.window_ms is None else j.window_ms / 1e3)),
        Family(f"{PREFIX}_job_gpu_shared", "",
               "1 when another job shared one of the job's GPUs, so that its numbers include that job's "
               "activity; 0 when it had its GPUs to itself", JOB_LABELS,
               _job(lambda j: 1 if j.shared_with else 0)),
        Family(f"{PREFIX}_job_counters_emulated", "",
               "1 when the job's DCGM counters are an emulator's, computed from a profile (analyze --emulate, the "
               "live emulator's mirror), not measured; 0 when they were read from the GPUs", JOB_LABELS,
               _job(lambda j: 0 if j.emulated is None else 1)),
    ]
    return families


def _value(short, kind):
    """The row's number of one kind for metric short: 'estimate' (identified only), 'lower90',
    'upper90' or 'blend'."""
    def value_of(row):
        v = row.metrics.get(short)
        if v is None:
            return None
        if kind == "estimate":
            return _ratio(short, v.value) if v.kind == "estimate" else None
        return _ratio(short, getattr(v, kind))
    return value_of


def _identified(job):
    out = []
    for row in job.layer_types:
        for _, short, _ in METRICS:
            v = row.metrics.get(short)
            if v is not None and v.kind is not None:
                out.append(((job.job_id, row.layer_type, row.direction, short), 1 if v.kind == "estimate" else 0))
    return out


def _layer_type_families():
    families = [
        Family(f"{PREFIX}_layer_type_gpu_seconds", "seconds",
               f"GPU time of the layer type's calls in this direction; for layer_type {UNTRACKED}, the job's "
               "GPU time that no layer event covered", TYPE_LABELS, _on_gpu(lambda r: r.seconds)),
        Family(f"{PREFIX}_layer_type_share_ratio", "ratio",
               "Share of the job's GPU time spent in the layer type's calls in this direction (measured)",
               TYPE_LABELS, _on_gpu(lambda r: r.share)),
        Family(f"{PREFIX}_layer_type_calls", "", "Calls of the layer type in this direction (absent for "
               f"{UNTRACKED})", TYPE_LABELS, _per_type(lambda r: r.calls)),
    ]
    for _, short, _ in METRICS:
        name = f"{PREFIX}_layer_type_{short}"
        what = _metric_name(short)
        families += [
            Family(f"{name}_ratio", "ratio",
                   f"{what} during the layer type's calls: the estimator's identified value; absent when it is "
                   f"not identified (then see {name}_lower90_ratio, {name}_upper90_ratio and {name}_blend_ratio)",
                   TYPE_LABELS, _per_type(_value(short, "estimate"))),
            Family(f"{name}_lower90_ratio", "ratio",
                   f"{what} during the layer type's calls: lower end of the estimator's 90% interval, "
                   "identified or not", TYPE_LABELS, _per_type(_value(short, "lower90"))),
            Family(f"{name}_upper90_ratio", "ratio",
                   f"{what} during the layer type's calls: upper end of the estimator's 90% interval, "
                   "identified or not", TYPE_LABELS, _per_type(_value(short, "upper90"))),
            Family(f"{name}_blend_ratio", "ratio",
                   f"{what}: mean of the sample windows the layer type's calls fell in (overlap mean), which "
                   "blends every layer that shared those windows: never the layer type's own value",
                   TYPE_LABELS, _per_type(_value(short, "blend"))),
        ]
    families.append(Family(
        f"{PREFIX}_layer_type_identified", "",
        f"1 when the estimator identified the metric for the layer type ({PREFIX}_layer_type_METRIC_ratio is "
        "then present), 0 when only an interval or a blend is known", TYPE_LABELS + ("metric",), _identified))
    return families


FAMILIES = tuple(_job_families() + _layer_type_families())


def escape_label(value):
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _number(x):
    if isinstance(x, bool):
        return "1" if x else "0"
    if isinstance(x, int):
        return str(x)
    return repr(float(x))


def exposition(reports):
    """The OpenMetrics text of a list of JobReports: every family with HELP, TYPE and UNIT, its
    samples of every job together, then `# EOF`. A family with no sample is left out."""
    lines = []
    for family in FAMILIES:
        samples = []
        for job in reports:
            for values, x in family.samples(job):
                if x is None or not math.isfinite(x):
                    continue
                labels = ",".join(f'{k}="{escape_label(v)}"' for k, v in zip(family.labels, values))
                samples.append(f"{family.name}{{{labels}}} {_number(x)}")
        if not samples:
            continue
        lines.append(f"# HELP {family.name} {family.help}")
        lines.append(f"# TYPE {family.name} gauge")
        if family.unit:
            lines.append(f"# UNIT {family.name} {family.unit}")
        lines += samples
    lines.append("# EOF")
    return "\n".join(lines) + "\n"


def content_type(accept):
    """The Content-Type to answer a scrape whose Accept header is accept: OpenMetrics when the
    scraper asks for it (Prometheus does), else Prometheus text format 0.0.4 (the same text)."""
    return CONTENT_TYPE if accept and "application/openmetrics-text" in accept else TEXT_CONTENT_TYPE
