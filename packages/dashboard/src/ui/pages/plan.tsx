import { call, th } from "../api.ts";
import { Card, CopyButton, Link, Loading, Page, Problem, useLoad } from "../components.tsx";
import {
  claudeDesktopSnippet,
  formatDate,
  formatNumber,
  mcpSnippet,
  trialDaysLeft,
} from "../logic.ts";
import { TIER_LABELS } from "../session.ts";

const TIERS = ["starter", "operator", "team", "custom"] as const;
const TIER_FACTS: Record<(typeof TIERS)[number], string> = {
  starter: "REST API",
  operator: "REST, webhooks, MCP and CSV export",
  team: "Everything in Operator, plus more seats and the key and member management API",
  custom: "Negotiated limits on top of Team",
};

/**
 * The tiers and what each includes, the current one marked. One page changes the subscription:
 * Billing, which shows each tier's price and what a change charges before it is made.
 */
export function TierList(props: { current: (typeof TIERS)[number] }) {
  return (
    <>
      <ul className="tiers">
        {TIERS.map((tier) => (
          <li key={tier} className={tier === props.current ? "current" : undefined}>
            <h3>{TIER_LABELS[tier]}</h3>
            <p className="muted">{TIER_FACTS[tier]}</p>
            {tier === props.current ? <span className="pill on">Current</span> : null}
          </li>
        ))}
      </ul>
      <p className="muted">
        Prices, tier changes and cancelling are on <Link to="/billing">Billing</Link>.
      </p>
    </>
  );
}

export function PlanPage() {
  const account = useLoad(() => call(th.GET("/v1/account")));
  const tenant = account.data;
  return (
    <Page title="Plan" lead="Your tier, its limits, and your subscription.">
      <Problem error={account.error} />
      {!tenant ? (
        <Loading />
      ) : (
        <>
          <Card title={`${TIER_LABELS[tenant.tier]} tier`}>
            <dl className="facts">
              <div>
                <dt>Status</dt>
                <dd>
                  {tenant.status === "trialing"
                    ? `Trial, ${trialDaysLeft(tenant.trial_ends_at, new Date())} days left (first charge ${formatDate(tenant.trial_ends_at)})`
                    : tenant.status === "active"
                      ? "Active"
                      : "Cancelled"}
                </dd>
              </div>
              <div>
                <dt>Lead-views per month</dt>
                <dd>{formatNumber(tenant.lead_views_per_month)}</dd>
              </div>
              <div>
                <dt>Requests per minute</dt>
                <dd>{formatNumber(tenant.rate_per_minute)}</dd>
              </div>
              <div>
                <dt>Seats</dt>
                <dd>{formatNumber(tenant.seats)}</dd>
              </div>
              <div>
                <dt>Billing anniversary</dt>
                <dd>{formatDate(tenant.billing_anniversary)}</dd>
              </div>
              <div>
                <dt>Card</dt>
                <dd>
                  {tenant.card.brand} ending {tenant.card.last4}
                </dd>
              </div>
            </dl>
          </Card>
          <Card title="Tiers">
            <TierList current={tenant.tier} />
          </Card>
        </>
      )}
    </Page>
  );
}

export function IntegrationsPage() {
  const origin = window.location.origin;
  const cursor = mcpSnippet(origin);
  const claude = claudeDesktopSnippet(origin);
  return (
    <Page
      title="MCP & exports"
      lead="Connect an assistant over the Model Context Protocol, or take a search away as CSV."
    >
      <Card
        title="MCP: Cursor and other Streamable HTTP clients"
        actions={<CopyButton text={cursor} />}
      >
        <p className="muted">
          Put an API key in the <code>TERMINAL_HOUSE_API_KEY</code> environment variable; the
          configuration refers to it, so the file holds no secret. MCP calls share your rate limit
          and meter lead-views like REST.
        </p>
        <pre className="code" data-testid="mcp-snippet">
          {cursor}
        </pre>
      </Card>
      <Card title="MCP: Claude Desktop" actions={<CopyButton text={claude} />}>
        <pre className="code">{claude}</pre>
      </Card>
      <Card title="CSV export">
        <p className="muted">
          Any lead search downloads as CSV from the Leads page. Each row is one lead-view (a parcel
          already viewed today is free), priced before the download starts. Direct links:
        </p>
        <ul className="links">
          <li>
            <a href="/v1/exports/leads.csv?signals=absentee_owner,high_equity" download>
              Absentee owners with high equity
            </a>
          </li>
          <li>
            <a href="/v1/exports/leads.csv?signals=homestead_dropped" download>
              Homestead dropped
            </a>
          </li>
          <li>
            <a href={"/v1/exports/leads.csv?use_class=residential&signals=tired_landlord"} download>
              Tired landlords, residential
            </a>
          </li>
        </ul>
      </Card>
    </Page>
  );
}
