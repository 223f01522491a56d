// Demo data for `npm start`: the place where a demo tenant, the sample roll and its printed API
// key are created once those capabilities exist. Returns the lines to print under the URLs.
export interface DemoContext {
  baseUrl: string;
  env: NodeJS.ProcessEnv;
}

export async function seedDemo(_context: DemoContext): Promise<string[]> {
  return ["  Demo tenant   not seeded yet: tenants, keys and the sample roll are not built yet"];
}
