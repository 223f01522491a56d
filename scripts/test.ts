// `npm test`: lint and format check with zero warnings, the import graph's rules (no cycles),
// unused code and dependencies, strict type check of every package, then the whole vitest suite
// (unit, integration against real Postgres, Redis and the dev broker, and the cross-service
// scenarios in test/). Extra arguments go to vitest.
import { spawnSync } from "node:child_process";
import { join } from "node:path";

const root = join(import.meta.dirname, "..");
const bin = (name: string) => join(root, "node_modules", ".bin", name);

function step(title: string, command: string, args: string[]) {
  process.stdout.write(`\n\u001b[1m== ${title}\u001b[0m\n`);
  const result = spawnSync(command, args, { cwd: root, stdio: "inherit" });
  if (result.status !== 0) {
    process.stdout.write(`\n${title} failed\n`);
    process.exit(result.status ?? 1);
  }
}

const vitestArgs = process.argv.slice(2);
if (vitestArgs.length === 0) {
  step("lint and format (biome)", bin("biome"), ["check", "--error-on-warnings", "."]);
  // The import graph's rules of .dependency-cruiser.cjs: no cycles, no service importing another.
  step("import graph (dependency-cruiser)", bin("depcruise"), [
    "--config",
    ".dependency-cruiser.cjs",
    "packages",
    "services",
    "bench",
    "test",
    "scripts",
  ]);
  // knip.jsonc: no unused file, dependency or export in the workspace.
  step("unused code and dependencies (knip)", bin("knip"), ["--no-progress"]);
  // One program over every package: an order of magnitude faster than one tsc per package,
  // and imports still resolve per package, so an undeclared dependency still fails.
  step("type check (tsc, every package)", bin("tsc"), ["-p", "tsconfig.json"]);
}
step("tests (vitest)", bin("vitest"), ["run", ...vitestArgs]);
