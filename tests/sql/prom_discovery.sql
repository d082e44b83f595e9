-- Discovery: which series, hosts and GPUs exist.
SELECT count(*) = 6 * 3 FROM prom_series('{__name__=~"DCGM_FI_.*"}', ${T0}, ${T0} + 600);
SELECT count(*) = 3 FROM prom_series('{__name__=~"DCGM_FI_.*"}', ${T0}, ${T0} + 600) WHERE metric = 'DCGM_FI_DEV_GPU_UTIL';
SELECT group_concat(DISTINCT json_extract(labels, '$.UUID')) IS NOT NULL
  FROM prom_series('DCGM_FI_DEV_GPU_UTIL', ${T0}, ${T0} + 600);
SELECT count(*) = 2 FROM prom_series('DCGM_FI_DEV_GPU_UTIL{Hostname="node-a"}', ${T0}, ${T0} + 600);
SELECT (SELECT group_concat(value, ',') FROM (SELECT value FROM prom_label_values('Hostname') ORDER BY 1)) = 'node-a,node-b';
SELECT count(*) = 2 FROM prom_label_values('UUID', 'DCGM_FI_DEV_GPU_UTIL{Hostname="node-a"}');
SELECT count(*) >= 6 FROM prom_label_values('__name__') WHERE value LIKE 'DCGM_FI_%';
-- Without bounds, or with one, the series of all time: VictoriaMetrics reads a start of 0 as
-- none given, and then looks at the last day only.
SELECT count(*) = 3 FROM prom_series('DCGM_FI_DEV_GPU_UTIL');
SELECT count(*) = 3 FROM prom_series WHERE match = 'DCGM_FI_DEV_GPU_UTIL' AND "end" = ${T0} + 600;
-- A start given as 0 means the same.
SELECT count(*) = 3 FROM prom_series('DCGM_FI_DEV_GPU_UTIL', 0, ${T0} + 600);
SELECT count(*) = 3 FROM prom_series('DCGM_FI_DEV_GPU_UTIL', 0);
