// Completed DBOS Transact workflows per second: a durable-workflow engine's analogue of
// an agent cycle (a workflow of one step, started and run to completion, its start,
// step and end recorded in PostgreSQL).
//
// Usage: node bench.mjs --connection postgres://… [--concurrency 8] [--seconds 20]
//                       [--modules DIR]
//
// DIR holds node_modules with @dbos-inc/dbos-sdk (default: $DBOS_MODULES). The database
// should be empty: DBOS makes its system tables there at launch. CONCURRENCY loops each
// run the workflow, one after another, for SECONDS (after a one-second warm-up). It
// prints a `RESULT …` line.

import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { parseArgs } from "node:util";

import { cpuSeconds, postgresCpuSeconds } from "../cpu.mjs";

const { values: args } = parseArgs({
  options: {
    connection: { type: "string" },
    concurrency: { type: "string", default: "8" },
    seconds: { type: "string", default: "20" },
    modules: { type: "string", default: process.env.DBOS_MODULES ?? "" },
  },
});
if (!args.connection || !args.modules) {
  console.error("usage: node bench.mjs --connection postgres://… --modules DIR [--concurrency N] [--seconds T]");
  process.exit(64);
}
const concurrency = Number(args.concurrency);
const seconds = Number(args.seconds);

const require = createRequire(path.join(path.resolve(args.modules), "package.json"));
const { DBOS } = require("@dbos-inc/dbos-sdk");
// The package exports no package.json; read it from the folder.
const manifest = path.join(path.resolve(args.modules), "node_modules", "@dbos-inc", "dbos-sdk", "package.json");
const { version } = JSON.parse(readFileSync(manifest, "utf8"));

DBOS.setConfig({
  name: "agentprocess-bench",
  systemDatabaseUrl: args.connection,
  // As many connections as loops, plus DBOS's own (the server gets 20 for 8 agents).
  systemDatabasePoolSize: Math.max(10, 2 * concurrency + 4),
  logLevel: "warn",
});
const noop = DBOS.registerStep(async () => "ok", { name: "noop" });
const oneStep = DBOS.registerWorkflow(async () => noop(), { name: "one-step" });
await DBOS.launch();

let completed = 0;
let failed = 0;
let timing = false;
let stop = false;
async function loop() {
  while (!stop) {
    try {
      await oneStep();
      if (timing) completed += 1;
    } catch (error) {
      failed += 1;
      if (failed <= 3) console.error(`workflow failed: ${error}`);
    }
  }
}
const loops = Array.from({ length: concurrency }, loop);
await new Promise((resolve) => setTimeout(resolve, 1000));
timing = true;
const cpuStart = { worker: process.cpuUsage(), postgres: postgresCpuSeconds() };
const start = performance.now();
await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
timing = false;
const done = completed;
const elapsed = (performance.now() - start) / 1000;
const workerCpu = cpuSeconds(process.cpuUsage(cpuStart.worker));
const postgresCpu = postgresCpuSeconds() - cpuStart.postgres;
stop = true;
await Promise.all(loops);
await DBOS.shutdown();

const rate = done / elapsed;
const perWorkflow = (cpu) => (1000 * cpu) / Math.max(done, 1);
console.log(
  `DBOS Transact ${version}: completed ${done} one-step workflows in ${elapsed.toFixed(2)} s ` +
    `with ${concurrency} loops: ${rate.toFixed(1)} workflows/s; failed ${failed}`,
);
console.log(
  `cpu: node ${workerCpu.toFixed(2)} s (${perWorkflow(workerCpu).toFixed(3)} ms/workflow), ` +
    `postgres ${postgresCpu.toFixed(2)} s (${perWorkflow(postgresCpu).toFixed(3)} ms/workflow)`,
);
console.log(
  `RESULT dbos_workflows_per_sec=${rate.toFixed(1)} workflows=${done} failed=${failed} ` +
    `concurrency=${concurrency} seconds=${elapsed.toFixed(2)} ` +
    `cpu_worker_ms_per_workflow=${perWorkflow(workerCpu).toFixed(3)} ` +
    `cpu_postgres_ms_per_workflow=${perWorkflow(postgresCpu).toFixed(3)}`,
);
