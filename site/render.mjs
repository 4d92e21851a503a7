// Render mystmd's processed page AST (mdast + notebook outputs) into one static HTML page.
//
// mystmd has already parsed the notebooks, pre-rendered every formula with KaTeX and moved
// images into its public folder; this module only turns that tree into HTML: myst-to-html's
// `mystToHast` for the Markdown nodes, our own handlers for maths, code, notebook cells and
// outputs, and a page shell with the table of contents. Nothing here refers to the network:
// stylesheets and fonts are copied from npm packages beside the pages (see build.mjs).
import hljs from 'highlight.js';
import { toHtml } from 'hast-util-to-html';
import katex from 'katex';
import { all } from 'mdast-util-to-hast';
import { mystToHast } from 'myst-to-html';

export const STUDENT_ZIP = 'downloads/lmcourse-labs.zip';
/** Where a lab's student copy (no solutions) is offered, beside the zip. */
export const STUDENT_LABS = 'downloads/labs';
const SOLUTION_MARKER = '# BEGIN SOLUTION';

// ---- small hast helpers -------------------------------------------------------------

const text = (value) => ({ type: 'text', value });
const raw = (value) => ({ type: 'raw', value });
const el = (tagName, properties = {}, children = []) => ({
  type: 'element',
  tagName,
  properties,
  children,
});
const escape = (s) =>
  String(s).replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]);
const stripAnsi = (s) => String(s).replace(/\u001b\[[0-9;]*[A-Za-z]/g, '');
const joinText = (t) => (Array.isArray(t) ? t.join('') : String(t ?? ''));

/** `chapters.backprop` -> `chapters/backprop`: the URL path of a page slug. */
export const slugPath = (slug) => slug.replace(/\./g, '/');

// ---- the context a page is rendered in ----------------------------------------------

/**
 * Everything page rendering needs to know about the site.
 * base: BASE_URL ('' at the root of a host); asset(path) maps a mystmd public path
 * (`/abc.png`) to its URL and records it so the build can copy it.
 */
export function siteContext(config, { base = '', asset, extras = {} } = {}) {
  const project = config.projects[0];
  const pages = project.pages;
  const index = project.index;
  const assets = new Set();
  const assetUrl =
    asset ??
    ((p) => {
      assets.add(p);
      return `${base}/build${p}`;
    });
  const pageUrl = (slug) => (slug === index ? `${base}/` : `${base}/${slugPath(slug)}/`);
  const ordered = [{ slug: index, title: project.title }, ...pages.filter((p) => p.slug)];
  return {
    base,
    config,
    project,
    pages,
    index,
    ordered,
    assets,
    asset: assetUrl,
    pageUrl,
    extras,
    title: config.options?.logo_text || project.title,
  };
}

// ---- notebook outputs ----------------------------------------------------------------

const WIDGET_VIEW = 'application/vnd.jupyter.widget-view+json';
const PROGRESS_MODELS = new Set(['FloatProgressModel', 'IntProgressModel']);

function bundleContent(bundle) {
  if (bundle == null) return '';
  if (typeof bundle === 'string') return bundle;
  return joinText(bundle.content);
}

/** True when a widget view is (or contains) a progress bar: tqdm's notebook bars. */
function isProgressBar(modelId, state, seen = new Set()) {
  if (!modelId || seen.has(modelId)) return false;
  seen.add(modelId);
  const model = state[modelId];
  if (!model) return false;
  if (PROGRESS_MODELS.has(model.model_name)) return true;
  const children = model.state?.children ?? [];
  return children.some((c) => isProgressBar(String(c).replace(/^IPY_MODEL_/, ''), state, seen));
}

function renderWidget(bundle, ctx) {
  let view = {};
  try {
    view = JSON.parse(bundleContent(bundle));
  } catch {
    view = {};
  }
  const state = ctx.widgets?.['application/vnd.jupyter.widget-state+json']?.state ?? {};
  if (isProgressBar(view.model_id, state)) return null;
  return el('div', { className: ['widget-note'] }, [
    text('Interactive widget: open this notebook in JupyterLab to use it. '),
    text('The static figure beside it shows the same picture.'),
  ]);
}

function renderLatex(tex) {
  const body = tex.trim().replace(/^\$\$?|\$\$?$/g, '');
  return raw(katex.renderToString(body, { displayMode: true, throwOnError: false }));
}

function renderMimeBundle(data, ctx) {
  const has = (m) => Object.prototype.hasOwnProperty.call(data, m);
  if (has(WIDGET_VIEW)) return renderWidget(data[WIDGET_VIEW], ctx);
  if (has('text/html')) {
    // `output_html` too: HTML that IPython styles (e.g. highlighted source) scopes its CSS to it
    return el('div', { className: ['output-html', 'output_html'] }, [raw(bundleContent(data['text/html']))]);
  }
  for (const mime of ['image/png', 'image/jpeg', 'image/gif', 'image/svg+xml']) {
    if (!has(mime)) continue;
    const b = data[mime];
    if (b.path) {
      const alt = bundleContent(data['text/plain']) || 'figure';
      return el('img', { src: ctx.asset(b.path), alt, className: ['output-image'] });
    }
    if (mime === 'image/svg+xml') return raw(bundleContent(b));
    return el('img', { src: `data:${mime};base64,${bundleContent(b)}`, alt: 'figure' });
  }
  if (has('text/latex')) return renderLatex(bundleContent(data['text/latex']));
  for (const mime of ['text/markdown', 'text/plain']) {
    if (has(mime)) {
      return el('pre', { className: ['output-text'] }, [text(stripAnsi(bundleContent(data[mime])))]);
    }
  }
  return null;
}

/**
 * mystmd moves outputs longer than 25,000 characters out of the page AST into files
 * (`path`); put their text back so the page shows them whole. `fetchText(path)` reads one.
 */
export async function inlineLargeOutputs(page, fetchText) {
  const outputs = [];
  const walk = (n) => {
    if (n.type === 'output' && n.jupyter_data) outputs.push(n.jupyter_data);
    (n.children ?? []).forEach(walk);
  };
  walk(page.mdast);
  for (const o of outputs) {
    if ((o.output_type === 'stream' || o.output_type === 'error') && o.path) {
      const full = await fetchText(o.path);
      if (o.output_type === 'stream') o.text = full;
      else o.traceback = full;
    }
    for (const [mime, bundle] of Object.entries(o.data ?? {})) {
      const image = mime.startsWith('image/') && mime !== 'image/svg+xml';
      if (!image && bundle?.path && bundle.content == null) bundle.content = await fetchText(bundle.path);
    }
  }
  return page;
}

function renderOutput(node, ctx) {
  const o = node.jupyter_data ?? {};
  switch (o.output_type) {
    case 'stream':
      return el('pre', { className: ['output-stream', `output-${o.name ?? 'stdout'}`] }, [
        text(stripAnsi(joinText(o.text))),
      ]);
    case 'error': {
      const tb = Array.isArray(o.traceback) ? o.traceback.join('\n') : o.traceback;
      return el('pre', { className: ['output-error'] }, [
        text(stripAnsi(tb || `${o.ename}: ${o.evalue}`)),
      ]);
    }
    case 'display_data':
    case 'execute_result':
    case 'update_display_data':
      return renderMimeBundle(o.data ?? {}, ctx);
    default:
      return null;
  }
}

// ---- mdast handlers ------------------------------------------------------------------

function highlight(value, lang) {
  const language = lang && hljs.getLanguage(lang) ? lang : null;
  const html = language
    ? hljs.highlight(value, { language, ignoreIllegals: true }).value
    : escape(value);
  return raw(
    `<pre class="code"><code class="hljs${language ? ` language-${language}` : ''}">${html}</code></pre>`,
  );
}

/** Cells a reader opens on purpose: a lab's solution (so the page does not give it away)
 * and an instructor's speaker notes (cells of slide type `notes`). */
export function foldedAs(block) {
  if (block.data?.slideshow?.slide_type === 'notes') {
    return { className: 'speaker-notes', label: 'Instructor notes' };
  }
  const hasSolution = (n) =>
    (n.type === 'code' && (n.value ?? '').includes(SOLUTION_MARKER)) || (n.children ?? []).some(hasSolution);
  if (block.kind === 'notebook-code' && hasSolution(block)) {
    return { className: 'solution', label: 'Solution (try the exercise first)' };
  }
  return null;
}

/** Keep cells/outputs marked removed out; fold hidden ones into a <details>. */
function visible(node, hast, label) {
  if (node.visibility === 'remove') return null;
  if (node.visibility === 'hide') {
    return el('details', { className: ['hidden-content'] }, [el('summary', {}, [text(label)]), hast]);
  }
  return hast;
}

function makeHandlers(ctx) {
  const link = (url, node) => {
    if (!url) return url;
    if (node?.static) return ctx.asset(url);
    if (url.startsWith('/') && !url.startsWith('//')) {
      const [path, hash] = url.split('#');
      const slug = path.replace(/^\//, '').replace(/\//g, '.');
      const known = ctx.ordered.some((p) => p.slug === slug);
      const target = known ? ctx.pageUrl(slug) : `${ctx.base}${path}`;
      return hash ? `${target}#${hash}` : target;
    }
    return url;
  };
  return {
    inlineMath: (h, node) =>
      node.html
        ? el('span', { className: ['math-inline'] }, [raw(node.html)])
        : el('code', { className: ['math-error'] }, [text(node.value)]),
    math: (h, node) => {
      const body = node.html ? raw(node.html) : el('pre', {}, [text(node.value)]);
      const children = [el('div', { className: ['math-body'] }, [body])];
      if (node.enumerator) {
        children.push(el('span', { className: ['equation-number'] }, [text(`(${node.enumerator})`)]));
      }
      return el('div', { className: ['math-display'], id: node.html_id || undefined }, children);
    },
    code: (h, node) => visible(node, highlight(node.value ?? '', node.lang), 'Show code'),
    heading: (h, node) => {
      const id = node.html_id || node.identifier || undefined;
      const kids = all(h, node);
      if (id) kids.push(el('a', { className: ['anchor'], href: `#${id}`, ariaHidden: 'true' }, [text('#')]));
      return el(`h${node.depth}`, { id }, kids);
    },
    block: (h, node) => {
      const kind = node.kind === 'notebook-code' ? 'cell-code' : 'cell-markdown';
      const tags = node.data?.tags ?? [];
      const div = el(
        'div',
        { className: ['cell', kind, ...tags.map((t) => `tag-${t}`)], id: node.html_id || undefined },
        all(h, node),
      );
      const folded = foldedAs(node);
      if (folded) {
        return el('details', { className: [folded.className] }, [el('summary', {}, [text(folded.label)]), div]);
      }
      return visible(node, div, 'Show cell');
    },
    outputs: (h, node) =>
      visible(node, el('div', { className: ['outputs'] }, all(h, node)), 'Show output'),
    output: (h, node) => renderOutput(node, ctx),
    link: (h, node) => el('a', { href: link(node.url, node), title: node.title }, all(h, node)),
    linkBlock: (h, node) => el('a', { href: link(node.url, node), className: ['link-block'] }, all(h, node)),
    image: (h, node) => {
      if (!node.url || node.url === '/undefined') {
        // mystmd could not fetch the image (e.g. a remote URL while offline): say so
        return el('span', { className: ['missing-image'] }, [
          text(`[image not available offline: ${node.urlSource ?? node.alt ?? 'unknown'}]`),
        ]);
      }
      return el('img', {
        src: link(node.url, { static: node.url?.startsWith('/') }),
        alt: node.alt,
        title: node.title,
        width: node.width,
        className: node.align ? [`align-${node.align}`] : undefined,
      });
    },
    captionNumber: (h, node) => {
      const label = (node.template ?? `${node.kind ?? ''} %s:`).replace('%s', node.enumerator ?? node.value ?? '');
      return el('span', { className: ['caption-number'] }, [text(`${label} `)]);
    },
    crossReference: (h, node) => {
      const id = node.html_id || node.identifier;
      const href = node.url ? `${link(node.url)}#${id}` : `#${id}`;
      return el('a', { href, className: ['xref'] }, all(h, node));
    },
    details: (h, node) => el('details', { className: node.class ? [node.class] : [] }, all(h, node)),
    summary: (h, node) => el('summary', {}, all(h, node)),
    span: (h, node) => el('span', { className: node.class ? [node.class] : [], style: node.style }, all(h, node)),
    div: (h, node) => el('div', { className: node.class ? [node.class] : [], style: node.style }, all(h, node)),
    underline: (h, node) => el('u', {}, all(h, node)),
    smallcaps: (h, node) => el('span', { className: ['smallcaps'] }, all(h, node)),
    footnoteReference: (h, node) => {
      const n = node.enumerator ?? node.label ?? node.identifier;
      return el('sup', { className: ['footnote-ref'] }, [
        el('a', { href: `#fn-${node.identifier}`, id: `fnref-${node.identifier}` }, [text(String(n))]),
      ]);
    },
    footnoteDefinition: (h, node) => {
      const n = node.enumerator ?? node.label ?? node.identifier;
      return el('div', { className: ['footnote'], id: `fn-${node.identifier}` }, [
        el('span', { className: ['footnote-number'] }, [text(`${n}.`)]),
        ...all(h, node),
      ]);
    },
    exercise: (h, node) => el('aside', { className: ['admonition', 'exercise'] }, all(h, node)),
    solution: (h, node) =>
      el('details', { className: ['solution'] }, [el('summary', {}, [text('Solution')]), ...all(h, node)]),
    proof: (h, node) => el('aside', { className: ['admonition', 'proof'] }, all(h, node)),
    tabSet: (h, node) => el('div', { className: ['tab-set'] }, all(h, node)),
    tabItem: (h, node) =>
      el('section', { className: ['tab-item'] }, [el('h4', {}, [text(node.title ?? '')]), ...all(h, node)]),
    card: (h, node) => el('div', { className: ['card'] }, all(h, node)),
    cardTitle: (h, node) => el('div', { className: ['card-title'] }, all(h, node)),
    grid: (h, node) => el('div', { className: ['grid'] }, all(h, node)),
    aside: (h, node) => el('aside', { className: ['margin'] }, all(h, node)),
    cite: (h, node) => el('span', { className: ['cite'] }, node.children?.length ? all(h, node) : [text(node.label ?? '')]),
    citeGroup: (h, node) => el('span', { className: ['cite-group'] }, all(h, node)),
    inlineExpression: (h, node) => {
      const data = node.result?.data;
      return el('span', { className: ['inline-expression'] }, [text(data ? bundleContent(data['text/plain']) : node.value)]);
    },
    iframe: (h, node) => el('p', {}, [el('a', { href: node.src }, [text(node.src ?? 'embedded page')])]),
    embed: (h, node) => el('div', { className: ['embed'] }, all(h, node)),
    include: (h, node) => el('div', { className: ['include'] }, all(h, node)),
  };
}

/** HTML of a page's body (the AST under `mdast`). */
export function renderContent(page, ctx) {
  const pageCtx = { ...ctx, widgets: page.widgets };
  const hast = mystToHast({ handlers: makeHandlers(pageCtx), allowDangerousHtml: true })(page.mdast);
  return toHtml(hast, { allowDangerousHtml: true });
}

// ---- the page shell ------------------------------------------------------------------

function navHtml(ctx, current) {
  const items = [];
  const home = current === ctx.index ? ' aria-current="page"' : '';
  items.push(`<li class="nav-home"><a href="${ctx.pageUrl(ctx.index)}"${home}>Introduction</a></li>`);
  let open = false;
  for (const p of ctx.pages) {
    if (!p.slug) {
      if (open) items.push('</ul></li>');
      items.push(`<li class="nav-part"><span class="part-title">${escape(p.title)}</span><ul>`);
      open = true;
      if (p.title === 'Labs' && ctx.extras.studentZip) {
        items.push(
          `<li class="nav-download"><a href="${ctx.base}/${STUDENT_ZIP}" download>⬇ Student copies of the labs (.zip)</a></li>`,
        );
      }
      continue;
    }
    const cur = p.slug === current ? ' aria-current="page"' : '';
    items.push(`<li><a href="${ctx.pageUrl(p.slug)}"${cur}>${escape(p.title)}</a></li>`);
  }
  if (open) items.push('</ul></li>');
  return `<nav class="toc" aria-label="Table of contents"><ul>${items.join('')}</ul></nav>`;
}

function onThisPage(page, ctx) {
  const handlers = makeHandlers(ctx);
  const inline = (nodes) =>
    toHtml(mystToHast({ handlers, allowDangerousHtml: true })({ type: 'root', children: nodes }), {
      allowDangerousHtml: true,
    });
  const out = [];
  for (const block of page.mdast.children ?? []) {
    for (const n of block.type === 'heading' ? [block] : block.children ?? []) {
      if (n.type === 'heading' && n.depth === 2 && n.html_id) {
        out.push(`<li><a href="#${n.html_id}">${inline(n.children ?? [])}</a></li>`);
      }
    }
  }
  if (!out.length) return '';
  return `<nav class="on-this-page" aria-label="On this page"><h2>On this page</h2><ul>${out.join('')}</ul></nav>`;
}

function downloadsHtml(page, slug, ctx) {
  const links = [];
  const student = ctx.extras.studentLabs?.[slug];
  if (student) {
    // a lab's own notebook holds the solutions: offer the student copy instead
    links.push(`<a href="${ctx.base}/${STUDENT_LABS}/${student}" download="${escape(student)}">⬇ Lab notebook (.ipynb, without solutions)</a>`);
  }
  for (const exp of page.frontmatter?.exports ?? []) {
    if (exp.format === 'ipynb' && exp.url && !slug.startsWith('labs.')) {
      links.push(`<a href="${ctx.asset(exp.url)}" download="${escape(exp.filename)}">⬇ Notebook (.ipynb)</a>`);
    }
  }
  const deck = ctx.extras.slides?.[slug];
  if (deck) links.push(`<a href="${ctx.base}/slides/${deck}">▶ Slides</a>`);
  if (slug.startsWith('labs.') && ctx.extras.studentZip) {
    links.push(`<a href="${ctx.base}/${STUDENT_ZIP}" download>⬇ Student copies of all labs (.zip)</a>`);
  }
  return links.length ? `<p class="downloads">${links.join(' ')}</p>` : '';
}

function landingExtras(ctx) {
  if (!ctx.extras.studentZip) return '';
  return `<section class="landing-downloads"><h2 id="downloads">Downloads</h2>
<p><a class="button" href="${ctx.base}/${STUDENT_ZIP}" download>⬇ Student copies of the labs (lmcourse-labs.zip)</a></p>
<p>The zip holds every lab with its solutions replaced by stubs and its outputs cleared. Unzip it
into a checkout of the course and open the notebooks in JupyterLab; the check cells tell you
whether your code is right.</p></section>`;
}

function licenseHtml(ctx) {
  const lic = ctx.project.license ?? {};
  const parts = [];
  if (lic.content) parts.push(`Text: <a href="${escape(lic.content.url ?? '')}">${escape(lic.content.id)}</a>`);
  if (lic.code) parts.push(`code: <a href="${escape(lic.code.url ?? '')}">${escape(lic.code.id)}</a>`);
  const authors = (ctx.project.authors ?? []).map((a) => escape(a.name)).join(', ');
  return [authors && `© ${authors}`, parts.join(', ')].filter(Boolean).join(' · ');
}

/**
 * The course's release (myst.yml's site option `version`, a copy of lmcourse.__version__),
 * linked to the changelog page (CHANGELOG.md) when the site has one.
 */
function versionHtml(ctx) {
  const version = ctx.config.options?.version;
  if (!version) return '';
  const changes = ctx.pages.find((p) => p.slug && p.slug.toLowerCase() === 'changelog');
  const label = `version ${escape(String(version))}`;
  return changes
    ? `<a class="version" href="${ctx.pageUrl(changes.slug)}" title="What changed in each release">${label}</a>`
    : `<span class="version">${label}</span>`;
}

/** The complete HTML document of page `slug`. */
export function renderPage(page, slug, ctx) {
  const isIndex = slug === ctx.index;
  const title = page.frontmatter?.title ?? slug;
  const position = ctx.ordered.findIndex((p) => p.slug === slug);
  const prev = position > 0 ? ctx.ordered[position - 1] : null;
  const next = position >= 0 && position < ctx.ordered.length - 1 ? ctx.ordered[position + 1] : null;
  const pager = [
    prev ? `<a class="prev" href="${ctx.pageUrl(prev.slug)}">← ${escape(prev.title)}</a>` : '<span></span>',
    next ? `<a class="next" href="${ctx.pageUrl(next.slug)}">${escape(next.title)} →</a>` : '<span></span>',
  ].join('');
  const b = ctx.base;
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escape(isIndex ? ctx.project.title : `${title} · ${ctx.title}`)}</title>
<meta name="description" content="${escape(page.frontmatter?.description ?? ctx.project.description ?? '')}">
<link rel="icon" href="${b}/favicon.ico">
<link rel="stylesheet" href="${b}/vendor/katex/katex.min.css">
<link rel="stylesheet" href="${b}/vendor/highlight/github.min.css">
<link rel="stylesheet" href="${b}/lmcourse.css">
</head>
<body>
<header class="topbar"><a class="brand" href="${ctx.pageUrl(ctx.index)}">${escape(ctx.title)}</a>
${versionHtml(ctx)}
<span class="tagline">${escape(ctx.project.description ?? '')}</span></header>
<div class="layout">
<aside class="sidebar">${navHtml(ctx, slug)}</aside>
<main class="article" id="main">
<h1 class="page-title">${escape(title)}</h1>
${downloadsHtml(page, slug, ctx)}
${isIndex ? '' : onThisPage(page, ctx)}
${renderContent(page, ctx)}
${isIndex ? landingExtras(ctx) : ''}
<nav class="pager" aria-label="Previous and next">${pager}</nav>
</main>
</div>
<footer class="footer">${[versionHtml(ctx), licenseHtml(ctx)].filter(Boolean).join(' · ')} · Built with Jupyter Book (MyST) and the course's own offline template.</footer>
</body>
</html>
`;
}
