import { vi } from "vitest";

/**
 * What a command prints on one console stream during a test, one string per call; the stream
 * prints nothing meanwhile. `vi.restoreAllMocks()` gives the stream back.
 */
export function capturedConsole(stream: "info" | "error"): string[] {
  const lines: string[] = [];
  vi.spyOn(console, stream).mockImplementation((...args: unknown[]) => {
    lines.push(args.join(" "));
  });
  return lines;
}
