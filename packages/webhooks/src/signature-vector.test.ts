// The signature checked against a known answer rather than against itself: a fixed secret,
// timestamp and body whose HMAC-SHA-256 was computed apart from this code (Python's hmac module),
// and the comparison proven to go through a constant-time compare for every pair.
import { timingSafeEqual } from "node:crypto";
import { afterEach, describe, expect, it, vi } from "vitest";
import { signatureHeader, signPayload, verifySignature } from "./index.ts";

vi.mock("node:crypto", async (original) => {
  const actual = await original<typeof import("node:crypto")>();
  return { ...actual, timingSafeEqual: vi.fn(actual.timingSafeEqual) };
});

afterEach(() => {
  vi.mocked(timingSafeEqual).mockClear();
});

const SECRET = "whsec_spec_vector_0123456789";
const TIMESTAMP = 1_700_000_000;
// Raw bytes, a non-ASCII name included: the body is signed as sent, UTF-8, never re-serialized.
const BODY = Buffer.from(
  '{"event_type":"watchlist.match","match":{"folio":"23-1","owner":{"name":"Peña Holdings"}}}',
  "utf8",
);
// python3 -c 'import hmac,hashlib; print(hmac.new(b"whsec_spec_vector_0123456789",
//   b"1700000000." + BODY, hashlib.sha256).hexdigest())'
const EXPECTED = "7cfb9607fdccd8a6485bcf4d30a973cacbc6ffef4165dd00a142f325448729c0";
const AT = TIMESTAMP * 1000;

describe("the signature scheme against an independent vector", () => {
  it("G2: signs t.body with HMAC-SHA-256 under the whole whsec_ secret, written as hex", () => {
    expect(signPayload(SECRET, TIMESTAMP, BODY)).toBe(EXPECTED);
    expect(signPayload(SECRET, TIMESTAMP, BODY.toString("utf8"))).toBe(EXPECTED);
    expect(signatureHeader(BODY, SECRET, TIMESTAMP)).toBe(`t=${TIMESTAMP},v1=${EXPECTED}`);
  });

  it("G2: accepts the vector's header and refuses it for a byte changed, another timestamp or another secret", () => {
    const header = `t=${TIMESTAMP},v1=${EXPECTED}`;
    expect(verifySignature(BODY, header, [SECRET], { now: AT })).toMatchObject({ ok: true });
    const changed = Buffer.from(BODY);
    changed[changed.length - 3] = 0x20;
    expect(verifySignature(changed, header, [SECRET], { now: AT }).ok).toBe(false);
    expect(
      verifySignature(BODY, `t=${TIMESTAMP + 1},v1=${EXPECTED}`, [SECRET], { now: AT }).ok,
    ).toBe(false);
    expect(verifySignature(BODY, header, [`${SECRET}x`], { now: AT }).ok).toBe(false);
  });

  it("G5: compares in constant time, every secret against every v1, whether one matched or not", () => {
    const header = `t=${TIMESTAMP},v1=${EXPECTED}`;
    const other = "whsec_other_secret_0123456789";
    expect(verifySignature(BODY, header, [SECRET, other], { now: AT })).toMatchObject({
      ok: true,
      secretIndex: 0,
    });
    // A match with the first secret does not end the comparing early.
    expect(vi.mocked(timingSafeEqual)).toHaveBeenCalledTimes(2);
    vi.mocked(timingSafeEqual).mockClear();
    const forged = `t=${TIMESTAMP},v1=${"0".repeat(64)},v1=${"f".repeat(64)}`;
    expect(verifySignature(BODY, forged, [SECRET, other], { now: AT }).ok).toBe(false);
    expect(vi.mocked(timingSafeEqual)).toHaveBeenCalledTimes(4);
  });
});
