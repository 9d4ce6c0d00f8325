/**
 * Where an outgoing request made for someone else may connect (a webhook the registry delivers, an
 * archive a registry document names): an `EgressPolicy` says which addresses are allowed, and
 * `guardedRequest` connects only to addresses the policy allowed.
 *
 * A host name is resolved once per connection, every address it resolves to is checked (one
 * refused address refuses the host), and the socket connects to one of those checked addresses:
 * the resolution is done inside the connection's own `lookup`, so no second resolution happens
 * between the check and the connect, and a name that changes its answer (DNS rebinding) cannot
 * slip a refused address in. A literal address in the URL is checked as it is. Connections are
 * never pooled (`agent: false`): a socket opened by anything else is never reused.
 */
import type { LookupAddress } from 'node:dns';
import type { IncomingMessage } from 'node:http';
import type { LookupFunction } from 'node:net';
import { Readable } from 'node:stream';

import { ADDRESS_KIND_TEXT, addressKind, bareAddress, inAddressRange, isIpAddress, type AddressKind, type AddressRange } from './ip-addresses.js';

/** Every address a host name resolves to (the DNS, or a test's table). */
export type ResolveHost = (hostname: string) => Promise<LookupAddress[]>;

/** The system resolver (`dns.lookup`, what every other connection of the process uses), all addresses. */
export const resolveWithSystem: ResolveHost = (hostname) =>
  new Promise((resolve, reject) => {
    // Node's network modules (dns, http, https and what they load) are loaded by the first request, not at import.
    process.getBuiltinModule('node:dns').lookup(hostname, { all: true, verbatim: true }, (error, addresses) => (error ? reject(error) : resolve(addresses)));
  });

/** Which addresses a connection may reach. */
export interface EgressPolicy {
  /** Why `address` may not be connected to, as what it is (`a loopback address: ...`), or undefined when it may. */
  refusal(address: string): string | undefined;
}

export interface EgressPolicyOptions {
  /** The kinds of address allowed (default: public only). */
  allowKinds?: Iterable<AddressKind>;
  /** Addresses and ranges allowed whatever their kind (an operator's allowlist). */
  allowRanges?: readonly AddressRange[];
  /** Said after the reason of a refusal: how to allow it, or why it is refused (`webhooks reach public addresses only`). */
  hint?: string;
}

export function egressPolicy(options: EgressPolicyOptions = {}): EgressPolicy {
  const kinds = new Set<AddressKind>(options.allowKinds ?? ['public']);
  const ranges = options.allowRanges ?? [];
  return {
    refusal(address) {
      const bare = bareAddress(address);
      let kind: AddressKind;
      try {
        kind = addressKind(bare);
      } catch {
        return 'not an IP address';
      }
      if (kinds.has(kind) || ranges.some((range) => inAddressRange(bare, range))) return undefined;
      return `${ADDRESS_KIND_TEXT[kind]}${options.hint ? `: ${options.hint}` : ''}`;
    },
  };
}

/** A connection the policy refused: `host` is, or resolves to, an address it does not allow. */
export class EgressRefusedError extends Error {
  override readonly name = 'EgressRefusedError';
  readonly code = 'EGRESS_REFUSED';

  constructor(
    readonly host: string,
    readonly address: string,
    readonly reason: string,
  ) {
    super(isIpAddress(host) ? `${address} is ${reason}` : `${host} resolves to ${address}, ${reason}`);
  }
}

/**
 * The addresses `host` (a name or a literal address, brackets allowed) leads to, every one allowed
 * by `policy`; throws EgressRefusedError when one is not, and the resolver's error (ENOTFOUND...)
 * when the name does not resolve.
 */
export async function allowedAddresses(host: string, policy: EgressPolicy, resolve: ResolveHost = resolveWithSystem): Promise<LookupAddress[]> {
  const bare = bareAddress(host);
  const addresses = isIpAddress(bare) ? [{ address: bare, family: bare.includes(':') ? 6 : 4 }] : await resolve(bare);
  if (addresses.length === 0) throw Object.assign(new Error(`${host} does not resolve to any address`), { code: 'ENOTFOUND' });
  for (const { address } of addresses) {
    const reason = policy.refusal(address);
    if (reason !== undefined) throw new EgressRefusedError(bare, address, reason);
  }
  return addresses;
}

/** A `lookup` for sockets: resolves with `resolve`, refuses the host unless every address passes `policy`, and hands back only those. */
function guardedLookup(policy: EgressPolicy, resolve: ResolveHost = resolveWithSystem): LookupFunction {
  return (hostname, options, callback) => {
    allowedAddresses(hostname, policy, resolve).then(
      (addresses) => {
        const family = typeof options.family === 'number' ? options.family : options.family === 'IPv6' ? 6 : options.family === 'IPv4' ? 4 : 0;
        const usable = family === 0 ? addresses : addresses.filter((entry) => entry.family === family);
        const first = usable[0];
        if (!first) {
          callback(Object.assign(new Error(`${hostname} has no IPv${family} address`), { code: 'ENOTFOUND' }), '', 0);
          return;
        }
        if (options.all) (callback as unknown as (error: null, addresses: LookupAddress[]) => void)(null, usable);
        else callback(null, first.address, first.family);
      },
      (error: unknown) => callback(error as NodeJS.ErrnoException, '', 0),
    );
  };
}

export interface GuardedRequestInit {
  method?: string;
  headers?: Record<string, string>;
  body?: Buffer | string;
  signal?: AbortSignal;
  /** Redirects are never followed: an answer is returned as it is (`manual` says so, as to fetch). */
  redirect?: 'manual';
}

/** A request through the policy: what `fetch` does, without following redirects or pooling connections. */
export type GuardedRequest = (url: string | URL, init?: GuardedRequestInit) => Promise<Response>;

function answerOf(message: IncomingMessage, method: string): Response {
  const headers = new Headers();
  for (const [name, value] of Object.entries(message.headers)) {
    if (value === undefined) continue;
    for (const one of Array.isArray(value) ? value : [value]) headers.append(name, one);
  }
  const status = message.statusCode ?? 0;
  const bodiless = method === 'HEAD' || status === 204 || status === 205 || status === 304;
  if (bodiless) message.resume();
  // Node's web stream and the DOM lib's ReadableStream are the same object under two type names.
  const body = bodiless ? null : (Readable.toWeb(message) as unknown as ReadableStream<Uint8Array>);
  return new Response(body, { status, statusText: message.statusMessage ?? '', headers });
}

/**
 * An HTTP(S) client that connects only where `policy` allows: the answer is a `Response` (its
 * body streamed), redirects are answered as they are (never followed). Rejects with
 * EgressRefusedError before anything is sent when the host is, or resolves to, a refused address;
 * with the network's error otherwise.
 */
export function guardedRequest(policy: EgressPolicy, options: { resolve?: ResolveHost } = {}): GuardedRequest {
  const lookup = guardedLookup(policy, options.resolve);
  return async (input, init = {}) => {
    const url = typeof input === 'string' ? new URL(input) : input;
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new TypeError(`${url.protocol} URLs cannot be requested`);
    // A literal address never goes through `lookup`: it is checked here.
    if (isIpAddress(url.hostname)) await allowedAddresses(url.hostname, policy);
    const method = (init.method ?? 'GET').toUpperCase();
    const headers: Record<string, string> = { ...init.headers };
    // A body of known length is sent with its length, as fetch does (not chunked).
    if (init.body !== undefined && !Object.keys(headers).some((name) => name.toLowerCase() === 'content-length')) {
      headers['Content-Length'] = String(Buffer.byteLength(init.body));
    }
    const send = url.protocol === 'https:' ? process.getBuiltinModule('node:https').request : process.getBuiltinModule('node:http').request;
    return new Promise<Response>((resolve, reject) => {
      const request = send(url, { method, headers, agent: false, lookup, ...(init.signal ? { signal: init.signal } : {}) }, (message) => {
        try {
          resolve(answerOf(message, method));
        } catch (error) {
          message.destroy();
          reject(error instanceof Error ? error : new Error(String(error)));
        }
      });
      request.on('error', reject);
      request.end(init.body);
    });
  };
}
