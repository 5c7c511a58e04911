// Loads an inferlint sweep page (sweep.html) in Debian's headless Chromium and checks it as a
// person would use it: both curves drawn, a mark per point and chart, a hollow mark exactly where
// a point does not hold, the knee ringed, each mark linking to its point's page, the reasons in
// the tooltip on hover and on keyboard focus; no console error, no network request.
// Optionally saves a screenshot (sweep-page.png) into SCREENSHOT_DIR.
//
// usage: node sweep.mjs SWEEP.html POINTS [SCREENSHOT_DIR]
// Prints one JSON object; exits 0 when every check passed, 1 otherwise.
import { chromium } from 'playwright-core';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [sweepPage, pointsArg, shots] = process.argv.slice(2);
if (!sweepPage || !pointsArg) {
  console.error('usage: node sweep.mjs SWEEP.html POINTS [SCREENSHOT_DIR]');
  process.exit(2);
}
const points = Number(pointsArg);
const pageUrl = pathToFileURL(path.resolve(sweepPage)).href;
const failures = [];
const checks = {};
const expect = (name, ok, detail) => {
  checks[name] = ok ? true : (detail ?? false);
  if (!ok) failures.push(`${name}: ${JSON.stringify(detail ?? null)}`);
};

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: [
    '--no-sandbox', '--disable-gpu', '--disable-background-networking',
    '--disable-component-update', '--disable-sync', '--no-first-run',
  ],
});
const consoleErrors = [];
const requests = [];

try {
  const context = await browser.newContext({ viewport: { width: 1200, height: 900 }, colorScheme: 'light' });
  await context.route('**/*', (route) => {
    const url = route.request().url();
    if (url === pageUrl || url.startsWith('data:')) return route.continue();
    requests.push(url);
    return route.abort();
  });
  const page = await context.newPage();
  page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') consoleErrors.push(`${m.type()}: ${m.text()}`); });
  page.on('pageerror', (e) => consoleErrors.push(`pageerror: ${e.message}`));
  await page.goto(pageUrl, { waitUntil: 'load' });

  expect('two curves', (await page.locator('svg.sweep-plot path.line').count()) === 2);
  const marks = page.locator('svg.sweep-plot a.point');
  expect('a mark per point and chart', (await marks.count()) === 2 * points, await marks.count());
  const seen = await marks.evaluateAll((as) => as.map((a) => ({
    holds: a.getAttribute('data-holds'),
    hollow: a.querySelector('circle.pt').classList.contains('hollow'),
    // The ring is drawn: its fill is the card's, not the curve's.
    fill: getComputedStyle(a.querySelector('circle.pt')).fill,
    stroke: getComputedStyle(a.querySelector('circle.pt')).stroke,
    href: a.getAttribute('href'),
    knee: !!a.querySelector('circle.knee'),
  })));
  expect('hollow exactly where a point does not hold', seen.every((m) => m.hollow === (m.holds === 'no')), seen);
  expect('a hollow mark is drawn hollow', seen.filter((m) => m.hollow).every((m) => m.fill !== m.stroke), seen);
  expect('a filled mark is drawn filled', seen.filter((m) => !m.hollow).every((m) => m.fill === m.stroke), seen);
  expect('each mark links to its point\'s page', seen.every((m) => /^points\/[^/]+\/report\.html$/.test(m.href)), seen);
  const knees = seen.filter((m) => m.knee).length;
  expect('the knee is ringed on both charts', knees === 0 || knees === 2, knees);

  const tip = page.locator('.tt');
  const hollow = page.locator('svg.sweep-plot a.point[data-holds="no"]').first();
  if (await hollow.count()) {
    await hollow.hover();
    const text = await tip.innerText();
    expect('hover says why a point does not hold', (await tip.isVisible()) && text.includes('does not hold:'), text);
  }
  await page.mouse.move(0, 0);
  await marks.first().focus();
  expect('focus shows the tip', (await tip.isVisible()) && (await tip.innerText()).startsWith('point 1'), await tip.innerText());
  await page.locator('body').click({ position: { x: 2, y: 2 } });
  if (shots) await page.screenshot({ path: path.join(shots, 'sweep-page.png'), fullPage: true });
  await context.close();
} catch (e) {
  failures.push(`error: ${e.stack || e}`);
} finally {
  await browser.close();
}

expect('no console error', consoleErrors.length === 0, consoleErrors);
expect('no network request', requests.length === 0, requests);
console.log(JSON.stringify({ ok: failures.length === 0, failures, checks }, null, 1));
process.exit(failures.length === 0 ? 0 : 1);
