// Export leads as CSV (one lead-view per row) and save the file.
//   TERMINAL_HOUSE_API_KEY=th_live_... node examples/node/export-csv.ts [out.csv]
import { writeFileSync } from "node:fs";
import { createClient } from "@th/client";

const client = createClient({
  baseUrl: process.env.TERMINAL_HOUSE_URL ?? "http://127.0.0.1:8080",
});
const out = process.argv[2] ?? "leads.csv";

// Miami-Dade parcels with an absentee owner, at most 25 rows.
const { data: csv, limits } = await client.leads.exportCsv({
  county: 23,
  signals: ["absentee_owner"],
  max_rows: 25,
});
writeFileSync(out, csv);
const rows = csv.trimEnd().split("\n").length - 1;
console.log(`wrote ${rows} leads to ${out}`);
console.log(`columns: ${csv.slice(0, csv.indexOf("\n"))}`);
console.log(`quota limit ${limits.leadViewsLimit} lead-views a month`);
