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

import type { FastifyRequest } from 'fastify';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The scope a route needs; `any` means any valid key; absent means no key (public route). */
    scope?: Scope | 'any';
    /**
     * A POST that needs no key but takes an Idempotency-Key (decisions §9: any POST): whose keys
     * it uses, as an account and an owner that stands in for the API key (with the raw credential
     * it stands for, which seals the stored answer), or null to run the
     * request without one (idempotency.ts).
     */
    idempotencyOwner?: (
      request: FastifyRequest,
    ) => Promise<{ accountId: string; owner: string; credential: string } | null>;
  }
  interface FastifyRequest {
    auth: AuthContext;
  }
  interface FastifyInstance {
    ctx: AppContext;
  }
}
