import type { Api } from '../deps.ts';

/**
 * `GET /`: a small page for whoever opens the service's address in a browser (a newcomer after `npm start`), pointing
 * to the reference, the console and the health checks. Not part of the API: left out of the OpenAPI document.
 */
const HOME_PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>ebrc-gateway</title>
<style>
body { font: 16px/1.5 system-ui, sans-serif; max-width: 40rem; margin: 3rem auto; padding: 0 1rem; color: #1b1f24; }
code { background: #eef1f4; padding: 0 .25em; border-radius: 3px; }
li { margin: .4rem 0; }
</style>
</head>
<body>
<h1>ebrc-gateway</h1>
<p>eBRC generation for payment platforms and their exporter customers, through India's trade authority. The API lives
under <code>/api/v1</code> and takes your platform's API key in the <code>x-api-key</code> header.</p>
<ul>
<li><a href="/docs">API reference</a> (<code>/docs</code>), and the OpenAPI 3.1 document at <a href="/openapi.json"><code>/openapi.json</code></a></li>
<li><a href="/console">Web console</a> (<code>/console</code>) for a platform's staff</li>
<li><a href="/health">Health</a> (<code>/health</code>: the process is up) and <a href="/ready">readiness</a> (<code>/ready</code>: the database answers)</li>
</ul>
</body>
</html>
`;

export function homeRoutes(app: Api): void {
  app.get('/', { schema: { hide: true } }, async (_request, reply) =>
    reply
      .header('content-type', 'text/html; charset=utf-8')
      .header('content-security-policy', "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
      .header('x-content-type-options', 'nosniff')
      .send(HOME_PAGE),
  );
}
