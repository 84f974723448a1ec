// Opens a rendered message page (testkit's screens module) in headless
// Chromium, screenshots it and reports what a reader sees: per state (as
// loaded; then, with openDetails, after clicking every summary) each probe
// string's visibility and every <details>'s summary and open state; and the
// page's scripts, links, code spans and coloured diff lines.
// Usage: node screens.js '<job JSON>'   (NODE_PATH finds playwright-core)
//   job: {file, dir, name, probes: [string], openDetails: bool}
const { chromium } = require('playwright-core');
const path = require('path');

async function state(page, probes) {
  const visible = {};
  for (const p of probes) {
    // Visible: some element holding the text is rendered (a closed
    // <details>' content is not).
    const loc = page.getByText(p, { exact: false });
    let shown = false;
    for (let i = 0; i < await loc.count(); i++) {
      if (await loc.nth(i).isVisible()) { shown = true; break; }
    }
    visible[p] = shown;
  }
  const details = await page.evaluate(() => Array.from(document.querySelectorAll('details')).map((d) => ({
    summary: d.querySelector('summary') ? d.querySelector('summary').innerText : null,
    open: d.open,
  })));
  return { visible, details, text: await page.innerText('body') };
}

(async () => {
  const job = JSON.parse(process.argv[2]);
  const browser = await chromium.launch({
    executablePath: process.env.LIVE_CI_CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const out = { states: [] };
  try {
    const page = await browser.newPage({ viewport: { width: 920, height: 600 } });
    // Nothing but the file itself loads: a page reaching out is a finding.
    const requests = [];
    page.on('request', (r) => { if (!r.url().startsWith('file:')) requests.push(r.url()); });
    await page.goto('file://' + job.file);
    const box = page.locator('.comment, .message').first();
    await box.screenshot({ path: path.join(job.dir, job.name + '.png') });
    out.states.push(await state(page, job.probes));
    if (job.openDetails) {
      const summaries = page.locator('summary');
      for (let i = 0; i < await summaries.count(); i++) await summaries.nth(i).click();
      await box.screenshot({ path: path.join(job.dir, job.name + '-open.png') });
      out.states.push(await state(page, job.probes));
    }
    out.requests = requests;
    out.scripts = await page.evaluate(() => document.querySelectorAll('script').length);
    out.elements = await page.evaluate(() => Array.from(new Set(Array.from(
      document.querySelectorAll('.markdown-body *, .content *')).map((e) => e.tagName.toLowerCase()))).sort());
    out.links = await page.evaluate(() => Array.from(document.querySelectorAll('a')).map((a) => ({
      text: a.innerText, href: a.getAttribute('href') })));
    out.codes = await page.evaluate(() => Array.from(document.querySelectorAll('code'))
      .filter((c) => !c.closest('pre')).map((c) => c.innerText));
    out.bold = await page.evaluate(() => Array.from(document.querySelectorAll('b, strong')).map((b) => b.innerText));
    out.diff = await page.evaluate(() => Array.from(document.querySelectorAll('pre.diff span')).slice(0, 400).map((s) => ({
      cls: s.className, text: s.innerText, color: getComputedStyle(s).color })));
  } finally {
    await browser.close();
  }
  process.stdout.write(JSON.stringify(out));
})().catch((e) => { console.error(e); process.exit(1); });
