// cellgate demo (seed 004 stage 3): an agent-style data-analysis workflow through the MCP
// tools — upload a CSV, hit a bug, fix it, chart, build a PDF report, list and read the
// artifacts, download the report over HTTP, close the session.
//
//   import { runDemo } from './demo.mjs';  const summary = await runDemo(client, { log });
//   node tests/e2e/demo.mjs                 (starts build/cellgate with --http-listen 127.0.0.1:0)

import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
export const DEMO_CSV = path.resolve(HERE, '..', '..', 'demo', 'marketing.csv');
export const CALL_TIMEOUT_MS = 180000;

// ---------------------------------------------------------------------------------------
// The Python the "agent" sends. These strings are plain template literals: they contain
// no backslashes and no "${" on purpose, so they reach the kernel exactly as written.

/** Step c: the analysis (pandas + seaborn/matplotlib). Defines df, summary, totals. */
export const ANALYSIS_CODE = `
import pandas as pd
import matplotlib.pyplot as plt
import matplotlib.dates as mdates
import seaborn as sns

def usd(value, digits=0):
    return '$' + format(value, f',.{digits}f')

df = pd.read_csv('/mnt/data/marketing.csv', parse_dates=['date'])
print(f"Loaded {len(df)} rows, {df['date'].min():%Y-%m-%d} to {df['date'].max():%Y-%m-%d}: "
      f"{df['channel'].nunique()} channels, {df['campaign'].nunique()} campaigns")
print('Columns:', ', '.join(df.columns))

summary = df.groupby('channel').agg(
    spend=('spend', 'sum'),
    impressions=('impressions', 'sum'),
    clicks=('clicks', 'sum'),
    conversions=('conversions', 'sum'),
    revenue=('revenue', 'sum'),
)
summary['roas'] = summary['revenue'] / summary['spend']
summary['cpa'] = summary['spend'] / summary['conversions']
summary['ctr'] = summary['clicks'] / summary['impressions']
summary = summary.sort_values('roas', ascending=False)

total_spend = summary['spend'].sum()
total_revenue = summary['revenue'].sum()
blended_roas = total_revenue / total_spend
best, worst = summary.index[0], summary.index[-1]

print()
print(summary.to_string(formatters={
    'spend': usd, 'revenue': usd,
    'impressions': '{:,}'.format, 'clicks': '{:,}'.format, 'conversions': '{:,}'.format,
    'roas': '{:.2f}x'.format, 'cpa': lambda v: usd(v, 2), 'ctr': '{:.2%}'.format,
}))
print()
print(f"Total spend {usd(total_spend)}, revenue {usd(total_revenue)}, blended ROAS {blended_roas:.2f}x")
print(f"Best ROAS: {best} ({summary.loc[best, 'roas']:.2f}x); worst: {worst} ({summary.loc[worst, 'roas']:.2f}x)")

summary.round({'spend': 2, 'revenue': 2, 'roas': 3, 'cpa': 2, 'ctr': 4}).to_csv('/mnt/data/channel_summary.csv')

sns.set_theme(style='whitegrid')
palette = dict(zip(sorted(summary.index), sns.color_palette('deep', len(summary))))

fig, ax = plt.subplots(figsize=(8, 4.5))
bars = ax.bar(summary.index, summary['roas'], color=[palette[c] for c in summary.index])
ax.bar_label(bars, labels=[f'{v:.1f}x' for v in summary['roas']], padding=3)
ax.set_ylim(0, summary['roas'].max() * 1.12)
ax.axhline(1.0, color='firebrick', linestyle='--', linewidth=1, label='break-even (ROAS = 1)')
ax.set_title('Return on ad spend by channel, Jan-Jun 2026')
ax.set_ylabel('ROAS (revenue / spend)')
ax.legend(loc='upper right')
fig.tight_layout()
fig.savefig('/mnt/data/roas_by_channel.png', dpi=120)
plt.close(fig)

weekly = df.groupby(['date', 'channel'], as_index=False)['revenue'].sum()
fig, ax = plt.subplots(figsize=(9, 4.5))
sns.lineplot(data=weekly, x='date', y='revenue', hue='channel', palette=palette, marker='o', ax=ax)
ax.xaxis.set_major_formatter(mdates.DateFormatter('%b %d'))
ax.yaxis.set_major_formatter(plt.FuncFormatter(lambda v, pos: usd(v / 1000) + 'k'))
ax.set_title('Weekly revenue by channel')
ax.set_xlabel('')
ax.set_ylabel('Revenue')
fig.tight_layout()
fig.savefig('/mnt/data/revenue_trend.png', dpi=120)
plt.close(fig)

print('Saved /mnt/data/channel_summary.csv, /mnt/data/roas_by_channel.png, /mnt/data/revenue_trend.png')
`.trimStart();

const GOOD_REVENUE = "revenue=('revenue', 'sum'),";
const BAD_REVENUE = "revenue=('sales_amount', 'sum'),";

/** Step b: the same analysis with a wrong column name ('sales_amount'): raises KeyError. */
export const BUGGY_ANALYSIS_CODE = ANALYSIS_CODE.replace(GOOD_REVENUE, BAD_REVENUE);
if (BUGGY_ANALYSIS_CODE === ANALYSIS_CODE) throw new Error('demo.mjs: the bug was not injected');

/** Step d: the PDF report (reportlab platypus), from the kernel state step c left. */
export const REPORT_CODE = `
import os
from reportlab.lib import colors
from reportlab.lib.pagesizes import A4
from reportlab.lib.styles import getSampleStyleSheet
from reportlab.lib.units import cm
from reportlab.lib.utils import ImageReader
from reportlab.platypus import Image, KeepTogether, Paragraph, SimpleDocTemplate, Spacer, Table, TableStyle

# df, summary, usd, total_spend, total_revenue, blended_roas, best and worst are still
# defined: the session's kernel kept them from the previous call.
print(f'From the previous call: df has {len(df)} rows, summary has {len(summary)} channels')

pdf_path = '/mnt/data/marketing_report.pdf'
styles = getSampleStyleSheet()
doc = SimpleDocTemplate(pdf_path, pagesize=A4, title='Marketing performance report',
                        author='cellgate demo', leftMargin=2 * cm, rightMargin=2 * cm,
                        topMargin=1.8 * cm, bottomMargin=1.8 * cm)

def chart(png_path):
    width, height = ImageReader(png_path).getSize()
    return Image(png_path, width=doc.width, height=doc.width * height / width)

rows = [['Channel', 'Spend', 'Revenue', 'ROAS', 'CPA', 'CTR', 'Conversions']]
for channel, r in summary.iterrows():
    rows.append([channel, usd(r['spend']), usd(r['revenue']), f"{r['roas']:.2f}x",
                 usd(r['cpa'], 2), f"{r['ctr']:.2%}", f"{int(r['conversions']):,}"])
total_conversions = int(summary['conversions'].sum())
total_ctr = summary['clicks'].sum() / summary['impressions'].sum()
rows.append(['Total', usd(total_spend), usd(total_revenue), f'{blended_roas:.2f}x',
             usd(total_spend / total_conversions, 2), f'{total_ctr:.2%}', f'{total_conversions:,}'])

table = Table(rows, repeatRows=1, hAlign='LEFT')
table.setStyle(TableStyle([
    ('BACKGROUND', (0, 0), (-1, 0), colors.HexColor('#1f3b57')),
    ('TEXTCOLOR', (0, 0), (-1, 0), colors.white),
    ('FONTNAME', (0, 0), (-1, 0), 'Helvetica-Bold'),
    ('FONTNAME', (0, -1), (-1, -1), 'Helvetica-Bold'),
    ('ROWBACKGROUNDS', (0, 1), (-1, -2), [colors.white, colors.HexColor('#eef2f6')]),
    ('LINEABOVE', (0, -1), (-1, -1), 1, colors.HexColor('#1f3b57')),
    ('ALIGN', (1, 0), (-1, -1), 'RIGHT'),
    ('GRID', (0, 0), (-1, -1), 0.25, colors.HexColor('#b0b8c0')),
    ('FONTSIZE', (0, 0), (-1, -1), 9),
    ('TOPPADDING', (0, 0), (-1, -1), 4),
    ('BOTTOMPADDING', (0, 0), (-1, -1), 4),
]))

first, last = df['date'].min(), df['date'].max()
story = [
    Paragraph('Marketing performance report, H1 2026', styles['Title']),
    Paragraph(
        f"{len(df)} weekly campaign rows from {first:%B} {first.day} to {last:%B} {last.day}, {last.year}. "
        f"Total spend of <b>{usd(total_spend)}</b> brought <b>{usd(total_revenue)}</b> of revenue, "
        f"a blended ROAS of <b>{blended_roas:.2f}x</b>. <b>{best}</b> returns the most per dollar "
        f"({summary.loc[best, 'roas']:.1f}x); <b>{worst}</b> has the lowest return "
        f"({summary.loc[worst, 'roas']:.2f}x) and is the first candidate for a budget review.",
        styles['BodyText']),
    Spacer(1, 0.4 * cm),
    Paragraph('Performance by channel', styles['Heading2']),
    table,
    Spacer(1, 0.4 * cm),
    KeepTogether([Paragraph('Return on ad spend', styles['Heading2']), chart('/mnt/data/roas_by_channel.png')]),
    KeepTogether([Paragraph('Weekly revenue', styles['Heading2']), chart('/mnt/data/revenue_trend.png')]),
]
doc.build(story)

with open(pdf_path, 'rb') as f:
    head = f.read(8)
print(f'Wrote {pdf_path}: {os.path.getsize(pdf_path):,} bytes, {doc.page} pages, starts with {head!r}')
`.trimStart();

// ---------------------------------------------------------------------------------------
// Helpers

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const EXPECTED_RUN_FILES = ['channel_summary.csv', 'roas_by_channel.png', 'revenue_trend.png'];

function check(condition, message) {
  if (!condition) throw new Error(`demo check failed: ${message}`);
}

const kb = (n) => (n >= 1024 ? `${(n / 1024).toFixed(1)} KiB` : `${n} B`);
const secs = (ms) => `${(ms / 1000).toFixed(1)} s`;

/** The URL with its token shown as "…" (for the narrative). */
function redact(url) {
  return String(url).replace(/([?&]token=)[^&]*/, '$1…');
}

/** Indents TEXT (cut to MAX_LINES lines) for the narrative. */
function excerpt(text, maxLines = 40, indent = '      │ ') {
  const lines = String(text ?? '').replace(/\s+$/, '').split('\n');
  const shown = lines.slice(0, maxLines);
  if (lines.length > maxLines) shown.push(`… (${lines.length - maxLines} more lines)`);
  return shown.map((l) => indent + l).join('\n');
}

/** Short description of an error result (a tool error or a failed run). */
function describeError(name, result) {
  const s = result?.structuredContent;
  if (s && typeof s === 'object') {
    const code = s.error ?? s.error_code ?? s.status ?? 'error';
    const message = s.message ?? s.error_message ?? '';
    let text = `${name} failed: ${code}${message ? `: ${message}` : ''}`;
    if (s.stderr) text += `\n--- stderr (tail) ---\n${String(s.stderr).slice(-2000)}`;
    return text;
  }
  const said = (result?.content ?? []).map((c) => c.text ?? `[${c.type}]`).join(' ');
  return `${name} failed: ${said || JSON.stringify(result).slice(0, 500)}`;
}

function artifactLine(a) {
  return `${a.path}  ${a.mime_type}  ${a.size_bytes} bytes${a.download_url ? `  ${redact(a.download_url)}` : ''}`;
}

function checkArtifactShape(a, where) {
  check(a && typeof a === 'object', `${where}: artifact is not an object: ${JSON.stringify(a)}`);
  check(typeof a.path === 'string' && a.path.startsWith('/mnt/data/'), `${where}: bad path ${JSON.stringify(a.path)}`);
  check(typeof a.filename === 'string' && a.path.endsWith('/' + a.filename), `${where}: filename ${a.filename} vs path ${a.path}`);
  check(Number.isInteger(a.size_bytes) && a.size_bytes >= 0, `${where}: bad size_bytes for ${a.path}: ${a.size_bytes}`);
  check(typeof a.mime_type === 'string' && a.mime_type.length > 0, `${where}: no mime_type for ${a.path}`);
  if (a.download_url !== undefined && a.download_url !== null)
    check(/^https?:\/\/[^/]+\/files\/.+\?token=.+/.test(a.download_url), `${where}: odd download_url ${a.download_url}`);
}

function findArtifact(list, filename) {
  return list.find((a) => a.path === `/mnt/data/${filename}`);
}

// ---------------------------------------------------------------------------------------

/**
 * Runs the demo workflow through CLIENT (a connected MCP SDK Client on a cellgate server).
 * Options: log (narrative sink, default console.log), fetchImpl (default fetch),
 * csvPath (default demo/marketing.csv), requireHttp (default true: fail when the PDF has no
 * download_url; false skips the HTTP step instead).
 * Returns a summary object; throws an Error with a clear message on any failure.
 */
export async function runDemo(client, { log = console.log, fetchImpl = fetch, csvPath = DEMO_CSV, requireHttp = true } = {}) {
  const started = Date.now();
  const summary = { steps: [] };
  let stepNo = 0;
  const TOTAL = 9;
  const step = (title) => {
    stepNo += 1;
    log(`\n[${stepNo}/${TOTAL}] ${title}`);
  };
  const info = (text) => log(`      ${text}`);

  /** Calls a tool; throws unless it succeeded (or failed, when expectError). */
  async function call(name, args, { expectError = false } = {}) {
    const t0 = Date.now();
    let result;
    try {
      result = await client.callTool({ name, arguments: args }, undefined, { timeout: CALL_TIMEOUT_MS });
    } catch (err) {
      throw new Error(`${name}: the call failed: ${err.message}`);
    }
    const ms = Date.now() - t0;
    summary.steps.push({ tool: name, ms, isError: result.isError === true, bytes: JSON.stringify(result).length });
    if (result.isError && !expectError) throw new Error(describeError(name, result));
    const s = result.structuredContent;
    check(s && typeof s === 'object', `${name}: the result has no structuredContent: ${JSON.stringify(result).slice(0, 500)}`);
    return { result, s, ms };
  }

  // a. upload_file ----------------------------------------------------------------------
  const csv = fs.readFileSync(csvPath);
  step(`upload_file: marketing.csv (${kb(csv.length)}, ${csv.toString('utf8').trim().split('\n').length - 1} rows), no session_id yet`);
  const up = await call('upload_file', { filename: 'marketing.csv', content_base64: csv.toString('base64') });
  const sessionId = up.s.session_id;
  check(typeof sessionId === 'string' && /^sess_[0-9a-f]{12}$/.test(sessionId), `upload_file: session_id ${JSON.stringify(sessionId)} is not sess_<12 hex>`);
  check(up.s.path === '/mnt/data/marketing.csv', `upload_file: path ${up.s.path}, want /mnt/data/marketing.csv`);
  check(up.s.filename === 'marketing.csv', `upload_file: filename ${up.s.filename}`);
  check(up.s.size_bytes === csv.length, `upload_file: size_bytes ${up.s.size_bytes}, want ${csv.length}`);
  summary.session_id = sessionId;
  summary.upload = { path: up.s.path, size_bytes: up.s.size_bytes, mime_type: up.s.mime_type };
  info(`→ new session ${sessionId}; stored as ${up.s.path} (${up.s.mime_type}, ${up.s.size_bytes} bytes) in ${secs(up.ms)}`);
  if (up.s.download_url) info(`  download_url ${redact(up.s.download_url)}`);

  // b. run_python with a bug -------------------------------------------------------------
  step(`run_python: first attempt at the analysis (uses a column 'sales_amount' that the CSV does not have)`);
  const bad = await call('run_python', { session_id: sessionId, code: BUGGY_ANALYSIS_CODE }, { expectError: true });
  const badStderr = String(bad.s.stderr ?? '');
  const keyErrorLine = badStderr.split('\n').reverse().find((l) => /KeyError/.test(l)) ?? '';
  info(`→ exit_code ${bad.s.exit_code}, status ${bad.s.status}, isError ${bad.result.isError === true} (${secs(bad.ms)})`);
  if (bad.s.stdout) log(excerpt(bad.s.stdout, 5));
  info(`stderr ends with: ${keyErrorLine.trim() || '(no KeyError line!)'}`);
  check(bad.s.exit_code === 1, `buggy run: exit_code ${bad.s.exit_code}, want 1\n${describeError('run_python', bad.result)}`);
  check(/KeyError/.test(badStderr), `buggy run: stderr has no KeyError: ${badStderr.slice(-1000)}`);
  check(bad.s.session_id === undefined || bad.s.session_id === sessionId, `buggy run: session_id ${bad.s.session_id}`);
  const badArtifacts = Array.isArray(bad.s.artifacts) ? bad.s.artifacts : [];
  summary.buggy_run = {
    exit_code: bad.s.exit_code,
    status: bad.s.status,
    is_error: bad.result.isError === true,
    key_error: keyErrorLine.trim(),
    artifacts: badArtifacts.map((a) => a.path),
  };
  info(`the agent reads the traceback and the printed column list: the column is 'revenue', not 'sales_amount'`);

  // c. run_python, fixed ----------------------------------------------------------------
  step(`run_python: fixed analysis — pandas groupby by channel (ROAS, CPA, CTR), seaborn charts, summary CSV`);
  const good = await call('run_python', { session_id: sessionId, code: ANALYSIS_CODE });
  check(good.s.exit_code === 0, `fixed run: exit_code ${good.s.exit_code}\n${describeError('run_python', good.result)}`);
  info(`→ exit_code 0 in ${secs(good.ms)}; stdout:`);
  log(excerpt(good.s.stdout, 30));
  if (good.s.stderr) info(`stderr (not fatal): ${String(good.s.stderr).trim().split('\n').slice(-3).join(' | ')}`);
  check(Array.isArray(good.s.artifacts), `fixed run: no artifacts array: ${JSON.stringify(good.s).slice(0, 500)}`);
  good.s.artifacts.forEach((a) => checkArtifactShape(a, 'fixed run'));
  info(`artifacts created or modified by this run (${good.s.artifacts.length}):`);
  for (const a of good.s.artifacts) info(`  ${artifactLine(a)}`);
  for (const f of EXPECTED_RUN_FILES) {
    const a = findArtifact(good.s.artifacts, f);
    check(a, `fixed run: /mnt/data/${f} is not in artifacts: ${good.s.artifacts.map((x) => x.path).join(', ')}`);
    check(a.size_bytes > 0, `fixed run: ${f} is empty`);
    check(a.mime_type === (f.endsWith('.png') ? 'image/png' : 'text/csv'), `fixed run: ${f} has mime_type ${a.mime_type}`);
  }
  summary.fixed_run = {
    exit_code: good.s.exit_code,
    stdout_excerpt: String(good.s.stdout ?? '').split('\n').slice(0, 12).join('\n'),
    artifacts: good.s.artifacts,
  };
  summary.error_fix_cycle = {
    buggy_exit_code: bad.s.exit_code,
    error: keyErrorLine.trim(),
    fixed_exit_code: good.s.exit_code,
    fix: `${BAD_REVENUE} → ${GOOD_REVENUE}`,
  };

  // d. run_python, PDF report ------------------------------------------------------------
  step(`run_python: PDF report with reportlab (title, key numbers, channel table, both charts), reusing the kernel's variables`);
  const rep = await call('run_python', { session_id: sessionId, code: REPORT_CODE });
  check(rep.s.exit_code === 0, `report run: exit_code ${rep.s.exit_code}\n${describeError('run_python', rep.result)}`);
  info(`→ exit_code 0 in ${secs(rep.ms)}; stdout:`);
  log(excerpt(rep.s.stdout, 10));
  check(Array.isArray(rep.s.artifacts), 'report run: no artifacts array');
  rep.s.artifacts.forEach((a) => checkArtifactShape(a, 'report run'));
  const repPdf = findArtifact(rep.s.artifacts, 'marketing_report.pdf');
  check(repPdf, `report run: marketing_report.pdf is not in artifacts: ${rep.s.artifacts.map((x) => x.path).join(', ')}`);
  check(repPdf.mime_type === 'application/pdf', `report run: PDF mime_type ${repPdf.mime_type}`);
  for (const a of rep.s.artifacts) info(`  ${artifactLine(a)}`);
  summary.report_run = { exit_code: rep.s.exit_code, artifacts: rep.s.artifacts };

  // e. list_artifacts --------------------------------------------------------------------
  step(`list_artifacts: every file in the session's /mnt/data`);
  const listed = await call('list_artifacts', { session_id: sessionId });
  const all = listed.s.artifacts;
  check(Array.isArray(all), `list_artifacts: no artifacts array: ${JSON.stringify(listed.s).slice(0, 500)}`);
  all.forEach((a) => checkArtifactShape(a, 'list_artifacts'));
  for (const a of all) info(`  ${artifactLine(a)}`);
  for (const f of ['marketing.csv', ...EXPECTED_RUN_FILES, 'marketing_report.pdf'])
    check(findArtifact(all, f), `list_artifacts: /mnt/data/${f} missing: ${all.map((x) => x.path).join(', ')}`);
  const listedPdf = findArtifact(all, 'marketing_report.pdf');
  check(listedPdf.size_bytes === repPdf.size_bytes, `list_artifacts: PDF size ${listedPdf.size_bytes} vs run ${repPdf.size_bytes}`);
  summary.artifacts = all;

  // f. read_artifact PDF -----------------------------------------------------------------
  step(`read_artifact: /mnt/data/marketing_report.pdf`);
  const readPdf = await call('read_artifact', { session_id: sessionId, path: '/mnt/data/marketing_report.pdf' });
  const p = readPdf.s;
  check(p.path === '/mnt/data/marketing_report.pdf', `read_artifact: path ${p.path}`);
  check(p.filename === 'marketing_report.pdf', `read_artifact: filename ${p.filename}`);
  check(p.mime_type === 'application/pdf', `read_artifact: mime_type ${p.mime_type}`);
  check(typeof p.content_base64 === 'string' && p.content_base64.length > 0, 'read_artifact: no content_base64');
  const pdf = Buffer.from(p.content_base64, 'base64');
  check(pdf.length === p.size_bytes, `read_artifact: decoded ${pdf.length} bytes, size_bytes says ${p.size_bytes}`);
  check(pdf.length === listedPdf.size_bytes, `read_artifact: ${pdf.length} bytes, list_artifacts said ${listedPdf.size_bytes}`);
  check(pdf.subarray(0, 5).toString('latin1') === '%PDF-', `read_artifact: the PDF starts with ${JSON.stringify(pdf.subarray(0, 8).toString('latin1'))}`);
  const pdfTail = pdf.subarray(Math.max(0, pdf.length - 32)).toString('latin1');
  check(pdfTail.includes('%%EOF'), `read_artifact: no %%EOF at the end of the PDF: ${JSON.stringify(pdfTail)}`);
  const pages = (pdf.toString('latin1').match(/\/Type\s*\/Page[^s]/g) ?? []).length;
  summary.pdf = { path: p.path, size_bytes: pdf.length, header: pdf.subarray(0, 8).toString('latin1'), pages };
  info(`→ ${p.mime_type}, ${pdf.length} bytes (${kb(pdf.length)}), header ${JSON.stringify(pdf.subarray(0, 8).toString('latin1'))}, ${pages} page(s), ends with %%EOF`);

  // g. read_artifact PNG -----------------------------------------------------------------
  step(`read_artifact: /mnt/data/roas_by_channel.png with format 'image' (comes back as an MCP image block)`);
  const readPng = await call('read_artifact', { session_id: sessionId, path: '/mnt/data/roas_by_channel.png', format: 'image' });
  const image = (readPng.result.content ?? []).find((c) => c.type === 'image');
  check(image, `read_artifact PNG: no image content block: ${(readPng.result.content ?? []).map((c) => c.type).join(', ')}`);
  check(image.mimeType === 'image/png', `read_artifact PNG: image block mimeType ${image.mimeType}`);
  const png = Buffer.from(image.data ?? '', 'base64');
  check(png.subarray(0, 8).equals(PNG_SIGNATURE), 'read_artifact PNG: the image block data is not a PNG');
  const pngWidth = png.length >= 24 ? png.readUInt32BE(16) : 0;
  const pngHeight = png.length >= 24 ? png.readUInt32BE(20) : 0;
  if (readPng.s.size_bytes !== undefined)
    check(readPng.s.size_bytes === png.length, `read_artifact PNG: size_bytes ${readPng.s.size_bytes} vs image data ${png.length}`);
  check(readPng.s.content_base64 === '', 'read_artifact PNG: the bytes are in the image block only');
  summary.png = { path: '/mnt/data/roas_by_channel.png', size_bytes: png.length, width: pngWidth, height: pngHeight, image_block: true };
  info(`→ image block image/png, ${png.length} bytes, ${pngWidth}×${pngHeight} px`);

  // h. HTTP download ---------------------------------------------------------------------
  step(`HTTP: download the PDF from its download_url, then try without the token`);
  const downloadUrl = listedPdf.download_url ?? repPdf.download_url;
  if (!downloadUrl) {
    if (requireHttp) throw new Error('no download_url for marketing_report.pdf: is the server started with --http-listen?');
    info('→ skipped: no download_url (the server has no HTTP listener)');
    summary.http = null;
  } else {
    info(`GET ${redact(downloadUrl)}`);
    const res = await fetchImpl(downloadUrl);
    const body = Buffer.from(await res.arrayBuffer());
    const contentType = res.headers.get('content-type') ?? '';
    info(`→ ${res.status}, Content-Type ${contentType}, ${body.length} bytes, identical to read_artifact: ${body.equals(pdf)}`);
    check(res.status === 200, `HTTP download: status ${res.status}: ${body.toString('utf8').slice(0, 300)}`);
    check(contentType.split(';')[0].trim() === 'application/pdf', `HTTP download: Content-Type ${contentType}`);
    check(body.equals(pdf), `HTTP download: ${body.length} bytes differ from the ${pdf.length} read_artifact bytes`);

    const noToken = new URL(downloadUrl);
    noToken.searchParams.delete('token');
    const refused = await fetchImpl(noToken.toString());
    await refused.arrayBuffer();
    info(`GET ${noToken} (no token) → ${refused.status}`);
    check(refused.status === 404 || refused.status === 403, `HTTP without token: status ${refused.status}, want 404 or 403`);

    const badToken = new URL(downloadUrl);
    badToken.searchParams.set('token', 'x'.repeat(Math.max(8, (badToken.searchParams.get('token') ?? '').length)));
    const forged = await fetchImpl(badToken.toString());
    await forged.arrayBuffer();
    info(`GET ${redact(badToken)} (wrong token) → ${forged.status}`);
    check(forged.status === 404 || forged.status === 403, `HTTP with a wrong token: status ${forged.status}, want 404 or 403`);

    summary.http = {
      url: redact(downloadUrl),
      status: res.status,
      content_type: contentType,
      bytes: body.length,
      identical: body.equals(pdf),
      no_token_status: refused.status,
      bad_token_status: forged.status,
    };
  }

  // i. close_session ---------------------------------------------------------------------
  step(`close_session: ${sessionId}`);
  const closed = await call('close_session', { session_id: sessionId });
  check(closed.s.status === 'closed', `close_session: status ${closed.s.status}`);
  summary.closed = { status: closed.s.status, executions_count: closed.s.executions_count, duration_total_ms: closed.s.duration_total_ms };
  info(`→ status closed after ${closed.s.executions_count ?? '?'} executions, ${secs(closed.s.duration_total_ms ?? 0)} session lifetime`);
  if (downloadUrl) {
    const gone = await fetchImpl(downloadUrl);
    await gone.arrayBuffer();
    summary.http.after_close_status = gone.status;
    info(`GET ${redact(downloadUrl)} after close → ${gone.status}`);
  }

  summary.total_ms = Date.now() - started;
  return summary;
}

/** One-screen summary of runDemo's result. */
export function formatSummary(s) {
  const lines = [
    `session            ${s.session_id} (${s.closed?.status ?? 'open'})`,
    `error → fix        exit ${s.error_fix_cycle.buggy_exit_code} (${s.error_fix_cycle.error}) → exit ${s.error_fix_cycle.fixed_exit_code}`,
    `artifacts          ${s.artifacts.map((a) => `${a.filename} (${kb(a.size_bytes)})`).join(', ')}`,
    `PDF report         ${s.pdf.size_bytes} bytes, ${s.pdf.pages} page(s), starts ${JSON.stringify(s.pdf.header)}`,
    `PNG via MCP        ${s.png.width}×${s.png.height} px image block`,
    s.http
      ? `HTTP download      ${s.http.status} ${s.http.content_type}, ${s.http.bytes} bytes, identical ${s.http.identical}; no token → ${s.http.no_token_status}, wrong token → ${s.http.bad_token_status}, after close → ${s.http.after_close_status}`
      : 'HTTP download      skipped (no listener)',
    `total              ${secs(s.total_ms)} over ${s.steps.length} tool calls`,
    `result bytes       ${s.steps.map((step) => `${step.tool} ${step.bytes}`).join(', ')}`,
  ];
  return lines.join('\n');
}

async function main() {
  const { startServer } = await import('./lib.mjs');
  const args = ['--http-listen', '127.0.0.1:0', ...process.argv.slice(2)];
  console.log(`cellgate demo: starting the server (cellgate mcp ${args.join(' ')})`);
  const server = await startServer({ name: 'cellgate-demo', args });
  let code = 0;
  try {
    const summary = await runDemo(server.client);
    console.log('\n=== summary ===');
    console.log(formatSummary(summary));
    console.log('\ndemo OK');
  } catch (err) {
    console.error(`\ndemo FAILED: ${err.message}`);
    const tail = server.stderrText().slice(-3000);
    if (tail) console.error(`--- server stderr (tail) ---\n${tail}`);
    code = 1;
  } finally {
    await server.close();
  }
  process.exit(code);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((err) => {
    console.error(`demo FAILED: ${err.stack ?? err.message}`);
    process.exit(1);
  });
}
