import { randomUUID } from 'node:crypto';
import { HttpError, readJson, sendJson, type Route } from '../http.js';

export interface Item {
  id: string;
  name: string;
  createdAt: string;
  updatedAt: string;
}

function parseName(body: unknown): string {
  const name = typeof body === 'object' && body !== null ? (body as { name?: unknown }).name : undefined;
  if (typeof name !== 'string' || name.trim() === '') {
    throw new HttpError(422, 'VALIDATION_ERROR', 'Field "name" must be a non-empty string');
  }
  return name.trim();
}

/** A small JSON resource kept in memory: /api/items. Replace the Map with your storage. */
export function apiRoutes(items = new Map<string, Item>()): Route[] {
  const find = (id: string): Item => {
    const item = items.get(id);
    if (!item) throw new HttpError(404, 'NOT_FOUND', `Item ${id} does not exist`);
    return item;
  };

  return [
    {
      method: 'GET',
      path: '/api/items',
      handler: (_req, res) => sendJson(res, 200, { data: [...items.values()] }),
    },
    {
      method: 'POST',
      path: '/api/items',
      handler: async (req, res) => {
        const name = parseName(await readJson(req));
        const now = new Date().toISOString();
        const item: Item = { id: randomUUID(), name, createdAt: now, updatedAt: now };
        items.set(item.id, item);
        res.setHeader('Location', `/api/items/${item.id}`);
        sendJson(res, 201, { data: item });
      },
    },
    {
      method: 'GET',
      path: '/api/items/:id',
      handler: (_req, res, params) => sendJson(res, 200, { data: find(params.id ?? '') }),
    },
    {
      method: 'PUT',
      path: '/api/items/:id',
      handler: async (req, res, params) => {
        const item = find(params.id ?? '');
        const updated: Item = { ...item, name: parseName(await readJson(req)), updatedAt: new Date().toISOString() };
        items.set(item.id, updated);
        sendJson(res, 200, { data: updated });
      },
    },
    {
      method: 'DELETE',
      path: '/api/items/:id',
      handler: (_req, res, params) => {
        items.delete(find(params.id ?? '').id);
        res.writeHead(204).end();
      },
    },
  ];
}
