-- A timing that no alignment writes (pp_alignment edited by hand or by another program) is an
-- error that names the stretch and the column, not windows moved by an undefined amount (the
-- rounding of an infinite or out-of-range shift), which left every read without a row.
SELECT pp_install_views() LIKE 'tables: %';
SELECT pp_config('sample_offset_ms', 0) = '0';
UPDATE pp_metrics SET kind = 'window';
SELECT events_added = 6 FROM pp_refresh('${SOURCE_DIR}/tests/data/attribution/*.jsonl', 1);
-- error: pp_fractions: pp_alignment's timing_ns of GPU ${UUID0} at from_ms 1700000000999 is Inf
UPDATE pp_alignment SET timing_ns = 1e999 WHERE uuid = '${UUID0}';
SELECT count(*) FROM pp_fractions('${UUID0}', 1);
-- error: pp_fractions: pp_alignment's timing_ns of GPU ${UUID0} at from_ms 1700000000999 is -Inf
UPDATE pp_alignment SET timing_ns = -1e999 WHERE uuid = '${UUID0}';
SELECT count(*) FROM pp_fractions('${UUID0}', 1);
-- error: pp_fractions: pp_alignment's timing_ns of GPU ${UUID0} at from_ms 1700000000999 is 1e+300
UPDATE pp_alignment SET timing_ns = 1e300 WHERE uuid = '${UUID0}';
SELECT count(*) FROM pp_fractions('${UUID0}', 1);
-- error: pp_fractions: pp_alignment's timing_ns of GPU ${UUID0} at from_ms 1700000000999 is 1.234567e+21 (a length
UPDATE pp_alignment SET timing_ns = 1.234567e21 WHERE uuid = '${UUID0}';
SELECT count(*) FROM pp_fractions('${UUID0}', 1);
-- error: pp_fractions: pp_alignment's util_timing_ns of GPU ${UUID0} at from_ms 1700000000999 is -5
UPDATE pp_alignment SET util_timing_ns = -5 WHERE uuid = '${UUID0}';
SELECT count(*) FROM pp_fractions('${UUID0}', -1);
-- error: pp_fractions: pp_alignment's window_ms of GPU ${UUID0} at from_ms 1700000000999 is Inf
UPDATE pp_alignment SET window_ms = 1e999 WHERE uuid = '${UUID0}';
SELECT count(*) FROM pp_fractions('${UUID0}', 1);
-- A stored time whose window end in ns (less the offset) a call cannot have, beyond 64 bits
-- here (from 9.2e12 ms on): an error, not an overflow.
-- error: pp_fractions: pp_alignment's from_ms of GPU ${UUID0} at from_ms 9300000000000 is 9300000000000 (with offset_ns 0, a window end outside 1970-2116)
UPDATE pp_alignment SET from_ms = 9300000000000 WHERE uuid = '${UUID0}' AND from_ms = 1700000000999;
SELECT count(*) FROM pp_fractions('${UUID0}', 1);
-- error: pp_fractions: pp_alignment's through_ms of GPU ${UUID0} at from_ms 1700000000999 is -5 (with offset_ns 0, a window end outside 1970-2116)
UPDATE pp_alignment SET through_ms = -5 WHERE uuid = '${UUID0}';
SELECT count(*) FROM pp_fractions('${UUID0}', 1);
-- error: pp_fractions: pp_alignment's from_ms of GPU ${UUID0} at from_ms 1700000000999 is 1700000000999 (with offset_ns -9200000000000000000, a window end outside 1970-2116)
UPDATE pp_alignment SET offset_ns = -9200000000000000000 WHERE uuid = '${UUID0}';
SELECT count(*) FROM pp_fractions('${UUID0}', 1);
-- A value that is not a number at all (text a hand edit left, a BLOB) is refused the same way,
-- in every column read: SQLite keeps 'abc' as text in an INTEGER or REAL column, and reading it
-- as a number gave a silent 0.
-- error: pp_fractions: pp_alignment's timing_ns of GPU ${UUID0} at from_ms 1700000000999 is 'abc' (a length of 0 to 1e15 ns, some 11 days)
UPDATE pp_alignment SET timing_ns = 'abc' WHERE uuid = '${UUID0}';
SELECT count(*) FROM pp_fractions('${UUID0}', 1);
-- error: pp_fractions: pp_alignment's timing_ns of GPU ${UUID0} at from_ms 1700000000999 is a BLOB of 2 bytes
UPDATE pp_alignment SET timing_ns = x'0102' WHERE uuid = '${UUID0}';
SELECT count(*) FROM pp_fractions('${UUID0}', 1);
-- error: pp_fractions: pp_alignment's util_timing_ns of GPU ${UUID0} at from_ms 1700000000999 is ''
UPDATE pp_alignment SET util_timing_ns = '' WHERE uuid = '${UUID0}';
SELECT count(*) FROM pp_fractions('${UUID0}', -1);
-- error: pp_fractions: pp_alignment's window_ms of GPU ${UUID0} at from_ms 1700000000999 is '5 ms'
UPDATE pp_alignment SET window_ms = '5 ms' WHERE uuid = '${UUID0}';
SELECT count(*) FROM pp_fractions('${UUID0}', 1);
-- error: pp_fractions: pp_alignment's offset_ns of GPU ${UUID0} at from_ms 1700000000999 is 'abc' (a whole number of ns)
UPDATE pp_alignment SET offset_ns = 'abc' WHERE uuid = '${UUID0}';
SELECT count(*) FROM pp_fractions('${UUID0}', 1);
-- error: pp_fractions: pp_alignment's through_ms of GPU ${UUID0} at from_ms 1700000000999 is 1.5 (a time in unix ms)
UPDATE pp_alignment SET through_ms = 1.5 WHERE uuid = '${UUID0}';
SELECT count(*) FROM pp_fractions('${UUID0}', 1);
-- error: pp_fractions: pp_alignment's from_ms of GPU ${UUID0} is 'abc' (a time in unix ms)
UPDATE pp_alignment SET from_ms = 'abc' WHERE uuid = '${UUID0}';
SELECT count(*) FROM pp_fractions('${UUID0}', 1);
-- pp_intervals' window lengths, read by every timeline, are refused the same way (its CHECK
-- (interval_ms > 0) lets text through: text sorts above every number).
-- error: pp_fractions: pp_intervals' interval_ms of GPU ${UUID0} for metric DCGM_FI_PROF_SM_ACTIVE is 'abc' (a window length of more than 0 ms
UPDATE pp_intervals SET interval_ms = 'abc' WHERE uuid = '${UUID0}' AND metric = 'DCGM_FI_PROF_SM_ACTIVE';
SELECT count(*) FROM pp_fractions('${UUID0}', 0);
-- error: pp_fractions: pp_intervals' interval_ms of GPU ${UUID0} for metric DCGM_FI_PROF_SM_ACTIVE is a BLOB of 1 byte
UPDATE pp_intervals SET interval_ms = x'01' WHERE uuid = '${UUID0}' AND metric = 'DCGM_FI_PROF_SM_ACTIVE';
SELECT count(*) FROM pp_fractions('${UUID0}', 0);
-- A window length edited by hand past what a sample can average over (a day), or no number, is
-- refused the same way, naming the table, column, GPU and metric: its windows in ns were the
-- rounding of an infinite or out-of-range length.
-- error: pp_fractions: pp_intervals' interval_ms of GPU ${UUID0} for metric DCGM_FI_PROF_SM_ACTIVE is Inf (a window length of more than 0 ms and at most 86400000, a day
UPDATE pp_intervals SET interval_ms = 1e999, source = 'user' WHERE uuid = '${UUID0}' AND metric = 'DCGM_FI_PROF_SM_ACTIVE';
SELECT count(*) FROM pp_fractions('${UUID0}', 1);
-- error: pp_fractions: pp_intervals' interval_ms of GPU ${UUID0} for metric DCGM_FI_PROF_SM_ACTIVE is 1e+300 (a window
UPDATE pp_intervals SET interval_ms = 1e300 WHERE uuid = '${UUID0}' AND metric = 'DCGM_FI_PROF_SM_ACTIVE';
SELECT count(*) FROM pp_fractions('${UUID0}', 0);
-- error: pp_estimates: pp_intervals' interval_ms of GPU ${UUID0} for metric DCGM_FI_PROF_SM_ACTIVE is 86400000.5 (a window
UPDATE pp_intervals SET interval_ms = 86400000.5 WHERE uuid = '${UUID0}' AND metric = 'DCGM_FI_PROF_SM_ACTIVE';
SELECT count(*) FROM pp_estimates('layer_type');
-- error: pp_fractions: pp_intervals' interval_ms of GPU ${UUID0} for metric DCGM_FI_PROF_SM_ACTIVE is 'soon' (a window
UPDATE pp_intervals SET interval_ms = 'soon' WHERE uuid = '${UUID0}' AND metric = 'DCGM_FI_PROF_SM_ACTIVE';
SELECT count(*) FROM pp_fractions('${UUID0}', 1);
-- A refresh refuses them before its first step reads one (the fetch's margin, the alignment).
-- error: pp_refresh: pp_intervals' interval_ms of GPU ${UUID0} for metric DCGM_FI_PROF_SM_ACTIVE is 1e+300 (a window
UPDATE pp_intervals SET interval_ms = 1e300 WHERE uuid = '${UUID0}' AND metric = 'DCGM_FI_PROF_SM_ACTIVE';
SELECT count(*) FROM pp_refresh(NULL, 1);
-- error: pp_refresh: pp_metrics' window_ms of metric DCGM_FI_PROF_DRAM_ACTIVE is Inf (a window length of more than 0 ms and at most 86400000, a day)
UPDATE pp_metrics SET window_ms = 1e999 WHERE metric = 'DCGM_FI_PROF_DRAM_ACTIVE';
SELECT count(*) FROM pp_refresh(NULL, 1);
-- The bounds of pp_metric_bounds, which users edit (a GPU's memory): a bound that is no number
-- was read as no bound (text) or as 0 (a BLOB: every estimate 0), and bounds in the wrong order
-- blamed an argument 'upper' that pp_estimates does not have.
-- error: pp_estimates: pp_metric_bounds' upper of metric DCGM_FI_DEV_FB_USED is '32 GiB' (a number from -1e150 to 1e150, or NULL: no upper bound)
UPDATE pp_metric_bounds SET upper = '32 GiB' WHERE metric = 'DCGM_FI_DEV_FB_USED';
SELECT count(*) FROM pp_estimates('layer_type');
-- error: pp_estimates: pp_metric_bounds' upper of metric DCGM_FI_PROF_SM_ACTIVE is a BLOB of 1 byte (a number from -1e150 to 1e150, or NULL: no upper bound)
UPDATE pp_metric_bounds SET upper = x'00' WHERE metric = 'DCGM_FI_PROF_SM_ACTIVE';
SELECT count(*) FROM pp_estimates('layer');
-- error: pp_estimates: pp_metric_bounds' lower of metric DCGM_FI_PROF_SM_ACTIVE is Inf (a number from -1e150 to 1e150, or NULL: no lower bound)
UPDATE pp_metric_bounds SET lower = 1e999 WHERE metric = 'DCGM_FI_PROF_SM_ACTIVE';
SELECT count(*) FROM pp_estimates('layer');
-- A bound meant as none (1e200) made every interval narrow beside the range, so every estimate
-- identified; past 1e150 the fit's squares overflow besides.
-- error: pp_estimates: pp_metric_bounds' upper of metric DCGM_FI_PROF_SM_ACTIVE is 1e+200 (a number from -1e150 to 1e150, or NULL: no upper bound)
UPDATE pp_metric_bounds SET upper = 1e200 WHERE metric = 'DCGM_FI_PROF_SM_ACTIVE';
SELECT count(*) FROM pp_estimates('layer');
-- error: pp_estimates: pp_metric_bounds' upper of metric DCGM_FI_PROF_SM_ACTIVE is 0.5 (at least its lower bound, 0.9, or NULL: no upper bound)
UPDATE pp_metric_bounds SET lower = 0.9, upper = 0.5 WHERE metric = 'DCGM_FI_PROF_SM_ACTIVE';
SELECT count(*) FROM layer_estimates;
