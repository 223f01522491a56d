// Committed consumer-group offsets. They outlive group membership (and topic deletion, as in Kafka).
// Persistent mode appends one JSON line per committed partition to <dataDir>/offsets.log and
// compacts the file on startup; a torn last line from a crash is ignored.
import { closeSync, existsSync, fdatasync, openSync, readFileSync, writeSync } from "node:fs";
import { join } from "node:path";
import { writeFileDurably } from "./durable-file.ts";
import type { Flusher, Syncable } from "./log/flusher.ts";

export interface CommittedOffset {
  offset: number;
  metadata: string | null;
}

interface OffsetLine {
  g: string;
  t?: string;
  p?: number;
  o?: number;
  m?: string | null;
  /** Group deleted. */
  d?: 1;
}

function partitionKey(topic: string, partition: number): string {
  return `${topic}\u0000${partition}`;
}

export class OffsetsStore implements Syncable {
  private readonly groups = new Map<
    string,
    Map<string, CommittedOffset & { topic: string; partition: number }>
  >();
  private readonly path: string | null;
  private readonly flusher: Flusher | null;
  private fd: number | null = null;

  constructor(dataDir: string | null, flusher: Flusher | null) {
    this.path = dataDir === null ? null : join(dataDir, "offsets.log");
    this.flusher = flusher;
    if (this.path === null) {
      return;
    }
    if (existsSync(this.path)) {
      for (const line of readFileSync(this.path, "utf8").split("\n")) {
        if (line.length === 0) {
          continue;
        }
        let parsed: OffsetLine;
        try {
          parsed = JSON.parse(line) as OffsetLine;
        } catch {
          continue;
        }
        this.apply(parsed);
      }
    }
    const compacted: string[] = [];
    for (const [group, offsets] of this.groups) {
      for (const o of offsets.values()) {
        compacted.push(this.serialize(group, o.topic, o.partition, o));
      }
    }
    writeFileDurably(this.path, compacted.join(""));
    this.fd = openSync(this.path, "a");
  }

  private serialize(
    group: string,
    topic: string,
    partition: number,
    value: CommittedOffset,
  ): string {
    const line: OffsetLine = {
      g: group,
      t: topic,
      p: partition,
      o: value.offset,
      m: value.metadata,
    };
    return `${JSON.stringify(line)}\n`;
  }

  private apply(line: OffsetLine): void {
    if (line.d === 1) {
      this.groups.delete(line.g);
      return;
    }
    if (line.t === undefined || line.p === undefined || line.o === undefined) {
      return;
    }
    let offsets = this.groups.get(line.g);
    if (offsets === undefined) {
      offsets = new Map();
      this.groups.set(line.g, offsets);
    }
    offsets.set(partitionKey(line.t, line.p), {
      topic: line.t,
      partition: line.p,
      offset: line.o,
      metadata: line.m ?? null,
    });
  }

  private append(lines: string): void {
    if (this.fd === null) {
      return;
    }
    writeSync(this.fd, lines);
    this.flusher?.markDirty(this);
  }

  commit(
    group: string,
    entries: Array<{ topic: string; partition: number; offset: number; metadata: string | null }>,
  ): void {
    let lines = "";
    for (const e of entries) {
      this.apply({ g: group, t: e.topic, p: e.partition, o: e.offset, m: e.metadata });
      if (this.fd !== null) {
        lines += this.serialize(group, e.topic, e.partition, e);
      }
    }
    this.append(lines);
  }

  get(group: string, topic: string, partition: number): CommittedOffset | undefined {
    return this.groups.get(group)?.get(partitionKey(topic, partition));
  }

  listForGroup(group: string): Array<{ topic: string; partition: number } & CommittedOffset> {
    return [...(this.groups.get(group)?.values() ?? [])];
  }

  hasGroup(group: string): boolean {
    return this.groups.has(group);
  }

  groupIds(): string[] {
    return [...this.groups.keys()];
  }

  deleteGroup(group: string): void {
    this.groups.delete(group);
    this.append(`${JSON.stringify({ g: group, d: 1 } satisfies OffsetLine)}\n`);
  }

  sync(): Promise<void> {
    const fd = this.fd;
    if (fd === null) {
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      fdatasync(fd, (error) => (error ? reject(error) : resolve()));
    });
  }

  close(): void {
    if (this.fd !== null) {
      this.flusher?.forget(this);
      closeSync(this.fd);
      this.fd = null;
    }
  }
}
