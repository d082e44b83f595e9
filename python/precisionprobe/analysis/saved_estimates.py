"""report_estimates: the estimator's results saved as a plain table (schema in the extension's
src/attribution/sql/schema.sql), so that clients without the extension read them and the report
does not solve every system again. pp_refresh rewrites the other report_* tables itself; the
estimates are saved here, when they are older than the last refresh, since the estimator reads
every event of a job."""
from . import ctrl_c
from .write_lock import begin_writing


def _unit(metric):
    return (f"CASE {metric} WHEN 'DCGM_FI_DEV_GPU_UTIL' THEN 'percent' WHEN 'DCGM_FI_DEV_FB_USED' THEN 'MiB' "
            "ELSE 'ratio' END")


def _direction(name, forward):
    return f"CASE WHEN {name} = '(untracked)' THEN 'untracked' WHEN {forward} THEN 'forward' ELSE 'backward' END"


SAVE = f"""
DELETE FROM report_estimates;
INSERT INTO report_estimates
SELECT e.job_id, 'layer_type', e.layer_type, e.layer_type, {_direction('e.layer_type', 'e.forward')}, e.metric,
       {_unit('e.metric')}, e.estimate, e.stderr, e.lower90, e.upper90, e.windows,
       e.confidence = 'identified', e.confidence,
       CASE e.metric WHEN 'DCGM_FI_DEV_GPU_UTIL' THEN t.gpu_util_percent WHEN 'DCGM_FI_DEV_FB_USED' THEN t.gpu_mem_mib
                     WHEN 'DCGM_FI_PROF_DRAM_ACTIVE' THEN t.dram_active_ratio
                     WHEN 'DCGM_FI_PROF_PIPE_FP32_ACTIVE' THEN t.fp32_active_ratio
                     WHEN 'DCGM_FI_PROF_SM_OCCUPANCY' THEN t.sm_occupancy_ratio
                     WHEN 'DCGM_FI_PROF_SM_ACTIVE' THEN t.sm_active_ratio END, :now
  FROM layer_type_estimates AS e
  LEFT JOIN report_layer_types AS t ON t.job_id = e.job_id AND t.layer_type = e.layer_type
        AND t.direction = {_direction('e.layer_type', 'e.forward')};
INSERT INTO report_estimates
SELECT job_id, 'layer', layer, layer_type, {_direction('layer', 'forward')}, metric, {_unit('metric')},
       estimate, stderr, lower90, upper90, windows, confidence = 'identified', confidence, overlap_mean, :now
  FROM layer_estimates;
"""


def estimates_stale(conn):
    # (Compared in SQL: a value of another type, in an altered file, is then an answer, not an
    # exception; check_report_types names it.)
    return bool(conn.execute(
        "SELECT refreshed IS NOT NULL AND (saved IS NULL OR saved < refreshed) FROM "
        "(SELECT (SELECT min(refreshed_at) FROM report_estimates) AS saved, "
        "(SELECT max(refreshed_at) FROM report_jobs) AS refreshed)").fetchone()[0])


def save_estimates(conn, wait_s=None, in_temp=False):
    """Rewrites report_estimates from the estimator's views (committed); returns the rows saved.
    Waits while another connection writes the file (a refresh of another process), up to wait_s
    seconds (write_lock's bound where None). in_temp: the connection has a TEMP report_estimates,
    which takes the rows and needs no lock on the file."""
    if not in_temp and not getattr(conn, "read_only", False):  # (a read-only file's: a TEMP table)
        begin_writing(conn, wait_s=wait_s)
    with conn, ctrl_c.interrupts(conn):  # (the estimates' solve stops at Ctrl-C or SIGTERM within a second)
        now = conn.execute("SELECT max(refreshed_at) FROM report_jobs").fetchone()[0]
        for statement in filter(str.strip, SAVE.split(";")):
            conn.execute(statement, {"now": now} if ":now" in statement else {})
    return conn.execute("SELECT count(*) FROM report_estimates").fetchone()[0]
