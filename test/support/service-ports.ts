/**
 * Ports for a whole stack started by a test (`npm start` as a user runs it), every service's
 * public and internal port. The base is random below Linux's ephemeral range (32768 and up), so
 * no outgoing connection of another test can hold one of these ports when the services bind them.
 */
export function stackPorts() {
  const base = 20_000 + Math.floor(Math.random() * 12_000);
  return {
    GATEWAY_PORT: base,
    BROKER_PORT: base + 1,
    KEYS_PORT: base + 2,
    QUOTA_LEDGER_PORT: base + 3,
    PARCELS_PORT: base + 4,
    MATCHER_PORT: base + 5,
    WEBHOOK_DISPATCHER_PORT: base + 6,
    PIPELINE_PORT: base + 7,
    GATEWAY_INTERNAL_PORT: base + 10,
    KEYS_INTERNAL_PORT: base + 11,
    QUOTA_LEDGER_INTERNAL_PORT: base + 12,
    PARCELS_INTERNAL_PORT: base + 13,
    MATCHER_INTERNAL_PORT: base + 14,
    WEBHOOK_DISPATCHER_INTERNAL_PORT: base + 15,
    PIPELINE_INTERNAL_PORT: base + 16,
  };
}

export type StackPorts = ReturnType<typeof stackPorts>;

/** The ports as `npm start` reads them from its environment, each moved on by `shift`. */
export function portEnv(ports: StackPorts, shift = 0): Record<string, string> {
  return Object.fromEntries(
    Object.entries(ports).map(([name, port]) => [name, String(port + shift)]),
  );
}

/** Every service's internal port (health, metrics and the internal API). */
export function internalPortsOf(ports: StackPorts): number[] {
  return Object.entries(ports)
    .filter(([name]) => name.endsWith("_INTERNAL_PORT"))
    .map(([, port]) => port);
}
