/**
 * Which webhook URLs the gateway will post to (contract section 9): https://, or http:// for a public host, and never
 * to a host that is or resolves to a loopback, private, link-local or otherwise internal address, unless
 * WEBHOOK_ALLOW_PRIVATE_URLS allows it. The URL is checked when an endpoint is created or changed, and again at every
 * delivery, where guardedLookup also checks the addresses the connection is actually made to.
 */
// Called through the module object, at call time, so that a test can stand in for DNS (mock.method(dns, 'lookup')).
import dns from 'node:dns';
import type { LookupAddress } from 'node:dns';
import type { LookupFunction } from 'node:net';
import { isIP } from 'node:net';
import { isInternalAddress, isInternalHostname } from '../domain/internal-addresses.ts';

export const MAX_WEBHOOK_URL_LENGTH = 2048;

/** Resolves a host name to its addresses, as text. */
export type Resolver = (host: string) => Promise<string[]>;

/** A refusal says why, and whether the host is internal (which WEBHOOK_ALLOW_PRIVATE_URLS would allow). */
export type WebhookUrlCheck = { ok: true; url: URL } | { ok: false; reason: string; internal: boolean };

export type WebhookUrlOptions = {
  /** WEBHOOK_ALLOW_PRIVATE_URLS: internal hosts are allowed (local development and tests). */
  allowPrivate: boolean;
  /**
   * Resolves host names to check the addresses they lead to; the system resolver by default. null checks only what
   * the URL itself shows (a literal address, an internal name), for a caller that checks addresses when it connects.
   */
  resolve?: Resolver | null;
};

export const systemResolver: Resolver = async (host) => {
  const addresses = await dns.promises.lookup(host, { all: true, verbatim: true });
  return addresses.map((entry) => entry.address);
};

/**
 * Checks a webhook URL. The reason of a refusal is a sentence for the integrator (the detail of a 400
 * webhook_url_not_allowed, or the error of a refused delivery).
 */
export async function checkWebhookUrl(raw: string, options: WebhookUrlOptions): Promise<WebhookUrlCheck> {
  if (raw.length > MAX_WEBHOOK_URL_LENGTH) {
    return refuse(`The webhook URL is longer than ${MAX_WEBHOOK_URL_LENGTH} characters.`);
  }
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return refuse('The webhook URL is not a valid absolute URL.');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    return refuse(`The webhook URL must use https:// (or http:// for a public host), not ${url.protocol}//.`);
  }
  if (url.username !== '' || url.password !== '') {
    return refuse('The webhook URL must not contain a username or password.');
  }
  if (options.allowPrivate) return { ok: true, url };

  // From here on, a URL is allowed only for a public host, which is also what makes http:// acceptable.
  // The URL parser has already normalised the host: "2130706433", "0x7f.1" and "0177.0.0.1" are all 127.0.0.1 by now,
  // and an IPv6 host is bracketed and compressed ("[::ffff:7f00:1]").
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  if (isIP(host) !== 0) {
    if (!isInternalAddress(host)) return { ok: true, url };
    return refuseInternal(`The webhook URL's host ${host} is a loopback, private, link-local or otherwise internal address.`);
  }
  if (isInternalHostname(host)) {
    return refuseInternal(`The webhook URL's host ${host} is a local or internal name; use a public host name.`);
  }

  const resolve = options.resolve === undefined ? systemResolver : options.resolve;
  if (resolve === null) return { ok: true, url };
  let addresses: string[];
  try {
    addresses = await resolve(host);
  } catch {
    // A name that does not resolve (yet, or here: a sandbox has no DNS) is accepted. Nothing can be reached through
    // it now, and every delivery resolves it again and refuses internal addresses before connecting (guardedLookup).
    return { ok: true, url };
  }
  const internal = addresses.find((address) => isInternalAddress(address));
  if (internal !== undefined) {
    return refuseInternal(
      `The webhook URL's host ${host} resolves to ${internal}, a loopback, private, link-local or otherwise internal address.`,
    );
  }
  return { ok: true, url };
}

/** The code of the error guardedLookup fails with when a host resolves to an internal address. */
export const WEBHOOK_ADDRESS_REFUSED = 'EWEBHOOKADDRESS';

/**
 * A `lookup` for http.request / net.connect that resolves with dns.lookup and, unless allowPrivate, fails with an
 * Error whose code is EWEBHOOKADDRESS when any address the host resolves to is internal. The connection is made to the
 * very addresses checked here, so a DNS answer that changes after the URL was checked (DNS rebinding) cannot lead it
 * to an internal address.
 *
 * Node does not call `lookup` for a literal IP address: check the URL with checkWebhookUrl first.
 */
export function guardedLookup(allowPrivate: boolean): LookupFunction {
  return (hostname, options, callback) => {
    // Always ask for every address, to check them all; answer in the form the caller asked for.
    dns.lookup(hostname, { ...options, all: true }, (error: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => {
      if (error !== null) {
        callback(error, options.all === true ? [] : '');
        return;
      }
      const internal = allowPrivate ? undefined : addresses.find((entry) => isInternalAddress(entry.address));
      if (internal !== undefined) {
        callback(refusedAddress(hostname, internal.address), options.all === true ? [] : '');
        return;
      }
      if (options.all === true) {
        callback(null, addresses);
        return;
      }
      const first = addresses[0];
      if (first === undefined) {
        callback(notFound(hostname), '');
        return;
      }
      callback(null, first.address, first.family);
    });
  };
}

function refuse(reason: string): WebhookUrlCheck {
  return { ok: false, reason, internal: false };
}

function refuseInternal(reason: string): WebhookUrlCheck {
  return { ok: false, reason, internal: true };
}

function refusedAddress(hostname: string, address: string): NodeJS.ErrnoException {
  const error: NodeJS.ErrnoException = new Error(
    `The webhook host ${hostname} resolves to ${address}, a loopback, private, link-local or otherwise internal address.`,
  );
  error.code = WEBHOOK_ADDRESS_REFUSED;
  return error;
}

function notFound(hostname: string): NodeJS.ErrnoException {
  const error: NodeJS.ErrnoException = new Error(`getaddrinfo ENOTFOUND ${hostname}`);
  error.code = 'ENOTFOUND';
  return error;
}
