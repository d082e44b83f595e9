// DuckDB's half of bench/layer_events_scan.py: times read_json on the same JSON Lines file.
// Usage: node bench/layer_events_scan.mjs FILE RUNS [THREADS]; prints one JSON object.
import { DuckDBInstance, version } from '@duckdb/node-api';

const [file, runs = '3', threads] = process.argv.slice(2);
const options = threads ? { threads: String(threads) } : {};
const instance = await DuckDBInstance.create(':memory:', options);
const connection = await instance.connect();
const quoted = file.replaceAll("'", "''");
// The job header lines ({"record":"job"}) have no layer: they are not events.
const sql = `SELECT count(*), sum(t_end_ns / 1e9 - t_start_ns / 1e9)
               FROM read_json('${quoted}') WHERE layer IS NOT NULL`;

let best = Infinity;
let row;
for (let i = 0; i < Number(runs); i++) {
  const start = performance.now();
  const reader = await connection.runAndReadAll(sql);
  best = Math.min(best, (performance.now() - start) / 1000);
  row = reader.getRows()[0];
}
const used = (await connection.runAndReadAll("SELECT current_setting('threads')")).getRows()[0][0];
console.log(JSON.stringify({
  seconds: best, count: Number(row[0]), busy: Number(row[1]), threads: Number(used),
  version: version(),
}));
