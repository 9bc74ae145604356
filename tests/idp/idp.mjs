// A real OpenID Connect provider for the end-to-end tests: oidc-provider (a certified
// implementation) with its development login and consent forms, the clients and
// accounts of a JSON config, and a test-only control endpoint that edits accounts.
//
//   node tests/idp/idp.mjs CONFIG.json
//
// Prints `ready <issuer>` on stdout once listening; everything else goes to stderr.
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { parse } from 'node:querystring';

import Provider from 'oidc-provider';

// oidc-provider prints its notices with console.info; stdout carries only `ready`.
console.info = console.log = console.warn;

const config = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const accounts = new Map(Object.entries(config.accounts ?? {}));

const server = createServer((req, res) => handle(req, res));
await new Promise((resolve) => server.listen(config.port ?? 0, '127.0.0.1', resolve));
const issuer = (config.issuer ?? `http://127.0.0.1:${server.address().port}`).replace(/\/+$/, '');

const provider = new Provider(issuer, {
  clients: config.clients.map((client) => ({
    token_endpoint_auth_method: client.client_secret ? 'client_secret_basic' : 'none',
    grant_types: ['authorization_code'],
    response_types: ['code'],
    ...client,
  })),
  responseTypes: ['code'],
  pkce: { required: () => true },
  features: { devInteractions: { enabled: true } },
  // Put the scope's claims into the ID token too, as the relying party reads them there.
  conformIdTokenClaims: false,
  claims: {
    openid: ['sub'],
    email: ['email', 'email_verified'],
    profile: ['name'],
    groups: ['groups'],
  },
  scopes: ['openid', 'email', 'profile', 'groups'],
  // Cookies are scoped by host, not port: keep clear of the relying party's names on
  // the same 127.0.0.1.
  cookies: {
    names: { session: '_idp_session', interaction: '_idp_interaction', resume: '_idp_interaction_resume' },
  },
  // Claims are read when a token is issued, so a PUT between sign-ins takes effect.
  async findAccount(ctx, sub) {
    if (!accounts.has(sub)) return undefined;
    return { accountId: sub, claims: () => ({ ...accounts.get(sub), sub }) };
  },
});

for (const event of ['server_error', 'authorization.error', 'grant.error', 'userinfo.error',
  'introspection.error', 'revocation.error', 'end_session.error', 'discovery.error', 'jwks.error']) {
  provider.on(event, (...args) => {
    const error = args.at(-1);
    console.error(`${event}: ${error?.message}${error?.error_description ? `: ${error.error_description}` : ''}`);
  });
}

// Static clients are validated on first use; fail at startup instead.
for (const { client_id } of config.clients) await provider.Client.find(client_id);
const callback = provider.callback();

async function handle(req, res) {
  try {
    const url = new URL(req.url, issuer);
    const account = url.pathname.match(/^\/test\/accounts\/([^/]+)$/);
    if (url.pathname.startsWith('/test/')) {
      if (account && req.method === 'PUT') {
        accounts.set(decodeURIComponent(account[1]), JSON.parse(await text(req)));
        return reply(res, 204);
      }
      if (account && req.method === 'DELETE') {
        accounts.delete(decodeURIComponent(account[1]));
        return reply(res, 204);
      }
      return reply(res, 404, 'not found\n');
    }
    // The dev login form signs in any login and would then loop on an unknown one (its
    // findAccount finds nothing); refuse it here with a page that says why instead.
    if (req.method === 'POST' && /^\/interaction\/[^/]+$/.test(url.pathname)) {
      const details = await provider.interactionDetails(req, res);
      if (details.prompt.name === 'login') {
        const body = parse(await text(req));
        if (body.prompt !== 'login' || !accounts.has(body.login)) {
          return reply(res, 403, `unknown account ${JSON.stringify(body.login)}\n`);
        }
        return await provider.interactionFinished(req, res, { login: { accountId: body.login } },
          { mergeWithLastSubmission: false });
      }
    }
    return callback(req, res);
  } catch (error) {
    console.error(error);
    if (!res.headersSent) reply(res, 400, `${error.name}: ${error.message}\n`);
  }
}

async function text(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
}

function reply(res, status, body = '') {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8' });
  res.end(body);
}

// Exit with whoever started us (stdin closes when it does), even if it was killed.
process.stdin.on('end', () => process.exit(0)).resume();
process.stdout.write(`ready ${issuer}\n`);
