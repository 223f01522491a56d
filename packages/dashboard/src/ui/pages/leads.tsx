import { useState } from "react";
import { call, type Schemas, th } from "../api.ts";
import {
  Card,
  CheckboxGroup,
  Empty,
  Field,
  Loading,
  Page,
  Problem,
  TextFields,
} from "../components.tsx";
import {
  EMPTY_FILTERS,
  formatDate,
  formatMoney,
  formatNumber,
  humanize,
  JUST_VALUE_FIELDS,
  type LeadFilters,
  leadQuery,
  leadSearch,
  SIGNAL_DESCRIPTIONS,
  SIGNALS,
  type TextFieldSpec,
  type TextKeys,
  USE_CLASSES,
} from "../logic.ts";
import { AddToPipelineButton } from "./pipeline-actions.tsx";

type Lead = Schemas["Lead"];
type LeadSummary = Schemas["LeadSummary"];
type SummaryPage = { leads: LeadSummary[]; next_cursor: string | null };

export function LeadRecord(props: { lead: Lead }) {
  const { lead } = props;
  const mailing = Object.values(lead.owner.mailing_address).filter(Boolean).join(", ");
  const sale = lead.sales.last_sale;
  return (
    <div className="record" data-testid="lead-record">
      <dl className="facts">
        <div>
          <dt>Situs address</dt>
          <dd>{lead.address.formatted}</dd>
        </div>
        <div>
          <dt>Owner</dt>
          <dd>{lead.owner.name}</dd>
        </div>
        <div>
          <dt>Mailing address</dt>
          <dd>{mailing || "—"}</dd>
        </div>
        <div>
          <dt>Just value</dt>
          <dd>{formatMoney(lead.valuation.just_value)}</dd>
        </div>
        <div>
          <dt>Assessed / taxable</dt>
          <dd>
            {formatMoney(lead.valuation.assessed_value)} /{" "}
            {formatMoney(lead.valuation.taxable_value)}
          </dd>
        </div>
        <div>
          <dt>Estimated equity</dt>
          <dd>
            {formatMoney(lead.valuation.est_equity)}
            {lead.valuation.equity_ratio !== null
              ? ` (${Math.round(lead.valuation.equity_ratio * 100)}%, estimate)`
              : ""}
          </dd>
        </div>
        <div>
          <dt>Land use</dt>
          <dd>
            {humanize(lead.land_use.use_class ?? "unknown")} · DOR{" "}
            {lead.land_use.dor_use_code ?? "—"}
          </dd>
        </div>
        <div>
          <dt>Building</dt>
          <dd>
            {lead.building.year_built ?? "—"} · {formatNumber(lead.building.living_area_sqft)} sq ft
            living · {formatNumber(lead.land_sqft)} sq ft land
          </dd>
        </div>
        <div>
          <dt>Last sale</dt>
          <dd>
            {sale
              ? `${String(sale.month).padStart(2, "0")}/${sale.year} for ${formatMoney(sale.price)}`
              : "—"}
          </dd>
        </div>
        <div>
          <dt>Homestead</dt>
          <dd>{lead.homestead ? "Yes" : "No"}</dd>
        </div>
        <div>
          <dt>Roll</dt>
          <dd>
            {lead.roll_year} {lead.roll_stage} · parcel {lead.parcel_id} · observed{" "}
            {formatDate(lead.observed_at)}
          </dd>
        </div>
      </dl>
      {lead.signals.length > 0 ? (
        <ul className="signals-explained">
          {lead.signals.map((signal) => (
            <li key={signal.name}>
              <strong>{humanize(signal.name)}</strong>: {signal.reason}
            </li>
          ))}
        </ul>
      ) : null}
      {lead.equity_estimate ? (
        <p className="muted small">Equity is an estimate: {lead.equity_estimate.method}</p>
      ) : null}
    </div>
  );
}

/**
 * Expanding a lead: the full record by `GET /v1/leads/{folio}`, the one read of the page that costs
 * a lead-view (none again for the same parcel the same UTC day; the API decides, not the page).
 */
export function readLead(folio: string): Promise<Lead> {
  return call(th.GET("/v1/leads/{folio}", { params: { path: { folio } } }));
}

/** Searching: summaries with no owner, address line or value, which cost nothing. */
export function searchSummaries(filters: LeadFilters, cursor?: string): Promise<SummaryPage> {
  const query = leadSearch(filters, { limit: "25", ...(cursor ? { cursor } : {}) });
  return call(th.GET("/v1/dashboard/leads", { params: { query } }));
}

export function LeadRow(props: { summary: LeadSummary }) {
  const { summary } = props;
  const [lead, setLead] = useState<Lead | null>(null);
  const [open, setOpen] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const panel = `lead-${summary.folio}`;
  return (
    <li className="lead-row" data-testid="lead-row">
      <div className="lead-summary">
        <div>
          <p className="folio">{summary.folio}</p>
          <p className="muted small">
            {[summary.city, summary.zip, summary.county.name].filter(Boolean).join(" · ")} ·{" "}
            {humanize(summary.use_class ?? "unknown use")}
          </p>
          <p className="chips">
            {summary.signals_fired.map((signal) => (
              <span key={signal} className="chip">
                {humanize(signal)}
              </span>
            ))}
          </p>
        </div>
        <button
          type="button"
          className="button"
          aria-expanded={open}
          aria-controls={panel}
          disabled={busy}
          onClick={async () => {
            if (open) {
              setOpen(false);
              return;
            }
            setBusy(true);
            setError(null);
            try {
              setLead(await readLead(summary.folio));
              setOpen(true);
            } catch (failure) {
              setError(failure);
            } finally {
              setBusy(false);
            }
          }}
        >
          {open
            ? "Hide record"
            : lead
              ? "Show full record again"
              : "Show full record · 1 lead-view"}
        </button>
      </div>
      <AddToPipelineButton folio={summary.folio} />
      <div id={panel} hidden={!open}>
        {open && lead ? <LeadRecord lead={lead} /> : null}
      </div>
      <Problem error={error} />
    </li>
  );
}

const PLACE_FIELDS = [
  {
    name: "county",
    label: "County number",
    hint: "DOR number, 11–77 (23 is Miami-Dade).",
    inputMode: "numeric",
  },
  { name: "city", label: "City" },
  { name: "zip", label: "ZIP", inputMode: "numeric" },
] as const satisfies readonly TextFieldSpec<TextKeys<LeadFilters>>[];

const VALUE_FIELDS = [
  ...JUST_VALUE_FIELDS,
  { name: "min_equity", label: "Min equity ($)", inputMode: "numeric" },
  { name: "max_equity", label: "Max equity ($)", inputMode: "numeric" },
] as const satisfies readonly TextFieldSpec<TextKeys<LeadFilters>>[];

export function LeadsPage() {
  const [filters, setFilters] = useState<LeadFilters>(EMPTY_FILTERS);
  const [page, setPage] = useState<SummaryPage | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [loading, setLoading] = useState(false);
  const setText = (name: TextKeys<LeadFilters>, value: string) =>
    setFilters({ ...filters, [name]: value });

  async function search(cursor?: string) {
    setLoading(true);
    setError(null);
    try {
      const next = await searchSummaries(filters, cursor);
      setPage(cursor && page ? { ...next, leads: [...page.leads, ...next.leads] } : next);
    } catch (failure) {
      setError(failure);
    } finally {
      setLoading(false);
    }
  }

  return (
    <Page
      title="Leads"
      lead="Searching and listing is free. Opening a lead's full record (owner, mailing address, values, sales) uses one lead-view; opening the same parcel again the same UTC day is free."
    >
      <Card title="Search">
        <form
          className="filters"
          onSubmit={(event) => {
            event.preventDefault();
            void search();
          }}
        >
          <TextFields fields={PLACE_FIELDS} values={filters} onChange={setText} />
          <Field label="Use class">
            {(id) => (
              <select
                id={id}
                value={filters.use_class}
                onChange={(event) => setText("use_class", event.target.value)}
              >
                <option value="">Any</option>
                {USE_CLASSES.map((useClass) => (
                  <option key={useClass} value={useClass}>
                    {humanize(useClass)}
                  </option>
                ))}
              </select>
            )}
          </Field>
          <TextFields fields={VALUE_FIELDS} values={filters} onChange={setText} />
          <CheckboxGroup
            legend="Signals (a lead must have all that are ticked)"
            options={SIGNALS}
            selected={filters.signals}
            onChange={(signals) => setFilters({ ...filters, signals })}
            describe={(signal) => SIGNAL_DESCRIPTIONS[signal]}
          />
          <div className="form-actions">
            <button type="submit" className="button primary">
              Search
            </button>
            <a
              className="button"
              href={`/v1/exports/leads.csv${leadQuery(filters)}`}
              download="leads.csv"
            >
              Export CSV (1 lead-view per row)
            </a>
          </div>
        </form>
      </Card>
      <Problem error={error} />
      {loading && !page ? <Loading /> : null}
      {page ? (
        <Card title={`Results (${page.leads.length}${page.next_cursor ? "+" : ""})`}>
          {page.leads.length === 0 ? (
            <Empty>No parcel matches these filters.</Empty>
          ) : (
            <ul className="lead-list">
              {page.leads.map((summary) => (
                <LeadRow key={summary.folio} summary={summary} />
              ))}
            </ul>
          )}
          {page.next_cursor ? (
            <button
              type="button"
              className="button"
              onClick={() => void search(page.next_cursor ?? undefined)}
            >
              Load more
            </button>
          ) : null}
        </Card>
      ) : null}
    </Page>
  );
}
