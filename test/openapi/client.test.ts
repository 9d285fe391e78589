// The TypeScript client's own tests (clients/typescript/test) run with the root suite from here, so
// `npm test` covers the client against a real server without the client package needing a runner.
import '../../clients/typescript/test/client.test.ts';
import '../../clients/typescript/test/retry.test.ts';
import '../../clients/typescript/test/webhooks.test.ts';
