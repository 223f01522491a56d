import { spawn } from "node:child_process";

/**
 * Runs a Node script to its end, keeping what it prints: resolves when it exits 0, else rejects
 * with the error `failure` makes of its output.
 */
export function runNodeToEnd(
  args: readonly string[],
  options: { cwd: string; env: NodeJS.ProcessEnv; failure: (output: string) => string },
): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, {
      cwd: options.cwd,
      env: options.env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (chunk) => {
      output += chunk;
    });
    child.stderr.on("data", (chunk) => {
      output += chunk;
    });
    child.on("exit", (code) =>
      code === 0 ? resolve() : reject(new Error(options.failure(output))),
    );
  });
}
