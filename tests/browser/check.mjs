// Loads an inferlint report in Debian's headless Chromium and checks it as a person would use
// it: no console error, no network request, the keyboard moves a chart's cursor, the tooltip
// shows, the theme switch works and is remembered. Optionally saves light and dark screenshots.
//
// usage: node check.mjs REPORT.html [SCREENSHOT_DIR]
// Prints one JSON object; exits 0 when every check passed, 1 otherwise.
import { chromium } from 'playwright-core';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [report, shots] = process.argv.slice(2);
if (!report) {
  console.error('usage: node check.mjs REPORT.html [SCREENSHOT_DIR]');
  process.exit(2);
}
const pageUrl = pathToFileURL(path.resolve(report)).href;
const executablePath = process.env.CHROMIUM || '/usr/bin/chromium';
const failures = [];
const checks = {};
const expect = (name, ok, detail) => {
  checks[name] = ok ? true : (detail ?? false);
  if (!ok) failures.push(`${name}: ${JSON.stringify(detail ?? null)}`);
};

const browser = await chromium.launch({
  executablePath,
  headless: true,
  args: [
    '--no-sandbox', '--disable-gpu', '--disable-background-networking',
    '--disable-component-update', '--disable-sync', '--no-first-run',
  ],
});
const consoleErrors = [];
const requests = [];

async function openPage(colorScheme) {
  const context = await browser.newContext({ viewport: { width: 1200, height: 900 }, colorScheme });
  // Anything that would leave the page is recorded and refused.
  await context.route('**/*', (route) => {
    const url = route.request().url();
    if (url === pageUrl || url.startsWith('data:')) return route.continue();
    requests.push(url);
    return route.abort();
  });
  const page = await context.newPage();
  page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') consoleErrors.push(`${m.type()}: ${m.text()}`); });
  page.on('pageerror', (e) => consoleErrors.push(`pageerror: ${e.message}`));
  page.on('request', (r) => {
    const url = r.url();
    if (url !== pageUrl && !url.startsWith('data:')) requests.push(url);
  });
  await page.goto(pageUrl, { waitUntil: 'load' });
  return { context, page };
}

try {
  const { context, page } = await openPage('light');

  // The keyboard moves the cursor of the first time chart.
  const plot = page.locator('figure[data-chart] svg.plot').first();
  expect('has a time chart', (await plot.count()) === 1);
  await plot.focus();
  const index = async () => Number(await plot.getAttribute('data-index'));
  expect('focus shows the first reading', (await index()) === 0, await index());
  for (let i = 0; i < 3; i++) await page.keyboard.press('ArrowRight');
  expect('ArrowRight steps one reading', (await index()) === 3, await index());
  await page.keyboard.press('Shift+ArrowRight');
  expect('Shift+ArrowRight steps ten', (await index()) === 13, await index());
  await page.keyboard.press('ArrowLeft');
  expect('ArrowLeft steps back', (await index()) === 12, await index());
  const crosshair = await plot.evaluate((svg) => {
    const data = JSON.parse(svg.parentElement.querySelector('script.chart-data').textContent);
    const line = svg.querySelector('line.xh');
    return { x: Number(line.getAttribute('x1')), want: data.px[12], shown: line.style.display !== 'none' };
  });
  expect('the crosshair sits on the reading', crosshair.shown && crosshair.x === crosshair.want, crosshair);
  const tip = page.locator('.tt');
  expect('the tooltip shows the time', (await tip.isVisible()) && /\d+\.\d\d s/.test(await tip.innerText()), await tip.innerText());
  await page.keyboard.press('Escape');
  expect('Escape hides the tooltip', !(await tip.isVisible()));

  // Hovering a chart and a bar shows their tips.
  const box = await plot.boundingBox();
  await page.mouse.move(box.x + box.width * 0.5, box.y + box.height * 0.5);
  expect('hover shows the tooltip', await tip.isVisible());
  const bar = page.locator('svg.bars .bar').first();
  if (await bar.count()) {
    await bar.hover();
    expect('a bar shows its tip', (await tip.isVisible()) && (await tip.innerText()).length > 0);
  }

  // The theme switch flips the page and is remembered.
  const bg = () => page.evaluate(() => getComputedStyle(document.body).backgroundColor);
  const lightBg = await bg();
  const toggle = page.locator('#theme-toggle');
  expect('the theme button is shown', await toggle.isVisible());
  if (shots) await page.screenshot({ path: path.join(shots, 'report-light.png'), fullPage: true });
  await toggle.click();
  const theme = await page.evaluate(() => [document.documentElement.getAttribute('data-theme'), localStorage.getItem('inferlint-theme')]);
  expect('the switch sets dark', theme[0] === 'dark' && theme[1] === 'dark', theme);
  const darkBg = await bg();
  expect('dark changes the colours', darkBg !== lightBg, [lightBg, darkBg]);
  // Chromium hands a page's localStorage writes to the browser process in batches: wait
  // until another page of the same browser sees the choice (as a user's later reload would),
  // bounded, then reload.
  const stored = async () => {
    const other = await context.newPage();
    await other.goto(pageUrl, { waitUntil: 'load' });
    const v = await other.evaluate(() => localStorage.getItem('inferlint-theme'));
    await other.close();
    return v;
  };
  for (let i = 0; i < 20 && (await stored()) !== 'dark'; i++) await page.waitForTimeout(250);
  await page.reload({ waitUntil: 'load' });
  expect('the choice survives a reload', (await page.evaluate(() => document.documentElement.getAttribute('data-theme'))) === 'dark' && (await bg()) === darkBg);
  if (shots) await page.screenshot({ path: path.join(shots, 'report-dark.png'), fullPage: true });
  await page.locator('#theme-toggle').click();
  expect('the switch goes back to light', (await bg()) === lightBg, await bg());
  await context.close();

  // Without a stored choice the page follows the system's preference.
  const dark = await openPage('dark');
  const followed = await dark.page.evaluate(() => getComputedStyle(document.body).backgroundColor);
  expect('follows prefers-color-scheme', followed === darkBg, [followed, darkBg]);
  await dark.context.close();
} catch (e) {
  failures.push(`error: ${e.stack || e}`);
} finally {
  await browser.close();
}

expect('no console error', consoleErrors.length === 0, consoleErrors);
expect('no network request', requests.length === 0, requests);
console.log(JSON.stringify({ ok: failures.length === 0, failures, checks }, null, 1));
process.exit(failures.length === 0 ? 0 : 1);
