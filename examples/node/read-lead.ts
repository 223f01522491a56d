// Read one lead and print what is left of this month's lead-view quota.
//   TERMINAL_HOUSE_API_KEY=th_live_... node examples/node/read-lead.ts [folio]
import { createClient, QuotaExceededError } from "@th/client";

const client = createClient({
  baseUrl: process.env.TERMINAL_HOUSE_URL ?? "http://127.0.0.1:8080",
});
// The first parcel of the sample roll `npm start` loads; pass any folio instead.
const folio = process.argv[2] ?? "23-30418400000000";

try {
  const { data: lead, limits } = await client.leads.get(folio);
  console.log(`${lead.folio}  ${lead.address.formatted}`);
  console.log(`owner          ${lead.owner.name}`);
  console.log(`just value     $${lead.valuation.just_value}`);
  console.log(`signals        ${lead.signals_fired.join(", ") || "none"}`);
  console.log(
    `quota left     ${limits.leadViewsRemaining} of ${limits.leadViewsLimit} lead-views, resets ${limits.quotaResetsAt?.toISOString()}`,
  );
  console.log(`rate left      ${limits.rateRemaining} of ${limits.rateLimit} requests this minute`);
} catch (error) {
  if (error instanceof QuotaExceededError) {
    console.error(`quota spent until ${error.quota_resets_at}; upgrade: ${error.upgrade_url}`);
    process.exit(1);
  }
  throw error;
}
