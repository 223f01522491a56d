import { createHash } from "node:crypto";
import type { HttpApp } from "@th/service-kit";

const DOCS_STYLE = `body{font:16px/1.5 system-ui,sans-serif;max-width:72rem;margin:2rem auto;padding:0 1rem;color:#111}
table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:.4rem;text-align:left;vertical-align:top}
code{font-size:.9em}`;

/**
 * The docs page runs no script and loads nothing: only its own inline style, named by its hash,
 * applies, and no other site may frame it.
 */
export const DOCS_CONTENT_POLICY = [
  "default-src 'none'",
  `style-src 'sha256-${createHash("sha256").update(DOCS_STYLE).digest("base64")}'`,
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'none'",
].join("; ");

interface OpenApiOperation {
  summary?: string;
  operationId?: string;
  tags?: string[];
  security?: unknown[];
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);
}

/** A plain, dependency-free page of every operation, generated from the OpenAPI document. */
function renderDocsPage(document: {
  info: { title: string; version: string };
  paths: Record<string, Record<string, OpenApiOperation>>;
}): string {
  const rows = Object.entries(document.paths)
    .flatMap(([path, operations]) =>
      Object.entries(operations).map(([method, operation]) => ({ path, method, operation })),
    )
    .sort((a, b) => a.path.localeCompare(b.path) || a.method.localeCompare(b.method))
    .map(
      ({ path, method, operation }) =>
        `<tr><td><code>${method.toUpperCase()}</code></td><td><code>${escapeHtml(path)}</code></td>` +
        `<td>${escapeHtml(operation.summary ?? operation.operationId ?? "")}</td>` +
        `<td>${operation.security ? "API key" : "none"}</td></tr>`,
    )
    .join("\n");
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(document.info.title)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>${DOCS_STYLE}</style></head>
<body><h1>${escapeHtml(document.info.title)} <small>${escapeHtml(document.info.version)}</small></h1>
<p>Send your API key as <code>Authorization: Bearer th_live_…</code>. Never put a key in a URL, query string or body: such requests are refused with 401.
Every response carries <code>X-RateLimit-Limit</code>, <code>X-RateLimit-Remaining</code>, <code>X-RateLimit-Reset</code>,
<code>X-Quota-Lead-Views-Limit</code>, <code>X-Quota-Lead-Views-Remaining</code> and <code>X-Quota-Resets</code>; where no tenant or no
per-minute window applies (a 401, a public endpoint, a request refused before it was read) a figure with nothing to measure is 0 and a time is the current one.
The machine-readable document is <a href="/v1/openapi.json">/v1/openapi.json</a> (OpenAPI 3.1).</p>
<table><thead><tr><th>Method</th><th>Path</th><th>What it does</th><th>Auth</th></tr></thead><tbody>
${rows}
</tbody></table></body></html>`;
}

export function registerDocsRoutes(app: HttpApp): void {
  const publicRoute = { edge: { public: true } };
  app.get("/v1/openapi.json", { config: publicRoute, schema: { hide: true } }, async () =>
    app.swagger(),
  );
  app.get("/v1/docs", { config: publicRoute, schema: { hide: true } }, async (_request, reply) =>
    reply
      .type("text/html; charset=utf-8")
      .header("content-security-policy", DOCS_CONTENT_POLICY)
      .send(renderDocsPage(app.swagger() as Parameters<typeof renderDocsPage>[0])),
  );
}
