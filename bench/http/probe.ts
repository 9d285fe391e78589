/**
 * Asks the real server once per kind of request what it answers (status and body size), so the
 * baseline can answer the same traffic with bodies of the same size.
 */
import fs from 'node:fs';
import { Agent, request } from 'undici';
import { objectGenerator } from '../seed/words.ts';
import type { BaselineRoute, BaselineSpec, RouteKind } from './baseline.ts';

// Headers that belong to the connection or the body, which every server sets for itself.
export const OWN_HEADERS = new Set([
  'date',
  'connection',
  'keep-alive',
  'content-length',
  'transfer-encoding',
]);

const ITEM_SAMPLES = 25;

/** Status and median body size per route kind, from live requests (one create, patch, delete). */
export async function probeSizes(
  url: string,
  caFile: string,
  key: string,
  readIds: string[],
): Promise<BaselineSpec['routes']> {
  const dispatcher = new Agent({ connect: { ca: fs.readFileSync(caFile), servername: 'localhost' } });
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await request(`${url}${path}`, {
      method: method as 'GET',
      headers: {
        authorization: `Bearer ${key}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      dispatcher,
    });
    const text = Buffer.from(await res.body.arrayBuffer());
    if (res.statusCode >= 300) throw new Error(`${method} ${path} answered ${res.statusCode}: ${text}`);
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(res.headers)) {
      if (!OWN_HEADERS.has(name) && value !== undefined) headers[name] = String(value);
    }
    return { status: res.statusCode, bytes: text.length, headers, text: text.toString('utf8') };
  };
  try {
    const routes: BaselineSpec['routes'] = {};
    const items = [];
    for (const id of readIds.slice(0, ITEM_SAMPLES)) items.push(await call('GET', `/v1/data/${id}`));
    items.sort((a, b) => a.bytes - b.bytes);
    const median = items[Math.floor(items.length / 2)];
    const pick = (r: BaselineRoute): BaselineRoute => ({
      status: r.status,
      bytes: r.bytes,
      headers: r.headers,
    });
    if (median) routes['get-item'] = pick(median);
    routes['list-date'] = pick(await call('GET', '/v1/data?limit=20&sort=date'));
    routes['list-title'] = pick(await call('GET', '/v1/data?limit=20&sort=title'));
    const o = objectGenerator(1234, 1024, 1024)();
    const created = await call('POST', '/v1/data', o);
    routes.create = pick(created);
    const id = (JSON.parse(created.text) as { data: { id: string } }).data.id;
    routes.patch = pick(
      await call('PATCH', `/v1/data/${id}`, { title: `${o.title} v2`, content: o.content }),
    );
    routes.delete = pick(await call('DELETE', `/v1/data/${id}`));
    return routes satisfies Partial<Record<RouteKind, unknown>>;
  } finally {
    await dispatcher.close();
  }
}
