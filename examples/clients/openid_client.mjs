// Sign in with Credits ID from Node.js with openid-client 6: discovery, PKCE (S256), state and
// nonce, the ID token's signature verified against the provider's key set, userinfo, refresh.
//
//   npm install openid-client@6
//
// This file is run by tests/interop/test_openid_client.py and shown in docs/integrating.md.
import * as client from 'openid-client'

export async function discover(issuer, clientId, clientSecret, { allowHttp = false } = {}) {
  const execute = [client.enableNonRepudiationChecks] // verify ID token signatures (jwks_uri)
  if (allowHttp) execute.push(client.allowInsecureRequests) // only for a local http://127.0.0.1 issuer
  return client.discovery(
    new URL(issuer),
    clientId,
    undefined,
    client.ClientSecretBasic(clientSecret),
    { execute },
  )
}

// The URL to send the browser to, and what to keep in the user's session until the callback.
export async function startSignIn(config, redirectUri, scope = 'openid profile email credits:read offline_access') {
  const codeVerifier = client.randomPKCECodeVerifier()
  const codeChallenge = await client.calculatePKCECodeChallenge(codeVerifier)
  const state = client.randomState()
  const nonce = client.randomNonce()
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: redirectUri,
    scope,
    code_challenge: codeChallenge,
    code_challenge_method: 'S256',
    state,
    nonce,
  })
  return { url: url.href, pending: { codeVerifier, state, nonce } }
}

// At the redirect URI: openid-client checks state and iss, redeems the code with the verifier,
// and validates the ID token (signature, iss, aud, exp, iat, nonce) before returning.
export async function finishSignIn(config, callbackUrl, pending) {
  const tokens = await client.authorizationCodeGrant(config, new URL(callbackUrl), {
    pkceCodeVerifier: pending.codeVerifier,
    expectedState: pending.state,
    expectedNonce: pending.nonce,
  })
  const claims = tokens.claims()
  const userinfo = await client.fetchUserInfo(config, tokens.access_token, claims.sub)
  return { tokens, claims, userinfo }
}

// A new access token and a new refresh token: the old refresh token is spent, store the new one.
export async function refresh(config, refreshToken) {
  const tokens = await client.refreshTokenGrant(config, refreshToken)
  return { tokens, claims: tokens.claims() }
}
