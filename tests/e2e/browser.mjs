// Driving Debian's Chromium with playwright-core for the page and widget tests: a browser,
// pages that record every request they make, and a screenshot of each step under
// test-output/<test-name>/NN-step.png.
import { mkdir } from "node:fs/promises";
import path from "node:path";
import { chromium } from "playwright-core";
import { OUTPUT } from "./harness.mjs";

const CHROMIUM = process.env.CHROMIUM_BIN ?? "/usr/bin/chromium";

export const PHONE = { width: 390, height: 844 };
export const DESKTOP = { width: 1280, height: 900 };

export function launchBrowser() {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync",
      // Names for sites other than the Worker's (a shop at `http://shop.test:PORT`), all on
      // this machine's 127.0.0.1.
      "--host-resolver-rules=MAP *.test 127.0.0.1",
    ],
  });
}

function slug(text) {
  return text.toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-|-$/g, "").slice(0, 80);
}

/**
 * A fresh browser context and page. `requests` lists every URL the page (and its frames)
 * asked for; `shot(step)` saves the next numbered screenshot; `errors` holds uncaught page
 * exceptions.
 */
export async function openPage(browser, testName, { viewport = DESKTOP, isMobile = false } = {}) {
  const context = await browser.newContext({ viewport, isMobile, hasTouch: isMobile, deviceScaleFactor: 1 });
  const page = await context.newPage();
  const requests = [];
  const errors = [];
  context.on("request", (r) => requests.push({ url: r.url(), method: r.method(), headers: r.headers() }));
  page.on("pageerror", (e) => errors.push(e.message));
  const dir = path.join(OUTPUT, slug(testName));
  await mkdir(dir, { recursive: true });
  let n = 0;
  const shot = async (step) => {
    n += 1;
    await page.screenshot({ path: path.join(dir, `${String(n).padStart(2, "0")}-${slug(step)}.png`), fullPage: true });
  };
  return { context, page, requests, errors, shot, close: () => context.close() };
}

/** The distinct origins among recorded requests. */
export function originsOf(requests) {
  return [...new Set(requests.map((r) => new URL(r.url).origin))].sort();
}

/**
 * Presses Tab (Shift+Tab with `backwards`) until the focused element matches `selector`,
 * proving it is reachable by keyboard; fails after `limit` presses.
 */
export async function tabTo(page, selector, { limit = 60, backwards = false, frame } = {}) {
  const scope = frame ?? page;
  for (let i = 0; i < limit; i++) {
    const here = await scope.evaluate((sel) => document.activeElement?.matches(sel) ?? false, selector).catch(() => false);
    if (here) return;
    await page.keyboard.press(backwards ? "Shift+Tab" : "Tab");
  }
  throw new Error(`${selector} was not reached with the keyboard in ${limit} presses`);
}

/** The focused element's outline, to check focus is visible. */
export function focusOutline(scope) {
  return scope.evaluate(() => {
    const s = getComputedStyle(document.activeElement);
    return { style: s.outlineStyle, width: parseFloat(s.outlineWidth) };
  });
}
