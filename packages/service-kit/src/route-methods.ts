/**
 * The methods each route answers, kept as routes are declared, so that a request with another
 * method hears 405 and the `Allow` list instead of a 404 that hides the path exists. Fastify's
 * router finds a route for a method and a path, but cannot list the methods a concrete path has.
 */
export class RouteMethods {
  readonly #routes: { pattern: RegExp; method: string; url: string }[] = [];

  add(methods: string | readonly string[], url: string): void {
    const pattern = patternOf(url);
    for (const method of Array.isArray(methods) ? methods : [methods]) {
      // Fastify adds a HEAD for every GET, and the reads that cost lead-views refuse it: Allow
      // names only what the routes were declared with.
      if (method.toUpperCase() !== "HEAD") {
        this.#routes.push({ pattern, method: method.toUpperCase(), url });
      }
    }
  }

  /** Every declared route: its method and path. */
  list(): { method: string; url: string }[] {
    return this.#routes.map(({ method, url }) => ({ method, url }));
  }

  /**
   * The declared path of the route a method and a concrete path reach, the most literal one
   * when several patterns match, as the router prefers; undefined for none.
   */
  routeFor(method: string, path: string): string | undefined {
    const matches = this.#routes
      .filter((route) => route.method === method.toUpperCase() && route.pattern.test(path))
      .map((route) => route.url);
    const parameters = (url: string) => url.replaceAll("::", "").split(":").length;
    return matches.sort((a, b) => parameters(a) - parameters(b))[0];
  }

  /** The methods some route answers for `path` (no query string), sorted; empty for none. */
  allowed(path: string): string[] {
    const methods = new Set<string>();
    for (const route of this.#routes) {
      if (route.pattern.test(path)) {
        methods.add(route.method);
      }
    }
    return [...methods].sort();
  }
}

/**
 * A route path as a regular expression: `:name` is one segment, `:name(regex)` that regex, `::`
 * a literal colon (`/:id::rotate`), `*` the rest; a trailing slash is optional, as the router
 * ignores it.
 */
export function patternOf(url: string): RegExp {
  let source = "";
  let index = 0;
  while (index < url.length) {
    if (url.startsWith("::", index)) {
      source += ":";
      index += 2;
    } else if (url[index] === ":") {
      let end = index + 1;
      while (end < url.length && /\w/.test(url[end] as string)) {
        end += 1;
      }
      if (url[end] === "(") {
        const close = closingParenthesis(url, end);
        source += `(?:${url.slice(end + 1, close)})`;
        index = close + 1;
      } else {
        source += "[^/]+";
        index = end;
      }
    } else if (url[index] === "*") {
      source += ".*";
      index += 1;
    } else {
      source += (url[index] as string).replace(/[.+?^${}()|[\]\\/]/g, "\\$&");
      index += 1;
    }
  }
  return new RegExp(`^${source.replace(/\\\/$/, "")}/?$`);
}

function closingParenthesis(text: string, open: number): number {
  let depth = 0;
  for (let index = open; index < text.length; index++) {
    if (text[index] === "\\") {
      index += 1;
    } else if (text[index] === "(") {
      depth += 1;
    } else if (text[index] === ")") {
      depth -= 1;
      if (depth === 0) {
        return index;
      }
    }
  }
  return text.length - 1;
}
