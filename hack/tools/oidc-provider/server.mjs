// An OpenID Provider for tests and demos: the npm package oidc-provider
// (OpenID Certified) with one static client, the development login form
// (any login, any password), short token lifetimes, refresh tokens,
// client_credentials, JWT access tokens and RP-initiated logout.
//
// Never use it for anything but tests: it keeps everything in memory and
// signs in whoever types a name.
//
// Configuration, from the environment:
//   OIDC_PORT               port on 127.0.0.1 (required)
//   OIDC_ISSUER             issuer URL (default http://127.0.0.1:$OIDC_PORT)
//   OIDC_CLIENT_ID          static client id (default portcullis)
//   OIDC_CLIENT_SECRET      its secret (default portcullis-secret)
//   OIDC_REDIRECT_URIS      comma-separated redirect URIs (required)
//   OIDC_POST_LOGOUT_URIS   comma-separated post_logout_redirect_uris
//   OIDC_API_AUDIENCE       resource (aud) of JWT access tokens (default https://api.portcullis.test)
//   OIDC_TOKEN_TTL          seconds an access token and an ID token live (default 60)
//   OIDC_GROUPS             JSON object login -> groups (default: everyone is in "users")
//   OIDC_SIGNING_JWK        private RSA JWK (JSON) to sign with (default: a fresh key)
//   OIDC_MODULES            folder holding node_modules/oidc-provider (default: next to this file)
//
// It prints "listening <issuer>" once it serves requests.
import { createRequire } from 'node:module';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const env = (name, def) => {
  const v = process.env[name];
  if (v !== undefined && v !== '') return v;
  if (def === undefined) {
    console.error(`oidc-provider: ${name} is required`);
    process.exit(2);
  }
  return def;
};
const list = (v) => v.split(',').map((s) => s.trim()).filter(Boolean);

const port = Number(env('OIDC_PORT'));
const issuer = env('OIDC_ISSUER', `http://127.0.0.1:${port}`);
const clientId = env('OIDC_CLIENT_ID', 'portcullis');
const clientSecret = env('OIDC_CLIENT_SECRET', 'portcullis-secret');
const redirectUris = list(env('OIDC_REDIRECT_URIS'));
const postLogoutUris = list(env('OIDC_POST_LOGOUT_URIS', ''));
const apiAudience = env('OIDC_API_AUDIENCE', 'https://api.portcullis.test');
const ttl = Number(env('OIDC_TOKEN_TTL', '60'));
const groups = JSON.parse(env('OIDC_GROUPS', '{}'));
const modules = resolve(env('OIDC_MODULES', dirname(fileURLToPath(import.meta.url))));

// Loaded from the installed copy (.tools/oidc-provider), whose path the
// harness passes: this script lives in the repository, the package not.
const require = createRequire(join(modules, 'node_modules', 'package.json'));
const { default: Provider } = await import(pathToFileURL(require.resolve('oidc-provider')).href);

// The signing key: OIDC_SIGNING_JWK (a private RSA JWK, so that two
// providers can share one), or a fresh key per start.
const jwk = process.env.OIDC_SIGNING_JWK
  ? { use: 'sig', alg: 'RS256', ...JSON.parse(process.env.OIDC_SIGNING_JWK) }
  : { ...generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' }),
      kid: randomBytes(8).toString('hex'), use: 'sig', alg: 'RS256' };

const configuration = {
  clients: [{
    client_id: clientId,
    client_secret: clientSecret,
    redirect_uris: redirectUris,
    post_logout_redirect_uris: postLogoutUris,
    grant_types: ['authorization_code', 'refresh_token', 'client_credentials'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_basic',
  }],
  jwks: { keys: [jwk] },
  cookies: { keys: [randomBytes(32).toString('hex')] },
  claims: {
    openid: ['sub'],
    email: ['email', 'email_verified'],
    profile: ['name'],
    groups: ['groups'],
  },
  scopes: ['openid', 'offline_access', 'email', 'profile', 'groups', 'api'],
  async findAccount(_ctx, id) {
    return {
      accountId: id,
      async claims() {
        return { sub: id, email: `${id}@example.test`, email_verified: true, name: id, groups: groups[id] ?? ['users'] };
      },
    };
  },
  features: {
    devInteractions: { enabled: true },
    clientCredentials: { enabled: true },
    rpInitiatedLogout: { enabled: true },
    // Access tokens are JWTs (RFC 9068) for one API audience, so that
    // relying parties can validate them as bearer tokens.
    resourceIndicators: {
      enabled: true,
      defaultResource: async () => apiAudience,
      useGrantedResource: async () => true,
      getResourceServerInfo: async (_ctx, resource) => {
        if (resource !== apiAudience) throw new Provider.errors.InvalidTarget();
        return { scope: 'api', audience: apiAudience, accessTokenTTL: ttl, accessTokenFormat: 'jwt', jwt: { sign: { alg: 'RS256' } } };
      },
    },
  },
  // Refresh tokens for every code grant of a client allowed to refresh,
  // without the consent dance offline_access needs by default.
  issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
  pkce: { required: () => true },
  ttl: {
    AccessToken: ttl,
    ClientCredentials: ttl,
    IdToken: ttl,
    AuthorizationCode: 60,
    RefreshToken: 3600,
    Interaction: 600,
    Session: 3600,
    Grant: 3600,
  },
};

const provider = new Provider(issuer, configuration);
provider.on('server_error', (_ctx, err) => console.error('server_error', err));
provider.listen(port, '127.0.0.1', () => console.log(`listening ${issuer}`));
for (const sig of ['SIGTERM', 'SIGINT']) process.on(sig, () => process.exit(0));
