// CPU figures the yardsticks print, read the same way for each.

import { readdirSync, readFileSync } from "node:fs";

/** CPU seconds in a `process.cpuUsage()` reading. */
export function cpuSeconds(usage) {
  return (usage.user + usage.system) / 1e6;
}

/**
 * CPU seconds used by every process named postgres on this machine (Linux /proc; times
 * in USER_HZ = 100 ticks a second), reaped children included.
 */
export function postgresCpuSeconds() {
  let ticks = 0;
  for (const pid of readdirSync("/proc").filter((name) => /^[0-9]+$/.test(name))) {
    try {
      if (readFileSync(`/proc/${pid}/comm`, "utf8").trim() !== "postgres") continue;
      const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(")").pop().trim().split(/\s+/);
      ticks += fields.slice(11, 15).reduce((sum, field) => sum + Number(field), 0);
    } catch {
      // The process ended between listing and reading.
    }
  }
  return ticks / 100;
}
