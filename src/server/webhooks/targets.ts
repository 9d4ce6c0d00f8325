/**
 * Where webhooks may be delivered: the one rule `POST /webhooks` applies to a registration and the
 * dispatcher applies to every delivery. A webhook reaches public addresses only: its host is
 * resolved and every address it resolves to is checked; loopback, private-network, link-local
 * (cloud metadata services) and special-purpose addresses are refused unless the operator allows
 * them (`serve --webhook-allow-private <addresses>`). A delivery connects only to the addresses it
 * checked (core/egress.ts), so a host that changes its answer between the registration, the check
 * and the connection (DNS rebinding) reaches nothing refused.
 */
import type { AddressInfo } from 'node:net';

import { allowedAddresses, EgressRefusedError, egressPolicy, guardedRequest, type EgressPolicy, type GuardedRequest, type ResolveHost } from '../../core/egress.js';
import { parseAddressRange } from '../../core/ip-addresses.js';

/** The environment variable of `serve --webhook-allow-private`. */
export const WEBHOOK_ALLOW_PRIVATE_ENV = 'REGISTRY_WEBHOOK_ALLOW_PRIVATE';

export interface WebhookTargetOptions {
  /**
   * Addresses and CIDR ranges (`10.0.0.0/8`, `127.0.0.1`, `fd00::/8`) webhooks may reach although
   * they are not public: the operator's allowlist. Default none.
   */
  allowPrivate?: readonly string[];
  /** Resolves host names; default the system resolver (tests give a table). */
  resolve?: ResolveHost;
}

const HINT = `webhooks reach public addresses only, unless the operator allows others (serve --webhook-allow-private, ${WEBHOOK_ALLOW_PRIVATE_ENV})`;

export class WebhookTargets {
  readonly policy: EgressPolicy;
  /** The delivery's HTTP client: connects only to addresses `policy` allows. */
  readonly request: GuardedRequest;
  readonly #resolve: ResolveHost | undefined;

  /** Throws TypeError naming an entry of `allowPrivate` that is not an address or a CIDR range. */
  constructor(options: WebhookTargetOptions = {}) {
    this.policy = egressPolicy({ allowRanges: (options.allowPrivate ?? []).map(parseAddressRange), hint: HINT });
    this.#resolve = options.resolve;
    this.request = guardedRequest(this.policy, this.#resolve ? { resolve: this.#resolve } : {});
  }

  /**
   * Why a webhook may not be registered with this URL's host (it is, or resolves to, an address
   * that is refused), or undefined. A name that does not resolve now is accepted: every delivery
   * resolves and checks it again.
   */
  async registrationProblem(url: URL): Promise<string | undefined> {
    try {
      await allowedAddresses(url.hostname, this.policy, this.#resolve);
      return undefined;
    } catch (error) {
      return error instanceof EgressRefusedError ? error.message : undefined;
    }
  }
}

// Not delivering to the server itself

function normalizeHost(host: string): string {
  return host.toLowerCase().replace(/^\[|\]$/g, '').replace(/\.$/, '');
}

function portOf(url: URL): number {
  if (url.port !== '') return Number(url.port);
  return url.protocol === 'https:' ? 443 : 80;
}

function isLoopback(host: string): boolean {
  return (
    host === 'localhost' ||
    host.endsWith('.localhost') ||
    host === '::1' ||
    /^127\.\d+\.\d+\.\d+$/.test(host) ||
    /^::ffff:(127\.|7f[0-9a-f]{2}:)/.test(host)
  );
}

const UNSPECIFIED = new Set(['0.0.0.0', '::', '']);

/**
 * True when `target` names this registry server: the origin of its public URL, or an address it
 * listens on (a loopback name for a loopback or wildcard binding on the same port). Host names
 * are not resolved, so this is a guard against mistakes, not a network policy.
 */
export function pointsAtSelf(target: URL, publicUrl: string, listening: readonly (AddressInfo | string)[] = []): boolean {
  const host = normalizeHost(target.hostname);
  const port = portOf(target);
  try {
    const self = new URL(publicUrl);
    if (normalizeHost(self.hostname) === host && portOf(self) === port) return true;
  } catch {
    // no usable public URL
  }
  for (const address of listening) {
    if (typeof address === 'string' || address.port !== port) continue;
    const bound = normalizeHost(address.address);
    if (bound === host) return true;
    if ((UNSPECIFIED.has(bound) || isLoopback(bound)) && (isLoopback(host) || UNSPECIFIED.has(host))) return true;
  }
  return false;
}
