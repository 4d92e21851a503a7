// Static build of the course site: `jupyter book build --html` runs this (template.yml's
// build.render) with CONTENT_CDN (mystmd's content server) and BUILD_DIRECTORY (_build/html).
// No web server of ours runs: each page's AST is fetched, rendered and written to disk, then
// the figures it uses, KaTeX/highlight.js styles and fonts, and the downloads are copied.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { inlineLargeOutputs, renderPage, siteContext, slugPath, STUDENT_LABS, STUDENT_ZIP } from './render.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const MODULES = path.join(HERE, 'node_modules');

/** Files served beside the pages: [source on disk, path in the site]. */
export function vendorFiles() {
  const katex = path.join(MODULES, 'katex', 'dist');
  const fonts = fs.readdirSync(path.join(katex, 'fonts'));
  return [
    [path.join(HERE, 'lmcourse.css'), 'lmcourse.css'],
    [path.join(katex, 'katex.min.css'), 'vendor/katex/katex.min.css'],
    ...fonts.map((f) => [path.join(katex, 'fonts', f), `vendor/katex/fonts/${f}`]),
    [path.join(MODULES, 'highlight.js', 'styles', 'github.min.css'), 'vendor/highlight/github.min.css'],
  ];
}

/** A 16×16 icon (ICO with one 32-bit bitmap), drawn here so no binary file is committed. */
export function favicon() {
  const size = 16;
  const header = Buffer.alloc(6 + 16 + 40);
  header.writeUInt16LE(1, 2); // type: icon
  header.writeUInt16LE(1, 4); // one image
  const pixels = Buffer.alloc(size * size * 4);
  const mask = Buffer.alloc(size * 4); // AND mask: all opaque
  for (let y = 0; y < size; y++) {
    for (let x = 0; x < size; x++) {
      const row = size - 1 - y; // bitmaps are stored bottom-up
      const letter = (x >= 4 && x <= 6 && y >= 3 && y <= 12) || (y >= 10 && y <= 12 && x >= 4 && x <= 11);
      const [r, g, b] = letter ? [255, 255, 255] : [37, 99, 160];
      pixels.set([b, g, r, 255], (row * size + x) * 4);
    }
  }
  const bytes = 40 + pixels.length + mask.length;
  header.writeUInt8(size, 6);
  header.writeUInt8(size, 7);
  header.writeUInt16LE(1, 10); // planes
  header.writeUInt16LE(32, 12); // bits per pixel
  header.writeUInt32LE(bytes, 14);
  header.writeUInt32LE(22, 18); // offset of the bitmap
  header.writeUInt32LE(40, 22); // BITMAPINFOHEADER
  header.writeInt32LE(size, 26);
  header.writeInt32LE(size * 2, 30); // height counts the mask too
  header.writeUInt16LE(1, 34);
  header.writeUInt16LE(32, 36);
  return Buffer.concat([header, pixels, mask]);
}

/** Optional extras built by other make targets, found beside _build/html. */
export function findExtras(buildRoot) {
  const zip = path.join(buildRoot, 'student', 'lmcourse-labs.zip');
  const listing = (dir, suffix) =>
    fs.existsSync(dir) ? fs.readdirSync(dir).filter((f) => f.endsWith(suffix)) : [];
  const slidesDir = path.join(buildRoot, 'slides');
  const studentDir = path.join(buildRoot, 'student', 'labs');
  return {
    studentZip: fs.existsSync(zip) ? zip : null,
    slidesDir,
    decks: listing(slidesDir, '.slides.html'),
    studentDir,
    studentLabs: listing(studentDir, '.ipynb'),
  };
}

/** Map page slug -> the file among `files` named after the page's source notebook. */
export function filesBySlug(pages, files, suffix) {
  const out = {};
  for (const [slug, page] of Object.entries(pages)) {
    const stem = path.basename(page.location ?? '', '.ipynb');
    const file = `${stem}${suffix}`;
    if (stem && files.includes(file)) out[slug] = file;
  }
  return out;
}

/** The per-page extras render.mjs links: slide decks, and student copies of the labs. */
export function pageExtras(pages, found) {
  return {
    studentZip: found.studentZip,
    slides: filesBySlug(pages, found.decks, '.slides.html'),
    studentLabs: filesBySlug(
      Object.fromEntries(Object.entries(pages).filter(([slug]) => slug.startsWith('labs.'))),
      found.studentLabs,
      '.ipynb',
    ),
  };
}

function write(file, data) {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, data);
}

async function fetchOk(url) {
  const resp = await fetch(url);
  if (!resp.ok) throw new Error(`${url}: HTTP ${resp.status}`);
  return resp;
}

async function main() {
  const cdn = process.env.CONTENT_CDN;
  const out = process.env.BUILD_DIRECTORY;
  if (!cdn || !out) throw new Error('run me through `jupyter book build --html` (CONTENT_CDN, BUILD_DIRECTORY)');
  const base = (process.env.BASE_URL ?? '').replace(/\/$/, '');
  const started = Date.now();

  const config = await (await fetchOk(`${cdn}/config.json`)).json();
  const project = config.projects[0];
  const slugs = [project.index, ...project.pages.filter((p) => p.slug).map((p) => p.slug)];
  const pages = {};
  const fetchText = async (p) => (await fetchOk(`${cdn}${p}`)).text();
  for (const slug of slugs) {
    const page = await (await fetchOk(`${cdn}/content/${slug}.json`)).json();
    pages[slug] = await inlineLargeOutputs(page, fetchText);
  }

  const found = findExtras(path.dirname(out));
  const ctx = siteContext(config, { base, extras: pageExtras(pages, found) });

  for (const slug of slugs) {
    const file = slug === project.index ? 'index.html' : path.join(slugPath(slug), 'index.html');
    write(path.join(out, file), renderPage(pages[slug], slug, ctx));
  }
  for (const asset of ctx.assets) {
    const data = Buffer.from(await (await fetchOk(`${cdn}${asset}`)).arrayBuffer());
    write(path.join(out, 'build', asset), data);
  }
  for (const [src, dest] of vendorFiles()) write(path.join(out, dest), fs.readFileSync(src));
  write(path.join(out, 'favicon.ico'), favicon());
  if (found.studentZip) write(path.join(out, STUDENT_ZIP), fs.readFileSync(found.studentZip));
  for (const lab of found.studentLabs) {
    write(path.join(out, STUDENT_LABS, lab), fs.readFileSync(path.join(found.studentDir, lab)));
  }
  if (found.decks.length) fs.cpSync(found.slidesDir, path.join(out, 'slides'), { recursive: true });

  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  console.log(
    `lmcourse site: ${slugs.length} pages, ${ctx.assets.size} assets, ` +
      `${found.decks.length} slide decks, student zip ${found.studentZip ? 'included' : 'not built'} ` +
      `-> ${out} (${seconds} s)`,
  );
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
