// Completed graphile-worker jobs per second: the job-queue analogue of an agent cycle
// (take a job, run a no-op task, mark it complete).
//
// Usage: node bench.mjs --connection postgres://… [--concurrency 8] [--seconds 20]
//                       [--jobs 150000] [--modules DIR]
//
// DIR holds node_modules with graphile-worker@0.16.6 and pg (default: $GRAPHILE_MODULES).
// The database should be empty: graphile-worker installs its schema there, the script
// adds --jobs no-op jobs before timing, then runs a worker with --concurrency for
// --seconds and counts `job:success` events. It prints a `RESULT …` line.

import { createRequire } from "node:module";
import { EventEmitter } from "node:events";
import path from "node:path";
import { parseArgs } from "node:util";

import { cpuSeconds, postgresCpuSeconds } from "../cpu.mjs";

const { values: args } = parseArgs({
  options: {
    connection: { type: "string" },
    concurrency: { type: "string", default: "8" },
    seconds: { type: "string", default: "20" },
    jobs: { type: "string", default: "150000" },
    modules: { type: "string", default: process.env.GRAPHILE_MODULES ?? "" },
  },
});
if (!args.connection || !args.modules) {
  console.error("usage: node bench.mjs --connection postgres://… --modules DIR [--concurrency N] [--seconds T] [--jobs J]");
  process.exit(64);
}
const concurrency = Number(args.concurrency);
const seconds = Number(args.seconds);
const jobs = Number(args.jobs);
const connectionString = args.connection;

const require = createRequire(path.join(path.resolve(args.modules), "package.json"));
const { run, runMigrations, Logger } = require("graphile-worker");
const pg = require("pg");
const version = require("graphile-worker/package.json").version;

// Only warnings and errors; graphile-worker logs every job at lower levels.
const logger = new Logger(() => (level, message) => {
  if (level === "error" || level === "warning") console.error(`graphile-worker ${level}: ${message}`);
});

await runMigrations({ connectionString, logger });

const client = new pg.Client({ connectionString });
await client.connect();
const addStart = performance.now();
const batch = 10000;
for (let added = 0; added < jobs; added += batch) {
  const count = Math.min(batch, jobs - added);
  // add_jobs inserts a whole batch in one statement (add_job per row is ~1000 jobs/s).
  await client.query(
    `select count(*) from graphile_worker.add_jobs(array(
       select ('noop', '{}'::json, null, null, null, null, null, null)::graphile_worker.job_spec
       from generate_series(1, $1)))`,
    [count],
  );
}
const addSeconds = (performance.now() - addStart) / 1000;
console.log(`graphile-worker ${version}: added ${jobs} no-op jobs in ${addSeconds.toFixed(1)} s`);

let completed = 0;
let failed = 0;
const events = new EventEmitter();
events.on("job:success", () => {
  completed += 1;
});
events.on("job:error", ({ error }) => {
  failed += 1;
  if (failed <= 3) console.error(`job failed: ${error}`);
});

const runner = await run({
  connectionString,
  concurrency,
  maxPoolSize: Math.max(10, concurrency + 2),
  taskList: { noop: async () => {} },
  noHandleSignals: true,
  pollInterval: 100,
  logger,
  events,
});
const baseline = completed;
const cpuStart = { worker: process.cpuUsage(), postgres: postgresCpuSeconds() };
const start = performance.now();
await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
const done = completed - baseline;
const elapsed = (performance.now() - start) / 1000;
const workerCpu = cpuSeconds(process.cpuUsage(cpuStart.worker));
const postgresCpu = postgresCpuSeconds() - cpuStart.postgres;
const remaining = Number((await client.query("select count(*) from graphile_worker.jobs")).rows[0].count);
await runner.stop();
await client.end();

const rate = done / elapsed;
const perJob = (cpu) => (1000 * cpu) / Math.max(done, 1);
console.log(
  `cpu: worker ${workerCpu.toFixed(2)} s (${perJob(workerCpu).toFixed(3)} ms/job), ` +
    `postgres ${postgresCpu.toFixed(2)} s (${perJob(postgresCpu).toFixed(3)} ms/job)`,
);
console.log(`completed ${done} jobs in ${elapsed.toFixed(2)} s with concurrency ${concurrency}: ${rate.toFixed(1)} jobs/s`);
console.log(`failed jobs ${failed}; jobs left when timing ended ${remaining}`);
if (remaining === 0) console.log(`JOBS RAN OUT before ${seconds} s: pass a larger --jobs`);
console.log(
  `RESULT graphile_jobs_per_sec=${rate.toFixed(1)} jobs=${done} failed=${failed} ran_out=${remaining === 0} ` +
    `concurrency=${concurrency} seconds=${elapsed.toFixed(2)} ` +
    `cpu_worker_ms_per_job=${perJob(workerCpu).toFixed(3)} cpu_postgres_ms_per_job=${perJob(postgresCpu).toFixed(3)}`,
);
