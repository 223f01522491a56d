// `npm run topics -- --plan | --apply`: compares the Kafka cluster of the Kafka settings with the
// topic plan (packages/contracts), and with --apply creates the missing topics and adds missing
// partitions. It never deletes, shrinks or re-configures a topic. Exit codes: 0 done, 1 the
// cluster could not be read or changed, 2 a usage or configuration error.
import { parseArgs } from "node:util";
import { Bus } from "@th/bus";
import { ConfigError, kafkaConnection } from "@th/config";
import { type TopicPlanEntry, topicPlan } from "@th/contracts";
import { createLogger } from "@th/telemetry";
import { type Config, readConfig } from "./config.ts";
import { applyReport, planReport } from "./report.ts";

const usage = `usage: npm run topics -- --plan | --apply

  --plan    print how the cluster differs from the topic plan; changes nothing
  --apply   create missing topics and add missing partitions; never deletes, shrinks or re-configures

The cluster is the one of KAFKA_BROKERS and the other KAFKA_* settings. TOPICS_REPLICATION_FACTOR
(default 3) and TOPICS_MIN_INSYNC_REPLICAS (default 2) size the plan for the cluster.`;

export interface Output {
  out(line: string): void;
  err(line: string): void;
}

const console_: Output = {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
};

function planOf(config: Config): readonly TopicPlanEntry[] {
  return topicPlan({
    replicationFactor: config.TOPICS_REPLICATION_FACTOR,
    minInsyncReplicas: config.TOPICS_MIN_INSYNC_REPLICAS,
  });
}

/** Runs the command; `env` stands in for the process environment (tests). */
export async function main(
  argv: readonly string[],
  env?: Readonly<Record<string, string | undefined>>,
  output: Output = console_,
): Promise<number> {
  let mode: "plan" | "apply";
  try {
    const { values } = parseArgs({
      args: [...argv],
      options: {
        plan: { type: "boolean", default: false },
        apply: { type: "boolean", default: false },
        help: { type: "boolean", default: false },
      },
      strict: true,
    });
    if (values.help) {
      output.out(usage);
      return 0;
    }
    if (values.plan === values.apply) {
      output.err(usage);
      return 2;
    }
    mode = values.apply ? "apply" : "plan";
  } catch (error) {
    output.err(`${(error as Error).message}\n${usage}`);
    return 2;
  }
  let config: Config;
  let plan: readonly TopicPlanEntry[];
  try {
    config = readConfig(env);
    plan = planOf(config);
  } catch (error) {
    output.err(
      error instanceof ConfigError ? error.message : `invalid plan: ${(error as Error).message}`,
    );
    return 2;
  }
  const logger = createLogger({ service: "topics", level: "warn" });
  const bus = new Bus({ ...kafkaConnection(config), clientId: "topics", logger, retries: 3 });
  // A wrong password, an untrusted certificate or an unreachable bootstrap is one line.
  const problem = await bus.checkConnection();
  if (problem) {
    await bus.close();
    output.err(problem.line);
    return 1;
  }
  try {
    if (mode === "plan") {
      const differences = await bus.topicDifferences(plan);
      for (const line of planReport(plan, differences)) {
        output.out(line);
      }
    } else {
      const { applied, remaining } = await bus.applyTopicPlan(plan);
      for (const line of applyReport(plan, applied, remaining)) {
        output.out(line);
      }
    }
    return 0;
  } catch (error) {
    output.err(`topics ${mode} failed: ${(error as Error).message}`);
    return 1;
  } finally {
    await bus.close();
  }
}

if (import.meta.main) {
  // `npm run topics -- --plan | head` closes the pipe early: that is no failure of the command.
  process.stdout.on("error", (error: NodeJS.ErrnoException) => {
    if (error.code !== "EPIPE") {
      throw error;
    }
  });
  process.exitCode = await main(process.argv.slice(2));
}
