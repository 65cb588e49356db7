// Debian's Chromium driven by playwright-core, for the benchmark's chart and its wasm timing.
import { chromium } from "playwright-core";

export const CHROMIUM = process.env.CHROMIUM_BIN ?? "/usr/bin/chromium";

export function launchChromium() {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
      "--disable-component-update", "--disable-sync"],
  });
}
