import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';

/** Routes of this resource; filled in by the feature that owns it. */
export const userRoutes: FastifyPluginAsyncTypebox = async () => {};
