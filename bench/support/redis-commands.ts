// Which Redis commands a bench phase ran, and what each cost the server, from INFO commandstats:
// reset before the phase (CONFIG RESETSTAT) and read after it, each with its calls and the server's
// own time per unit of work. A script's commands are counted inside it (EVALSHA and the calls it
// made), so a script's figure includes theirs.
import { Redis } from "ioredis";

export interface CommandFigure {
  command: string;
  calls: number;
  usec: number;
}

/** Parses `cmdstat_<name>:calls=N,usec=M,...` lines. */
function parseCommandStats(text: string): CommandFigure[] {
  const figures: CommandFigure[] = [];
  for (const line of text.split("\n")) {
    const match = /^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/.exec(line.trim());
    if (match) {
      figures.push({
        command: match[1] as string,
        calls: Number(match[2]),
        usec: Number(match[3]),
      });
    }
  }
  return figures.sort((a, b) => b.usec - a.usec);
}

export async function openRedisCommands(url: string) {
  const redis = new Redis(url, { maxRetriesPerRequest: 1 });
  return {
    async reset(): Promise<void> {
      await redis.config("RESETSTAT");
    },
    async read(limit = 8): Promise<CommandFigure[]> {
      const text = await redis.info("commandstats");
      // The calls that reset and read them are not the phase's.
      return parseCommandStats(text)
        .filter((figure) => figure.command !== "info" && !figure.command.startsWith("config"))
        .slice(0, limit);
    },
    close: () => redis.quit().then(() => undefined),
  };
}

/** One line a command: calls and the server's time per unit of work. */
export function commandLines(figures: readonly CommandFigure[], units: number): string[] {
  return figures.map(
    (figure) =>
      `${(figure.calls / units).toFixed(3).padStart(8)} calls ${(figure.usec / units).toFixed(1).padStart(7)} µs  ${figure.command}`,
  );
}
