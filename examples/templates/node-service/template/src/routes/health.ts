{% if features contains "database" -%}
import { checkDatabase } from '../db.js';
{% endif -%}
import { sendJson, type Route } from '../http.js';

/** Liveness (/health) and readiness (/ready) probes; both are public. */
export function healthRoutes(): Route[] {
  return [
    {
      method: 'GET',
      path: '/health',
      public: true,
      handler: (_req, res) => sendJson(res, 200, { status: 'ok', uptime: process.uptime() }),
    },
    {
      method: 'GET',
      path: '/ready',
      public: true,
      {%- if features contains "database" %}
      handler: async (_req, res) => {
        try {
          await checkDatabase();
          sendJson(res, 200, { status: 'ready' });
        } catch (error) {
          console.error('Database check failed:', error);
          sendJson(res, 503, { status: 'unavailable', reason: 'database' });
        }
      },
      {%- else %}
      handler: (_req, res) => sendJson(res, 200, { status: 'ready' }),
      {%- endif %}
    },
  ];
}
