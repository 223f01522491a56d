// `pnpm -F @th/dashboard build`: build the dashboard now (npm start and npm test do it when needed).
import { ensureDashboardBuilt, firstLoadReport } from "./build.ts";

const result = await ensureDashboardBuilt({ force: process.argv.includes("--force") });
const report = firstLoadReport();
console.info(
  `${result.built ? "built" : "up to date"} in ${result.ms} ms; first load ${(report.jsGzipBytes / 1024).toFixed(1)} KiB JS + ${(report.cssGzipBytes / 1024).toFixed(1)} KiB CSS (gzip)`,
);
