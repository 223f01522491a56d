// `npm run migrate`: applies every service's migrations to DATABASE_URL, the same command each
// service runs as `node src/main.ts migrate` (and the deploy's migration job runs per service).
import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { join } from "node:path";

const root = join(import.meta.dirname, "..");
for (const service of readdirSync(join(root, "services")).sort()) {
  const result = spawnSync(
    process.execPath,
    [join("services", service, "src", "main.ts"), "migrate"],
    {
      cwd: root,
      stdio: "inherit",
    },
  );
  if (result.status !== 0) {
    process.exit(result.status ?? 1);
  }
}
