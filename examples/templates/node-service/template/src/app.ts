import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
{%- if features contains "auth" %}
import { isAuthorized } from './auth.js';
{%- endif %}
import { HttpError, matchPath, sendJson, type Route } from './http.js';
{%- if features contains "api" %}
import { apiRoutes } from './routes/api.js';
{%- endif %}
import { healthRoutes } from './routes/health.js';

/** The {{ projectName }} application: routes requests to handlers and turns errors into JSON. */
export class {{ className | remove: "-" }} {
  readonly routes: Route[];

  constructor(routes: Route[] = [...healthRoutes(){% if features contains "api" %}, ...apiRoutes(){% endif %}]) {
    this.routes = routes;
  }

  /** Request listener for node:http. */
  readonly handle = (req: IncomingMessage, res: ServerResponse): void => {
    this.dispatch(req, res).catch((error: unknown) => {
      if (error instanceof HttpError) {
        sendJson(res, error.status, { error: { code: error.code, message: error.message } });
      } else if (!res.headersSent) {
        console.error(error);
        sendJson(res, 500, { error: { code: 'INTERNAL_ERROR', message: 'Unexpected server error' } });
      } else {
        console.error(error);
        res.destroy();
      }
    });
  };

  createServer(): Server {
    return createServer(this.handle);
  }

  private async dispatch(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const { pathname } = new URL(req.url ?? '/', 'http://localhost');
    let pathMatched = false;
    for (const route of this.routes) {
      const params = matchPath(route.path, pathname);
      if (!params) continue;
      pathMatched = true;
      if (route.method !== req.method) continue;
      {%- if features contains "auth" %}
      if (!route.public && !isAuthorized(req.headers.authorization)) {
        res.setHeader('WWW-Authenticate', 'Bearer');
        throw new HttpError(401, 'UNAUTHORIZED', 'Missing or invalid bearer token');
      }
      {%- endif %}
      await route.handler(req, res, params);
      return;
    }
    if (pathMatched) throw new HttpError(405, 'METHOD_NOT_ALLOWED', `${req.method} is not allowed on ${pathname}`);
    throw new HttpError(404, 'NOT_FOUND', `No route for ${req.method} ${pathname}`);
  }
}
