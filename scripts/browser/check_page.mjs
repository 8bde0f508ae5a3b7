// Loads an HTML file in headless Chromium (Debian's, through playwright-core)
// and prints, as JSON: the console errors and warnings, page errors, failed
// requests and any request for other than a local file;
// for each chart (svg.chart[data-chart]) its bars and points; the page's
// width on a phone (375 px wide: more means it scrolls sideways); on the
// phone, the charts whose titles are cut off by their scrolling box and
// the table headers whose text overflows their cell; and writes a
// screenshot of the whole page. The phone's figures are taken with every
// fold (<details>) open.
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
const phone = await page.evaluate(() => {
  document.querySelectorAll("details").forEach((d) => { d.open = true; });
  const cut_titles = [];
  for (const svg of document.querySelectorAll("svg.chart")) {
    const box = svg.parentElement.getBoundingClientRect();
    const title = svg.querySelector("text.title").getBoundingClientRect();
    if (title.left < box.left || title.right > box.right) cut_titles.push(svg.dataset.chart);
  }
  const overflowing_headers = [...document.querySelectorAll("th")]
    .filter((th) => th.scrollWidth > th.clientWidth)
    .map((th) => th.textContent);
  return { width: document.documentElement.scrollWidth, cut_titles, overflowing_headers };
});
await browser.close();
console.log(JSON.stringify({ errors, charts, phone_width: phone.width, phone }));
