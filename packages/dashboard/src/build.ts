import { createHash } from "node:crypto";
import {
  existsSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { join, relative } from "node:path";
import { gzipSync } from "node:zlib";
import { DASHBOARD_DIST } from "./dist.ts";

/**
 * Builds the dashboard with Vite when its sources changed since the last build. A fingerprint
 * of every source file (and this file, and the package manifest) is kept in `dist/.build-hash`,
 * so `npm start` and `npm test` call this every time and pay only a few file reads when nothing
 * changed. The build lands in a temporary folder and replaces `dist` in one rename, so a
 * gateway never serves half a build. Text assets get a `.gz` twin the gateway serves as is.
 */
const PACKAGE_DIR = join(import.meta.dirname, "..");
const HASH_FILE = ".build-hash";

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((entry) =>
      entry.isDirectory() ? filesUnder(join(dir, entry.name)) : [join(dir, entry.name)],
    )
    .sort();
}

export function sourceFingerprint(): string {
  const hash = createHash("sha256");
  const inputs = [
    ...filesUnder(join(PACKAGE_DIR, "src", "ui")),
    // The typed client the page calls the API with is bundled too.
    ...filesUnder(join(PACKAGE_DIR, "..", "client", "src")).filter(
      (file) => !file.endsWith(".test.ts"),
    ),
    join(PACKAGE_DIR, "index.html"),
    join(PACKAGE_DIR, "package.json"),
    join(PACKAGE_DIR, "src", "routes.ts"),
    import.meta.filename,
  ];
  for (const file of inputs) {
    hash.update(relative(PACKAGE_DIR, file)).update("\0").update(readFileSync(file)).update("\0");
  }
  return hash.digest("hex");
}

export function isBuilt(dir = DASHBOARD_DIST): boolean {
  const stamp = join(dir, HASH_FILE);
  return existsSync(stamp) && readFileSync(stamp, "utf8") === sourceFingerprint();
}

export async function ensureDashboardBuilt(
  options: { force?: boolean; log?: (line: string) => void; dir?: string } = {},
): Promise<{ built: boolean; ms: number }> {
  const started = Date.now();
  const dist = options.dir ?? DASHBOARD_DIST;
  if (!options.force && isBuilt(dist)) {
    return { built: false, ms: Date.now() - started };
  }
  const fingerprint = sourceFingerprint();
  const staging = `${dist}.tmp-${process.pid}-${Date.now()}`;
  const { build } = await import("vite");
  // Vite sets NODE_ENV=production for the rest of the process when it finds it unset; `npm
  // start` builds in its own process and then starts the services with that environment, which
  // would put them in production mode (and refuse the development secrets) on a first run.
  // biome-ignore lint/style/noProcessEnv: undoing Vite's change to the process environment
  const environment = process.env;
  const nodeEnv = environment.NODE_ENV;
  try {
    await viteBuild(build, staging);
  } finally {
    if (nodeEnv === undefined) {
      delete environment.NODE_ENV;
    } else {
      environment.NODE_ENV = nodeEnv;
    }
  }
  for (const file of filesUnder(staging)) {
    if (/\.(js|css|html|svg|json)$/.test(file)) {
      writeFileSync(`${file}.gz`, gzipSync(readFileSync(file), { level: 9 }));
    }
  }
  writeFileSync(join(staging, HASH_FILE), fingerprint);
  const previous = `${dist}.old-${process.pid}-${Date.now()}`;
  if (existsSync(dist)) {
    renameSync(dist, previous);
  }
  renameSync(staging, dist);
  rmSync(previous, { recursive: true, force: true });
  const ms = Date.now() - started;
  options.log?.(`dashboard built in ${ms} ms`);
  return { built: true, ms };
}

async function viteBuild(build: typeof import("vite").build, outDir: string): Promise<void> {
  await build({
    root: PACKAGE_DIR,
    configFile: false,
    logLevel: "warn",
    base: "/",
    publicDir: false,
    mode: "production",
    // Explicit, so a build started under NODE_ENV=test (vitest) is still a production build.
    oxc: { jsx: { runtime: "automatic", importSource: "react", development: false } },
    define: { "process.env.NODE_ENV": JSON.stringify("production") },
    build: {
      outDir,
      emptyOutDir: true,
      target: "es2022",
      sourcemap: false,
      reportCompressedSize: false,
      chunkSizeWarningLimit: 400,
    },
  });
}

/** What a first visit downloads: the JavaScript and CSS the index page loads, gzip-compressed. */
export function firstLoadReport(dir = DASHBOARD_DIST) {
  const html = readFileSync(join(dir, "index.html"), "utf8");
  const referenced = [...html.matchAll(/(?:src|href)="\/([^"]+\.(?:js|css))"/g)].map(
    (match) => match[1] as string,
  );
  let jsGzipBytes = 0;
  let cssGzipBytes = 0;
  const files: { file: string; bytes: number; gzipBytes: number }[] = [];
  for (const file of referenced) {
    const path = join(dir, file);
    const bytes = statSync(path).size;
    const gzipBytes = existsSync(`${path}.gz`)
      ? statSync(`${path}.gz`).size
      : gzipSync(readFileSync(path)).length;
    files.push({ file, bytes, gzipBytes });
    if (file.endsWith(".js")) {
      jsGzipBytes += gzipBytes;
    } else {
      cssGzipBytes += gzipBytes;
    }
  }
  return { files, jsGzipBytes, cssGzipBytes };
}
