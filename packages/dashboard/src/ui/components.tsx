import {
  type InputHTMLAttributes,
  type ReactNode,
  useCallback,
  useEffect,
  useId,
  useRef,
  useState,
} from "react";
import { ApiFailure } from "./api.ts";
import { fieldMessages, humanize, type TextFieldSpec } from "./logic.ts";

export function navigate(path: string): void {
  window.history.pushState(null, "", path);
  window.dispatchEvent(new PopStateEvent("popstate"));
}

export function usePath(): string {
  const [path, setPath] = useState(window.location.pathname);
  useEffect(() => {
    const update = () => setPath(window.location.pathname);
    window.addEventListener("popstate", update);
    return () => window.removeEventListener("popstate", update);
  }, []);
  return path;
}

export function Link(props: { to: string; children: ReactNode; current?: boolean }) {
  return (
    <a
      href={props.to}
      aria-current={props.current ? "page" : undefined}
      onClick={(event) => {
        if (event.metaKey || event.ctrlKey || event.shiftKey || event.button !== 0) {
          return;
        }
        event.preventDefault();
        navigate(props.to);
      }}
    >
      {props.children}
    </a>
  );
}

export function Page(props: { title: string; lead?: ReactNode; children: ReactNode }) {
  useEffect(() => {
    document.title = `${props.title} · Terminal House`;
  }, [props.title]);
  return (
    <section className="page" aria-labelledby="page-title">
      <header className="page-head">
        <h1 id="page-title" tabIndex={-1}>
          {props.title}
        </h1>
        {props.lead ? <p className="lead">{props.lead}</p> : null}
      </header>
      {props.children}
    </section>
  );
}

export function Card(props: { title?: string; children: ReactNode; actions?: ReactNode }) {
  return (
    <section className="card">
      {props.title || props.actions ? (
        <div className="card-head">
          {props.title ? <h2>{props.title}</h2> : <span />}
          {props.actions}
        </div>
      ) : null}
      {props.children}
    </section>
  );
}

export function Field(props: {
  label: string;
  hint?: string;
  children: (id: string, describedBy: string | undefined) => ReactNode;
}) {
  const id = useId();
  const hintId = props.hint ? `${id}-hint` : undefined;
  return (
    <div className="field">
      <label htmlFor={id}>{props.label}</label>
      {props.children(id, hintId)}
      {props.hint ? (
        <p className="hint" id={hintId}>
          {props.hint}
        </p>
      ) : null}
    </div>
  );
}

/** A labelled text input, its hint (if any) announced with it; other props go to the input. */
export function TextField(
  props: { label: string; hint?: string } & Omit<
    InputHTMLAttributes<HTMLInputElement>,
    "id" | "aria-describedby"
  >,
) {
  const { label, hint, ...input } = props;
  return (
    <Field label={label} {...(hint === undefined ? {} : { hint })}>
      {(id, describedBy) => <input id={id} aria-describedby={describedBy} {...input} />}
    </Field>
  );
}

/**
 * The text inputs of a form whose values live in one record, declared as a list: a form's fields
 * read as data, and a field shared by two forms (the just-value range) is declared once.
 */
export function TextFields<Name extends string>(props: {
  fields: readonly TextFieldSpec<Name>[];
  values: Readonly<Record<Name, string>>;
  onChange: (name: Name, value: string) => void;
}) {
  return (
    <>
      {props.fields.map((field) => (
        <TextField
          key={field.name}
          label={field.label}
          {...(field.hint === undefined ? {} : { hint: field.hint })}
          {...(field.inputMode === undefined ? {} : { inputMode: field.inputMode })}
          value={props.values[field.name]}
          onChange={(event) => props.onChange(field.name, event.target.value)}
        />
      ))}
    </>
  );
}

/** A fieldset of checkboxes over a fixed list: the selection in, the next selection out. */
export function CheckboxGroup<Option extends string>(props: {
  legend: string;
  options: readonly Option[];
  selected: readonly string[];
  onChange: (next: string[]) => void;
  /** A tooltip per option, e.g. what fires a signal. */
  describe?: (option: Option) => string;
}) {
  return (
    <fieldset className="signals-picker">
      <legend>{props.legend}</legend>
      {props.options.map((option) => (
        <label key={option} className="check" title={props.describe?.(option)}>
          <input
            type="checkbox"
            checked={props.selected.includes(option)}
            onChange={(event) =>
              props.onChange(
                event.target.checked
                  ? [...props.selected, option]
                  : props.selected.filter((each) => each !== option),
              )
            }
          />
          {humanize(option)}
        </label>
      ))}
    </fieldset>
  );
}

function UpgradePrompt(props: { detail?: string | undefined; url: string }) {
  return (
    <div className="notice upgrade" role="note">
      <p>
        <strong>Not in your plan.</strong> {props.detail}
      </p>
      <a className="button primary" href={props.url} target="_blank" rel="noopener noreferrer">
        See plans and upgrade
      </a>
    </div>
  );
}

/** An API failure as the member should read it: the API's own words, fields listed. */
export function Problem(props: { error: unknown }) {
  const { error } = props;
  if (!error) {
    return null;
  }
  if (error instanceof ApiFailure && error.code === "tier_required" && error.body?.upgrade_url) {
    return <UpgradePrompt detail={error.detail} url={error.body.upgrade_url} />;
  }
  const detail = error instanceof Error ? error.message : String(error);
  const fields = error instanceof ApiFailure ? fieldMessages(error.body) : [];
  return (
    <div className="notice error" role="alert">
      <p>{detail}</p>
      {fields.length > 0 ? (
        <ul>
          {fields.map((line) => (
            <li key={line}>{line}</li>
          ))}
        </ul>
      ) : null}
    </div>
  );
}

export function CopyButton(props: { text: string; label?: string }) {
  const [copied, setCopied] = useState(false);
  return (
    <button
      type="button"
      className="button"
      onClick={async () => {
        try {
          await navigator.clipboard.writeText(props.text);
          setCopied(true);
        } catch {
          setCopied(false);
        }
      }}
    >
      {copied ? "Copied" : (props.label ?? "Copy")}
      <span className="visually-hidden" aria-live="polite">
        {copied ? "copied to the clipboard" : ""}
      </span>
    </button>
  );
}

/** A secret shown once, with a copy button and a plain warning. */
export function SecretOnce(props: { title: string; secret: string; onDone: () => void }) {
  return (
    <div className="notice secret" role="status" data-testid="secret-once">
      <p>
        <strong>{props.title}</strong> Copy it now: it is shown only this once and cannot be
        retrieved again.
      </p>
      <div className="secret-row">
        <code className="secret-value">{props.secret}</code>
        <CopyButton text={props.secret} />
        <button type="button" className="button" onClick={props.onDone}>
          I have stored it
        </button>
      </div>
    </div>
  );
}

/**
 * The failure of the last thing the member did, to show beside it: `attempt(work)` clears it,
 * runs the work, and keeps what it threw.
 */
export function useAttempt() {
  const [error, setError] = useState<unknown>(null);
  const attempt = useCallback(async (work: () => Promise<void>) => {
    setError(null);
    try {
      await work();
    } catch (failure) {
      setError(failure);
    }
  }, []);
  return { error, setError, attempt };
}

/** Loads data for a page; loads again when `key` changes, and on `reload`. */
export function useLoad<T>(load: () => Promise<T>, key = "") {
  const current = useRef(load);
  current.current = load;
  const [state, setState] = useState<{ data?: T; error?: unknown; loading: boolean }>({
    loading: true,
  });
  const reload = useCallback(async () => {
    setState((previous) => ({ ...previous, loading: true }));
    try {
      setState({ data: await current.current(), loading: false });
    } catch (error) {
      setState({ error, loading: false });
    }
  }, []);
  // biome-ignore lint/correctness/useExhaustiveDependencies: a new key means new data to load
  useEffect(() => {
    void reload();
  }, [reload, key]);
  return { ...state, reload };
}

export function Loading() {
  return (
    <p className="muted" role="status">
      Loading…
    </p>
  );
}

export function Empty(props: { children: ReactNode }) {
  return <p className="empty">{props.children}</p>;
}

/**
 * A list as a table: one heading per column, and with `actions` a last column for the row's
 * buttons, whose heading only screen readers announce.
 */
export function DataTable(props: { columns: string[]; actions?: boolean; children: ReactNode }) {
  return (
    <table className="table">
      <thead>
        <tr>
          {props.columns.map((column) => (
            <th scope="col" key={column}>
              {column}
            </th>
          ))}
          {props.actions ? (
            <th scope="col">
              <span className="visually-hidden">Actions</span>
            </th>
          ) : null}
        </tr>
      </thead>
      <tbody>{props.children}</tbody>
    </table>
  );
}
