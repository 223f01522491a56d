// What the scale-out bench asks of a service's driver, and the options it hands each driver.
// Here rather than in scale-out.ts, which loads the drivers: a driver imports this, never the
// bench, so the bench depends on its drivers and not the reverse.
import type { ChildProcess } from "node:child_process";

export interface ScaleRound {
  /** Units of work completed in the measured window. */
  completed: number;
  seconds: number;
  /** Service-specific findings, printed under the round. */
  notes: Array<[string, string]>;
}

export interface ScaleDriver {
  /** What a unit of work is, e.g. "deliveries". */
  unit: string;
  /**
   * Whether a round lasts a fixed time (the gateway's) rather than a fixed amount of work. A
   * timed round gives each instance the same CPU time whatever the count, so the warm-up is the
   * same number of rounds for every count.
   */
  timedRounds?: boolean;
  /** The Postgres database whose backends serve the instances. */
  database: string;
  /** Shared processes whose CPU is printed beside the instances', by name. */
  shared(): Record<string, number[]>;
  startInstance(index: number): Promise<ChildProcess>;
  /** Waits until `instances` are ready to take work (group joined, projections loaded). */
  settle(instances: readonly ChildProcess[]): Promise<void>;
  round(instances: readonly ChildProcess[]): Promise<ScaleRound>;
  close(): Promise<void>;
}

export interface ScaleOptions {
  instances: number[];
  cpuQuota: number;
  work: number | undefined;
  /** Dispatcher only: how many Team tenants the deliveries are spread over. */
  tenants?: number | undefined;
  /**
   * Matcher and dispatcher: every round's work is one instance's (its partitions, its share of
   * the tenants), the others stay in the group idle. A control: what that instance does against
   * one instance alone separates the cost of the group (membership, fewer partitions each) from
   * that of instances busy together.
   */
  oneBusy?: boolean;
  /**
   * The quota's period (Kubernetes uses 100 ms): an instance may run its share of each period,
   * then waits for the next. Shorter periods interleave the instances more finely.
   */
  cpuPeriodMs?: number;
  /** Measured rounds per count; the figure is their median. */
  rounds?: number;
}
