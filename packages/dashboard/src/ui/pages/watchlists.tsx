import { useState } from "react";
import { call, type Schemas, th } from "../api.ts";
import {
  Card,
  CheckboxGroup,
  DataTable,
  Empty,
  Field,
  Loading,
  Page,
  Problem,
  TextField,
  TextFields,
  useAttempt,
  useLoad,
} from "../components.tsx";
import {
  EMPTY_RECIPE_FORM,
  formatDateTime,
  formFromRecipe,
  humanize,
  JUST_VALUE_FIELDS,
  type RecipeForm,
  recipeFromForm,
  SIGNAL_DESCRIPTIONS,
  SIGNALS,
  type TextFieldSpec,
  type TextKeys,
  USE_CLASSES,
} from "../logic.ts";
import { AddMatchesToPipeline } from "./pipeline-actions.tsx";

export type Watchlist = Schemas["Watchlist"];
type Run = Schemas["ManualRun"];

const RECIPE_TEXT_FIELDS = [
  {
    name: "counties",
    label: "Counties",
    hint: "DOR numbers, comma-separated (23 is Miami-Dade).",
  },
  { name: "cities", label: "Cities", hint: "Comma-separated." },
  { name: "zip_codes", label: "ZIP codes", hint: "Comma-separated 5-digit ZIPs." },
  ...JUST_VALUE_FIELDS,
  {
    name: "min_score",
    label: "Minimum score",
    hint: "0 to 1; leave empty for any.",
    inputMode: "decimal",
  },
] as const satisfies readonly TextFieldSpec<TextKeys<RecipeForm>>[];

type EditorMode = "form" | "json";

function EditorTabs(props: { mode: EditorMode; switchTo: (mode: EditorMode) => void }) {
  return (
    <fieldset className="tabs">
      <legend className="visually-hidden">Recipe editor</legend>
      <button
        type="button"
        className="button"
        aria-pressed={props.mode === "form"}
        onClick={() => props.switchTo("form")}
      >
        Form
      </button>
      <button
        type="button"
        className="button"
        aria-pressed={props.mode === "json"}
        onClick={() => props.switchTo("json")}
      >
        JSON
      </button>
    </fieldset>
  );
}

/** The recipe as a form: text filters, use classes and required signals. */
function RecipeFormFields(props: { form: RecipeForm; setForm: (form: RecipeForm) => void }) {
  const { form, setForm } = props;
  return (
    <div className="filters">
      <TextFields
        fields={RECIPE_TEXT_FIELDS}
        values={form}
        onChange={(field, value) => setForm({ ...form, [field]: value })}
      />
      <CheckboxGroup
        legend="Use classes"
        options={USE_CLASSES}
        selected={form.use_classes}
        onChange={(use_classes) => setForm({ ...form, use_classes })}
      />
      <CheckboxGroup
        legend="Required signals"
        options={SIGNALS}
        selected={form.required_signals}
        onChange={(required_signals) => setForm({ ...form, required_signals })}
        describe={(signal) => SIGNAL_DESCRIPTIONS[signal]}
      />
    </div>
  );
}

/** The recipe as JSON, for the parts of the language the form does not offer. */
function RecipeJsonField(props: { json: string; setJson: (json: string) => void }) {
  return (
    <Field
      label="Recipe (JSON)"
      hint="The full recipe language: filters, weighted signals, required and excluded signals, min_score."
    >
      {(id, hint) => (
        <textarea
          id={id}
          className="code"
          rows={14}
          spellCheck={false}
          aria-describedby={hint}
          value={props.json}
          onChange={(event) => props.setJson(event.target.value)}
        />
      )}
    </Field>
  );
}

/**
 * Creates a watchlist, or saves a new recipe and name for an existing one. The recipe goes out as
 * the member wrote it (JSON included), so the API's validation, not the page's, says what is wrong.
 */
function saveWatchlist(initial: Watchlist | undefined, name: string, written: unknown) {
  const recipe = written as Schemas["Recipe"];
  return initial
    ? call(
        th.PATCH("/v1/watchlists/{id}", {
          params: { path: { id: initial.id } },
          body: { name, recipe },
        }),
      )
    : call(th.POST("/v1/watchlists", { body: { name, recipe } }));
}

export function RecipeEditor(props: {
  initial?: Watchlist;
  onSaved: (watchlist: Watchlist) => void;
  onCancel?: () => void;
}) {
  const [name, setName] = useState(props.initial?.name ?? "");
  const [form, setForm] = useState<RecipeForm>(
    props.initial
      ? formFromRecipe(props.initial.recipe as Record<string, unknown>)
      : EMPTY_RECIPE_FORM,
  );
  const [mode, setMode] = useState<EditorMode>("form");
  const [json, setJson] = useState(JSON.stringify(props.initial?.recipe ?? {}, null, 2));
  const [error, setError] = useState<unknown>(null);

  function switchTo(next: EditorMode) {
    setError(null);
    if (next === "json") {
      setJson(JSON.stringify(recipeFromForm(form), null, 2));
    } else {
      try {
        setForm(formFromRecipe(JSON.parse(json)));
      } catch {
        setError(new Error("The JSON is not valid; fix it before switching to the form."));
        return;
      }
    }
    setMode(next);
  }

  return (
    <form
      className="stack"
      onSubmit={async (event) => {
        event.preventDefault();
        setError(null);
        let recipe: unknown;
        try {
          recipe = mode === "json" ? JSON.parse(json) : recipeFromForm(form);
        } catch {
          setError(new Error("The recipe JSON is not valid JSON."));
          return;
        }
        try {
          props.onSaved(await saveWatchlist(props.initial, name, recipe));
        } catch (failure) {
          setError(failure);
        }
      }}
    >
      <TextField
        label="Name"
        required
        maxLength={120}
        value={name}
        onChange={(event) => setName(event.target.value)}
      />
      <EditorTabs mode={mode} switchTo={switchTo} />
      {mode === "form" ? (
        <RecipeFormFields form={form} setForm={setForm} />
      ) : (
        <RecipeJsonField json={json} setJson={setJson} />
      )}
      <Problem error={error} />
      <div className="form-actions">
        <button type="submit" className="button primary">
          {props.initial ? "Save recipe" : "Create watchlist"}
        </button>
        {props.onCancel ? (
          <button type="button" className="button" onClick={props.onCancel}>
            Cancel
          </button>
        ) : null}
      </div>
    </form>
  );
}

function WatchlistDetail(props: { watchlist: Watchlist; onChanged: () => void }) {
  const { watchlist } = props;
  const [editing, setEditing] = useState(false);
  const [run, setRun] = useState<Run | null>(null);
  const { error, attempt } = useAttempt();
  const path = { id: watchlist.id };
  const matches = useLoad(
    () => call(th.GET("/v1/watchlists/{id}/matches", { params: { path, query: { limit: 50 } } })),
    watchlist.id,
  );

  async function startRun() {
    await attempt(async () => {
      let current: Run = await call(th.POST("/v1/watchlists/{id}/run", { params: { path } }));
      setRun(current);
      for (
        let i = 0;
        i < 60 && (current.status === "queued" || current.status === "running");
        i++
      ) {
        await new Promise((resolve) => setTimeout(resolve, 1000));
        current = await call(
          th.GET("/v1/watchlists/{id}/runs/{run_id}", {
            params: { path: { ...path, run_id: current.id } },
          }),
        );
        setRun(current);
      }
      await matches.reload();
      props.onChanged();
    });
  }

  return (
    <Card
      title={watchlist.name}
      actions={
        <div className="form-actions">
          <button type="button" className="button" onClick={() => setEditing(!editing)}>
            {editing ? "Close editor" : "Edit recipe"}
          </button>
          <button type="button" className="button primary" onClick={() => void startRun()}>
            Run now
          </button>
          <a
            className="button"
            href={`/v1/watchlists/${encodeURIComponent(watchlist.id)}/export.csv`}
            download
            title="One lead-view per parcel not yet viewed today"
          >
            Export CSV
          </a>
        </div>
      }
    >
      <p className="muted">
        Recipe version {watchlist.recipe_version} · {watchlist.match_count} matches · last match{" "}
        {formatDateTime(watchlist.last_match_at)}
      </p>
      {editing ? (
        <RecipeEditor
          initial={watchlist}
          onSaved={() => {
            setEditing(false);
            props.onChanged();
          }}
          onCancel={() => setEditing(false)}
        />
      ) : (
        <pre className="code">{JSON.stringify(watchlist.recipe, null, 2)}</pre>
      )}
      {run ? (
        <p role="status" className="notice">
          Manual run {run.status}: {run.parcels_scanned}
          {run.parcels_total !== null ? ` of ${run.parcels_total}` : ""} parcels scanned,{" "}
          {run.matches_found} matches{run.error ? ` (${run.error})` : ""}.
        </p>
      ) : null}
      <Problem error={error ?? matches.error} />
      <h3>Matches</h3>
      {matches.data && matches.data.matches.length > 0 ? (
        <AddMatchesToPipeline folios={matches.data.matches.map((match) => match.folio)} />
      ) : null}
      {!matches.data ? (
        <Loading />
      ) : matches.data.matches.length === 0 ? (
        <Empty>No matches yet. New roll ingests and manual runs add them here.</Empty>
      ) : (
        <DataTable columns={["Folio", "Score", "Signals", "Found"]}>
          {matches.data.matches.map((match) => (
            <tr key={match.match_id}>
              <td>
                <code>{match.folio}</code>
              </td>
              <td>{match.score.toFixed(2)}</td>
              <td>{match.signals_fired.map(humanize).join(", ") || "—"}</td>
              <td>
                {formatDateTime(match.matched_at)} ({match.trigger.replace("_", " ")})
              </td>
            </tr>
          ))}
        </DataTable>
      )}
    </Card>
  );
}

export function WatchlistsPage() {
  const list = useLoad(() => call(th.GET("/v1/watchlists", { params: { query: { limit: 100 } } })));
  const [creating, setCreating] = useState(false);
  const [selected, setSelected] = useState<string | null>(null);
  const current = list.data?.data.find((each) => each.id === selected) ?? list.data?.data[0];
  return (
    <Page
      title="Watchlists"
      lead="A watchlist's recipe picks parcels out of every fresh roll ingest. Matches are listed free; webhooks deliver them as they happen."
    >
      <Problem error={list.error} />
      <div className="split">
        <Card
          title="Your watchlists"
          actions={
            <button type="button" className="button primary" onClick={() => setCreating(true)}>
              New watchlist
            </button>
          }
        >
          {!list.data ? (
            <Loading />
          ) : list.data.data.length === 0 ? (
            <Empty>No watchlists yet.</Empty>
          ) : (
            <ul className="picker">
              {list.data.data.map((watchlist) => (
                <li key={watchlist.id}>
                  <button
                    type="button"
                    aria-pressed={current?.id === watchlist.id}
                    onClick={() => {
                      setSelected(watchlist.id);
                      setCreating(false);
                    }}
                  >
                    <span>{watchlist.name}</span>
                    <span className="count">
                      {watchlist.match_count}
                      <span className="visually-hidden"> matches</span>
                    </span>
                  </button>
                </li>
              ))}
            </ul>
          )}
        </Card>
        <div>
          {creating ? (
            <Card title="New watchlist">
              <RecipeEditor
                onSaved={async (saved) => {
                  setCreating(false);
                  setSelected(saved.id);
                  await list.reload();
                }}
                onCancel={() => setCreating(false)}
              />
            </Card>
          ) : current ? (
            <WatchlistDetail
              key={current.id}
              watchlist={current}
              onChanged={() => void list.reload()}
            />
          ) : null}
        </div>
      </div>
    </Page>
  );
}
