// What production runs never reaches the development broker or the test fixtures: every service
// entry point is walked through its static imports (workspace packages through their exports),
// and every production package lists those fixtures as development dependencies only, so
// `pnpm install --prod` (the image) and `pnpm deploy --prod` leave them out.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const root = join(import.meta.dirname, "..");
/** Packages that exist for tests alone. */
const TEST_ONLY = ["@th/dev-broker", "@th/test-stores"];
const TEST_RUNNERS = ["vitest"];

interface WorkspacePackage {
  name: string;
  dir: string;
  dependencies: Record<string, string>;
  exports: Record<string, string>;
}

function workspacePackages(): WorkspacePackage[] {
  return ["packages", "services"].flatMap((area) =>
    readdirSync(join(root, area))
      .map((name) => join(root, area, name))
      .filter((dir) => existsSync(join(dir, "package.json")))
      .map((dir) => {
        const manifest = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
        return {
          name: manifest.name as string,
          dir,
          dependencies: manifest.dependencies ?? {},
          exports: manifest.exports ?? {},
        };
      }),
  );
}

/** Where an import leads: a file of the workspace, an outside package's name, or nothing. */
function resolveImport(
  specifier: string,
  from: string,
  byName: Map<string, WorkspacePackage>,
): { file: string } | { external: string } {
  if (specifier.startsWith(".")) {
    return { file: resolve(dirname(from), specifier) };
  }
  const parts = specifier.split("/");
  const name = specifier.startsWith("@") ? parts.slice(0, 2).join("/") : (parts[0] as string);
  const workspace = byName.get(name);
  if (!workspace) {
    return { external: name };
  }
  const subpath = `.${specifier.slice(name.length)}`;
  const target = workspace.exports[subpath === "." ? "." : subpath];
  if (target === undefined) {
    throw new Error(`${relative(root, from)} imports ${specifier}, which ${name} does not export`);
  }
  return { file: join(workspace.dir, target) };
}

/** Every workspace file and outside package a service's entry point reaches, with a path to each. */
function reach(entry: string, byName: Map<string, WorkspacePackage>) {
  const via = new Map<string, string>([[entry, entry]]);
  const external = new Map<string, string>();
  const pending = [entry];
  while (pending.length > 0) {
    const file = pending.pop() as string;
    const { importedFiles } = ts.preProcessFile(readFileSync(file, "utf8"), true, true);
    for (const { fileName } of importedFiles) {
      if (fileName.startsWith("node:")) {
        continue;
      }
      const target = resolveImport(fileName, file, byName);
      const chain = `${via.get(file)} -> ${fileName}`;
      if ("external" in target) {
        external.set(target.external, chain);
      } else if (!via.has(target.file)) {
        via.set(target.file, chain);
        pending.push(target.file);
      }
    }
  }
  return { files: via, external };
}

const packages = workspacePackages();
const byName = new Map(packages.map((each) => [each.name, each]));
const production = packages.filter((each) => !TEST_ONLY.includes(each.name));
const services = readdirSync(join(root, "services")).filter((name) =>
  existsSync(join(root, "services", name, "src", "main.ts")),
);

describe("the production install", () => {
  it("lists the dev broker and the test stores as development dependencies only", () => {
    const leaks = production.flatMap((each) =>
      TEST_ONLY.filter((name) => name in each.dependencies).map(
        (name) => `${each.name} depends on ${name}`,
      ),
    );
    expect(leaks).toEqual([]);
  });

  it.each(services)(
    "%s: main.ts reaches no test-only package, fixture or test runner",
    (service) => {
      const { files, external } = reach(join(root, "services", service, "src", "main.ts"), byName);
      const testOnlyDirs = TEST_ONLY.map((name) => byName.get(name)?.dir as string);
      const leaks = [
        ...[...files].filter(
          ([file]) =>
            testOnlyDirs.some((dir) => file.startsWith(`${dir}/`)) ||
            /\.test\.tsx?$|\/testing(\.ts|\/)/.test(file),
        ),
        ...[...external].filter(([name]) => TEST_RUNNERS.includes(name)),
      ].map(([, chain]) => chain.replaceAll(`${root}/`, ""));
      expect(leaks).toEqual([]);
      // The walk did follow the service through the workspace's packages.
      expect([...files.keys()].some((file) => file.includes("/packages/service-kit/"))).toBe(true);
    },
  );
});
