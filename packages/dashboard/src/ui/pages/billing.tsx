import { useState } from "react";
import { call, th } from "../api.ts";
import {
  type Billing,
  cancelSummary,
  formatCents,
  type Invoice,
  isUpgrade,
  limitsSentence,
  resetDay,
  standingNotice,
  statusText,
  type TierPrice,
  tierChangeSummary,
} from "../billing-logic.ts";
import {
  Card,
  DataTable,
  Empty,
  Loading,
  Page,
  Problem,
  useAttempt,
  useLoad,
} from "../components.tsx";
import { formatDate, formatNumber } from "../logic.ts";
import { type Session, TIER_LABELS } from "../session.ts";

/** A change waiting for the member's confirmation. */
type Pending = { kind: "tier"; target: TierPrice } | { kind: "cancel" };

export function PlanFacts(props: { billing: Billing; now: Date }) {
  const { tenant } = props.billing;
  return (
    <dl className="facts" data-testid="billing-facts">
      <div>
        <dt>Tier</dt>
        <dd>{TIER_LABELS[tenant.tier]}</dd>
      </div>
      <div>
        <dt>Status</dt>
        <dd>{statusText(props.billing, props.now)}</dd>
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
        <dt>Concurrent webhooks</dt>
        <dd>{formatNumber(tenant.concurrent_webhooks)}</dd>
      </div>
      {tenant.status === "trialing" ? (
        <div>
          <dt>Trial ends</dt>
          <dd>{formatDate(tenant.trial_ends_at)}</dd>
        </div>
      ) : null}
      <div>
        <dt>Next charge</dt>
        <dd data-testid="next-charge">
          {tenant.status === "cancelled" ? "None" : formatDate(tenant.next_charge_at)}
        </dd>
      </div>
      <div>
        <dt>Quota resets on</dt>
        <dd>{resetDay(tenant.billing_anniversary)}</dd>
      </div>
      <div>
        <dt>Card</dt>
        <dd data-testid="card">
          {tenant.card.brand} ending {tenant.card.last4}
        </dd>
      </div>
    </dl>
  );
}

export function InvoiceRows(props: { invoices: Invoice[] | null }) {
  if (props.invoices === null) {
    return <Empty>The invoices cannot be loaded right now; try again in a moment.</Empty>;
  }
  if (props.invoices.length === 0) {
    return <Empty>No invoices yet: the first comes when the trial ends.</Empty>;
  }
  return (
    <DataTable columns={["Invoice", "Date", "Period", "Amount", "Status"]} actions>
      {props.invoices.map((invoice) => (
        <tr key={invoice.id}>
          <td>{invoice.number ?? invoice.id}</td>
          <td>{formatDate(invoice.created_at)}</td>
          <td>
            {formatDate(invoice.period_start)} – {formatDate(invoice.period_end)}
          </td>
          <td>{formatCents(invoice.amount_due_cents, invoice.currency)}</td>
          <td>
            <span className={`pill ${invoice.status === "paid" ? "on" : "off"}`}>
              {invoice.status}
            </span>
          </td>
          <td className="actions">
            {invoice.hosted_invoice_url ? (
              <a href={invoice.hosted_invoice_url} target="_blank" rel="noopener noreferrer">
                {invoice.status === "open" ? "Pay invoice" : "View invoice"}
              </a>
            ) : null}
          </td>
        </tr>
      ))}
    </DataTable>
  );
}

/** The confirmation of a change: what it does and when, and two plain choices. */
export function Confirmation(props: {
  title: string;
  lines: string[];
  confirm: string;
  keep: string;
  danger?: boolean;
  onConfirm: () => void;
  onKeep: () => void;
}) {
  return (
    <div className="notice" role="dialog" aria-modal="false" aria-labelledby="confirm-title">
      <p>
        <strong id="confirm-title">{props.title}</strong>
      </p>
      {props.lines.map((line) => (
        <p key={line}>{line}</p>
      ))}
      <div className="form-actions">
        <button
          type="button"
          className={`button ${props.danger ? "danger" : "primary"}`}
          onClick={props.onConfirm}
        >
          {props.confirm}
        </button>
        <button type="button" className="button" onClick={props.onKeep}>
          {props.keep}
        </button>
      </div>
    </div>
  );
}

function TierChoices(props: {
  billing: Billing;
  admin: boolean;
  onChoose: (target: TierPrice) => void;
}) {
  const { billing } = props;
  const closed = billing.tenant.status === "cancelled";
  return (
    <ul className="tiers">
      {billing.tiers.map((tier) => (
        <li key={tier.tier} className={tier.tier === billing.tenant.tier ? "current" : undefined}>
          <h3>
            {tier.label}{" "}
            <span className="muted">{formatCents(tier.monthly_price_cents)} a month</span>
          </h3>
          <p className="muted">{limitsSentence(tier.limits)}</p>
          {tier.tier === billing.tenant.tier ? (
            <span className="pill on">Current</span>
          ) : (
            <button
              type="button"
              className="button"
              disabled={!props.admin || closed}
              onClick={() => props.onChoose(tier)}
            >
              {isUpgrade(billing, tier.tier) ? "Upgrade" : "Downgrade"} to {tier.label}
            </button>
          )}
        </li>
      ))}
    </ul>
  );
}

function PendingChange(props: {
  billing: Billing;
  pending: Pending;
  onConfirm: () => void;
  onKeep: () => void;
}) {
  const { billing, pending } = props;
  const current = TIER_LABELS[billing.tenant.tier];
  if (pending.kind === "cancel") {
    return (
      <Confirmation
        title={
          billing.tenant.status === "trialing" ? "Cancel the trial?" : "Cancel the subscription?"
        }
        lines={cancelSummary(billing)}
        confirm="Cancel now"
        keep={`Keep ${current}`}
        danger
        onConfirm={props.onConfirm}
        onKeep={props.onKeep}
      />
    );
  }
  const verb = isUpgrade(billing, pending.target.tier) ? "Upgrade" : "Downgrade";
  return (
    <Confirmation
      title={`${verb} from ${current} to ${pending.target.label}?`}
      lines={tierChangeSummary(billing, pending.target)}
      confirm={`${verb} to ${pending.target.label}`}
      keep={`Keep ${current}`}
      onConfirm={props.onConfirm}
      onKeep={props.onKeep}
    />
  );
}

/**
 * Billing: the tier and its limits, the trial's end and the next charge, the card, the invoices
 * with the processor's pages, and upgrade, downgrade and cancel, each confirmed after the page
 * says what changes and when.
 */
export function BillingPage(props: { session: Session }) {
  const billing = useLoad(() => call(th.GET("/v1/account/billing")));
  const { error, attempt } = useAttempt();
  const [pending, setPending] = useState<Pending | null>(null);
  const [note, setNote] = useState<string | null>(null);
  const admin = props.session.member.role === "admin";
  const data = billing.data;

  async function confirm(change: Pending) {
    setPending(null);
    await attempt(async () => {
      if (change.kind === "cancel") {
        await call(th.POST("/v1/account/cancel"));
        setNote("Cancelled. Nothing more will be charged.");
      } else {
        await call(th.POST("/v1/account/tier", { body: { tier: change.target.tier } }));
        setNote(`Moved to ${change.target.label}; the new limits apply within seconds.`);
      }
      await billing.reload();
    });
  }

  const notice = data ? standingNotice(data) : null;
  return (
    <Page title="Billing" lead="Your plan, its charges and invoices, and changes to it.">
      <Problem error={billing.error ?? error} />
      {note ? (
        <p className="notice" role="status">
          {note}
        </p>
      ) : null}
      {notice ? (
        <div className="notice error" role="alert" data-testid="standing-notice">
          <p>{notice}</p>
        </div>
      ) : null}
      {!data ? (
        <Loading />
      ) : (
        <>
          <Card title="Plan">
            <PlanFacts billing={data} now={new Date()} />
          </Card>
          <Card title="Invoices">
            <InvoiceRows invoices={data.invoices} />
          </Card>
          {pending ? (
            <PendingChange
              billing={data}
              pending={pending}
              onConfirm={() => void confirm(pending)}
              onKeep={() => setPending(null)}
            />
          ) : null}
          <Card title="Change tier">
            <TierChoices
              billing={data}
              admin={admin}
              onChoose={(target) => setPending({ kind: "tier", target })}
            />
            {!admin ? <p className="muted small">Only admins change the plan.</p> : null}
          </Card>
          {admin && data.tenant.status !== "cancelled" ? (
            <Card
              title={
                data.tenant.status === "trialing" ? "Cancel the trial" : "Cancel the subscription"
              }
            >
              <button
                type="button"
                className="button danger"
                onClick={() => setPending({ kind: "cancel" })}
              >
                Cancel…
              </button>
            </Card>
          ) : null}
        </>
      )}
    </Page>
  );
}
