// Minimal leveled logger writing to stderr so stdout stays free for the CLI's ready line.

export const LOG_LEVELS = ["silent", "error", "warn", "info", "debug"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface Logger {
  error(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  debug(message: string, fields?: Record<string, unknown>): void;
}

export function isLogLevel(value: string): value is LogLevel {
  return (LOG_LEVELS as readonly string[]).includes(value);
}

export function createLogger(level: LogLevel): Logger {
  const threshold = LOG_LEVELS.indexOf(level);
  const emit = (at: LogLevel, message: string, fields?: Record<string, unknown>): void => {
    if (LOG_LEVELS.indexOf(at) > threshold) {
      return;
    }
    const suffix = fields ? ` ${JSON.stringify(fields)}` : "";
    process.stderr.write(
      `${new Date().toISOString()} ${at.toUpperCase()} dev-broker: ${message}${suffix}\n`,
    );
  };
  return {
    error: (m, f) => emit("error", m, f),
    warn: (m, f) => emit("warn", m, f),
    info: (m, f) => emit("info", m, f),
    debug: (m, f) => emit("debug", m, f),
  };
}
