// Makes the pictures of README.md and docs/observability.md (scripts/pictures.sh runs it):
//   simulate-api-spikes.svg   `spillway simulate --svg` on examples/traces/api-spikes.csv
//   simulate-report.png       the top of that run's HTML report, in headless Chromium
//   dashboard.png             `spillway serve`'s /dashboard after 30 s of mixed traffic: three
//                             API keys within their limits, one over its /search limit, and a
//                             shadow layer that would deny the busiest key
// Writes into $SPILLWAY_ARTIFACTS (scripts/pictures.sh points it at docs/images).

import path from 'node:path';
import fsp from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import {
  ARTIFACTS, launchBrowser, openPage, closePage, problemsOf, runBinary, startServe, sleep,
  tempDir, removeDir,
} from './browser.mjs';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const trace = path.join(repo, 'examples', 'traces', 'api-spikes.csv');

async function main() {
  await fsp.mkdir(ARTIFACTS, { recursive: true });
  const dir = await tempDir('spillway-pictures-');
  const browser = await launchBrowser();
  try {
    // 1. simulate on the example trace: the SVG as is, and the report's first screen.
    const report = path.join(dir, 'report.html');
    const run = await runBinary(['simulate', '--trace', path.relative(process.cwd(), trace), '--limit', '10', '--period', '10s',
      '--out', report, '--svg', path.join(ARTIFACTS, 'simulate-api-spikes.svg')]);
    if (run.code !== 0) throw new Error(`simulate failed: ${run.stderr}`);
    process.stdout.write(run.stdout);
    const page = await openPage(browser, 'file://' + report);
    await page.setViewportSize({ width: 1280, height: 1060 });
    await sleep(300);
    await page.screenshot({ path: path.join(ARTIFACTS, 'simulate-report.png'), type: 'png' });
    assertClean(page, 'report');
    await closePage(page);

    // 2. the dashboard under traffic.
    const server = await startServe({ configText: CONFIG });
    try {
      const dashboard = await openPage(browser, server.url + '/dashboard');
      await dashboard.setViewportSize({ width: 1280, height: 1000 });
      // Traffic for 32 s; the picture is taken at 30 s, while it still flows.
      const until = Date.now() + 32000;
      const traffic = (async () => {
        for (let tick = 0; Date.now() < until; tick += 1) {
          const sends = [];
          for (const [key, ip, endpoint, every] of TRAFFIC) {
            if (tick % every === 0) sends.push(check(server.url, { ip, api_key: key, endpoint }));
          }
          await Promise.all(sends);
          await sleep(25);
        }
      })();
      await sleep(30000);
      await dashboard.screenshot({ path: path.join(ARTIFACTS, 'dashboard.png'), type: 'png' });
      await traffic;
      assertClean(dashboard, 'dashboard');
      await closePage(dashboard);
    } finally {
      await server.stop();
    }
  } finally {
    await browser.close();
    await removeDir(dir);
  }
}

// The seed policy, plus a shadow layer trying a tighter per-key limit.
const CONFIG = `
layers:
  - name: edge
    key: [ip]
    limit: 1000/min
  - name: gateway
    key: [api_key]
    by_plan:
      default: free
      plans: {free: 600/min, pro: 6000/min}
      keys: {acme: pro}
  - name: endpoint
    key: [api_key, endpoint]
    by_endpoint:
      limits: {/search: 120/min, /export: 30/min}
  - name: trial
    key: [api_key]
    mode: shadow
    limit: 300/min
`;

// api_key, ip, endpoint, one request every N ticks of 25 ms.
const TRAFFIC = [
  ['acme', '198.51.100.10', '/search', 1],
  ['globex', '198.51.100.20', '/profile', 1],
  ['initech', '198.51.100.30', '/export', 12],
  ['umbrella', '203.0.113.66', '/search', 2],
];

async function check(url, body) {
  const response = await fetch(url + '/v1/check', { method: 'POST', body: JSON.stringify(body) });
  await response.arrayBuffer();
}

function assertClean(page, what) {
  const problems = problemsOf(page);
  if (problems.length > 0) throw new Error(`${what}: ${problems.join('; ')}`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
