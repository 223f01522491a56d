/**
 * The set of folios a tenant has viewed on a UTC day (`th:lv:day:<tenant>:<day>`): a read of one
 * of them costs nothing more that day. The meter writes it; pricing reads it.
 */
export function leadViewDayKey(tenantId: string, day: string): string {
  return `th:lv:day:${tenantId}:${day}`;
}
