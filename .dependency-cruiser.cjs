// The import graph's rules, checked by `npm test`. Dependencies point one way: a cycle makes
// a module's meaning depend on load order and hides which of two modules owns what. Type-only
// imports count too, so a shared type lives in a module both sides import.
/** @type {import("dependency-cruiser").IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: "no-circular",
      severity: "error",
      comment: "Move what both modules need into a third one that both import.",
      from: { path: "^(packages|services|bench|test|scripts)/" },
      to: { circular: true },
    },
    {
      name: "services-never-import-each-other",
      severity: "error",
      comment: "Shared code lives in packages/; a service reaches another only over the wire.",
      from: { path: "^services/([^/]+)/" },
      to: { path: "^services/", pathNot: "^services/$1/" },
    },
  ],
  options: {
    includeOnly: "^(packages|services|bench|test|scripts|examples)/",
    exclude: { path: "/node_modules/" },
    doNotFollow: { path: "node_modules" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["import", "node", "default"],
      extensions: [".ts", ".tsx", ".js", ".mjs"],
    },
    cache: false,
  },
};
