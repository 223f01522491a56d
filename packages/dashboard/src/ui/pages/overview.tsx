import type { Limits } from "@th/client";
import { useEffect, useState } from "react";
import { call, subscribeLimits, th } from "../api.ts";
import { Card, Loading, Page, Problem, useLoad } from "../components.tsx";
import { dailySeries, formatDate, formatDateTime, formatNumber, trialDaysLeft } from "../logic.ts";
import { type Session, TIER_LABELS } from "../session.ts";

function DailyChart(props: { series: { day: string; count: number }[] }) {
  const max = Math.max(1, ...props.series.map((entry) => entry.count));
  const width = 640;
  const height = 140;
  const step = width / Math.max(props.series.length, 1);
  const total = props.series.reduce((sum, entry) => sum + entry.count, 0);
  if (total === 0) {
    return <p className="empty">No lead-views yet this billing period.</p>;
  }
  return (
    <figure className="chart">
      <svg
        viewBox={`0 0 ${width} ${height + 18}`}
        role="img"
        aria-label={`Lead-views per day this billing period: ${total} in ${props.series.length} days`}
      >
        {props.series.map((entry, index) => {
          const barHeight = Math.round((entry.count / max) * height);
          return (
            <g key={entry.day}>
              <rect
                x={index * step + 2}
                y={height - barHeight}
                width={Math.max(step - 4, 2)}
                height={Math.max(barHeight, entry.count > 0 ? 2 : 1)}
                className={entry.count > 0 ? "bar" : "bar empty"}
              >
                <title>{`${entry.day}: ${entry.count} lead-views`}</title>
              </rect>
              {index % 5 === 0 ? (
                <text x={index * step + 2} y={height + 14} className="axis">
                  {entry.day.slice(5)}
                </text>
              ) : null}
            </g>
          );
        })}
      </svg>
      <figcaption className="muted small">
        Lead-views per UTC day since the period began.
      </figcaption>
    </figure>
  );
}

export function OverviewPage(props: { session: Session }) {
  const account = useLoad(() => call(th.GET("/v1/account")));
  const usage = useLoad(() => call(th.GET("/v1/usage")));
  const [limits, setLimits] = useState<Limits | null>(null);
  useEffect(() => subscribeLimits(setLimits), []);
  const tenant = account.data;
  const now = new Date();
  return (
    <Page title="Overview" lead={`Welcome back, ${props.session.member.email}.`}>
      <Problem error={account.error ?? usage.error} />
      {!tenant ? (
        <Loading />
      ) : (
        <div className="grid stats">
          <Card title="Plan">
            <p className="stat">{TIER_LABELS[tenant.tier]}</p>
            <p className="muted">
              {tenant.status === "trialing"
                ? `Trial: ${trialDaysLeft(tenant.trial_ends_at, now)} days left, nothing is charged before ${formatDate(tenant.trial_ends_at)}`
                : tenant.status === "active"
                  ? "Active subscription"
                  : "Cancelled"}
            </p>
          </Card>
          <Card title="Lead-views remaining">
            <p className="stat" data-testid="overview-remaining">
              {formatNumber(limits?.leadViewsRemaining ?? usage.data?.remaining)}
            </p>
            <p className="muted">
              of {formatNumber(tenant.lead_views_per_month)} this billing month; resets{" "}
              {formatDateTime(limits?.quotaResetsAt ?? usage.data?.period_end)}
            </p>
          </Card>
          <Card title="Used this period">
            <p className="stat">{formatNumber(usage.data?.used)}</p>
            <p className="muted">
              since {formatDate(usage.data?.period_start)} (ledger, updates within seconds)
            </p>
          </Card>
          <Card title="Rate limit">
            <p className="stat">{formatNumber(limits?.rateRemaining ?? tenant.rate_per_minute)}</p>
            <p className="muted">
              requests left of {formatNumber(tenant.rate_per_minute)} per rolling minute, shared by
              every key and this dashboard
            </p>
          </Card>
        </div>
      )}
      <Card title="Daily lead-views">
        {usage.data ? (
          <DailyChart series={dailySeries(usage.data.daily, usage.data.period_start, now)} />
        ) : (
          <Loading />
        )}
      </Card>
    </Page>
  );
}
