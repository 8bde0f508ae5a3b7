// Loads an HTML file in headless Chromium (Debian's, through playwright-core)
// and prints, as JSON: the console errors and warnings, page errors, failed
// requests and any request for other than a local file;
// for each chart (svg.chart[data-chart]) its bars and points; the page's
// width on a phone (375 px wide: more means it scrolls sideways); and
// writes a screenshot of the whole page. The phone's width is taken with
// every fold (<details>) open.
//
//   node check_page.mjs PAGE.html SCREENSHOT.png
import { chromium } from "playwright-core";
import { pathToFileURL } from "node:url";

const [page_path, screenshot] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath: process.env.NEARDUP_TEST_CHROMIUM || "/usr/bin/chromium",
  args: [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
  ],
});
const errors = [];
const page = await browser.newPage({ viewport: { width: 1000, height: 800 } });
page.on("console", (message) => {
  if (message.type() === "error" || message.type() === "warning") errors.push(`console ${message.type()}: ${message.text()}`);
});
page.on("pageerror", (error) => errors.push(`page error: ${error.message}`));
page.on("requestfailed", (request) => errors.push(`request failed: ${request.url()}`));
page.on("request", (request) => {
  if (!request.url().startsWith("file:")) errors.push(`request off the page: ${request.url()}`);
});
await page.goto(pathToFileURL(page_path).href, { waitUntil: "load" });
const charts = await page.evaluate(() => {
  const out = {};
  for (const svg of document.querySelectorAll("svg.chart")) {
    const box = svg.getBoundingClientRect();
    out[svg.dataset.chart] = {
      bars: svg.querySelectorAll(".bar").length,
      points: svg.querySelectorAll(".point").length,
      width: box.width,
      height: box.height,
    };
  }
  return out;
});
await page.screenshot({ path: screenshot, fullPage: true });
await page.setViewportSize({ width: 375, height: 800 });
// Every fold open: a reader on a phone opens the samples too.
const phone_width = await page.evaluate(() => {
  document.querySelectorAll("details").forEach((d) => { d.open = true; });
  return document.documentElement.scrollWidth;
});
await browser.close();
console.log(JSON.stringify({ errors, charts, phone_width }));
