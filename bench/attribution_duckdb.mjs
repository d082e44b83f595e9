// DuckDB's half of bench/attribution_bench.py: loads the benchmark's CSV files into tables, then
// times bench/attribution_duckdb.sql (layer_metrics by an overlap-weighted range join).
// Usage: node bench/attribution_duckdb.mjs DATA_DIR RUNS OUT_JSON [THREADS]
// Prints one JSON object (load seconds, per run query wall and CPU seconds, threads, version,
// peak RSS during the queries and over the process); writes the result rows to OUT_JSON.
import { DuckDBInstance, version } from '@duckdb/node-api';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const [dir, runs = '3', out, threads] = process.argv.slice(2);
const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8'));
const options = threads ? { threads: String(threads) } : {};
const instance = await DuckDBInstance.create(':memory:', options);
const connection = await instance.connect();
const quote = (s) => `'${s.replaceAll("'", "''")}'`;

const now = () => performance.now() / 1000;
let start = now();
await connection.run(`CREATE TABLE events AS
  SELECT job_id, layer, forward, gpu_uuid, t_start_ns, t_end_ns
    FROM read_csv(${quote(join(dir, 'events.csv'))}, header = true, columns = {
      'job_id': 'VARCHAR', 'host_name': 'VARCHAR', 'ip': 'VARCHAR', 'gpu_uuid': 'VARCHAR',
      'gpu': 'INTEGER', 'layer': 'VARCHAR', 'layer_type': 'VARCHAR', 'forward': 'INTEGER',
      't_start_ns': 'BIGINT', 't_end_ns': 'BIGINT', 'cpu_num': 'DOUBLE'})`);
await connection.run(`CREATE TABLE samples AS
  SELECT * FROM read_csv(${quote(join(dir, 'samples.csv'))}, header = true, columns = {
    'uuid': 'VARCHAR', 'metric': 'VARCHAR', 'ts_ms': 'BIGINT', 'value': 'DOUBLE'})`);
await connection.run(`CREATE TABLE intervals AS
  SELECT DISTINCT uuid, metric, ${Number(manifest.interval_ms)}::BIGINT AS interval_ms FROM samples`);
const loadSeconds = now() - start;

const bucket = (await connection.runAndReadAll('SELECT max(interval_ms) FROM intervals')).getRows()[0][0];
const here = dirname(fileURLToPath(import.meta.url));
const sql = readFileSync(join(here, 'attribution_duckdb.sql'), 'utf8').replaceAll('${BUCKET_MS}', String(bucket));

const peakMb = () => Number(/VmHWM:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))[1]) / 1024;
const loadPeak = peakMb();
writeFileSync('/proc/self/clear_refs', '5');  // VmHWM from here on: the queries
const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1e6; };
const times = [];
const cpuTimes = [];
for (let i = 0; i < Number(runs); i++) {
  start = now();
  const cpuStart = cpu();
  await connection.run(sql);
  times.push(now() - start);
  cpuTimes.push(cpu() - cpuStart);
}
const queryPeak = peakMb();
const reader = await connection.runAndReadAll(
  'SELECT * FROM result ORDER BY job_id, layer, forward');
const columns = reader.columnNames();
const rows = reader.getRows().map((r) => Object.fromEntries(
  r.map((v, i) => [columns[i], typeof v === 'bigint' ? Number(v) : v])));
writeFileSync(out, JSON.stringify(rows));

const used = (await connection.runAndReadAll("SELECT current_setting('threads')")).getRows()[0][0];
console.log(JSON.stringify({
  load_seconds: loadSeconds, query_seconds: times, query_cpu_seconds: cpuTimes, rows: rows.length,
  threads: Number(used), version: version(), query_peak_rss_mb: queryPeak,
  peak_rss_mb: Math.max(loadPeak, peakMb()),
}));
