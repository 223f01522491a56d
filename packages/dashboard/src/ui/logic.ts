// The dashboard's logic that does not touch the DOM: parsing, formatting and the shapes the
// pages send. Kept pure so the component tests can check it without a browser.

import type { operations } from "@th/client";

// One catalogue with the validators; this entry point carries no zod into the bundle.
export {
  LEAD_SIGNAL_DESCRIPTIONS as SIGNAL_DESCRIPTIONS,
  LEAD_SIGNALS as SIGNALS,
  RECIPE_USE_CLASSES as USE_CLASSES,
} from "@th/api-schemas/catalogue";

const DAY_MS = 86_400_000;

/** The value of one cookie from `document.cookie`. */
export function readCookie(cookies: string, name: string): string | null {
  for (const part of cookies.split(";")) {
    const [key, ...rest] = part.trim().split("=");
    if (key === name) {
      return decodeURIComponent(rest.join("="));
    }
  }
  return null;
}

export function trialDaysLeft(trialEndsAt: string, now: Date): number {
  return Math.max(0, Math.ceil((Date.parse(trialEndsAt) - now.getTime()) / DAY_MS));
}

export function formatAge(days: number): string {
  if (days <= 0) {
    return "today";
  }
  if (days === 1) {
    return "1 day";
  }
  return `${days} days`;
}

/**
 * The soft reminder, on an active key the API says is due: older than 90 days (strictly; the
 * API decides, to the millisecond). Rotation is recommended, never enforced.
 */
export function rotationReminder(key: {
  age_days: number;
  revoked: boolean;
  rotation_due: boolean;
}): string | null {
  if (key.revoked || !key.rotation_due) {
    return null;
  }
  return `This key is ${key.age_days} days old. Rotate it: issue a new key, deploy it, then revoke this one.`;
}

export function formatNumber(value: number | null | undefined): string {
  return value === null || value === undefined ? "—" : value.toLocaleString("en-US");
}

export function formatMoney(value: number | null | undefined): string {
  return value === null || value === undefined
    ? "—"
    : value.toLocaleString("en-US", {
        style: "currency",
        currency: "USD",
        maximumFractionDigits: 0,
      });
}

export function formatDate(value: string | Date | null | undefined): string {
  if (!value) {
    return "—";
  }
  const date = typeof value === "string" ? new Date(value) : value;
  return date.toLocaleDateString("en-US", {
    year: "numeric",
    month: "short",
    day: "numeric",
    timeZone: "UTC",
  });
}

export function formatDateTime(value: string | Date | null | undefined): string {
  if (!value) {
    return "—";
  }
  const date = typeof value === "string" ? new Date(value) : value;
  return `${date.toISOString().slice(0, 16).replace("T", " ")} UTC`;
}

export function humanize(name: string): string {
  const text = name.replaceAll("_", " ");
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/** Every UTC day of the billing period up to today, with its count (0 when absent). */
export function dailySeries(
  daily: { day: string; lead_views: number }[],
  periodStart: string,
  today: Date,
): { day: string; count: number }[] {
  const counts = new Map(daily.map((entry) => [entry.day, entry.lead_views]));
  const series: { day: string; count: number }[] = [];
  const end = today.toISOString().slice(0, 10);
  for (
    let at = new Date(`${periodStart.slice(0, 10)}T00:00:00Z`);
    series.length < 31;
    at = new Date(at.getTime() + DAY_MS)
  ) {
    const day = at.toISOString().slice(0, 10);
    series.push({ day, count: counts.get(day) ?? 0 });
    if (day >= end) {
      break;
    }
  }
  return series;
}

/** The names of a form record's text fields: those a text input can edit. */
export type TextKeys<Form> = {
  [Key in keyof Form]: Form[Key] extends string ? Key : never;
}[keyof Form] &
  string;

/** One text input of a form whose values live in one record, by the record's field name. */
export interface TextFieldSpec<Name extends string> {
  name: Name;
  label: string;
  hint?: string;
  inputMode?: "numeric" | "decimal";
}

/** The just-value range, a filter of both the lead search and a watchlist's recipe. */
export const JUST_VALUE_FIELDS = [
  { name: "min_just_value", label: "Min just value ($)", inputMode: "numeric" },
  { name: "max_just_value", label: "Max just value ($)", inputMode: "numeric" },
] as const satisfies readonly TextFieldSpec<TextKeys<LeadFilters> & TextKeys<RecipeForm>>[];

export interface LeadFilters {
  county: string;
  city: string;
  zip: string;
  use_class: string;
  signals: string[];
  min_just_value: string;
  max_just_value: string;
  min_equity: string;
  max_equity: string;
}

export const EMPTY_FILTERS: LeadFilters = {
  county: "",
  city: "",
  zip: "",
  use_class: "",
  signals: [],
  min_just_value: "",
  max_just_value: "",
  min_equity: "",
  max_equity: "",
};

/** The lead search's query parameters, as the API declares them. */
export type LeadSearchQuery = NonNullable<operations["searchLeadSummaries"]["parameters"]["query"]>;

/** The lead search of a filter form; empty fields are left out. */
export function leadSearch(
  filters: LeadFilters,
  extra: { limit?: string; cursor?: string } = {},
): LeadSearchQuery {
  const query: Record<string, string> = {};
  for (const [name, value] of Object.entries(filters)) {
    if (Array.isArray(value)) {
      if (value.length > 0) {
        query[name] = value.join(",");
      }
    } else if (value.trim() !== "") {
      query[name] = value.trim();
    }
  }
  // The form offers only the API's use classes; the API refuses anything else by name.
  return { ...(query as LeadSearchQuery), ...extra };
}

/** The same search as a query string (the CSV export's link). */
export function leadQuery(filters: LeadFilters, extra: { limit?: string } = {}): string {
  const text = new URLSearchParams(leadSearch(filters, extra)).toString();
  return text ? `?${text}` : "";
}

export interface RecipeForm {
  counties: string;
  cities: string;
  zip_codes: string;
  use_classes: string[];
  min_just_value: string;
  max_just_value: string;
  required_signals: string[];
  min_score: string;
}

export const EMPTY_RECIPE_FORM: RecipeForm = {
  counties: "",
  cities: "",
  zip_codes: "",
  use_classes: [],
  min_just_value: "",
  max_just_value: "",
  required_signals: [],
  min_score: "",
};

const list = (text: string) =>
  text
    .split(",")
    .map((item) => item.trim())
    .filter(Boolean);

/**
 * The recipe a form describes. Values go out as typed (a county that is not a number stays a
 * string), so the API's validation messages, not the page's, say what is wrong.
 */
export function recipeFromForm(form: RecipeForm): Record<string, unknown> {
  const filters: Record<string, unknown> = {};
  const counties = list(form.counties);
  if (counties.length > 0) {
    filters.counties = counties.map((county) => (/^\d+$/.test(county) ? Number(county) : county));
  }
  if (list(form.cities).length > 0) {
    filters.cities = list(form.cities);
  }
  if (list(form.zip_codes).length > 0) {
    filters.zip_codes = list(form.zip_codes);
  }
  if (form.use_classes.length > 0) {
    filters.use_classes = form.use_classes;
  }
  const range: Record<string, number> = {};
  if (form.min_just_value.trim() !== "") {
    range.min = Number(form.min_just_value);
  }
  if (form.max_just_value.trim() !== "") {
    range.max = Number(form.max_just_value);
  }
  if (Object.keys(range).length > 0) {
    filters.just_value = range;
  }
  const recipe: Record<string, unknown> = {};
  if (Object.keys(filters).length > 0) {
    recipe.filters = filters;
  }
  if (form.required_signals.length > 0) {
    recipe.required_signals = form.required_signals;
  }
  if (form.min_score.trim() !== "") {
    recipe.min_score = Number(form.min_score);
  }
  return recipe;
}

/** The form for a recipe; parts the form cannot show are kept only in the JSON view. */
export function formFromRecipe(recipe: Record<string, unknown>): RecipeForm {
  const filters = (recipe.filters ?? {}) as Record<string, unknown>;
  const join = (value: unknown) => (Array.isArray(value) ? value.join(", ") : "");
  const justValue = (filters.just_value ?? {}) as { min?: number; max?: number };
  return {
    counties: join(filters.counties),
    cities: join(filters.cities),
    zip_codes: join(filters.zip_codes),
    use_classes: Array.isArray(filters.use_classes) ? (filters.use_classes as string[]) : [],
    min_just_value: justValue.min === undefined ? "" : String(justValue.min),
    max_just_value: justValue.max === undefined ? "" : String(justValue.max),
    required_signals: Array.isArray(recipe.required_signals)
      ? (recipe.required_signals as string[])
      : [],
    min_score: typeof recipe.min_score === "number" ? String(recipe.min_score) : "",
  };
}

/** A ready MCP client configuration; the key stays in the environment, never in the file. */
export function mcpSnippet(origin: string): string {
  return JSON.stringify(
    {
      mcpServers: {
        "terminal-house": {
          url: `${origin}/mcp`,
          // biome-ignore lint/suspicious/noTemplateCurlyInString: the client expands it, not us
          headers: { Authorization: "Bearer ${env:TERMINAL_HOUSE_API_KEY}" },
        },
      },
    },
    null,
    2,
  );
}

export function claudeDesktopSnippet(origin: string): string {
  return JSON.stringify(
    {
      mcpServers: {
        "terminal-house": {
          command: "npx",
          args: [
            "-y",
            "mcp-remote",
            `${origin}/mcp`,
            "--header",
            // biome-ignore lint/suspicious/noTemplateCurlyInString: mcp-remote expands it, not us
            "Authorization: Bearer ${TERMINAL_HOUSE_API_KEY}",
          ],
        },
      },
    },
    null,
    2,
  );
}

/** The field messages of an API 400, one line each. */
export function fieldMessages(body: unknown): string[] {
  const fields = (body as { fields?: { path: string; message: string }[] } | null)?.fields;
  return Array.isArray(fields) ? fields.map((field) => `${field.path}: ${field.message}`) : [];
}
