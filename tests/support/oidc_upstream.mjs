// An MCP server behind OAuth whose authorization server is `oidc-provider`
// (a maintained, certified OpenID/OAuth library nobody here wrote), on one
// loopback port, for tests/upstream_oauth_oidc_provider.rs: proof that
// Quiver's grant flow is not tuned to the project's own test server.
//
// The provider runs with dynamic client registration, PKCE, RFC 8707
// resource indicators (tokens bound to this server's /mcp), refresh tokens
// that rotate, and RFC 9207 `iss` in the authorization response. Sign-in
// and consent complete at once as the person the test names. The MCP
// endpoint accepts only a live access token the provider issued for it.
//
// Test controls (loopback): POST /test/person/NAME (who signs in next),
// POST /test/ttl/SECONDS (life of access tokens issued from now on),
// POST /test/revoke-access (the access tokens seen so far stop working),
// POST /test/revoke-grants (every grant ends: refresh tokens too),
// GET /test/stats. Prints `READY <mcp url>` once listening.

import http from 'node:http';
import { pathToFileURL } from 'node:url';

const { default: Provider, errors } = await import(
  pathToFileURL(process.env.OIDC_PROVIDER_MODULE).href
);

const server = http.createServer();
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const base = `http://127.0.0.1:${server.address().port}`;
const resource = `${base}/mcp`;
const control = { person: 'alice', ttl: 3600, refreshes: 0, toolCalls: 0, refused: 0 };
const seenTokens = new Set();
const grants = new Set();

const provider = new Provider(base, {
  findAccount: async (_ctx, id) => ({ accountId: id, claims: async () => ({ sub: id }) }),
  scopes: ['openid', 'offline_access', 'issues:read'],
  features: {
    devInteractions: { enabled: false },
    registration: { enabled: true },
    revocation: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => resource,
      useGrantedResource: () => true,
      getResourceServerInfo: (_ctx, indicator) => {
        if (indicator !== resource) {
          throw new errors.InvalidTarget();
        }
        return {
          scope: 'issues:read',
          audience: resource,
          accessTokenTTL: control.ttl,
          accessTokenFormat: 'opaque',
        };
      },
    },
  },
  // Refresh tokens for every client allowed the grant (not only with
  // offline_access).
  issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
  rotateRefreshToken: true,
  interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
});
provider.on('grant.success', (ctx) => {
  if (ctx.oidc.params.grant_type === 'refresh_token') {
    control.refreshes += 1;
  }
});
provider.on('grant.saved', (grant) => grants.add(grant.jti));

const json = (res, status, body, headers = {}) => {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
};

const readBody = (req) =>
  new Promise((resolve) => {
    let body = '';
    req.on('data', (chunk) => {
      body += chunk;
    });
    req.on('end', () => resolve(body));
  });

// Sign-in and consent, completed at once as `control.person`.
async function interact(req, res) {
  const details = await provider.interactionDetails(req, res);
  const { prompt, params, session } = details;
  let result;
  if (prompt.name === 'login') {
    result = { login: { accountId: control.person } };
  } else {
    const grant = details.grantId
      ? await provider.Grant.find(details.grantId)
      : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
    const missing = prompt.details;
    if (missing.missingOIDCScope) {
      grant.addOIDCScope(missing.missingOIDCScope.join(' '));
    }
    for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes || {})) {
      grant.addResourceScope(indicator, scopes.join(' '));
    }
    result = { consent: { grantId: await grant.save() } };
  }
  await provider.interactionFinished(req, res, result, { mergeWithLastSubmission: false });
}

// The token's holder, if it is a live access token for this server.
async function holder(req) {
  const header = req.headers.authorization || '';
  if (!header.startsWith('Bearer ')) {
    return null;
  }
  const value = header.slice('Bearer '.length);
  const token = await provider.AccessToken.find(value);
  if (!token || token.isExpired || token.aud !== resource) {
    return null;
  }
  if (!(await provider.Grant.find(token.grantId))) {
    return null;
  }
  seenTokens.add(value);
  return token.accountId;
}

async function mcp(req, res) {
  const who = await holder(req);
  if (!who) {
    control.refused += 1;
    res.writeHead(401, {
      'www-authenticate': `Bearer resource_metadata="${base}/.well-known/oauth-protected-resource/mcp"`,
    });
    res.end();
    return;
  }
  const message = JSON.parse((await readBody(req)) || '{}');
  if (message.id === undefined) {
    res.writeHead(202);
    res.end();
    return;
  }
  const answer = (result) => json(res, 200, { jsonrpc: '2.0', id: message.id, result });
  switch (message.method) {
    case 'initialize':
      return answer({
        protocolVersion: '2025-11-25',
        capabilities: { tools: {} },
        serverInfo: { name: 'issues', version: '1.0.0' },
      });
    case 'tools/list':
      return answer({
        tools: [
          {
            name: 'whoami',
            description: 'Says who the caller is, as the issue tracker sees it.',
            inputSchema: { type: 'object', properties: {} },
          },
        ],
      });
    case 'tools/call':
      control.toolCalls += 1;
      return answer({ content: [{ type: 'text', text: `user ${who}, via oidc-provider` }] });
    default:
      return json(res, 200, {
        jsonrpc: '2.0',
        id: message.id,
        error: { code: -32601, message: 'method not found' },
      });
  }
}

const callback = provider.callback();
server.on('request', async (req, res) => {
  try {
    const path = req.url.split('?')[0];
    if (path.startsWith('/.well-known/oauth-protected-resource')) {
      return json(res, 200, {
        resource,
        authorization_servers: [base],
        scopes_supported: ['issues:read'],
      });
    }
    if (path === '/mcp') {
      if (req.method !== 'POST') {
        res.writeHead(405);
        return res.end();
      }
      return await mcp(req, res);
    }
    if (path.startsWith('/interaction/')) {
      return await interact(req, res);
    }
    if (path.startsWith('/test/')) {
      const [, , what, value] = path.split('/');
      if (what === 'person') control.person = value;
      if (what === 'ttl') control.ttl = Number(value);
      if (what === 'revoke-access') {
        for (const value of seenTokens) {
          const token = await provider.AccessToken.find(value);
          if (token) await token.destroy();
        }
      }
      if (what === 'revoke-grants') {
        for (const jti of grants) {
          const grant = await provider.Grant.find(jti);
          if (grant) await grant.destroy();
        }
      }
      return json(res, 200, control);
    }
    return callback(req, res);
  } catch (error) {
    json(res, 500, { error: String(error) });
  }
});

process.stdout.write(`READY ${resource}\n`);
// Ends with the test (its standard input closes).
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
