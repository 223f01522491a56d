import { parseLimits } from "@th/client";
import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import { ApiFailure } from "./api.ts";
import {
  CheckboxGroup,
  DataTable,
  Problem,
  SecretOnce,
  TextField,
  TextFields,
} from "./components.tsx";

const noLimits = parseLimits(new Headers());

describe("an API failure on the page", () => {
  it("a tier gate becomes an upgrade prompt with the 403's own upgrade URL", () => {
    const html = renderToStaticMarkup(
      <Problem
        error={
          new ApiFailure(
            403,
            {
              error: "tier_required",
              detail: "the Starter tier does not include the management API",
              upgrade_url: "https://terminal.house/pricing?from=starter&to=team&feature=management",
            },
            noLimits,
            null,
          )
        }
      />,
    );
    expect(html).toContain("See plans and upgrade");
    expect(html).toContain(
      'href="https://terminal.house/pricing?from=starter&amp;to=team&amp;feature=management"',
    );
  });

  it("a 400 lists every failing field as an alert", () => {
    const html = renderToStaticMarkup(
      <Problem
        error={
          new ApiFailure(
            400,
            {
              error: "invalid_request",
              detail: "invalid body",
              fields: [{ path: "body.recipe.filters.counties.0", message: "must be a DOR county" }],
            },
            noLimits,
            null,
          )
        }
      />,
    );
    expect(html).toContain('role="alert"');
    expect(html).toContain("body.recipe.filters.counties.0: must be a DOR county");
  });
});

describe("a secret shown once", () => {
  it("says so plainly and offers a copy button", () => {
    const html = renderToStaticMarkup(
      <SecretOnce title="Your new key." secret="th_live_x" onDone={() => {}} />,
    );
    expect(html).toContain("shown only this once");
    expect(html).toContain("Copy");
    expect(html).toContain("th_live_x");
  });
});

describe("a checkbox group", () => {
  it("ticks the selected options, names each in words and carries each option's description", () => {
    const html = renderToStaticMarkup(
      <CheckboxGroup
        legend="Required signals"
        options={["absentee_owner", "high_equity"]}
        selected={["high_equity"]}
        onChange={() => {}}
        describe={(option) => `what fires ${option}`}
      />,
    );
    expect(html).toContain("<legend>Required signals</legend>");
    expect(html).toContain('title="what fires absentee_owner"');
    expect(html).toMatch(/<input type="checkbox"\/>Absentee owner/);
    expect(html).toMatch(/<input type="checkbox" checked=""\/>High equity/);
  });
});

describe("a text field", () => {
  it("labels its input, announces its hint with it and passes the input's own attributes on", () => {
    const html = renderToStaticMarkup(
      <TextField
        label="Endpoint URL"
        hint="HTTPS only."
        type="url"
        required
        value="https://example.com/hook"
        onChange={() => {}}
      />,
    );
    const inputId = /<input id="([^"]+)"/.exec(html)?.[1];
    const hintId = /<p class="hint" id="([^"]+)"/.exec(html)?.[1];
    expect(inputId).toBeTruthy();
    expect(html).toContain(`<label for="${inputId}">Endpoint URL</label>`);
    expect(html).toContain(`aria-describedby="${hintId}"`);
    expect(html).toContain('type="url"');
    expect(html).toContain("required");
    expect(html).toContain('value="https://example.com/hook"');
  });

  it("without a hint, describes the input by nothing", () => {
    const html = renderToStaticMarkup(<TextField label="City" value="" onChange={() => {}} />);
    expect(html).toContain("<label");
    expect(html).not.toContain("aria-describedby");
    expect(html).not.toContain('class="hint"');
  });
});

describe("a run of text fields over one record", () => {
  const fields = [
    { name: "county", label: "County number", hint: "DOR number.", inputMode: "numeric" },
    { name: "city", label: "City" },
  ] as const;

  it("renders each field in order, labelled, with its record value, hint and input mode", () => {
    const html = renderToStaticMarkup(
      <TextFields fields={fields} values={{ county: "23", city: "Miami" }} onChange={() => {}} />,
    );
    expect(html.indexOf(">County number</label>")).toBeGreaterThan(-1);
    expect(html.indexOf(">City</label>")).toBeGreaterThan(html.indexOf(">County number</label>"));
    expect(html).toMatch(
      /<input id="[^"]+" aria-describedby="[^"]+" inputMode="numeric" value="23"\/>/,
    );
    expect(html).toMatch(/<input id="[^"]+" value="Miami"\/>/);
    expect(html).toContain("DOR number.");
  });

  it("reports an edit as the field's name and the new text", () => {
    const edits: [string, string][] = [];
    const element = TextFields({
      fields,
      values: { county: "", city: "" },
      onChange: (name, value) => edits.push([name, value]),
    });
    const inputs = (
      element.props as { children: { props: { onChange: (event: unknown) => void } }[] }
    ).children;
    inputs[1]?.props.onChange({ target: { value: "Tampa" } });
    inputs[0]?.props.onChange({ target: { value: "29" } });
    expect(edits).toEqual([
      ["city", "Tampa"],
      ["county", "29"],
    ]);
  });
});

describe("a list as a table", () => {
  it("heads each column for screen readers, the actions column by name only to them", () => {
    const html = renderToStaticMarkup(
      <DataTable columns={["Label", "Status"]} actions>
        <tr>
          <td>ci</td>
          <td>active</td>
          <td>
            <button type="button">Revoke</button>
          </td>
        </tr>
      </DataTable>,
    );
    expect(html).toContain('<th scope="col">Label</th><th scope="col">Status</th>');
    expect(html).toContain(
      '<th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead><tbody><tr><td>ci</td>',
    );
  });

  it("has no actions column unless asked", () => {
    const html = renderToStaticMarkup(
      <DataTable columns={["Folio"]}>
        <tr>
          <td>23-1</td>
        </tr>
      </DataTable>,
    );
    expect(html).not.toContain("Actions");
    expect(html.match(/<th /g)).toHaveLength(1);
  });
});
