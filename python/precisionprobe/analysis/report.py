"""The report of one job, read from a refreshed results database: the plain report_* tables that
pp_refresh writes and report_estimates (saved_estimates.py), which any SQLite client reads.

For each layer type and each layer, ordered by share of the job's GPU time: calls, mean
duration, share, and for each activity metric of the paper's Table I the best number the data
give (best_value):

  estimate  the estimator identified the value (layer_type_estimates / layer_estimates): the
            estimate with its 90% interval
  interval  not identified, but the 90% interval is narrow enough to say something
            (at most INFORMATIVE_WIDTH of the metric's range): the interval, no point value
  blend     otherwise the overlap mean of Table II, which blends every layer that shared the
            layer's sample windows; marked as such, never presented as the layer's own value

A point estimate sitting on a bound (0, 1, 100) is never shown when not identified: the bound is
what pinned it, not the data.
"""
from dataclasses import asdict, dataclass, field
from typing import Optional

from .. import _emulated_copy as emulated_copy

# The activity metrics of Table I, as the report names them (memory in use is per job only: an
# instant gauge, which the layers of a window hold at once).
METRICS = (
    ("DCGM_FI_DEV_GPU_UTIL", "gpu_util", "GPU util %"),
    ("DCGM_FI_PROF_SM_ACTIVE", "sm_active", "SM active"),
    ("DCGM_FI_PROF_SM_OCCUPANCY", "sm_occupancy", "SM occupancy"),
    ("DCGM_FI_PROF_DRAM_ACTIVE", "dram_active", "DRAM active"),
    ("DCGM_FI_PROF_PIPE_FP32_ACTIVE", "fp32_active", "FP32 active"),
)
# The report_* tables' column of each metric (units in the names).
COLUMN = {"gpu_util": "gpu_util_percent", "sm_active": "sm_active_ratio", "sm_occupancy": "sm_occupancy_ratio",
          "dram_active": "dram_active_ratio", "fp32_active": "fp32_active_ratio"}
INFORMATIVE_WIDTH = 0.2  # an unidentified interval this narrow (of the metric's range) is shown
UNTRACKED = "(untracked)"


@dataclass
class Value:
    kind: Optional[str]  # 'estimate', 'interval', 'blend', or None: no data
    value: Optional[float] = None   # the estimate, or the blend; None for an interval
    lower90: Optional[float] = None
    upper90: Optional[float] = None
    blend: Optional[float] = None   # the overlap mean, always kept for reference
    confidence: Optional[str] = None
    scale: Optional[float] = None   # the metric's range (100 for GPU util %, 1 for ratios)


@dataclass
class Row:
    name: str                 # the layer, or the layer type
    layer_type: str
    direction: str            # 'forward', 'backward', or 'untracked'
    calls: Optional[int]
    mean_ms: Optional[float]
    seconds: float            # GPU time of its calls (untracked: the job's time no layer covered)
    share: float              # of the job's GPU time
    metrics: dict = field(default_factory=dict)  # short metric name -> Value


@dataclass
class JobReport:
    job_id: str
    gpus: int
    gpu_seconds: float        # the job's span on each GPU, summed
    minutes: float            # wall time of the run (gpu_seconds / gpus)
    window_ms: Optional[float]
    parameters: Optional[int]
    shared_with: Optional[str]
    busy_share: Optional[float]      # GPU_UTIL over the job: time a kernel ran
    untracked_share: float           # time no layer event covered (functional ops, data loading)
    gpu_mem_gib: Optional[float]
    gpu_mem_peak_gib: Optional[float]
    job_metrics: dict                # short metric name -> the job's mean
    layer_types: list
    layers: list
    findings: list = field(default_factory=list)
    unresolved: list = field(default_factory=list)
    # The minutes of windows the estimates were solved from, where the event_retention_minutes
    # setting removed some of the job's events (None: nothing removed, they saw the whole run).
    estimate_minutes: Optional[float] = None
    # The emulator profile whose values the job's counters are (its events read from an emulated
    # copy: analyze --emulate, the live emulator's mirror), '' for a copy whose mark names none;
    # None: measured (or a copy refreshed by an earlier version, and moved since).
    emulated: Optional[str] = None

    def as_dict(self):
        return asdict(self)


def best_value(estimate, blend, scale):
    """The Value to show from an estimate row (dict or None) and the overlap mean (or None)."""
    if estimate is None or (estimate["lower90"] is None and estimate["estimate"] is None):
        return Value("blend" if blend is not None else None, blend, blend=blend, scale=scale)
    confidence = estimate["confidence"]
    if confidence == "identified":
        return Value("estimate", estimate["estimate"], estimate["lower90"], estimate["upper90"], blend, confidence,
                     scale)
    low, high = estimate["lower90"], estimate["upper90"]
    if low is not None and high is not None and scale and high - low <= INFORMATIVE_WIDTH * scale:
        return Value("interval", None, low, high, blend, confidence, scale)
    return Value("blend" if blend is not None else None, blend, low, high, blend, confidence, scale)


def _query(conn, sql, params=()):
    cursor = conn.execute(sql, params)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row)) for row in cursor]


def _scales(conn):
    return {r["metric"]: (r["upper"] - r["lower"]) if r["upper"] is not None and r["lower"] is not None else None
            for r in _query(conn, "SELECT metric, lower, upper FROM pp_metric_bounds")}


def _rows(metric_rows, estimate_rows, name_column, scales, job_seconds, shared):
    estimates = {(e["name"], e["direction"], e["metric"]): e for e in estimate_rows}
    rows = []
    tracked = 0.0
    for m in metric_rows:
        if m["direction"] == "untracked":
            continue
        seconds = m["call_seconds"] or 0.0
        tracked += seconds
        rows.append(Row(m[name_column], m["layer_type"], m["direction"], m["calls"], m["mean_duration_ms"], seconds,
                        seconds / job_seconds if job_seconds else 0.0))
    untracked = [m for m in metric_rows if m["direction"] == "untracked"]
    for m in untracked:
        # On a GPU it shared, the span less the job's own calls would count the other job's
        # calls as this one's untracked time: the engine's measure, the time of its windows in
        # which no job's layer ran, is taken there (where the windows cover the span, the same).
        measured = m["call_seconds"] if shared else None
        seconds = measured if measured is not None else max(0.0, job_seconds - tracked)
        rows.append(Row(UNTRACKED, UNTRACKED, "untracked", None, None, seconds,
                        seconds / job_seconds if job_seconds else 0.0))
    for row, m in zip(rows, [m for m in metric_rows if m["direction"] != "untracked"] + untracked):
        for metric, short, _ in METRICS:
            row.metrics[short] = best_value(estimates.get((m[name_column], m["direction"], metric)), m[COLUMN[short]],
                                            scales.get(metric))
    rows.sort(key=lambda r: (-r.share, r.name, r.direction))
    return rows


class ReportError(RuntimeError):
    """The report tables hold what precisionprobe never writes there (a value of another type)."""


REPORT_TABLES = ("report_jobs", "report_layer_types", "report_layers", "report_estimates")


def check_report_types(conn, source):
    """Raises ReportError naming the first value of a number column of the report tables that is
    not a number: SQLite keeps whatever is written there, and the report would fail half-way on
    it (the database, named by source, was altered, or not written by precisionprobe). One scan
    per table."""
    for table in REPORT_TABLES:
        columns = [name for _, name, declared, *_ in conn.execute(f"PRAGMA table_info({table})")
                   if declared.upper() in ("INTEGER", "REAL")]
        if not columns:
            continue
        wrong = " OR ".join(f"typeof(\"{c}\") NOT IN ('integer', 'real', 'null')" for c in columns)
        found = conn.execute(f"SELECT job_id, {', '.join(f'{chr(34)}{c}{chr(34)}' for c in columns)} FROM {table} "
                             f"WHERE {wrong} LIMIT 1").fetchone()
        if found:
            column, value = next((c, v) for c, v in zip(columns, found[1:]) if not isinstance(v, (int, float, type(None))))
            shown = repr(value[:40] + (b"..." if isinstance(value, bytes) else "...") if len(value) > 40 else value)
            raise ReportError(f"{source}: {table}.{column} of job {found[0]!r} holds {shown}, not a number: the "
                              "database was altered, or not written by precisionprobe")


def jobs_in(conn):
    return [r[0] for r in conn.execute("SELECT job_id FROM report_jobs ORDER BY job_id")]


def read_report(conn, job_id, layers=True):
    """The JobReport of job_id (findings and unresolved are filled by findings.py); layers=False
    leaves the per-layer rows out."""
    job = _query(conn, "SELECT * FROM report_jobs WHERE job_id = ?", (job_id,))
    if not job:
        raise LookupError(f"no job {job_id!r} in the database")
    job = job[0]
    scales = _scales(conn)
    seconds = job["gpu_seconds"] or 0.0
    gpus = job["gpus"] or 0
    window = conn.execute(
        "SELECT max(i.interval_ms) FROM pp_intervals AS i JOIN pp_metrics AS m USING (metric) "
        "WHERE m.kind = 'window' AND i.uuid IN (SELECT gpu_uuid FROM pp_layers WHERE job_id = ?)",
        (job_id,)).fetchone()[0]
    estimates = "SELECT * FROM report_estimates WHERE job_id = ? AND grouping = ?"
    type_rows = _rows(_query(conn, "SELECT * FROM report_layer_types WHERE job_id = ?", (job_id,)),
                      _query(conn, estimates, (job_id, "layer_type")), "layer_type", scales, seconds,
                      job["shared_with"] is not None)
    layer_rows = _rows(_query(conn, "SELECT * FROM report_layers WHERE job_id = ?", (job_id,)),
                       _query(conn, estimates, (job_id, "layer")), "layer", scales, seconds,
                       job["shared_with"] is not None) if layers else []
    untracked = next((r.share for r in type_rows if r.direction == "untracked"), 0.0)
    estimate_minutes = _estimate_minutes(conn, job_id, window, gpus, seconds / max(gpus, 1) / 60)
    return JobReport(
        job_id=job_id, gpus=gpus, gpu_seconds=seconds, minutes=seconds / max(gpus, 1) / 60,
        window_ms=window, parameters=job["parameters"] or None, shared_with=job["shared_with"],
        busy_share=job["gpu_util_percent"] / 100 if job["gpu_util_percent"] is not None else None,
        untracked_share=untracked, gpu_mem_gib=job["gpu_mem_gib"], gpu_mem_peak_gib=job["gpu_mem_peak_gib"],
        job_metrics={short: job[COLUMN[short]] for _, short, _ in METRICS},
        layer_types=type_rows, layers=layer_rows, estimate_minutes=estimate_minutes,
        emulated=emulated_profile(conn, job_id))


EMULATED_KEY = "emulated profile of job "  # pp_meta's key, + job_id (remember_emulated)


def emulated_profile(conn, job_id):
    """JobReport.emulated: as the database remembers it (remember_emulated), else the profile
    named by the mark of the emulated copy holding any of the job's event files (pp_jobs' files,
    as pp_event_files resolved them), or None."""
    kept = conn.execute("SELECT value FROM pp_meta WHERE key = ?", (EMULATED_KEY + job_id,)).fetchone()
    return kept[0] if kept is not None else _profile_of_marks(conn, job_id)


def remember_emulated(conn):
    """After a refresh: each job whose events are an emulated copy's keeps that in the database
    (pp_meta), so that its reports say so once the copy was moved or archived."""
    jobs = [job for (job,) in conn.execute("SELECT job_id FROM report_jobs")]
    found = {job: _profile_of_marks(conn, job) for job in jobs}
    with conn:
        conn.executemany("INSERT OR REPLACE INTO pp_meta(key, value) VALUES (?, ?)",
                         [(EMULATED_KEY + job, profile) for job, profile in found.items() if profile is not None])


def _profile_of_marks(conn, job_id):
    for (path,) in conn.execute("SELECT DISTINCT f.real_path FROM pp_jobs AS j JOIN pp_event_files AS f "
                                "ON f.source_file = j.source_file WHERE j.job_id = ? AND f.real_path IS NOT NULL",
                                (job_id,)):
        copy = emulated_copy.copy_holding(path)
        if copy is not None:
            return emulated_copy.profile_of(copy)
    return None


def _estimate_minutes(conn, job_id, window_ms, gpus, minutes):
    """Where retention removed events of the job (pp_dropped_events, per file: the files of its
    header and of its events left) and its estimates saw less than 90% of its minutes, the
    minutes of windows they saw: the most windows of one of its estimates, over its GPUs. None
    otherwise: nothing was removed, or the estimator kept the windows removed as its state
    (pp_estimator_state), as it does since it has one; a database whose retention ran before
    then has estimates of the last minutes only. (pp_events has no index by job: it is read only
    once retention is known to be in use, which bounds it.)"""
    if not conn.execute("SELECT EXISTS (SELECT 1 FROM pp_dropped_events)").fetchone()[0]:
        return None
    dropped = conn.execute(
        "SELECT coalesce(sum(events), 0) FROM pp_dropped_events WHERE source_file IN "
        "(SELECT source_file FROM pp_jobs WHERE job_id = ?1 UNION SELECT source_file FROM pp_events WHERE job_id = ?1)",
        (job_id,)).fetchone()[0]
    if not dropped:
        return None
    windows = conn.execute("SELECT max(windows) FROM report_estimates WHERE job_id = ?", (job_id,)).fetchone()[0]
    seen = (windows or 0) * (window_ms or 0) / 60000 / max(gpus, 1)
    return seen if seen < 0.9 * minutes else None
