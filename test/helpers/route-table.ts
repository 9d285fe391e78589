import type { FastifyInstance } from 'fastify';

/** `METHOD path` of every route the app registered (HEAD aside), read from Fastify's route tree. */
export function registeredRoutes(app: FastifyInstance): string[] {
  const out: string[] = [];
  const stack: string[] = [];
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    const m = /^([│ ]*)[├└]── (\S+)(?: \(([^)]*)\))?$/.exec(line);
    if (!m) continue;
    stack.length = (m[1] ?? '').length / 4;
    stack.push(m[2] ?? '');
    for (const method of (m[3] ?? '').split(', ').filter((x) => x && x !== 'HEAD')) {
      out.push(`${method} ${stack.join('')}`);
    }
  }
  return out;
}

/** `/v1/data/{id}` and `/v1/data/:id` both become `/v1/data/:`. */
export const routeShape = (r: string) => r.replace(/\?.*$/, '').replace(/\{\w+\}|:\w+/g, ':');
