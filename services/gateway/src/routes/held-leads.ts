import { getLead, getLeadsBatch, type Lead, type leadLookupResponseSchema } from "@th/api-schemas";
import { type InternalClient, type InternalText, parseInternalJson } from "@th/service-kit";
import type { FastifyRequest } from "fastify";
import type { z } from "zod";
import type { FillTicket, LeadDocuments } from "../domain/lead-documents.ts";
import { callAsText, foliosOfLeads } from "./forward.ts";
import { ownerTarget } from "./operation.ts";

type LeadLookup = z.infer<typeof leadLookupResponseSchema>;

/** A lead answer ready to send (its JSON text and the folios it shows), or the owner's refusal. */
export type LeadAnswer = { text: string; folios: string[] } | { refused: InternalText };

interface Source {
  parcels: InternalClient;
  documents: LeadDocuments | undefined;
}

/**
 * One lead: from the read model when it holds the folio, else from the parcels service, whose
 * answer the read model keeps when it is the lead of exactly the folio asked for (a bare county
 * parcel id resolves to a folio of its own and is never kept under the id).
 */
export async function readLead(
  source: Source,
  request: FastifyRequest,
  requested: string,
): Promise<LeadAnswer> {
  const { documents } = source;
  const held = documents?.get(requested);
  if (held !== undefined) {
    return { text: held, folios: [requested] };
  }
  const ticket = documents?.beginFill(requested);
  const tickets = ticket ? [ticket] : [];
  const upstream = await settleOnFailure(
    documents,
    tickets,
    callAsText(source.parcels, request, "GET", ownerTarget(getLead, { folio: requested })),
  );
  if (upstream.status !== 200) {
    abandonAll(documents, tickets);
    return { refused: upstream };
  }
  const folios = foliosOfLeads(upstream, (body) => [(body as Lead).folio]);
  if (ticket) {
    if (folios.length === 1 && folios[0] === requested) {
      documents?.fill(ticket, upstream.text);
    } else {
      documents?.abandon(ticket);
    }
  }
  return { text: upstream.text, folios };
}

/**
 * A batch: the leads the read model holds from it, and only the rest from the parcels service,
 * merged in the order asked, as the parcels service itself would answer them. When the rest
 * resolves bare parcel ids (whose place in the answer only the parcels service knows), the whole
 * batch is asked of it instead.
 */
export async function readLeadBatch(
  source: Source,
  request: FastifyRequest,
  asked: readonly string[],
): Promise<LeadAnswer> {
  const { documents } = source;
  const requested = [...new Set(asked)];
  const held = new Map<string, string>();
  const misses: string[] = [];
  for (const folio of requested) {
    const text = documents?.get(folio);
    if (text === undefined) {
      misses.push(folio);
    } else {
      held.set(folio, text);
    }
  }
  if (misses.length === 0) {
    return {
      text: lookupText(
        requested.map((folio) => held.get(folio) as string),
        [],
        [],
      ),
      folios: requested,
    };
  }
  const answer = await lookUp(source, request, misses);
  if ("refused" in answer) {
    return answer;
  }
  if (held.size === 0) {
    return { text: answer.upstream.text, folios: answer.folios };
  }
  if (answer.leads.size !== answer.body.leads.length) {
    // Some lead answered a bare parcel id: only the parcels service can place it.
    const whole = await lookUp(source, request, requested);
    return "refused" in whole ? whole : { text: whole.upstream.text, folios: whole.folios };
  }
  const texts: string[] = [];
  for (const folio of requested) {
    const text = held.get(folio) ?? answer.leads.get(folio);
    if (text !== undefined) {
      texts.push(text);
    }
  }
  return {
    text: lookupText(texts, answer.body.missing, answer.body.ambiguous),
    folios: [...held.keys(), ...answer.leads.keys()],
  };
}

/**
 * Asks the parcels service for `folios` and keeps each lead it answers for a folio asked as such;
 * `leads` holds the text of each of those, by folio.
 */
async function lookUp(
  source: Source,
  request: FastifyRequest,
  folios: readonly string[],
): Promise<
  | { refused: InternalText }
  | { upstream: InternalText; body: LeadLookup; leads: Map<string, string>; folios: string[] }
> {
  const { documents } = source;
  const tickets = new Map<string, FillTicket>();
  for (const folio of folios) {
    const ticket = documents?.beginFill(folio);
    if (ticket) {
      tickets.set(folio, ticket);
    }
  }
  const upstream = await settleOnFailure(
    documents,
    [...tickets.values()],
    callAsText(source.parcels, request, "POST", getLeadsBatch.internalPath, { folios }),
  );
  if (upstream.status !== 200) {
    abandonAll(documents, tickets.values());
    return { refused: upstream };
  }
  const body = parseInternalJson(upstream.text) as LeadLookup;
  const leads = new Map<string, string>();
  for (const lead of body.leads) {
    const ticket = tickets.get(lead.folio);
    if (ticket) {
      // The answer's text of this lead, byte for byte: parsed JSON keeps its members' order.
      const text = JSON.stringify(lead);
      leads.set(lead.folio, text);
      documents?.fill(ticket, text);
      tickets.delete(lead.folio);
    }
  }
  abandonAll(documents, tickets.values());
  const shown = foliosOfLeads(upstream, () => body.leads.map((lead) => lead.folio));
  return { upstream, body, leads, folios: shown };
}

/** The batch answer's JSON, as the parcels service writes it through the public schema. */
function lookupText(
  leads: readonly string[],
  missing: readonly string[],
  ambiguous: LeadLookup["ambiguous"],
): string {
  return `{"leads":[${leads.join(",")}],"missing":${JSON.stringify(missing)},"ambiguous":${JSON.stringify(ambiguous)}}`;
}

function abandonAll(documents: LeadDocuments | undefined, tickets: Iterable<FillTicket>): void {
  for (const ticket of tickets) {
    documents?.abandon(ticket);
  }
}

/** The call's answer; its tickets are given up when it fails. */
async function settleOnFailure<T>(
  documents: LeadDocuments | undefined,
  tickets: readonly FillTicket[],
  call: Promise<T>,
): Promise<T> {
  try {
    return await call;
  } catch (error) {
    abandonAll(documents, tickets);
    throw error;
  }
}
