-- prom_samples returns the stored samples with their own timestamps and exact values.
-- Fixture (tests/fixtures/dcgm_data.py): GPU g at second i since T0 has
--   GPU_UTIL = (i*7 + g*13) % 101, FB_USED = 1000 + i + 100*g,
--   DCGM_FI_PROF_* number m = ((i*37 + g*11 + m*5) % 1000) / 1000.
CREATE TEMP VIEW util1 AS
  SELECT * FROM prom_samples('DCGM_FI_DEV_GPU_UTIL{UUID="${UUID1}"}', ${T0}, ${T0} + ${SAMPLES} - 1);
SELECT count(*) = ${SAMPLES} FROM util1;
SELECT count(*) = 0 FROM util1 WHERE value <> ((CAST(ts AS INTEGER) - ${T0}) * 7 + 13) % 101;
SELECT min(ts) = ${T0} AND max(ts) = ${T0} + ${SAMPLES} - 1 FROM util1;
SELECT metric = 'DCGM_FI_DEV_GPU_UTIL' AND json_extract(labels, '$.Hostname') = 'node-a'
   AND json_extract(labels, '$.gpu') = '1' AND instr(labels, '__name__') = 0 FROM util1 LIMIT 1;
-- Both ends are inclusive, to the ms Prometheus stores: a fraction of a ms never takes in a
-- sample outside them (the range is 3 s less a ms: the samples at T0 + 1 and T0 + 2).
SELECT count(*) = 2 AND min(ts) = ${T0} + 1 AND max(ts) = ${T0} + 2
  FROM prom_samples('DCGM_FI_DEV_GPU_UTIL{UUID="${UUID1}"}', ${T0} + 0.0005, ${T0} + 2.9995);
-- A range of less than a ms between two whole ones holds no sample; an RFC3339 start with a
-- fraction of a ms rounds up too.
SELECT count(*) = 0 FROM prom_samples('DCGM_FI_DEV_GPU_UTIL{UUID="${UUID1}"}', ${T0} - 0.0004, ${T0} - 0.0001);
SELECT count(*) = 0 FROM prom_samples('DCGM_FI_DEV_GPU_UTIL{UUID="${UUID1}"}', ${T0} + 0.0004, ${T0} + 0.0006);
SELECT count(*) = 2 AND min(ts) = ${T0} + 1
  FROM prom_samples('DCGM_FI_DEV_GPU_UTIL{UUID="${UUID1}"}', strftime('%Y-%m-%dT%H:%M:%S.0005Z', ${T0}, 'unixepoch'), ${T0} + 2);
-- labels is canonical JSON: keys sorted.
SELECT labels = json_object('DCGM_FI_DRIVER_VERSION', '535.104.05', 'Hostname', 'node-a',
    'UUID', '${UUID1}', 'container', 'trainer', 'device', 'nvidia1', 'gpu', '1',
    'modelName', 'NVIDIA H100 80GB HBM3', 'namespace', 'ml', 'pci_bus_id', '00000000:18:00.0',
    'pod', 'resnext-train-0') FROM util1 LIMIT 1;

-- start and end are both inclusive.
SELECT count(*) = 3 FROM prom_samples('DCGM_FI_DEV_FB_USED{UUID="${UUID0}"}', ${T0} + 10, ${T0} + 12);
SELECT group_concat(value) = '1010.0,1011.0,1012.0'
  FROM prom_samples('DCGM_FI_DEV_FB_USED{UUID="${UUID0}"}', ${T0} + 10, ${T0} + 12);
-- RFC3339 and unix seconds name the same instants (T0 = 2023-11-14T22:13:20Z).
SELECT count(*) = 11 FROM prom_samples('DCGM_FI_DEV_FB_USED{UUID="${UUID0}"}',
    '2023-11-14T22:13:20Z', '2023-11-14T23:13:30+01:00');

-- Ratios printed as %f come back exact.
SELECT count(*) = ${SAMPLES} AND max(abs(value - ((CAST(ts AS INTEGER) - ${T0}) * 37 + 2 * 11 + 2 * 5) % 1000 / 1000.0)) < 1e-12
  FROM prom_samples('DCGM_FI_PROF_SM_ACTIVE{UUID="${UUID2}"}', ${T0}, ${T0} + ${SAMPLES});

-- Small chunks give the same rows, none twice and none missing.
SELECT pp_config('samples_chunk_seconds', 7) = '7';
SELECT count(*) = ${SAMPLES} AND count(DISTINCT ts) = ${SAMPLES} AND sum(value) =
       (SELECT sum(((value - 1) * 7 + 13) % 101) FROM generate_series(1, ${SAMPLES}))
  FROM prom_samples('DCGM_FI_DEV_GPU_UTIL{UUID="${UUID1}"}', ${T0}, ${T0} + ${SAMPLES} - 1);
SELECT pp_config('samples_chunk_seconds', 3600) = '3600';

-- All six metrics of the paper's Table I for three GPUs.
SELECT count(*) = 6 * 3 * ${SAMPLES} AND count(DISTINCT metric) = 6
  FROM prom_samples('{__name__=~"DCGM_FI_.*"}', ${T0}, ${T0} + ${SAMPLES});

-- metric constraints are pushed into the selector and give the same answer as filtering.
SELECT (SELECT count(*) FROM prom_samples('{gpu="0"}', ${T0}, ${T0} + 59) WHERE metric = 'DCGM_FI_DEV_GPU_UTIL') = 2 * 60;
SELECT (SELECT count(*) FROM prom_samples('{gpu="0"}', ${T0}, ${T0} + 59) WHERE metric REGEXP 'PROF_SM') = 2 * 2 * 60;
SELECT (SELECT count(*) FROM prom_samples('DCGM_FI_DEV_FB_USED', ${T0}, ${T0} + 59) WHERE metric = 'DCGM_FI_DEV_GPU_UTIL') = 0;
SELECT (SELECT count(*) FROM prom_samples('{gpu="0"}', ${T0}, ${T0} + 59) WHERE metric IN ('DCGM_FI_DEV_GPU_UTIL', 'DCGM_FI_DEV_FB_USED')) = 2 * 2 * 60;

-- Millisecond timestamps survive.
SELECT group_concat(printf('%.3f', ts)) = '1700000000.001,1700000000.123,1700000001.456,1700000002.999'
  FROM prom_samples('pp_test_ms', ${T0}, ${T0} + 10);

-- Special values: +Inf, -Inf, 1e-07 (VictoriaMetrics prints it 0.0000001), negative.
SELECT value = 9e999 FROM prom_samples('pp_test_special{case="pos_inf"}', ${T0}, ${T0} + 10);
SELECT value = -9e999 FROM prom_samples('pp_test_special{case="neg_inf"}', ${T0}, ${T0} + 10);
SELECT value = 1e-07 FROM prom_samples('pp_test_special{case="tiny"}', ${T0}, ${T0} + 10);
SELECT value = -2.5 FROM prom_samples('pp_test_special{case="negative"}', ${T0}, ${T0} + 10);
-- NaN is NULL. (VictoriaMetrics does not store NaN samples at all, so there it is absent.)
SELECT CASE '${SERVER}' WHEN 'victoria' THEN count(*) = 0 ELSE count(*) = 1 AND max(value) IS NULL END
  FROM prom_samples('pp_test_special{case="nan"}', ${T0}, ${T0} + 10);

-- Label values with quotes, backslashes and braces come back intact.
SELECT json_extract(labels, '$.quote') = 'say "hi"' AND json_extract(labels, '$.backslash') = 'C:\gpu'
   AND json_extract(labels, '$.brace') = '{x}'
  FROM prom_samples('pp_test_labels', ${T0}, ${T0} + 10);

-- A range with no data is empty, not an error.
SELECT count(*) = 0 FROM prom_samples('DCGM_FI_DEV_GPU_UTIL', ${T0} - 1000, ${T0} - 1);
SELECT pp_last_warnings() = '[]';

-- A gzip-compressed answer reads as the plain one (http_compression: by default a server on
-- this machine is asked for none, on asks every server for it).
CREATE TEMP TABLE plain AS SELECT * FROM prom_samples('{__name__=~"DCGM_FI_.*"}', ${T0}, ${T0} + 59);
SELECT pp_config('http_compression', 'on') = 'on';
CREATE TEMP TABLE compressed AS SELECT * FROM prom_samples('{__name__=~"DCGM_FI_.*"}', ${T0}, ${T0} + 59);
SELECT pp_config('http_compression', 'auto') = 'auto';
SELECT (SELECT count(*) FROM plain) > 1000 AND (SELECT count(*) FROM compressed) = (SELECT count(*) FROM plain)
   AND NOT EXISTS (SELECT * FROM plain EXCEPT SELECT * FROM compressed);

-- A selector may have blanks around its parts, and # comments and strings holding braces inside
-- its braces: the same series (only an expression is refused, prom_selector_errors.sql).
SELECT count(*) = 20 FROM prom_samples(' DCGM_FI_DEV_GPU_UTIL {gpu="0"} ', ${T0}, ${T0} + 9);
SELECT count(*) = 20 FROM prom_samples('{__name__="DCGM_FI_DEV_GPU_UTIL", # the first GPU of each host
  gpu="0", pod=~".*[{}#].*|.*"}', ${T0}, ${T0} + 9);
