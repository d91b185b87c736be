// A real OAuth 2.1 / OpenID Connect authorization server for Switchboard's sign-in tests:
// `oidc-provider` (a certified OpenID provider) with what the MCP authorization spec asks of one.
//
//   node tests/auth/oidc_server.mjs [--port N] [--host ADDRESS] [--access-ttl SECONDS]
//        [--resource URL]... [--protected-resource] [--point FIELD=URL]...
//
// It listens on 127.0.0.1, or on --host (`--port 0`, the default, takes any free port); its
// issuer is `http://HOST:PORT`. Once it listens it prints exactly one line on stdout,
//   {"issuer":"http://HOST:PORT","introspection":{"client_id":"...","client_secret":"..."},
//    "url":"http://HOST:PORT/mcp"}
// (`url` with --protected-resource only).
// and logs only to stderr after that. The introspection credentials are those of a static
// confidential client that a resource server sends, as HTTP Basic (client_secret_basic), to the
// introspection endpoint; its secret is new on every start.
//
// What it does:
// - metadata at /.well-known/openid-configuration and (RFC 8414) at
//   /.well-known/oauth-authorization-server, both listing `registration_endpoint`, `S256` as the
//   only code challenge method, and `authorization_response_iss_parameter_supported: true`;
// - open dynamic client registration (RFC 7591) at /reg, no initial access token: public
//   clients (`token_endpoint_auth_method: "none"`) and `application_type: "native"` clients
//   with loopback http redirect URIs (`http://127.0.0.1:PORT/oauth/callback/ID`) are accepted.
//   A client that omits `grant_types` gets authorization_code and refresh_token;
// - the authorization code flow with PKCE (S256) required of every client, and the RFC 9207
//   `iss` parameter in every authorization response;
// - the built-in development login and consent pages at /interaction/UID: any login name and
//   any password sign in (the login name becomes the subject, `sub`), and "Continue" grants
//   every scope and resource the client asked for (tests/auth/sign_in.mjs fills them in);
// - resource indicators (RFC 8707): an access token is issued for one `resource`, which becomes
//   its audience (`aud`); accepted resources are any http://127.0.0.1 URL and every --resource
//   URL, anything else is `invalid_target`. Resource access tokens are opaque, carry the scope
//   `mcp:tools` when it was asked for, and live --access-ttl seconds (default 3600). Like any
//   oidc-provider, once `openid` was granted the token endpoint needs `resource` again
//   (authorization_code and refresh_token grants alike): without it the access token is for
//   the userinfo endpoint, not for the resource;
// - a refresh token with every authorization code whose client may use the refresh_token grant,
//   whether or not `offline_access` was asked for; public clients' refresh tokens are rotated
//   on every use (the old one stops working);
// - token introspection (RFC 7662) at /token/introspection and revocation (RFC 7009) at
//   /token/revocation.
// Scopes: `openid`, `offline_access`, `mcp:tools`. Everything is kept in memory.
//
// With --protected-resource it is also, on its own origin, a protected MCP resource that
// serves no MCP: every request to /mcp is answered 401 with a Bearer challenge naming its
// protected resource metadata, /.well-known/oauth-protected-resource/mcp, which names this
// server as the authorization server. Each --point FIELD=URL makes discovery point elsewhere:
// `resource_metadata` (the challenge's), `authorization_servers` (the protected resource
// metadata's), or any field of the authorization server's metadata (`registration_endpoint`,
// `token_endpoint`…), for tests of where Switchboard lets discovery lead it.

import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { parseArgs } from 'node:util';

import Provider, { errors } from 'oidc-provider';

const { values: args } = parseArgs({
  options: {
    port: { type: 'string', default: '0' },
    host: { type: 'string', default: '127.0.0.1' },
    'access-ttl': { type: 'string', default: '3600' },
    resource: { type: 'string', multiple: true, default: [] },
    'protected-resource': { type: 'boolean', default: false },
    point: { type: 'string', multiple: true, default: [] },
  },
});
const pointed = Object.fromEntries(
  args.point.map((assignment) => {
    const separator = assignment.indexOf('=');
    return [assignment.slice(0, separator), assignment.slice(separator + 1)];
  }),
);
const accessTtl = Number(args['access-ttl']);
const extraResources = new Set(args.resource);

// Any MCP server a test starts listens on 127.0.0.1 with a port of its own, so every such URL
// is a resource; other URLs must be named on the command line.
function isKnownResource(indicator) {
  const url = new URL(indicator);
  return (url.protocol === 'http:' && url.hostname === '127.0.0.1') || extraResources.has(indicator);
}

// stdout carries only the ready line, but oidc-provider prints its notices with console.info.
console.info = console.warn;

const introspection = {
  client_id: 'resource-server',
  client_secret: randomBytes(24).toString('base64url'),
};

function makeProvider(issuer) {
  return new Provider(issuer, {
    clients: [
      // It only authenticates at the introspection endpoint: no grants, no redirects.
      { ...introspection, grant_types: [], response_types: [], redirect_uris: [] },
    ],
    // RFC 7591 defaults `grant_types` to authorization_code alone; a client that leaves it out
    // should still be able to refresh.
    clientDefaults: {
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
      id_token_signed_response_alg: 'RS256',
    },
    // Fresh keys and cookie secrets per process, so oidc-provider does not fall back to (and
    // warn about) its shared development ones.
    jwks: { keys: [{ ...rsaJwk(), use: 'sig', alg: 'RS256' }] },
    cookies: { keys: [randomBytes(32).toString('base64url')] },
    findAccount: (ctx, sub) => ({ accountId: sub, claims: () => ({ sub }) }),
    scopes: ['openid', 'offline_access', 'mcp:tools'],
    pkce: { required: () => true },
    // oidc-provider issues refresh tokens only with `offline_access`; an MCP client may ask for
    // just the scopes the protected resource names and still needs to refresh.
    issueRefreshToken: async (ctx, client) => client.grantTypeAllowed('refresh_token'),
    ttl: { AccessToken: accessTtl },
    features: {
      devInteractions: { enabled: true },
      registration: { enabled: true },
      introspection: { enabled: true },
      revocation: { enabled: true },
      resourceIndicators: {
        enabled: true,
        getResourceServerInfo: async (ctx, indicator) => {
          if (!isKnownResource(indicator)) {
            throw new errors.InvalidTarget(`unknown resource ${indicator}`);
          }
          return { scope: 'mcp:tools', accessTokenTTL: accessTtl, accessTokenFormat: 'opaque' };
        },
      },
    },
  });
}

function rsaJwk() {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return privateKey.export({ format: 'jwk' });
}

// The protected MCP resource of --protected-resource, in front of the provider.
function protectedResource(issuer, provider) {
  const providerCallback = provider.callback();
  const metadataPath = '/.well-known/oauth-protected-resource/mcp';
  return (request, response) => {
    const path = new URL(request.url, issuer).pathname;
    if (path === '/mcp') {
      const metadata = pointed.resource_metadata ?? `${issuer}${metadataPath}`;
      response.writeHead(401, { 'www-authenticate': `Bearer resource_metadata="${metadata}"` });
      response.end();
      return;
    }
    if (path === metadataPath) {
      const document = {
        resource: `${issuer}/mcp`,
        authorization_servers: [pointed.authorization_servers ?? issuer],
        scopes_supported: ['mcp:tools'],
      };
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify(document));
      return;
    }
    providerCallback(request, response);
  };
}

// The issuer names the port, so the provider is made once the socket is bound.
const server = createServer();
server.listen(Number(args.port), args.host, () => {
  const host = args.host.includes(':') ? `[${args.host}]` : args.host;
  const issuer = `http://${host}:${server.address().port}`;
  const provider = makeProvider(issuer);
  provider.on('server_error', (ctx, error) => console.error('server_error', error));
  // Fields of the authorization server's metadata that --point sends elsewhere.
  const metadataFields = Object.entries(pointed).filter(
    ([field]) => field !== 'resource_metadata' && field !== 'authorization_servers',
  );
  if (metadataFields.length > 0) {
    provider.use(async (ctx, next) => {
      await next();
      if (ctx.path.startsWith('/.well-known/') && ctx.body && typeof ctx.body === 'object') {
        Object.assign(ctx.body, Object.fromEntries(metadataFields));
      }
    });
  }
  const ready = { issuer, introspection };
  if (args['protected-resource']) {
    server.on('request', protectedResource(issuer, provider));
    ready.url = `${issuer}/mcp`;
  } else {
    server.on('request', provider.callback());
  }
  process.stdout.write(`${JSON.stringify(ready)}\n`);
});
