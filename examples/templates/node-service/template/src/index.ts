import { existsSync } from 'node:fs';
import { {{ className | remove: "-" }} } from './app.js';
{%- if features contains "database" %}
import { closeDatabase } from './db.js';
{%- endif %}

if (existsSync('.env')) process.loadEnvFile('.env');

const port = Number(process.env.PORT ?? 3000);
const host = process.env.HOST ?? '0.0.0.0';
{%- if features contains "auth" %}

if (!process.env.API_TOKEN) {
  console.warn('API_TOKEN is not set: every protected route will answer 401.');
}
{%- endif %}

const server = new {{ className | remove: "-" }}().createServer();

server.listen(port, host, () => {
  console.log(`{{ projectName }} listening on http://${host}:${port}`);
});

function shutdown(signal: NodeJS.Signals): void {
  console.log(`${signal} received, shutting down`);
  server.close((error) => {
    if (error) console.error(error);
    {%- if features contains "database" %}
    closeDatabase()
      .catch((dbError: unknown) => console.error(dbError))
      .finally(() => process.exit(error ? 1 : 0));
    {%- else %}
    process.exit(error ? 1 : 0);
    {%- endif %}
  });
  server.closeIdleConnections();
}

process.once('SIGTERM', shutdown);
process.once('SIGINT', shutdown);
