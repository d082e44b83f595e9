-- Persistent tables of the attribution engine, created by pp_install_views().
-- They hold data, not requests, so they are safe in any database file.

-- Facts about this database's attribution schema (the fingerprint of its views).
CREATE TABLE IF NOT EXISTS pp_meta(key TEXT PRIMARY KEY, value TEXT);
-- The database's identity, which the views pass to the table functions they call (which read
-- the main database's tables): a view of an ATTACHed database is refused, not answered from main.
INSERT OR IGNORE INTO main.pp_meta(key, value) VALUES ('database_id', lower(hex(randomblob(16))));

-- Layer events imported from the hook client's event files (one row per line) and rows users
-- insert, kept in blocks (the shadow tables pp_events_blocks and pp_events_layers;
-- src/attribution/events_table.cpp).
CREATE VIRTUAL TABLE IF NOT EXISTS pp_events USING pp_event_store;

-- How far pp_refresh has read each event file: the byte offset just past its last complete
-- line, and that line's number. The next refresh reads on from there if the file is still the
-- one read: its head (the first line, at most 4096 bytes of it; head_bytes 0 while unknown) has
-- the same length and 64-bit FNV-1a hash.
CREATE TABLE IF NOT EXISTS pp_event_files(
  source_file TEXT PRIMARY KEY, bytes INTEGER NOT NULL, lines INTEGER NOT NULL,
  head_bytes INTEGER NOT NULL DEFAULT 0, head_hash INTEGER NOT NULL DEFAULT 0,
  real_path TEXT);  -- absolute, links resolved: the same file named another way is this one

-- For each compact event file in pp_event_files, what its decoder needs to read on from that
-- position (the format line, job header, definitions and last block line, as compact lines).
CREATE TABLE IF NOT EXISTS pp_event_file_state(source_file TEXT PRIMARY KEY, state TEXT NOT NULL);

-- Per event file, the folded events the event_retention_minutes setting removed from
-- pp_events: how many, and the last end among them (ns). The file's position in pp_event_files
-- stays valid, so its events are never read twice; the file holds them all.
CREATE TABLE IF NOT EXISTS pp_dropped_events(
  source_file TEXT PRIMARY KEY, events INTEGER NOT NULL, last_end_ns INTEGER NOT NULL);

-- The estimator's state of the windows the event_retention_minutes setting removed, per GPU,
-- system (a job, or the first job of jobs that shared a GPU, when the windows were kept),
-- metric, grouping ('layer' or 'layer_type') and timing shift (-1, 0, 1: the windows moved by
-- the GPU's timing uncertainty): the sums of the windows' rows (state: the encoding of
-- docs/reference/attribution.md), and the notes pp_estimates reports on them.
CREATE TABLE IF NOT EXISTS pp_estimator_state(
  uuid TEXT NOT NULL, system TEXT NOT NULL, metric TEXT NOT NULL,
  grouping TEXT NOT NULL CHECK (grouping IN ('layer', 'layer_type')),
  shift INTEGER NOT NULL CHECK (shift IN (-1, 0, 1)),
  windows INTEGER NOT NULL,                    -- the windows in the state
  concurrent_windows INTEGER NOT NULL DEFAULT 0,  -- left out: jobs sharing the GPU ran at once
  -- 1: the state holds driver-period samples off their grid fitted on DCGM's windows (kept by
  -- an earlier version; now such windows are left out, off_grid_windows)
  windows_unknown INTEGER NOT NULL DEFAULT 0,
  shared_gauge INTEGER NOT NULL DEFAULT 0,        -- 1: an instant gauge of a shared GPU
  failed TEXT,                                    -- why the system could not be kept
  state BLOB,
  -- left out: driver-period samples off their driver's grid (last, where upgrade.sql adds it to
  -- an earlier version's table, so that rows copied with SELECT * line up in both)
  off_grid_windows INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (uuid, system, metric, grouping, shift)) WITHOUT ROWID;

-- The job header of each process (layer_jobs): what ran and how big the model is.
CREATE TABLE IF NOT EXISTS pp_jobs(
  job_id TEXT NOT NULL, host_name TEXT, pid INTEGER,
  params INTEGER,                         -- the model's parameter count
  command TEXT, torch_version TEXT,       -- command: JSON array text
  start_time REAL,                        -- unix seconds
  source_file TEXT NOT NULL, line INTEGER NOT NULL,
  UNIQUE (source_file, line));
-- A job's processes (job_overview's parameters and hosts).
CREATE INDEX IF NOT EXISTS pp_jobs_by_job ON pp_jobs(job_id);

-- Which GPU instance each MIG device is. A process on a MIG device sees a MIG UUID
-- ("MIG-...", its events' gpu_uuid), while dcgm-exporter labels the instance's series with the
-- parent GPU's UUID and GPU_I_ID. pp_refresh fills this from the hook client's mig_device
-- records; a user may INSERT rows (from `nvidia-smi -L` and `nvidia-smi mig -lgi`), and a row
-- already here is kept. Samples of an instance are stored in pp_samples under its MIG UUID.
CREATE TABLE IF NOT EXISTS pp_mig_devices(
  mig_uuid TEXT PRIMARY KEY CHECK (mig_uuid LIKE 'MIG-%'),  -- as CUDA names a MIG device
  gpu_uuid TEXT NOT NULL,                 -- the parent GPU: the series' UUID label
  gpu_instance_id INTEGER NOT NULL,       -- the series' GPU_I_ID label
  profile TEXT);                          -- GPU_I_PROFILE ("3g.40gb"), for reading

-- Raw DCGM samples of the GPUs the events ran on, at the times Prometheus stored them (ms).
-- dcgm-exporter prints no timestamps, so ts_ms is when Prometheus scraped: the window a sample
-- describes ended some time before it (pp_windows, from the align step of pp_refresh).
CREATE TABLE IF NOT EXISTS pp_samples(
  uuid TEXT NOT NULL, metric TEXT NOT NULL, ts_ms INTEGER NOT NULL, value REAL,
  host TEXT, gpu TEXT,
  PRIMARY KEY (uuid, metric, ts_ms)) WITHOUT ROWID;

-- The window a sample of each series averages over, in ms (a fraction for a driver period such
-- as 1000/6): estimated from the data ('estimated'), the median spacing of the samples when the
-- data cannot tell ('median'), the sample_interval_ms setting ('setting'), or a value a user
-- wrote here ('user'). An instant metric has the window of its GPU's DCGM samples.
CREATE TABLE IF NOT EXISTS pp_intervals(
  uuid TEXT NOT NULL, metric TEXT NOT NULL, interval_ms REAL NOT NULL CHECK (interval_ms > 0),
  source TEXT NOT NULL DEFAULT 'user',
  PRIMARY KEY (uuid, metric));

-- How each GPU's stored sample times relate to the windows they describe, per stretch of time
-- (pp_refresh's align step; docs/concepts.md explains it and the sample_alignment view shows it
-- in ms). A window of a stored time ts ends offset_ns before it, give or take timing_ns (the
-- 90% half-width the estimates' intervals allow for); GPU_UTIL's driver grid has its points at
-- util_phase_ns + k * its window.
CREATE TABLE IF NOT EXISTS pp_alignment(
  uuid TEXT NOT NULL,
  from_ms INTEGER NOT NULL, through_ms INTEGER NOT NULL,   -- stored times in (from_ms, through_ms]
  offset_ns INTEGER NOT NULL, timing_ns INTEGER NOT NULL,
  drift_ppm REAL NOT NULL,                                 -- how fast the offset moves
  util_phase_ns INTEGER, util_timing_ns INTEGER,
  samples INTEGER NOT NULL, repeats INTEGER NOT NULL,      -- stored times, and copies of a window among them
  skipped INTEGER NOT NULL, moved INTEGER NOT NULL,        -- windows never stored; windows moved by a period
  status TEXT NOT NULL,  -- estimated, poorly determined, not determined, no layers, setting
  -- Where the data had not told the GPU's window length (or GPU_UTIL's period) by the time this
  -- stretch was aligned: the length its windows were given (the median spacing of its own
  -- samples; pp_windows too), until one of the next three stretches tells it (NULL then), or
  -- for good. The fold holds a GPU's windows from the first such stretch among its last three
  -- on (but in a final refresh), so that no refresh folds a window whose length changes later.
  -- NULL: the length of pp_intervals.
  window_ms REAL, util_window_ms REAL,
  -- Why a stretch is not estimated, in words (each cause, '; ' between); NULL where it is.
  reason TEXT,
  PRIMARY KEY (uuid, from_ms));

-- Running sums over each GPU's stretches that have layers (status <> 'no layers'), in from_ms
-- order, up to and including the stretch at from_ms: so that the estimator's timing shift takes
-- a job's stretches wholly inside its span from the difference of two rows, reading only those
-- at the span's edges, and a refresh does not read the GPU's whole history (stretch_read.hpp).
-- With A = through_ms - from_ms and t = timing_ns (util_: util_timing_ns, 0 where NULL):
-- stretches, their sum of A (length_ms), of t^2, A t^2 and A^2 t^2 (each a 128-bit unsigned
-- integer as a 16-byte BLOB, most significant byte first: exact, so that a difference of two
-- rows is too), the largest t of either grid, how many keep a window length of their own
-- (window_ms or util_window_ms not NULL), and this stretch's first and last window ends in ns
-- (from_ms and through_ms less offset_ns). The align step appends rows; the triggers below
-- delete a GPU's rows from any stretch written otherwise on, and the next align step sums them
-- again. A stretch they cannot hold exactly (a timing not whole, ends out of order: edited by
-- hand) has no row, nor has any after it: the estimator reads those one by one.
CREATE TABLE IF NOT EXISTS pp_alignment_sums(
  uuid TEXT NOT NULL, from_ms INTEGER NOT NULL,
  stretches INTEGER NOT NULL, length_ms INTEGER NOT NULL,
  t2 BLOB NOT NULL, at2 BLOB NOT NULL, a2t2 BLOB NOT NULL,
  util_t2 BLOB NOT NULL, util_at2 BLOB NOT NULL, util_a2t2 BLOB NOT NULL,
  longest_ns INTEGER NOT NULL, kept_windows INTEGER NOT NULL,
  first_end_ns INTEGER NOT NULL, last_end_ns INTEGER NOT NULL,
  PRIMARY KEY (uuid, from_ms)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS pp_alignment_sums_by_end ON pp_alignment_sums(uuid, last_end_ns);
CREATE TRIGGER IF NOT EXISTS pp_alignment_sums_insert AFTER INSERT ON pp_alignment BEGIN
  DELETE FROM pp_alignment_sums WHERE uuid = new.uuid AND from_ms >= new.from_ms;
END;
CREATE TRIGGER IF NOT EXISTS pp_alignment_sums_update AFTER UPDATE ON pp_alignment BEGIN
  DELETE FROM pp_alignment_sums WHERE uuid = old.uuid AND from_ms >= old.from_ms;
  DELETE FROM pp_alignment_sums WHERE uuid = new.uuid AND from_ms >= new.from_ms;
END;
CREATE TRIGGER IF NOT EXISTS pp_alignment_sums_delete AFTER DELETE ON pp_alignment BEGIN
  DELETE FROM pp_alignment_sums WHERE uuid = old.uuid AND from_ms >= old.from_ms;
END;

-- Each stored sample time of a GPU and the window it describes (the align step): window
-- metrics average over (end_ns - window, end_ns], instant metrics are read at end_ns, driver
-- windows end at util_end_ns. copy_of_ms: an earlier stored time of the same DCGM window (a
-- scrape that found no new window stores the old one again); a window is counted once, and so
-- is a driver window that two DCGM samples read (util_copy). window_ms and util_window_ms: its
-- stretch's (pp_alignment), the length the window keeps where a series' length in pp_intervals
-- is the data's ('median' or 'estimated'); NULL: pp_intervals'.
CREATE TABLE IF NOT EXISTS pp_windows(
  uuid TEXT NOT NULL, ts_ms INTEGER NOT NULL, end_ns INTEGER NOT NULL, util_end_ns INTEGER,
  copy_of_ms INTEGER,
  util_copy INTEGER NOT NULL DEFAULT 0,  -- 1: the same driver window as an earlier stored time
  window_ms REAL, util_window_ms REAL,
  PRIMARY KEY (uuid, ts_ms)) WITHOUT ROWID;

-- Where each job ran on each GPU, from its folded events (the fold step adds each event once,
-- but those whose times cannot be a call): the first start and last end in ns, the events, and
-- the longest event in ns (so that a fold finds the folded events reaching into its windows by
-- an index range, without reading the GPU's history). colocated_spans compares these spans
-- without reading pp_events.
CREATE TABLE IF NOT EXISTS pp_gpu_spans(
  job_id TEXT NOT NULL, uuid TEXT NOT NULL, first_ns INTEGER NOT NULL, last_ns INTEGER NOT NULL,
  events INTEGER NOT NULL, longest_ns INTEGER NOT NULL,
  PRIMARY KEY (uuid, job_id)) WITHOUT ROWID;
-- A job's spans (job_overview, pp_shared_jobs), and the spans of a GPU that end after a time:
-- the jobs a span can overlap, found without reading every job the GPU has run.
CREATE INDEX IF NOT EXISTS pp_gpu_spans_by_job ON pp_gpu_spans(job_id);
CREATE INDEX IF NOT EXISTS pp_gpu_spans_by_end ON pp_gpu_spans(uuid, last_ns);
-- The spans of a GPU by start, and its longest span (one seek): a span that overlaps another
-- starts at most that long before it, so the views find the jobs one span overlaps by a range
-- of starts (colocated_spans, pp_shared_jobs), where the spans that end after it are every
-- later job of the GPU. Only GPUs' spans ('cpu' never pairs): the other queries, which do not
-- say so, keep to pp_gpu_spans_by_end. A span whose times are not both integers counts as
-- endless (9e999): the views then read the GPU's spans without that bound.
CREATE INDEX IF NOT EXISTS pp_gpu_spans_by_start ON pp_gpu_spans(uuid, first_ns) WHERE uuid <> 'cpu';
CREATE INDEX IF NOT EXISTS pp_gpu_spans_by_length ON pp_gpu_spans(
  uuid, CASE WHEN typeof(first_ns) = 'integer' AND typeof(last_ns) = 'integer' THEN last_ns - first_ns ELSE 9e999 END);
-- A database made before this table gets the spans of the events it has folded, once. (The
-- one-row subquery first: as a WHERE term, the NOT EXISTS would be tested on every event.)
INSERT OR IGNORE INTO main.pp_gpu_spans(job_id, uuid, first_ns, last_ns, events, longest_ns)
SELECT e.job_id, e.gpu_uuid, min(e.t_start_ns), max(e.t_end_ns), count(*), max(e.t_end_ns - e.t_start_ns)
  FROM (SELECT 1 WHERE NOT EXISTS (SELECT 1 FROM main.pp_meta WHERE key = 'gpu_spans')) AS once
 CROSS JOIN main.pp_events AS e
 WHERE e.folded = 1 AND e.t_start_ns >= 0 AND e.t_end_ns >= e.t_start_ns AND e.t_end_ns <= (1 << 62)
 GROUP BY e.job_id, e.gpu_uuid;
INSERT OR IGNORE INTO main.pp_meta(key, value) VALUES ('gpu_spans', 'filled by the fold step');

-- Per GPU: sample windows with ts_ms <= folded_through_ms are already in layer_state.
CREATE TABLE IF NOT EXISTS pp_fold_state(uuid TEXT PRIMARY KEY, folded_through_ms INTEGER NOT NULL);

-- Per GPU: the end of the last fetch that asked Prometheus for its samples (unix ms), so that a
-- refresh knows whether the samples its jobs need (to 60 s past their last event) were asked for.
CREATE TABLE IF NOT EXISTS pp_fetch_state(uuid TEXT PRIMARY KEY, fetched_through_ms INTEGER NOT NULL);

-- The work tables of one refresh (refresh.sql, fold.sql, retention.sql): each step fills the
-- one it needs and the next steps read it; the refresh empties them before it ends, so they are
-- empty between refreshes. They are in the database, not temporary: creating a temporary table
-- makes SQLite abort every statement of the connection that is running, the SELECT that calls
-- pp_refresh included (with 'abort due to ROLLBACK' once it reads another table).
--   pp_refresh_fetch_gpus      per GPU with unfolded events: what the fetch step asks for;
--   pp_refresh_series          each series (uuid, metric) of pp_samples and its last ts_ms;
--   pp_refresh_fold_window     per GPU, the sample windows this refresh folds: (after_ms, through_ms];
--   pp_refresh_fold_means      the overlap means of those windows, per GPU and layer;
--   pp_refresh_fold_spans      what the fold adds to pp_gpu_spans;
--   pp_refresh_retention_cuts  per GPU, what event_retention_minutes lets go.
CREATE TABLE IF NOT EXISTS pp_refresh_fetch_gpus(
  uuid TEXT PRIMARY KEY, host_name TEXT, last_end_ms INTEGER, last_sample_ms INTEGER, parent_uuid TEXT,
  gpu_instance_id INTEGER, needs_fetch INTEGER);
CREATE TABLE IF NOT EXISTS pp_refresh_series(uuid TEXT, metric TEXT, last_ms INTEGER, PRIMARY KEY (uuid, metric));
CREATE TABLE IF NOT EXISTS pp_refresh_fold_window(uuid TEXT PRIMARY KEY, after_ms INTEGER, through_ms INTEGER);
CREATE TABLE IF NOT EXISTS pp_refresh_fold_means(
  uuid TEXT, job_id TEXT, layer TEXT, forward INTEGER, metric TEXT, state BLOB, first_id INTEGER, windows INTEGER);
CREATE TABLE IF NOT EXISTS pp_refresh_fold_spans(
  job_id TEXT, uuid TEXT, first_ns INTEGER, last_ns INTEGER, events INTEGER, longest_ns INTEGER,
  PRIMARY KEY (uuid, job_id));
CREATE TABLE IF NOT EXISTS pp_refresh_retention_cuts(
  uuid TEXT PRIMARY KEY, samples_through_ms INTEGER, events_before_ns INTEGER NOT NULL);

-- The metrics pp_refresh fetches and attributes: the six of the paper's Table I with their
-- Table II column names, and what a sample of each describes:
--   window         the average over the window that ends when DCGM takes the sample
--                  (the DCGM_FI_PROF_* profiling fields);
--   driver_window  the average over the driver's own sample period, on the driver's own
--                  clock (GPU_UTIL: NVML's utilization; window_ms NULL: estimated, else fixed);
--   instant        the value at the moment DCGM takes the sample (FB_USED, a gauge).
-- Add a row to attribute another dcgm-exporter field (the views show the six).
CREATE TABLE IF NOT EXISTS pp_metrics(
  metric TEXT PRIMARY KEY, column_name TEXT NOT NULL,
  kind TEXT NOT NULL DEFAULT 'window' CHECK (kind IN ('window', 'driver_window', 'instant')),
  window_ms REAL CHECK (window_ms IS NULL OR window_ms > 0));
INSERT OR IGNORE INTO main.pp_metrics(metric, column_name, kind) VALUES
  ('DCGM_FI_DEV_GPU_UTIL', 'gpu_util', 'driver_window'), ('DCGM_FI_DEV_FB_USED', 'gpu_mem', 'instant'),
  ('DCGM_FI_PROF_DRAM_ACTIVE', 'dram_active', 'window'), ('DCGM_FI_PROF_PIPE_FP32_ACTIVE', 'fp32_active', 'window'),
  ('DCGM_FI_PROF_SM_OCCUPANCY', 'sm_occupancy', 'window'), ('DCGM_FI_PROF_SM_ACTIVE', 'sm_active', 'window');

-- One row per (job, layer, direction): what does not change with more data.
CREATE TABLE IF NOT EXISTS pp_layers(
  job_id TEXT NOT NULL, layer TEXT NOT NULL, forward INTEGER NOT NULL,
  layer_type TEXT, host_name TEXT, ip TEXT, cpu_num REAL, gpu_uuid TEXT,
  PRIMARY KEY (job_id, layer, forward));
-- The jobs whose layers ran on a GPU (the triggers below: a window that changes on it).
CREATE INDEX IF NOT EXISTS pp_layers_by_gpu ON pp_layers(gpu_uuid, job_id);

-- The result table: per (job, layer, direction, metric) a mergeable pp_mean state of the
-- overlap-weighted sample values; metric '_duration' holds the layer's call durations.
-- Refreshing folds new data in with pp_mean_merge, never recomputing from history.
CREATE TABLE IF NOT EXISTS layer_state(
  job_id TEXT NOT NULL, layer TEXT NOT NULL, forward INTEGER NOT NULL, metric TEXT NOT NULL,
  state BLOB NOT NULL,
  PRIMARY KEY (job_id, layer, forward, metric));

-- The paper's storage rule: after each refresh a layer's six means are kept as a snapshot
-- only when they differ from the last kept snapshot beyond dedup_rel_tol.
CREATE TABLE IF NOT EXISTS layer_history(
  job_id TEXT NOT NULL, layer TEXT NOT NULL, forward INTEGER NOT NULL,
  refreshed_at REAL NOT NULL, data_num INTEGER NOT NULL,
  metrics TEXT NOT NULL);                -- JSON array in pp_metrics order of column_name
CREATE INDEX IF NOT EXISTS layer_history_by_layer ON layer_history(job_id, layer, forward);

-- The results as plain tables, for any SQLite client without the extension (pandas, DBeaver,
-- Grafana's SQLite data source): REAL columns with units in their names, directions as words
-- ('forward', 'backward', 'untracked'); data_num as in layer_metrics (the paper's name: (call,
-- window) pairs, not windows). Each refresh rewrites the first three from the views
-- (sql/report.sql) for the jobs whose data changed (pp_report_pending); report_estimates is written by `precisionprobe analyze`, since the
-- estimator reads every event of a job (refreshed_at says when).
CREATE TABLE IF NOT EXISTS report_layers(
  job_id TEXT NOT NULL, layer TEXT NOT NULL, direction TEXT NOT NULL, layer_type TEXT, host_name TEXT,
  data_num INTEGER, calls INTEGER, mean_duration_ms REAL, call_seconds REAL,
  gpu_util_percent REAL, gpu_mem_mib REAL, dram_active_ratio REAL, fp32_active_ratio REAL,
  sm_occupancy_ratio REAL, sm_active_ratio REAL, resolution REAL, note TEXT, refreshed_at REAL NOT NULL,
  PRIMARY KEY (job_id, layer, direction));
CREATE TABLE IF NOT EXISTS report_layer_types(
  job_id TEXT NOT NULL, layer_type TEXT NOT NULL, direction TEXT NOT NULL, layers INTEGER,
  data_num INTEGER, calls INTEGER, mean_duration_ms REAL, call_seconds REAL,
  gpu_util_percent REAL, gpu_mem_mib REAL, dram_active_ratio REAL, fp32_active_ratio REAL,
  sm_occupancy_ratio REAL, sm_active_ratio REAL, refreshed_at REAL NOT NULL,
  PRIMARY KEY (job_id, layer_type, direction));
CREATE TABLE IF NOT EXISTS report_jobs(
  job_id TEXT NOT NULL PRIMARY KEY, parameters INTEGER, host_name TEXT, gpus INTEGER, layers INTEGER,
  gpu_seconds REAL, gpu_util_percent REAL, gpu_mem_gib REAL, gpu_mem_peak_gib REAL,
  dram_active_ratio REAL, fp32_active_ratio REAL, sm_active_ratio REAL, sm_occupancy_ratio REAL,
  shared_with TEXT, refreshed_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS report_estimates(
  job_id TEXT NOT NULL, grouping TEXT NOT NULL,       -- 'layer_type' or 'layer'
  name TEXT NOT NULL, layer_type TEXT, direction TEXT NOT NULL, metric TEXT NOT NULL, unit TEXT NOT NULL,
  estimate REAL, stderr REAL, lower90 REAL, upper90 REAL, windows INTEGER,
  identified INTEGER NOT NULL, confidence TEXT, overlap_mean REAL, refreshed_at REAL NOT NULL,
  PRIMARY KEY (job_id, grouping, name, direction, metric));

-- The jobs whose rows in the first three report tables (and whose layer_history check) the next
-- refresh redoes: those with a row changed since the last refresh in a table the report views
-- read, whoever changed it (the fold, a merge from another database, an edit). The triggers
-- below keep it, so that the last steps of a refresh cost the jobs it touched, not every job the
-- database has seen. A span that changes also marks the jobs whose spans on its GPU it overlaps,
-- before or after the change (their shared_with may change); a sample window or a metric's
-- kind that changes marks the jobs whose layers ran on the GPUs it applies to (their
-- resolution). (The triggers
-- test NOT IN rather than INSERT OR IGNORE: an upsert that fires a trigger imposes its own
-- conflict policy, ABORT, on the trigger's statements.)
CREATE TABLE IF NOT EXISTS pp_report_pending(job_id TEXT PRIMARY KEY) WITHOUT ROWID;
-- A database made before this table: every job, once.
INSERT OR IGNORE INTO main.pp_report_pending(job_id)
SELECT j.job_id
  FROM (SELECT 1 WHERE NOT EXISTS (SELECT 1 FROM main.pp_meta WHERE key = 'report_pending')) AS once
 CROSS JOIN (SELECT job_id FROM main.pp_layers UNION SELECT job_id FROM main.report_layers
             UNION SELECT job_id FROM main.report_layer_types UNION SELECT job_id FROM main.report_jobs) AS j;
INSERT OR IGNORE INTO main.pp_meta(key, value) VALUES ('report_pending', 'kept by triggers');

CREATE TRIGGER IF NOT EXISTS pp_report_state_insert AFTER INSERT ON layer_state BEGIN
  INSERT INTO pp_report_pending(job_id) SELECT new.job_id WHERE new.job_id NOT IN (SELECT job_id FROM pp_report_pending);
END;
CREATE TRIGGER IF NOT EXISTS pp_report_state_update AFTER UPDATE ON layer_state BEGIN
  INSERT INTO pp_report_pending(job_id) SELECT old.job_id WHERE old.job_id NOT IN (SELECT job_id FROM pp_report_pending);
  INSERT INTO pp_report_pending(job_id) SELECT new.job_id WHERE new.job_id NOT IN (SELECT job_id FROM pp_report_pending);
END;
CREATE TRIGGER IF NOT EXISTS pp_report_state_delete AFTER DELETE ON layer_state BEGIN
  INSERT INTO pp_report_pending(job_id) SELECT old.job_id WHERE old.job_id NOT IN (SELECT job_id FROM pp_report_pending);
END;
CREATE TRIGGER IF NOT EXISTS pp_report_layer_insert AFTER INSERT ON pp_layers BEGIN
  INSERT INTO pp_report_pending(job_id) SELECT new.job_id WHERE new.job_id NOT IN (SELECT job_id FROM pp_report_pending);
END;
CREATE TRIGGER IF NOT EXISTS pp_report_layer_update AFTER UPDATE ON pp_layers BEGIN
  INSERT INTO pp_report_pending(job_id) SELECT old.job_id WHERE old.job_id NOT IN (SELECT job_id FROM pp_report_pending);
  INSERT INTO pp_report_pending(job_id) SELECT new.job_id WHERE new.job_id NOT IN (SELECT job_id FROM pp_report_pending);
END;
CREATE TRIGGER IF NOT EXISTS pp_report_layer_delete AFTER DELETE ON pp_layers BEGIN
  INSERT INTO pp_report_pending(job_id) SELECT old.job_id WHERE old.job_id NOT IN (SELECT job_id FROM pp_report_pending);
END;
CREATE TRIGGER IF NOT EXISTS pp_report_job_insert AFTER INSERT ON pp_jobs BEGIN
  INSERT INTO pp_report_pending(job_id) SELECT new.job_id WHERE new.job_id NOT IN (SELECT job_id FROM pp_report_pending);
END;
CREATE TRIGGER IF NOT EXISTS pp_report_job_update AFTER UPDATE OF job_id, params ON pp_jobs BEGIN
  INSERT INTO pp_report_pending(job_id) SELECT old.job_id WHERE old.job_id NOT IN (SELECT job_id FROM pp_report_pending);
  INSERT INTO pp_report_pending(job_id) SELECT new.job_id WHERE new.job_id NOT IN (SELECT job_id FROM pp_report_pending);
END;
CREATE TRIGGER IF NOT EXISTS pp_report_job_delete AFTER DELETE ON pp_jobs BEGIN
  INSERT INTO pp_report_pending(job_id) SELECT old.job_id WHERE old.job_id NOT IN (SELECT job_id FROM pp_report_pending);
END;
CREATE TRIGGER IF NOT EXISTS pp_report_span_insert AFTER INSERT ON pp_gpu_spans BEGIN
  INSERT INTO pp_report_pending(job_id)
  SELECT job_id FROM pp_gpu_spans WHERE uuid = new.uuid AND last_ns >= new.first_ns AND first_ns <= new.last_ns
    AND job_id NOT IN (SELECT job_id FROM pp_report_pending);
END;
CREATE TRIGGER IF NOT EXISTS pp_report_span_update AFTER UPDATE ON pp_gpu_spans BEGIN
  INSERT INTO pp_report_pending(job_id) SELECT old.job_id WHERE old.job_id NOT IN (SELECT job_id FROM pp_report_pending);
  INSERT INTO pp_report_pending(job_id)
  SELECT job_id FROM pp_gpu_spans
   WHERE uuid = old.uuid AND last_ns >= old.first_ns AND first_ns <= old.last_ns
    AND job_id NOT IN (SELECT job_id FROM pp_report_pending);
  INSERT INTO pp_report_pending(job_id)
  SELECT job_id FROM pp_gpu_spans WHERE uuid = new.uuid AND last_ns >= new.first_ns AND first_ns <= new.last_ns
    AND job_id NOT IN (SELECT job_id FROM pp_report_pending);
END;
CREATE TRIGGER IF NOT EXISTS pp_report_span_delete AFTER DELETE ON pp_gpu_spans BEGIN
  INSERT INTO pp_report_pending(job_id) SELECT old.job_id WHERE old.job_id NOT IN (SELECT job_id FROM pp_report_pending);
  INSERT INTO pp_report_pending(job_id)
  SELECT job_id FROM pp_gpu_spans WHERE uuid = old.uuid AND last_ns >= old.first_ns AND first_ns <= old.last_ns
    AND job_id NOT IN (SELECT job_id FROM pp_report_pending);
END;
CREATE TRIGGER IF NOT EXISTS pp_report_window_insert AFTER INSERT ON pp_intervals BEGIN
  INSERT INTO pp_report_pending(job_id)
  SELECT DISTINCT job_id FROM pp_layers WHERE gpu_uuid = new.uuid AND job_id NOT IN (SELECT job_id FROM pp_report_pending);
END;
CREATE TRIGGER IF NOT EXISTS pp_report_window_update AFTER UPDATE ON pp_intervals
  WHEN old.interval_ms IS NOT new.interval_ms OR old.uuid IS NOT new.uuid OR old.metric IS NOT new.metric BEGIN
  INSERT INTO pp_report_pending(job_id)
  SELECT DISTINCT job_id FROM pp_layers WHERE gpu_uuid IN (old.uuid, new.uuid)
     AND job_id NOT IN (SELECT job_id FROM pp_report_pending);
END;
CREATE TRIGGER IF NOT EXISTS pp_report_window_delete AFTER DELETE ON pp_intervals BEGIN
  INSERT INTO pp_report_pending(job_id)
  SELECT DISTINCT job_id FROM pp_layers WHERE gpu_uuid = old.uuid AND job_id NOT IN (SELECT job_id FROM pp_report_pending);
END;
CREATE TRIGGER IF NOT EXISTS pp_report_metric_insert AFTER INSERT ON pp_metrics BEGIN
  INSERT INTO pp_report_pending(job_id)
  SELECT DISTINCT job_id FROM pp_layers WHERE job_id NOT IN (SELECT job_id FROM pp_report_pending);
END;
CREATE TRIGGER IF NOT EXISTS pp_report_metric_update AFTER UPDATE OF metric, kind ON pp_metrics BEGIN
  INSERT INTO pp_report_pending(job_id)
  SELECT DISTINCT job_id FROM pp_layers WHERE job_id NOT IN (SELECT job_id FROM pp_report_pending);
END;
CREATE TRIGGER IF NOT EXISTS pp_report_metric_delete AFTER DELETE ON pp_metrics BEGIN
  INSERT INTO pp_report_pending(job_id)
  SELECT DISTINCT job_id FROM pp_layers WHERE job_id NOT IN (SELECT job_id FROM pp_report_pending);
END;
-- A REPLACE (INSERT OR REPLACE, UPDATE OR REPLACE) deletes the row the written one would
-- duplicate, by key or by rowid, without firing its delete trigger (unless recursive_triggers
-- is on): where that row can be another job's (pp_jobs' file and line, a rowid) or span other
-- jobs' time (pp_gpu_spans), what its deletion changes is listed before it goes. (In a BEFORE
-- INSERT trigger new.rowid is -1 unless the statement gives one.)
CREATE TRIGGER IF NOT EXISTS pp_report_job_replace BEFORE INSERT ON pp_jobs BEGIN
  INSERT INTO pp_report_pending(job_id)
  SELECT job_id FROM pp_jobs WHERE source_file = new.source_file AND line = new.line
     AND job_id NOT IN (SELECT job_id FROM pp_report_pending);
END;
CREATE TRIGGER IF NOT EXISTS pp_report_job_rowid_replace BEFORE INSERT ON pp_jobs WHEN new.rowid >= 0 BEGIN
  INSERT INTO pp_report_pending(job_id)
  SELECT job_id FROM pp_jobs WHERE rowid = new.rowid AND job_id NOT IN (SELECT job_id FROM pp_report_pending);
END;
CREATE TRIGGER IF NOT EXISTS pp_report_job_replace_update BEFORE UPDATE ON pp_jobs
  WHEN new.rowid IS NOT old.rowid OR new.source_file IS NOT old.source_file OR new.line IS NOT old.line BEGIN
  INSERT INTO pp_report_pending(job_id)
  SELECT job_id FROM pp_jobs WHERE ((source_file = new.source_file AND line = new.line) OR rowid = new.rowid)
     AND job_id NOT IN (SELECT job_id FROM pp_report_pending);
END;
CREATE TRIGGER IF NOT EXISTS pp_report_span_replace BEFORE INSERT ON pp_gpu_spans BEGIN
  INSERT INTO pp_report_pending(job_id)
  SELECT o.job_id FROM pp_gpu_spans AS s JOIN pp_gpu_spans AS o ON o.uuid = s.uuid
   WHERE s.uuid = new.uuid AND s.job_id = new.job_id AND o.last_ns >= s.first_ns AND o.first_ns <= s.last_ns
     AND o.job_id NOT IN (SELECT job_id FROM pp_report_pending);
END;
CREATE TRIGGER IF NOT EXISTS pp_report_span_replace_update BEFORE UPDATE ON pp_gpu_spans
  WHEN new.uuid IS NOT old.uuid OR new.job_id IS NOT old.job_id BEGIN
  INSERT INTO pp_report_pending(job_id)
  SELECT o.job_id FROM pp_gpu_spans AS s JOIN pp_gpu_spans AS o ON o.uuid = s.uuid
   WHERE s.uuid = new.uuid AND s.job_id = new.job_id AND o.last_ns >= s.first_ns AND o.first_ns <= s.last_ns
     AND o.job_id NOT IN (SELECT job_id FROM pp_report_pending);
END;
CREATE TRIGGER IF NOT EXISTS pp_report_state_replace BEFORE INSERT ON layer_state WHEN new.rowid >= 0 BEGIN
  INSERT INTO pp_report_pending(job_id)
  SELECT job_id FROM layer_state WHERE rowid = new.rowid AND job_id NOT IN (SELECT job_id FROM pp_report_pending);
END;
CREATE TRIGGER IF NOT EXISTS pp_report_state_replace_update BEFORE UPDATE ON layer_state
  WHEN new.rowid IS NOT old.rowid OR new.job_id IS NOT old.job_id OR new.layer IS NOT old.layer
    OR new.forward IS NOT old.forward OR new.metric IS NOT old.metric BEGIN
  INSERT INTO pp_report_pending(job_id)
  SELECT job_id FROM layer_state
   WHERE (rowid = new.rowid OR (job_id = new.job_id AND layer = new.layer AND forward = new.forward AND metric = new.metric))
     AND job_id NOT IN (SELECT job_id FROM pp_report_pending);
END;
CREATE TRIGGER IF NOT EXISTS pp_report_layer_replace BEFORE INSERT ON pp_layers WHEN new.rowid >= 0 BEGIN
  INSERT INTO pp_report_pending(job_id)
  SELECT job_id FROM pp_layers WHERE rowid = new.rowid AND job_id NOT IN (SELECT job_id FROM pp_report_pending);
END;
CREATE TRIGGER IF NOT EXISTS pp_report_layer_replace_update BEFORE UPDATE ON pp_layers
  WHEN new.rowid IS NOT old.rowid OR new.job_id IS NOT old.job_id OR new.layer IS NOT old.layer
    OR new.forward IS NOT old.forward BEGIN
  INSERT INTO pp_report_pending(job_id)
  SELECT job_id FROM pp_layers
   WHERE (rowid = new.rowid OR (job_id = new.job_id AND layer = new.layer AND forward = new.forward))
     AND job_id NOT IN (SELECT job_id FROM pp_report_pending);
END;
CREATE TRIGGER IF NOT EXISTS pp_report_window_replace BEFORE INSERT ON pp_intervals WHEN new.rowid >= 0 BEGIN
  INSERT INTO pp_report_pending(job_id)
  SELECT DISTINCT l.job_id FROM pp_intervals AS i JOIN pp_layers AS l ON l.gpu_uuid = i.uuid
   WHERE i.rowid = new.rowid AND l.job_id NOT IN (SELECT job_id FROM pp_report_pending);
END;
CREATE TRIGGER IF NOT EXISTS pp_report_window_replace_update BEFORE UPDATE ON pp_intervals
  WHEN new.rowid IS NOT old.rowid OR new.uuid IS NOT old.uuid OR new.metric IS NOT old.metric BEGIN
  INSERT INTO pp_report_pending(job_id)
  SELECT DISTINCT l.job_id FROM pp_intervals AS i JOIN pp_layers AS l ON l.gpu_uuid = i.uuid
   WHERE (i.rowid = new.rowid OR (i.uuid = new.uuid AND i.metric = new.metric))
     AND l.job_id NOT IN (SELECT job_id FROM pp_report_pending);
END;
-- A span whose ends are reversed overlaps nothing, not even itself: its own job is listed too.
CREATE TRIGGER IF NOT EXISTS pp_report_span_own_insert AFTER INSERT ON pp_gpu_spans BEGIN
  INSERT INTO pp_report_pending(job_id) SELECT new.job_id WHERE new.job_id NOT IN (SELECT job_id FROM pp_report_pending);
END;
CREATE TRIGGER IF NOT EXISTS pp_report_span_own_update AFTER UPDATE ON pp_gpu_spans BEGIN
  INSERT INTO pp_report_pending(job_id) SELECT new.job_id WHERE new.job_id NOT IN (SELECT job_id FROM pp_report_pending);
END;
CREATE TRIGGER IF NOT EXISTS pp_report_metric_replace_update BEFORE UPDATE ON pp_metrics WHEN new.rowid IS NOT old.rowid BEGIN
  INSERT INTO pp_report_pending(job_id)
  SELECT DISTINCT job_id FROM pp_layers WHERE job_id NOT IN (SELECT job_id FROM pp_report_pending);
END;
