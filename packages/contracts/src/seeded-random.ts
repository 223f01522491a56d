/**
 * mulberry32: a seeded generator of numbers in [0, 1), small, fast, and the same sequence for the
 * same seed on every machine, so synthetic records (the services' fixtures, the benches' rolls and
 * parcels) are the same wherever a seed is replayed. Not for anything secret.
 */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
