import { LEAD_SIGNALS } from "@th/api-schemas";
import { describe, expect, it } from "vitest";
import { estimateEquity } from "./equity.ts";
import type { RollSale } from "./nal-row.ts";
import {
  absenteeOwner,
  corporateOwner,
  distressedTransfer,
  estateOwner,
  evaluateSignals,
  freeAndClear,
  highEquity,
  homesteadDropped,
  longTermOwner,
  negativeEquity,
  outOfStateOwner,
  recentSale,
  SIGNAL_NAMES,
  type SignalInput,
  tiredLandlord,
  trustOwner,
  vacantLand,
  valueJump,
} from "./signals.ts";

const asOf = new Date("2025-10-01T00:00:00Z");
const sale = (price: number, year: number, month: number, code = "01"): RollSale => ({
  price,
  year,
  month,
  qualificationCode: code,
  vacantOrImproved: "I",
  multiParcel: false,
});

/** An owner-occupied Miami house: no signal fires. */
const base: SignalInput = {
  homestead: true,
  useClass: "residential",
  dorUc: "001",
  ownerName: "DOE JOHN",
  fiduciaryName: null,
  mailingStreet: "1 MAIN ST",
  mailingZip5: "33125",
  mailingState: "FL",
  situsStreet: "1 MAIN ST",
  situsZip5: "33125",
  justValue: 300_000,
  equity: estimateEquity(300_000, [sale(280_000, 2021, 6)], asOf),
  lastSale: sale(280_000, 2021, 6),
  publicLand: null,
  priorRoll: null,
  asOf,
};
const withInput = (changes: Partial<SignalInput>): SignalInput => ({ ...base, ...changes });

describe("signal catalogue", () => {
  it("is exactly the shared catalogue recipes name, in its order", () => {
    expect([...SIGNAL_NAMES]).toEqual([...LEAD_SIGNALS]);
  });

  it("fires nothing for an owner-occupied, recently financed house", () => {
    expect(evaluateSignals(base)).toEqual([]);
  });

  it("absentee_owner: not homesteaded and mailed elsewhere", () => {
    expect(absenteeOwner(withInput({ homestead: false, mailingStreet: "9 ELM ST" }))).toContain(
      "differs",
    );
    expect(absenteeOwner(withInput({ homestead: false, mailingStreet: "PO BOX 12" }))).toContain(
      "PO box",
    );
    expect(absenteeOwner(withInput({ homestead: false }))).toBeNull();
    expect(absenteeOwner(withInput({ mailingStreet: "9 ELM ST" }))).toBeNull();
  });

  it("out_of_state_owner: a US mailing state other than Florida", () => {
    expect(outOfStateOwner(withInput({ mailingState: "NY" }))).toBe(
      "Owner's mailing address is in NY",
    );
    expect(outOfStateOwner(withInput({ mailingState: "FL" }))).toBeNull();
    expect(outOfStateOwner(withInput({ mailingState: null }))).toBeNull();
  });

  it("corporate_owner, trust_owner, estate_owner read the owner name", () => {
    expect(corporateOwner(withInput({ ownerName: "SUNSHINE HOLDINGS LLC" }))).toBe(
      "Owned by an entity (HOLDINGS)",
    );
    expect(
      corporateOwner(withInput({ ownerName: "MIAMI-DADE COUNTY INC", publicLand: "C" })),
    ).toBeNull();
    expect(corporateOwner(withInput({ ownerName: "COLLINS JOHN" }))).toBeNull();
    expect(trustOwner(withInput({ ownerName: "GARCIA FAMILY TRUST" }))).not.toBeNull();
    expect(trustOwner(withInput({ ownerName: "SMITH MARY TR" }))).not.toBeNull();
    expect(trustOwner(withInput({ ownerName: "TRAN MARY" }))).toBeNull();
    expect(estateOwner(withInput({ ownerName: "ESTATE OF BROWN ROBERT" }))).not.toBeNull();
    expect(estateOwner(withInput({ ownerName: "BROWN ROBERT EST" }))).toBeNull();
  });

  it("long_term_owner: last sale 15+ years ago", () => {
    expect(longTermOwner(withInput({ lastSale: sale(100_000, 2010, 10) }))).toBe(
      "Same owner since 2010 (15 years)",
    );
    expect(longTermOwner(withInput({ lastSale: sale(100_000, 2010, 11) }))).toBeNull();
    expect(longTermOwner(withInput({ lastSale: null }))).toBeNull();
  });

  it("high_equity, free_and_clear, negative_equity follow the estimate", () => {
    const old = estimateEquity(300_000, [sale(90_000, 1990, 1)], asOf);
    expect(highEquity(withInput({ equity: old }))).toBe(
      "Estimated equity $300,000 is 100% of just value (estimate)",
    );
    expect(freeAndClear(withInput({ equity: old }))).toContain("1990");
    expect(highEquity(base)).toBeNull();
    expect(freeAndClear(base)).toBeNull();
    const underwater = estimateEquity(200_000, [sale(400_000, 2025, 6)], asOf);
    expect(negativeEquity(withInput({ equity: underwater }))).toContain("exceeds just value");
    expect(negativeEquity(base)).toBeNull();
  });

  it("homestead_dropped and value_jump compare with the previous roll", () => {
    const prior = { rollYear: 2024, homestead: true, justValue: 240_000 };
    expect(homesteadDropped(withInput({ homestead: false, priorRoll: prior }))).toBe(
      "Homestead on the 2024 roll, none now",
    );
    expect(homesteadDropped(withInput({ priorRoll: prior }))).toBeNull();
    expect(homesteadDropped(withInput({ homestead: false }))).toBeNull();
    expect(valueJump(withInput({ priorRoll: prior }))).toBe(
      "Just value up 25% since the 2024 roll ($240,000 to $300,000)",
    );
    expect(valueJump(withInput({ priorRoll: { ...prior, justValue: 260_000 } }))).toBeNull();
  });

  it("recent_sale: sold within the last 12 months", () => {
    expect(recentSale(withInput({ lastSale: sale(350_000, 2025, 2) }))).toBe(
      "Sold 02/2025 for $350,000",
    );
    expect(recentSale(withInput({ lastSale: sale(350_000, 2024, 9) }))).toBeNull();
  });

  it("vacant_land: DOR vacant use codes", () => {
    expect(vacantLand(withInput({ dorUc: "000" }))).toBe("Vacant land (DOR use code 000)");
    expect(vacantLand(withInput({ dorUc: "010" }))).not.toBeNull();
    expect(vacantLand(base)).toBeNull();
  });

  it("distressed_transfer: last sale coded 11, 12, 37 or 38", () => {
    expect(distressedTransfer(withInput({ lastSale: sale(100, 2023, 1, "12") }))).toContain(
      "financial institution",
    );
    expect(distressedTransfer(base)).toBeNull();
  });

  it("tired_landlord: absentee owner of a residential rental for 10+ years", () => {
    const landlord = withInput({
      homestead: false,
      mailingStreet: "9 ELM ST",
      lastSale: sale(100_000, 2012, 1),
    });
    expect(tiredLandlord(landlord)).toBe("Absentee owner of a residential rental for 13 years");
    expect(tiredLandlord({ ...landlord, lastSale: sale(100_000, 2020, 1) })).toBeNull();
    expect(tiredLandlord({ ...landlord, useClass: "commercial" })).toBeNull();
  });
});
