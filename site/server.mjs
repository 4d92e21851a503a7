// Live preview for authors: `jupyter book start` runs this (npm run start) with HOST, PORT
// and CONTENT_CDN_PORT. Pages are rendered on request by the same code as the static build;
// figures are passed through from mystmd's content server. The static site comes from
// `make book` (build.mjs), which starts no server at all.
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { favicon, findExtras, pageExtras, vendorFiles } from './build.mjs';
import { inlineLargeOutputs, renderPage, siteContext, STUDENT_LABS, STUDENT_ZIP } from './render.mjs';

const { HOST = 'localhost', PORT = '3000', CONTENT_CDN_PORT = '3100' } = process.env;
const CDN = `http://localhost:${CONTENT_CDN_PORT}`;
const BUILD_ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '_build');
const TYPES = { '.css': 'text/css', '.woff2': 'font/woff2', '.woff': 'font/woff', '.ttf': 'font/ttf',
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript', '.zip': 'application/zip',
  '.ipynb': 'application/x-ipynb+json' };

async function getJson(url) {
  const resp = await fetch(url);
  if (!resp.ok) throw new Error(`${url}: HTTP ${resp.status}`);
  return resp.json();
}

async function handle(req, res) {
  const url = decodeURIComponent(new URL(req.url, 'http://x').pathname);
  const send = (status, type, body) => {
    res.writeHead(status, { 'content-type': type });
    res.end(body);
  };
  const vendor = new Map(vendorFiles().map(([src, dest]) => [`/${dest}`, src]));
  if (vendor.has(url)) return send(200, TYPES[path.extname(url)] ?? 'application/octet-stream', fs.readFileSync(vendor.get(url)));
  if (url === '/favicon.ico') return send(200, 'image/x-icon', favicon());
  if (url.startsWith('/build/')) {
    const resp = await fetch(`${CDN}${url.slice('/build'.length)}`);
    return send(resp.status, resp.headers.get('content-type') ?? 'application/octet-stream',
      Buffer.from(await resp.arrayBuffer()));
  }
  const extras = findExtras(BUILD_ROOT);
  if (url === `/${STUDENT_ZIP}` && extras.studentZip) return send(200, TYPES['.zip'], fs.readFileSync(extras.studentZip));
  for (const [prefix, dir] of [['/slides/', extras.slidesDir], [`/${STUDENT_LABS}/`, extras.studentDir]]) {
    if (!url.startsWith(prefix)) continue;
    const file = path.join(dir, path.normalize(url.slice(prefix.length)));
    if (file.startsWith(dir) && fs.existsSync(file) && fs.statSync(file).isFile()) {
      return send(200, TYPES[path.extname(file)] ?? 'application/octet-stream', fs.readFileSync(file));
    }
  }
  const config = await getJson(`${CDN}/config.json`);
  const project = config.projects[0];
  const slug = url.replace(/^\/|\/$/g, '').replace(/\//g, '.') || project.index;
  const known = slug === project.index || project.pages.some((p) => p.slug === slug);
  if (!known) return send(404, 'text/plain', `no page ${url}`);
  const page = await inlineLargeOutputs(await getJson(`${CDN}/content/${slug}.json`),
    async (p) => (await fetch(`${CDN}${p}`)).text());
  const ctx = siteContext(config, {
    asset: (p) => `/build${p}`,
    extras: pageExtras({ [slug]: page }, extras),
  });
  return send(200, TYPES['.html'], renderPage(page, slug, ctx));
}

http
  .createServer((req, res) =>
    handle(req, res).catch((err) => {
      res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(String(err.stack ?? err));
    }),
  )
  .listen(Number(PORT), HOST, () => console.log(`lmcourse preview on http://${HOST}:${PORT}`));
