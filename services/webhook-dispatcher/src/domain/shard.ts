/**
 * Which tenants an instance claims first: those whose hash (Postgres `hashtext`, taken in the
 * claim) falls in its bucket, of as many buckets as there are live instances.
 */
export interface Share {
  /** How many buckets the tenants are split into (the live instances). */
  count: number;
  /** This instance's bucket, 0 ≤ index < count. */
  index: number;
}

/** Every tenant: a lone instance, or one that cannot see the others. */
export const WHOLE: Share = { count: 1, index: 0 };

/**
 * The share of `self` among `members`. Every instance sorts the same member list the same way,
 * so the buckets are disjoint and cover every tenant; an instance missing from the list (its
 * beat not written yet) claims everything until it appears.
 */
export function shareOf(members: readonly string[], self: string): Share {
  const sorted = [...new Set(members)].sort();
  const index = sorted.indexOf(self);
  if (index < 0 || sorted.length === 0) {
    return WHOLE;
  }
  return { count: sorted.length, index };
}
