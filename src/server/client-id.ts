import { createHash } from 'node:crypto';

import type { FastifyRequest } from 'fastify';

import { clientPrefix } from '../core/ip-addresses.js';

/**
 * An opaque id of the network the request came from, to count one download per client per version
 * per day without storing addresses. The network is the client address's IPv4 /24 or IPv6 /56
 * (core/ip-addresses.ts `clientPrefix`): one client holding many addresses (an IPv6 /64 is one
 * machine's, by default) cannot count as many. The address is the connection's, or behind trusted
 * proxies (`trustProxy`, `serve --trust-proxy`) the one the configured hops saw; an
 * `X-Forwarded-For` nobody trusted changes nothing.
 */
export function clientId(request: FastifyRequest): string {
  return createHash('sha256').update(`template-registry client ${clientPrefix(request.ip)}`).digest('base64url').slice(0, 22);
}
