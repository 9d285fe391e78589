import type { AppContext } from '../context.ts';
import type { Scope } from '../modules/api-keys/scopes.ts';

/** Who is calling: resolved from the API key on every request. */
export interface AuthContext {
  readonly accountId: string;
  readonly userId: string;
  readonly keyId: string;
  readonly role: string;
  readonly plan: string;
  readonly scopes: readonly Scope[];
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The scope a route needs; `any` means any valid key; absent means no key (public route). */
    scope?: Scope | 'any';
  }
  interface FastifyRequest {
    auth: AuthContext;
  }
  interface FastifyInstance {
    ctx: AppContext;
  }
}
