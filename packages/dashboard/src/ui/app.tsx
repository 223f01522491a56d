import type { Limits } from "@th/client";
import { useEffect, useRef, useState } from "react";
import { call, refreshSession, subscribeLimits, th, whenSignedOut } from "./api.ts";
import { Link, navigate, usePath } from "./components.tsx";
import { formatNumber } from "./logic.ts";
import { BillingPage } from "./pages/billing.tsx";
import { KeysPage } from "./pages/keys.tsx";
import { LeadsPage } from "./pages/leads.tsx";
import { OverviewPage } from "./pages/overview.tsx";
import { PipelinePage } from "./pages/pipeline.tsx";
import { IntegrationsPage, PlanPage } from "./pages/plan.tsx";
import { SetPasswordPage, SignInPage } from "./pages/sign-in.tsx";
import { TeamPage } from "./pages/team.tsx";
import { WatchlistsPage } from "./pages/watchlists.tsx";
import { WebhooksPage } from "./pages/webhooks.tsx";
import { type Session, TIER_LABELS } from "./session.ts";

const NAV = [
  { to: "/overview", label: "Overview" },
  { to: "/leads", label: "Leads" },
  { to: "/watchlists", label: "Watchlists" },
  { to: "/pipeline", label: "Pipeline" },
  { to: "/webhooks", label: "Webhooks" },
  { to: "/keys", label: "API keys" },
  { to: "/team", label: "Team" },
  { to: "/plan", label: "Plan" },
  { to: "/billing", label: "Billing" },
  { to: "/integrations", label: "MCP & exports" },
];

/** Requests spent of the rolling minute; unknown when either header is absent. */
function requestsUsed(limits: Limits): number | null {
  return limits.rateLimit === null || limits.rateRemaining === null
    ? null
    : limits.rateLimit - limits.rateRemaining;
}

function LimitsBar() {
  const [limits, setLimits] = useState<Limits | null>(null);
  useEffect(() => subscribeLimits(setLimits), []);
  if (!limits) {
    return null;
  }
  return (
    <dl className="limits" aria-label="Live limits" data-testid="limits-bar">
      <div>
        <dt>Lead-views left</dt>
        <dd data-testid="lead-views-remaining">{formatNumber(limits.leadViewsRemaining)}</dd>
      </div>
      <div>
        <dt>Requests this minute</dt>
        <dd>
          {formatNumber(requestsUsed(limits))} / {formatNumber(limits.rateLimit)}
        </dd>
      </div>
    </dl>
  );
}

function Shell(props: { session: Session; onSignOut: () => void; path: string }) {
  const { session, path } = props;
  const main = useRef<HTMLElement>(null);
  // Moving between pages puts focus on the new page's heading, as a page load would.
  // biome-ignore lint/correctness/useExhaustiveDependencies: runs on every route change
  useEffect(() => {
    main.current?.querySelector<HTMLElement>("h1")?.focus();
  }, [path]);
  let page = <OverviewPage session={session} />;
  if (path === "/keys") {
    page = <KeysPage session={session} />;
  } else if (path === "/leads") {
    page = <LeadsPage />;
  } else if (path.startsWith("/pipeline")) {
    page = <PipelinePage path={path} session={session} />;
  } else if (path === "/watchlists") {
    page = <WatchlistsPage />;
  } else if (path === "/webhooks") {
    page = <WebhooksPage />;
  } else if (path === "/team") {
    page = <TeamPage session={session} />;
  } else if (path === "/plan") {
    page = <PlanPage />;
  } else if (path === "/billing") {
    page = <BillingPage session={session} />;
  } else if (path === "/integrations") {
    page = <IntegrationsPage />;
  }
  return (
    <div className="shell">
      <a className="skip" href="#main">
        Skip to content
      </a>
      <aside className="sidebar">
        <div className="brand">
          <span className="brand-mark" aria-hidden="true">
            TH
          </span>
          <span>Terminal House</span>
        </div>
        <nav aria-label="Dashboard">
          <ul>
            {NAV.map((item) => (
              <li key={item.to}>
                <Link
                  to={item.to}
                  current={
                    path === item.to ||
                    (path === "/" && item.to === "/overview") ||
                    (item.to === "/pipeline" && path.startsWith("/pipeline/"))
                  }
                >
                  {item.label}
                </Link>
              </li>
            ))}
          </ul>
        </nav>
      </aside>
      <div className="workspace">
        <header className="topbar">
          <div className="account">
            <strong>{session.tenant.company}</strong>
            <span className={`tier tier-${session.tenant.tier}`}>
              {TIER_LABELS[session.tenant.tier]}
            </span>
          </div>
          <LimitsBar />
          <div className="who">
            <span className="muted">{session.member.email}</span>
            <button type="button" className="button" onClick={props.onSignOut}>
              Sign out
            </button>
          </div>
        </header>
        <main id="main" ref={main}>
          {page}
        </main>
      </div>
    </div>
  );
}

export function App() {
  const path = usePath();
  const [session, setSession] = useState<Session | null | undefined>(undefined);

  useEffect(() => {
    whenSignedOut(() => setSession(null));
    const current = () => call(th.GET("/v1/dashboard/session"));
    current()
      .then(setSession)
      .catch(async () => {
        if (await refreshSession()) {
          setSession(await current().catch(() => null));
        } else {
          setSession(null);
        }
      });
  }, []);

  // The access cookie lives minutes; refresh it a minute before it ends while the page is open.
  useEffect(() => {
    if (!session) {
      return;
    }
    const wait = Math.max(5_000, Date.parse(session.expires_at) - Date.now() - 60_000);
    const timer = window.setTimeout(async () => {
      const next = await call(th.POST("/v1/dashboard/session/refresh")).catch(() => null);
      setSession(next);
    }, wait);
    return () => window.clearTimeout(timer);
  }, [session]);

  useEffect(() => {
    if (session === null && path !== "/sign-in" && path !== "/set-password") {
      navigate("/sign-in");
    }
    if (session && (path === "/sign-in" || path === "/")) {
      navigate("/overview");
    }
  }, [session, path]);

  if (path === "/set-password") {
    return <SetPasswordPage />;
  }
  if (session === undefined) {
    return (
      <p className="muted boot" role="status">
        Loading…
      </p>
    );
  }
  if (session === null) {
    return <SignInPage onSignedIn={setSession} />;
  }
  return (
    <Shell
      session={session}
      path={path}
      onSignOut={async () => {
        await call(th.DELETE("/v1/dashboard/session")).catch(() => undefined);
        setSession(null);
        navigate("/sign-in");
      }}
    />
  );
}
