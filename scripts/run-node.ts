import { spawn } from "node:child_process";

/**
 * Runs a Node script with this process's Node to its end: resolves when it exits 0, and
 * otherwise fails with the error `failure` makes of everything the script printed.
 */
export function runNodeScript(
  args: readonly string[],
  options: { cwd: string; env: NodeJS.ProcessEnv },
  failure: (output: string) => Error,
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
    child.on("exit", (code) => (code === 0 ? resolve() : reject(failure(output))));
  });
}
