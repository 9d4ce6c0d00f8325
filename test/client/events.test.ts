import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';

import { DEFAULT_EVENT_TIMEOUT_MS, doNotTrackFrom, eventsUrl, sendAnalyticsEvent } from '../../src/client/index.js';
import type { GenerationEvent } from '../../src/core/schema-types.js';

interface Received {
  method: string;
  url: string;
  contentType: string | undefined;
  body: string;
}

const servers: Server[] = [];

afterEach(async () => {
  await Promise.all(
    servers.splice(0).map((server) => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(resolve));
    }),
  );
});

/** A local HTTP server: `answer` replies to each request; resolves to its base URL and the requests received. */
async function listen(answer: (request: IncomingMessage, response: ServerResponse) => void): Promise<{ base: string; received: Received[] }> {
  const received: Received[] = [];
  const server = createServer((request, response) => {
    let body = '';
    request.setEncoding('utf8');
    request.on('data', (chunk: string) => (body += chunk));
    request.on('end', () => {
      received.push({ method: request.method ?? '', url: request.url ?? '', contentType: request.headers['content-type'], body });
      answer(request, response);
    });
  });
  servers.push(server);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, received };
}

const event: GenerationEvent = {
  type: 'generation',
  templateId: 'node-service',
  version: '1.2.0',
  success: true,
  duration: 1234,
  timestamp: '2026-05-01T10:00:00.000Z',
};

describe('eventsUrl', () => {
  it('puts the events route beside the registry document', () => {
    expect(eventsUrl('https://registry.example.com/registry.json')).toBe('https://registry.example.com/events');
    expect(eventsUrl('https://example.com/api/registry.json?x=1')).toBe('https://example.com/api/events');
    expect(eventsUrl('https://example.com/api/')).toBe('https://example.com/api/events');
  });
});

describe('sendAnalyticsEvent', () => {
  it('posts the event as JSON to the events route of the registry', async () => {
    const { base, received } = await listen((_request, response) => response.writeHead(201, { 'content-type': 'application/json' }).end('{"success":true}'));
    const delivery = await sendAnalyticsEvent(`${base}/registry.json`, event);
    expect(delivery).toEqual({ delivered: true, status: 201 });
    expect(received).toEqual([{ method: 'POST', url: '/events', contentType: 'application/json', body: JSON.stringify(event) }]);
  });

  it('does not throw for a registry without an events route (a static registry answers 404)', async () => {
    const { base, received } = await listen((_request, response) => response.writeHead(404).end('not found'));
    expect(await sendAnalyticsEvent(`${base}/registry.json`, event)).toEqual({ delivered: false, status: 404 });
    expect(received).toHaveLength(1);
  });

  it('does not throw for a registry that is down', async () => {
    const { base } = await listen((_request, response) => response.end());
    await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
    const delivery = await sendAnalyticsEvent(`${base}/registry.json`, event);
    expect(delivery.delivered).toBe(false);
    expect(delivery).toHaveProperty('reason');
  });

  it('gives up on a registry that does not answer within the time limit (3 s by default), without throwing', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      const pending: ServerResponse[] = [];
      let arrived = (): void => undefined;
      const asked = new Promise<void>((resolve) => (arrived = resolve));
      const { base, received } = await listen((_request, response) => {
        pending.push(response);
        arrived();
      });
      let settled = false;
      const sending = sendAnalyticsEvent(`${base}/registry.json`, event).finally(() => (settled = true));
      await asked;
      await vi.advanceTimersByTimeAsync(DEFAULT_EVENT_TIMEOUT_MS - 1);
      expect(settled).toBe(false);
      await vi.advanceTimersByTimeAsync(1);
      const delivery = await sending;
      expect(delivery).toEqual({ delivered: false, reason: expect.stringContaining(`within ${DEFAULT_EVENT_TIMEOUT_MS} ms`) });
      expect(received).toHaveLength(1);
      for (const response of pending) response.end();
    } finally {
      vi.useRealTimers();
    }
  });

  it('sends nothing when the user asked not to be tracked', async () => {
    const { base, received } = await listen((_request, response) => response.writeHead(201).end());
    expect(await sendAnalyticsEvent(`${base}/registry.json`, event, { doNotTrack: doNotTrackFrom({ DO_NOT_TRACK: '1' }) })).toEqual({
      delivered: false,
      skipped: true,
    });
    expect(received).toEqual([]);
  });
});

describe('doNotTrackFrom', () => {
  it('reads DO_NOT_TRACK=1 from the environment it is given', () => {
    expect(doNotTrackFrom({ DO_NOT_TRACK: '1' })).toBe(true);
    expect(doNotTrackFrom({ DO_NOT_TRACK: '0' })).toBe(false);
    expect(doNotTrackFrom({})).toBe(false);
  });
});
