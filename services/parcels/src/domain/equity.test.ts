import { describe, expect, it } from "vitest";
import {
  byNewestFirst,
  estimateEquity,
  monthsSince,
  purchaseBasis,
  remainingBalance,
} from "./equity.ts";
import type { RollSale } from "./nal-row.ts";

const sale = (
  price: number,
  year: number,
  month: number,
  code: string | null,
  multiParcel = false,
): RollSale => ({
  price,
  year,
  month,
  qualificationCode: code,
  vacantOrImproved: "I",
  multiParcel,
});

describe("loan balance", () => {
  it("matches a hand-computed amortization balance", () => {
    // P = 160,000 at 6% for 360 months, after 120 payments: i = 0.005, (1.005)^360 = 6.0225752,
    // (1.005)^120 = 1.8193967; B = 160000 * (6.0225752 - 1.8193967) / 5.0225752 = 133,897.
    expect(Math.round(remainingBalance(160_000, 6, 360, 120))).toBe(133_897);
    expect(remainingBalance(160_000, 6, 360, 0)).toBeCloseTo(160_000, 6);
    expect(remainingBalance(160_000, 6, 360, 360)).toBe(0);
    expect(remainingBalance(160_000, 6, 360, 500)).toBe(0);
  });

  it("counts whole months from the sale month to the as-of month", () => {
    expect(monthsSince({ year: 2015, month: 10 }, new Date("2025-10-01T00:00:00Z"))).toBe(120);
    expect(monthsSince({ year: 2026, month: 1 }, new Date("2025-10-01T00:00:00Z"))).toBe(0);
  });
});

describe("estimated equity", () => {
  it("is just value minus the balance of an 80% loan at the sale year's rate", () => {
    // 2015 rate 3.85%: P = 200,000 * 0.8 = 160,000, k = 120, i = 0.0385/12.
    const i = 0.0385 / 12;
    const balance = (160_000 * ((1 + i) ** 360 - (1 + i) ** 120)) / ((1 + i) ** 360 - 1);
    const estimate = estimateEquity(
      400_000,
      [sale(200_000, 2015, 10, "01")],
      new Date("2025-10-01T00:00:00Z"),
    );
    expect(estimate?.estLoanBalance).toBe(Math.round(balance));
    expect(estimate?.estEquity).toBe(400_000 - Math.round(balance));
    expect(estimate?.equityRatio).toBe(
      Math.round(((400_000 - Math.round(balance)) / 400_000) * 10_000) / 10_000,
    );
    expect(estimate?.ratePct).toBe(3.85);
  });

  it("models a loan paid off after 30 years, and keeps negative equity", () => {
    expect(
      estimateEquity(300_000, [sale(90_000, 1990, 1, "01")], new Date("2025-10-01T00:00:00Z")),
    ).toMatchObject({
      estLoanBalance: 0,
      estEquity: 300_000,
      equityRatio: 1,
    });
    const underwater = estimateEquity(
      200_000,
      [sale(400_000, 2025, 6, "01")],
      new Date("2025-10-01T00:00:00Z"),
    );
    expect(underwater?.estEquity).toBeLessThan(0);
  });

  it("bases the loan on the last qualified single-parcel sale, never a nominal quit-claim", () => {
    const sales = [
      sale(100, 2022, 3, "11"),
      sale(5_000_000, 2021, 1, "01", true),
      sale(250_000, 2012, 5, "02"),
    ];
    expect(purchaseBasis(sales)?.price).toBe(250_000);
    expect(purchaseBasis([sale(10, 2020, 1, "11"), sale(50, 2010, 1, "30")])).toBeNull();
    expect(purchaseBasis([sale(180_000, 2019, 1, "37")])?.price).toBe(180_000);
    expect(estimateEquity(100_000, [], new Date())).toBeNull();
  });
});

describe("sales newest first", () => {
  it("orders as a stable sort by year and month does, and hands an ordered list back as it is", () => {
    const stableSort = (sales: readonly RollSale[]) =>
      [...sales].sort((a, b) => b.year - a.year || b.month - a.month);
    let seed = 7;
    const next = () => {
      seed = (seed * 48271) % 2147483647;
      return seed;
    };
    for (let round = 0; round < 500; round++) {
      // Few distinct years and months, so ties are common.
      const sales = Array.from({ length: next() % 5 }, (_, index) =>
        sale(1000 + index, 2000 + (next() % 3), 1 + (next() % 2), null),
      );
      const ordered = byNewestFirst(sales);
      expect(ordered).toEqual(stableSort(sales));
      ordered.forEach((item, index) => {
        expect(item).toBe(stableSort(sales)[index]);
      });
      if (stableSort(sales).every((item, index) => item === sales[index])) {
        expect(ordered).toBe(sales);
      }
    }
  });
});
