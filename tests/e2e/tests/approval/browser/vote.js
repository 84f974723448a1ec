// Opens an approval e-mail in headless Chromium, follows its Approve link to
// the confirmation page, presses the button and reports what each page said.
// Usage: node vote.js <email.html> <artifacts dir>   (NODE_PATH finds playwright-core)
const { chromium } = require('playwright-core');
const path = require('path');

(async () => {
  const [emailFile, artifacts] = process.argv.slice(2);
  const browser = await chromium.launch({
    executablePath: process.env.LIVE_CI_CHROMIUM || '/usr/bin/chromium',
    headless: true,
    // As this machine's notes require: no sandbox as root, and no background
    // networking (the closed network refuses it).
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const out = {};
  try {
    const page = await browser.newPage({ viewport: { width: 900, height: 800 } });
    await page.goto('file://' + path.resolve(emailFile));
    await page.screenshot({ path: path.join(artifacts, '1-email.png'), fullPage: true });
    out.email = await page.innerText('body');
    await Promise.all([page.waitForNavigation(), page.click('a >> text="Approve"')]);
    out.confirmUrl = page.url();
    await page.screenshot({ path: path.join(artifacts, '2-confirm.png'), fullPage: true });
    out.confirm = await page.innerText('body');
    // Script elements in the page: a plan value must never become one.
    out.scripts = await page.evaluate(() => document.querySelectorAll('script').length);
    const [response] = await Promise.all([page.waitForNavigation(), page.click('#vote')]);
    out.resultStatus = response ? response.status() : null;
    await page.screenshot({ path: path.join(artifacts, '3-result.png'), fullPage: true });
    out.result = await page.innerText('body');
  } finally {
    await browser.close();
  }
  process.stdout.write(JSON.stringify(out));
})().catch((e) => { console.error(e); process.exit(1); });
