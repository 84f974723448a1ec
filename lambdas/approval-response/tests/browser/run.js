// Opens a read-only run page in headless Chromium, screenshots it and reports
// what it shows and what it holds to act on (forms, buttons, scripts, links).
// Usage: node run.js <url> <artifacts dir>   (NODE_PATH finds playwright-core)
const { chromium } = require('playwright-core');
const path = require('path');

(async () => {
  const [url, artifacts] = process.argv.slice(2);
  const browser = await chromium.launch({
    executablePath: process.env.LIVE_CI_CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const out = {};
  try {
    const page = await browser.newPage({ viewport: { width: 1100, height: 800 } });
    const response = await page.goto(url);
    out.status = response ? response.status() : null;
    await page.screenshot({ path: path.join(artifacts, '4-run.png'), fullPage: true });
    out.text = await page.innerText('body');
    out.forms = await page.evaluate(() => document.querySelectorAll('form, button, input').length);
    out.scripts = await page.evaluate(() => document.querySelectorAll('script').length);
    out.links = await page.evaluate(() => Array.from(document.querySelectorAll('a')).map((a) => a.href));
  } finally {
    await browser.close();
  }
  process.stdout.write(JSON.stringify(out));
})().catch((e) => { console.error(e); process.exit(1); });
