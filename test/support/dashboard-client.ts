// A browser-like client for the dashboard's API over `inject`: it keeps the cookies the gateway
// sets (honouring their paths) and echoes the CSRF token on every call, as the page does.
import type { EdgeStack } from "./edge-stack.ts";

interface StoredCookie {
  value: string;
  path: string;
}

type Method = "GET" | "POST" | "PATCH" | "PUT" | "DELETE";

export function dashboardClient(stack: EdgeStack, ip = "192.0.2.44", gateway = stack.gateway) {
  const jar = new Map<string, StoredCookie>();
  let csrf: string | null = null;
  const setCookies: string[][] = [];

  function remember(header: string | string[] | undefined) {
    const lines = header === undefined ? [] : Array.isArray(header) ? header : [header];
    setCookies.push(lines);
    for (const line of lines) {
      const [pair = "", ...attributes] = line.split(";").map((part) => part.trim());
      const eq = pair.indexOf("=");
      const name = pair.slice(0, eq);
      const value = pair.slice(eq + 1);
      const path = attributes.find((a) => a.toLowerCase().startsWith("path="))?.slice(5) ?? "/";
      const expired = attributes.some(
        (a) =>
          a.toLowerCase() === "max-age=0" ||
          (a.toLowerCase().startsWith("expires=") && Date.parse(a.slice(8)) <= Date.now()),
      );
      if (expired || value === "") {
        jar.delete(name);
      } else {
        jar.set(name, { value, path });
      }
    }
    csrf = jar.get("__Host-th_csrf")?.value ?? jar.get("th_csrf")?.value ?? null;
  }

  function cookieHeader(url: string): string {
    const path = url.split("?")[0] ?? "/";
    return [...jar.entries()]
      .filter(
        ([, cookie]) =>
          path === cookie.path ||
          path.startsWith(`${cookie.path.replace(/\/$/, "")}/`) ||
          cookie.path === "/",
      )
      .map(([name, cookie]) => `${name}=${cookie.value}`)
      .join("; ");
  }

  async function call(
    method: Method,
    url: string,
    init: { body?: unknown; headers?: Record<string, string>; csrf?: boolean } = {},
  ) {
    const app = gateway.http;
    if (!app) {
      throw new Error("no gateway");
    }
    const cookies = cookieHeader(url);
    const sendCsrf = init.csrf ?? true;
    const response = await app.inject({
      method,
      url,
      remoteAddress: ip,
      headers: {
        ...(cookies ? { cookie: cookies } : {}),
        ...(sendCsrf && csrf ? { "x-csrf-token": csrf } : {}),
        ...init.headers,
      },
      ...(init.body !== undefined ? { payload: init.body as object } : {}),
    });
    remember(response.headers["set-cookie"]);
    return response;
  }

  return {
    call,
    jar,
    setCookies,
    get csrf() {
      return csrf;
    },
    signIn: (email: string, password: string) =>
      call("POST", "/v1/dashboard/session", { body: { email, password } }),
  };
}
