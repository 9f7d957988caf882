// A stand-in for `dgsp-gateway serve --web-dir`, for gateways without that option: serves a
// directory at /verify/ and forwards /v1/* to a real gateway, on one loopback origin.
import { createServer } from 'node:http';
import { readFile } from 'node:fs/promises';
import { join, extname, normalize } from 'node:path';

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.wasm': 'application/wasm',
  '.json': 'application/json',
};

export function startServer(dir, gateway) {
  const server = createServer(async (req, res) => {
    try {
      const url = new URL(req.url, 'http://x');
      if (url.pathname.startsWith('/v1/')) {
        const chunks = [];
        for await (const c of req) chunks.push(c);
        const body = chunks.length ? Buffer.concat(chunks) : undefined;
        const up = await fetch(gateway + url.pathname + url.search, {
          method: req.method,
          headers: req.headers['content-type'] ? { 'content-type': req.headers['content-type'] } : {},
          body,
        });
        res.writeHead(up.status, { 'content-type': up.headers.get('content-type') ?? 'application/octet-stream' });
        res.end(Buffer.from(await up.arrayBuffer()));
        return;
      }
      if (url.pathname === '/verify') {
        res.writeHead(308, { location: '/verify/' });
        res.end();
        return;
      }
      if (url.pathname.startsWith('/verify/')) {
        const name = url.pathname.slice('/verify/'.length) || 'index.html';
        const path = normalize(join(dir, name));
        if (!path.startsWith(normalize(dir)) || name.includes('/')) throw Object.assign(new Error(), { code: 'ENOENT' });
        const data = await readFile(path);
        res.writeHead(200, { 'content-type': TYPES[extname(path)] ?? 'application/octet-stream' });
        res.end(data);
        return;
      }
      res.writeHead(404).end();
    } catch (e) {
      res.writeHead(e.code === 'ENOENT' ? 404 : 502).end(String(e.message ?? e));
    }
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      resolve({ url: `http://127.0.0.1:${port}`, close: () => new Promise((r) => server.close(r)) });
    });
  });
}
