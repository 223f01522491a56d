// Topic registry: names, partition logs and configs. In persistent mode the topic list lives in
// <dataDir>/topics.json and each partition in <dataDir>/logs/<topic>-<partition>/.
import { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { writeFileDurably } from "./durable-file.ts";
import type { Flusher } from "./log/flusher.ts";
import { PartitionLog } from "./log/partition-log.ts";
import { resolveTopicConfig, type TopicConfig } from "./log/topic-config.ts";

export interface Topic {
  name: string;
  /** Distinguishes a re-created topic from its deleted predecessor (directory names). */
  incarnation: number;
  rawConfigs: Record<string, string>;
  config: TopicConfig;
  partitions: PartitionLog[];
}

interface PersistedTopic {
  partitions: number;
  configs: Record<string, string>;
  incarnation: number;
}

const TOPIC_NAME = /^[a-zA-Z0-9._-]{1,249}$/;

export function isValidTopicName(name: string): boolean {
  return TOPIC_NAME.test(name) && name !== "." && name !== "..";
}

export class TopicRegistry {
  readonly topics = new Map<string, Topic>();
  private readonly dataDir: string | null;
  private readonly flusher: Flusher | null;
  readonly defaults: TopicConfig;
  private nextIncarnation = 1;

  constructor(dataDir: string | null, flusher: Flusher | null, defaults: TopicConfig) {
    this.dataDir = dataDir;
    this.flusher = flusher;
    this.defaults = defaults;
  }

  private get metadataPath(): string | null {
    return this.dataDir === null ? null : join(this.dataDir, "topics.json");
  }

  private partitionDir(topic: string, incarnation: number, partition: number): string | null {
    return this.dataDir === null
      ? null
      : join(this.dataDir, "logs", `${topic}-${incarnation}`, String(partition));
  }

  private topicDir(topic: string, incarnation: number): string | null {
    return this.dataDir === null ? null : join(this.dataDir, "logs", `${topic}-${incarnation}`);
  }

  /** Loads topics.json and recovers every partition log. Returns bytes truncated from torn tails. */
  load(): number {
    const path = this.metadataPath;
    if (path === null || !existsSync(path)) {
      return 0;
    }
    const persisted = JSON.parse(readFileSync(path, "utf8")) as Record<string, PersistedTopic>;
    let truncated = 0;
    for (const [name, t] of Object.entries(persisted)) {
      this.nextIncarnation = Math.max(this.nextIncarnation, t.incarnation + 1);
      const topic = this.instantiate(name, t.partitions, t.configs, t.incarnation);
      for (const p of topic.partitions) {
        truncated += p.recoveredTruncatedBytes;
      }
    }
    return truncated;
  }

  private persist(): void {
    const path = this.metadataPath;
    if (path === null) {
      return;
    }
    const out: Record<string, PersistedTopic> = {};
    for (const t of this.topics.values()) {
      out[t.name] = {
        partitions: t.partitions.length,
        configs: t.rawConfigs,
        incarnation: t.incarnation,
      };
    }
    mkdirSync(this.dataDir as string, { recursive: true });
    writeFileDurably(path, `${JSON.stringify(out, null, 2)}\n`);
  }

  private instantiate(
    name: string,
    partitionCount: number,
    rawConfigs: Record<string, string>,
    incarnation: number,
  ): Topic {
    const config = resolveTopicConfig(rawConfigs, this.defaults);
    const topic: Topic = { name, incarnation, rawConfigs, config, partitions: [] };
    for (let p = 0; p < partitionCount; p++) {
      topic.partitions.push(
        new PartitionLog(name, p, config, this.partitionDir(name, incarnation, p), this.flusher),
      );
    }
    this.topics.set(name, topic);
    return topic;
  }

  get(name: string): Topic | undefined {
    return this.topics.get(name);
  }

  partition(name: string, partition: number): PartitionLog | undefined {
    return this.topics.get(name)?.partitions[partition];
  }

  /** Throws InvalidTopicConfigError for bad configs; the caller validates name and count. */
  create(name: string, partitionCount: number, rawConfigs: Record<string, string>): Topic {
    const topic = this.instantiate(name, partitionCount, rawConfigs, this.nextIncarnation++);
    this.persist();
    return topic;
  }

  delete(name: string): boolean {
    const topic = this.topics.get(name);
    if (topic === undefined) {
      return false;
    }
    this.topics.delete(name);
    this.persist();
    for (const p of topic.partitions) {
      p.destroy();
    }
    const dir = this.topicDir(name, topic.incarnation);
    if (dir !== null) {
      rmSync(dir, { recursive: true, force: true });
    }
    return true;
  }

  addPartitions(name: string, newCount: number): void {
    const topic = this.topics.get(name);
    if (topic === undefined) {
      return;
    }
    for (let p = topic.partitions.length; p < newCount; p++) {
      topic.partitions.push(
        new PartitionLog(
          name,
          p,
          topic.config,
          this.partitionDir(name, topic.incarnation, p),
          this.flusher,
        ),
      );
    }
    this.persist();
  }

  maxProducerIdSeen(): number {
    let max = -1;
    for (const t of this.topics.values()) {
      for (const p of t.partitions) {
        max = Math.max(max, p.maxProducerIdSeen);
      }
    }
    return max;
  }

  close(): void {
    for (const t of this.topics.values()) {
      for (const p of t.partitions) {
        p.close();
      }
    }
  }
}
