/** API key scopes (spec Authentication) and what each role may hold (decisions §3). */
export const SCOPES = ['read', 'write', 'admin'] as const;
export type Scope = (typeof SCOPES)[number];

export const ROLES = ['member', 'admin'] as const;
export type Role = (typeof ROLES)[number];

export const ROLE_SCOPES: Record<Role, readonly Scope[]> = {
  member: ['read', 'write'],
  admin: ['read', 'write', 'admin'],
};

/** Key scopes ∩ role scopes: what a request may actually do. */
export function effectiveScopes(keyScopes: readonly string[], role: string): Scope[] {
  const allowed = ROLE_SCOPES[role as Role] ?? [];
  return SCOPES.filter((s) => keyScopes.includes(s) && allowed.includes(s));
}

export const parseScopes = (stored: string): Scope[] => stored.split(' ').filter(Boolean) as Scope[];
export const formatScopes = (scopes: readonly string[]): string =>
  SCOPES.filter((s) => scopes.includes(s)).join(' ');
