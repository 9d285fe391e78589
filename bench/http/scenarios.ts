/**
 * The HTTP scenarios, in the order a run executes them: reads first (on the untouched seed), the
 * same reads counted by the rate limiter, then writes, and DELETE last because it consumes objects.
 */
import type { RouteKind } from './baseline.ts';

export const SCENARIO_NAMES = [
  'get-item',
  'list-date',
  'list-title',
  'get-item-rl',
  'list-date-rl',
  'list-title-rl',
  'create',
  'patch',
  'mixed',
  'delete',
] as const;
export type ScenarioName = (typeof SCENARIO_NAMES)[number];

export interface Scenario {
  name: ScenarioName;
  label: string;
  /** The request kinds it sends, in the cycle each connection repeats. */
  cycle: readonly RouteKind[];
  /** Run with the account on the pro plan, so every request is counted against its key's limits. */
  rateLimited: boolean;
}

const MIXED: readonly RouteKind[] = [
  'get-item',
  'get-item',
  'list-date',
  'create',
  'get-item',
  'get-item',
  'patch',
  'get-item',
  'list-title',
  'get-item',
];

/** Every scenario by name. */
export const SCENARIOS: Readonly<Record<ScenarioName, Scenario>> = {
  'get-item': { name: 'get-item', label: 'GET /data/{id}', cycle: ['get-item'], rateLimited: false },
  'list-date': { name: 'list-date', label: 'GET /data sort=date', cycle: ['list-date'], rateLimited: false },
  'list-title': {
    name: 'list-title',
    label: 'GET /data sort=title',
    cycle: ['list-title'],
    rateLimited: false,
  },
  'get-item-rl': {
    name: 'get-item-rl',
    label: 'GET /data/{id}, pro (limits counted)',
    cycle: ['get-item'],
    rateLimited: true,
  },
  'list-date-rl': {
    name: 'list-date-rl',
    label: 'GET /data sort=date, pro',
    cycle: ['list-date'],
    rateLimited: true,
  },
  'list-title-rl': {
    name: 'list-title-rl',
    label: 'GET /data sort=title, pro',
    cycle: ['list-title'],
    rateLimited: true,
  },
  create: { name: 'create', label: 'POST /data (1 KB)', cycle: ['create'], rateLimited: false },
  patch: { name: 'patch', label: 'PATCH /data/{id} (1 KB)', cycle: ['patch'], rateLimited: false },
  mixed: {
    name: 'mixed',
    label: 'mixed 80/20 (read/write)',
    cycle: MIXED,
    rateLimited: false,
  },
  delete: { name: 'delete', label: 'DELETE /data/{id}', cycle: ['delete'], rateLimited: false },
};

/** Parses `--scenarios a,b` (empty: all), keeping the run order above. */
export function pickScenarios(list: string | undefined): Scenario[] {
  if (!list) return SCENARIO_NAMES.map((n) => SCENARIOS[n]);
  const wanted = new Set(list.split(',').map((s) => s.trim()));
  for (const name of wanted) {
    if (!(SCENARIO_NAMES as readonly string[]).includes(name)) {
      throw new Error(`Unknown HTTP scenario ${name}; known: ${SCENARIO_NAMES.join(', ')}`);
    }
  }
  return SCENARIO_NAMES.filter((n) => wanted.has(n)).map((n) => SCENARIOS[n]);
}
