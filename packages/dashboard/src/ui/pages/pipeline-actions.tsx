// "Add to pipeline", from a lead's row and from a watchlist's matches. Adding is a lead read: one
// lead-view per parcel not yet viewed this UTC day; a parcel already in the pipeline is free.
import { useState } from "react";
import { ApiFailure, call, th } from "../api.ts";
import { Link, Problem } from "../components.tsx";

export function AddToPipelineButton(props: { folio: string }) {
  const [added, setAdded] = useState<string | null>(null);
  const [already, setAlready] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  if (added) {
    return (
      <span className="notice inline" role="status">
        Added. <Link to={`/pipeline/item?id=${encodeURIComponent(added)}`}>Open in pipeline</Link>
      </span>
    );
  }
  if (already) {
    return (
      <span className="muted small" role="status">
        Already in the pipeline
      </span>
    );
  }
  return (
    <>
      <button
        type="button"
        className="button"
        disabled={busy}
        title="A lead read: one lead-view unless this parcel was viewed today (UTC)"
        onClick={async () => {
          setBusy(true);
          setError(null);
          try {
            const item = await call(
              th.POST("/v1/pipeline/items", { body: { folio: props.folio } }),
            );
            setAdded(item.id);
          } catch (failure) {
            if (failure instanceof ApiFailure && failure.code === "conflict") {
              setAlready(true);
            } else {
              setError(failure);
            }
          } finally {
            setBusy(false);
          }
        }}
      >
        Add to pipeline
      </button>
      <Problem error={error} />
    </>
  );
}

/** Adds a watchlist's listed matches at once, priced like a batch read, all or nothing. */
export function AddMatchesToPipeline(props: { folios: readonly string[] }) {
  const folios = [...new Set(props.folios)].slice(0, 100);
  const [outcome, setOutcome] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  return (
    <div className="form-actions">
      <button
        type="button"
        className="button"
        disabled={busy || folios.length === 0}
        title="One lead-view per parcel not in the pipeline and not viewed today; refused whole when the quota cannot cover them"
        onClick={async () => {
          setBusy(true);
          setError(null);
          try {
            const result = await call(th.POST("/v1/pipeline/items/batch", { body: { folios } }));
            setOutcome(
              `Added ${result.added.length} to the pipeline; ${result.already_in_pipeline.length} already there.`,
            );
          } catch (failure) {
            setError(failure);
          } finally {
            setBusy(false);
          }
        }}
      >
        Add these {folios.length} matches to the pipeline
      </button>
      {outcome ? (
        <span role="status" className="muted">
          {outcome} <Link to="/pipeline">Open the board</Link>
        </span>
      ) : null}
      <Problem error={error} />
    </div>
  );
}
