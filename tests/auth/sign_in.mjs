// Signs in at tests/auth/oidc_server.mjs the way a person in a browser would, without a browser:
// fast sign-ins for Switchboard's tests.
//
//   node tests/auth/sign_in.mjs AUTHORIZATION_URL [--login NAME] [--no-follow-callback]
//
// It requests AUTHORIZATION_URL and follows redirects itself, keeping the provider's cookies,
// fills in oidc-provider's development login form (login NAME, default "alice", which becomes the
// token's subject; any password) and submits its consent form, until a redirect leaves the
// origin of AUTHORIZATION_URL: that is the client's redirect_uri with the authorization response
// (`code`, `state`, `iss`, or `error`). It then requests that callback URL too, as the browser
// would, so the client's callback handler runs, and prints one line on stdout:
//   {"callback":"<the full callback URL>","status":<its HTTP status>,"body":"<its first 500 characters>"}
// With --no-follow-callback it does not request it and prints {"callback":"<the full callback URL>"}.
// When the flow breaks (an error page, an unexpected page, too many steps) it says why on stderr
// and exits with status 1.

import { parseArgs } from 'node:util';

const MAX_STEPS = 20;

const { values: args, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    login: { type: 'string', default: 'alice' },
    'no-follow-callback': { type: 'boolean', default: false },
  },
});
if (positionals.length !== 1) {
  fail('usage: node tests/auth/sign_in.mjs AUTHORIZATION_URL [--login NAME] [--no-follow-callback]');
}
const authorizationUrl = new URL(positionals[0]);

function fail(message) {
  process.stderr.write(`sign_in: ${message}\n`);
  process.exit(1);
}

// The provider scopes its interaction cookies to one path each (/interaction/UID, /auth/UID)
// and clears them when done, so the jar keeps name, path and deletion as a browser does.
class CookieJar {
  #cookies = new Map(); // `${path} ${name}` -> {name, value, path}

  store(response, url) {
    for (const header of response.headers.getSetCookie()) {
      const [pair, ...attributes] = header.split(';').map((part) => part.trim());
      const separator = pair.indexOf('=');
      const name = pair.slice(0, separator);
      const value = pair.slice(separator + 1);
      let path = url.pathname.replace(/\/[^/]*$/, '') || '/';
      let expired = false;
      for (const attribute of attributes) {
        const [key, attributeValue = ''] = attribute.split('=');
        const lowerKey = key.toLowerCase();
        if (lowerKey === 'path') path = attributeValue;
        if (lowerKey === 'max-age' && Number(attributeValue) <= 0) expired = true;
        if (lowerKey === 'expires' && Date.parse(attributeValue) <= Date.now()) expired = true;
      }
      const key = `${path} ${name}`;
      if (expired) this.#cookies.delete(key);
      else this.#cookies.set(key, { name, value, path });
    }
  }

  headerFor(url) {
    return [...this.#cookies.values()]
      .filter(({ path }) => url.pathname === path || url.pathname.startsWith(path.endsWith('/') ? path : `${path}/`))
      .map(({ name, value }) => `${name}=${value}`)
      .join('; ');
  }
}

const jar = new CookieJar();

async function fetchOrFail(url, init) {
  try {
    return await fetch(url, { ...init, redirect: 'manual' });
  } catch (error) {
    return fail(`cannot request ${url}: ${error.cause?.message ?? error.message}`);
  }
}

async function request(url, init = {}) {
  const response = await fetchOrFail(url, { ...init, headers: { ...init.headers, cookie: jar.headerFor(url) } });
  jar.store(response, url);
  return response;
}

// The dev pages hold one form each: the login form (hidden `prompt=login`, `login`,
// `password`) or the consent form (hidden `prompt=consent`); the action is the submit URL.
function formSubmission(html, pageUrl) {
  const form = html.match(/<form[^>]*action="([^"]+)"[^>]*>([\s\S]*?)<\/form>/);
  if (!form) return undefined;
  const fields = new URLSearchParams();
  for (const input of form[2].matchAll(/<input[^>]*>/g)) {
    const name = input[0].match(/name="([^"]*)"/)?.[1];
    const value = input[0].match(/value="([^"]*)"/)?.[1] ?? '';
    if (name === 'login') fields.set(name, args.login);
    else if (name === 'password') fields.set(name, 'any password');
    else if (name !== undefined) fields.set(name, value);
  }
  return { url: new URL(form[1].replaceAll('&amp;', '&'), pageUrl), body: fields };
}

// oidc-provider's error page shows the error and its description in <pre> blocks.
function describePage(html) {
  const blocks = [...html.matchAll(/<pre>([\s\S]*?)<\/pre>/g)].map((match) => match[1]);
  const text = blocks.length > 0 ? blocks.join(' ') : html;
  return text.replace(/<[^>]*>/g, '').replace(/\s+/g, ' ').trim().slice(0, 300);
}

let response = await request(authorizationUrl);
let url = authorizationUrl;
for (let step = 0; ; step += 1) {
  if (step === MAX_STEPS) fail(`no callback after ${MAX_STEPS} steps (last at ${url})`);
  if (response.status >= 300 && response.status < 400) {
    const next = new URL(response.headers.get('location'), url);
    if (next.origin !== authorizationUrl.origin) {
      if (args['no-follow-callback']) {
        process.stdout.write(`${JSON.stringify({ callback: next.href })}\n`);
        process.exit(0);
      }
      const callback = await fetchOrFail(next, {});
      const body = (await callback.text()).slice(0, 500);
      process.stdout.write(`${JSON.stringify({ callback: next.href, status: callback.status, body })}\n`);
      process.exit(0);
    }
    url = next;
    response = await request(url);
    continue;
  }
  const html = await response.text();
  if (response.status !== 200) fail(`HTTP ${response.status} at ${url.origin}${url.pathname}: ${describePage(html)}`);
  const submission = formSubmission(html, url);
  if (!submission) fail(`a page without a form at ${url.origin}${url.pathname}: ${describePage(html)}`);
  url = submission.url;
  response = await request(url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: submission.body.toString(),
  });
}
