-- prom_samples and pp_gpu_samples read the raw samples of series: their first argument is a
-- series selector. An expression is refused before any request: Prometheus would refuse the
-- query they build from it with a message about text the user never wrote, and VictoriaMetrics
-- would run it as a subquery, whose computed points would come back as if they were samples.

-- error: prom_samples: argument 'selector' is not a series selector: 'sum(DCGM_FI_DEV_GPU_UTIL)' (prom_samples reads the raw samples of series: give a metric name and/or label matchers in braces, such as 'up' or '{__name__=~"DCGM_.*", gpu="0"}', with nothing after them; for a PromQL expression use prom_range)
SELECT count(*) FROM prom_samples('sum(DCGM_FI_DEV_GPU_UTIL)', ${T0}, ${T0} + 599);
-- error: prom_samples: argument 'selector' is not a series selector: 'rate(DCGM_FI_DEV_GPU_UTIL[1m])'
SELECT count(*) FROM prom_samples('rate(DCGM_FI_DEV_GPU_UTIL[1m])', ${T0}, ${T0} + 599);
-- error: prom_samples: argument 'selector' is not a series selector: 'DCGM_FI_DEV_GPU_UTIL[5m]'
SELECT count(*) FROM prom_samples('DCGM_FI_DEV_GPU_UTIL[5m]', ${T0}, ${T0} + 599);
-- error: prom_samples: argument 'selector' is not a series selector: 'DCGM_FI_DEV_GPU_UTIL offset 1m'
SELECT count(*) FROM prom_samples('DCGM_FI_DEV_GPU_UTIL offset 1m', ${T0}, ${T0} + 599);
-- error: prom_samples: argument 'selector' is not a series selector: '{gpu="0"} or DCGM_FI_DEV_FB_USED'
SELECT count(*) FROM prom_samples('{gpu="0"} or DCGM_FI_DEV_FB_USED', ${T0}, ${T0} + 599);
-- A comment after the selector would hide the range appended to it.
-- error: prom_samples: argument 'selector' is not a series selector: 'DCGM_FI_DEV_GPU_UTIL # the utilization'
SELECT count(*) FROM prom_samples('DCGM_FI_DEV_GPU_UTIL # the utilization', ${T0}, ${T0} + 599);
-- error: prom_samples: argument 'selector' is not a series selector: '(DCGM_FI_DEV_GPU_UTIL)'
SELECT count(*) FROM prom_samples('(DCGM_FI_DEV_GPU_UTIL)', ${T0}, ${T0} + 599);
-- error: pp_gpu_samples: argument 'selector' is not a series selector: 'max_over_time(DCGM_FI_DEV_GPU_UTIL[1m])'
SELECT count(*) FROM pp_gpu_samples('max_over_time(DCGM_FI_DEV_GPU_UTIL[1m])', ${T0}, ${T0} + 599);
