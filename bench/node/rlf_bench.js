// rate-limiter-flexible's RateLimiterRedis against one Redis, ioredis with auto-pipelining:
// `concurrency` consume() calls kept in flight for `seconds`, over `keys` random keys.
// Usage: node rlf_bench.js PORT CONCURRENCY KEYS SECONDS
'use strict';
const Redis = require('ioredis');
const { RateLimiterRedis } = require('rate-limiter-flexible');

const [port, concurrency, keys, seconds] = process.argv.slice(2).map(Number);
const client = new Redis({ port, host: '127.0.0.1', enableAutoPipelining: true });
const limiter = new RateLimiterRedis({
  storeClient: client, keyPrefix: 'rlf', points: 100, duration: 1,
});

let admitted = 0, denied = 0, errors = 0, running = true;
const latencies = [];

async function lane() {
  while (running) {
    const key = 'k' + Math.floor(Math.random() * keys);
    const start = process.hrtime.bigint();
    try {
      await limiter.consume(key, 1);
      admitted++;
    } catch (e) {
      if (e instanceof Error) errors++; else denied++;
    }
    latencies.push(Number(process.hrtime.bigint() - start) / 1000);
  }
}

(async () => {
  await client.ping();
  const started = process.hrtime.bigint();
  setTimeout(() => { running = false; }, seconds * 1000);
  await Promise.all(Array.from({ length: concurrency }, lane));
  const elapsed = Number(process.hrtime.bigint() - started) / 1e9;
  latencies.sort((a, b) => a - b);
  const pct = (p) => latencies[Math.floor(p * (latencies.length - 1))].toFixed(1);
  console.log(`checks_per_second=${Math.round(latencies.length / elapsed)}`);
  console.log(`p50_us=${pct(0.5)}\np99_us=${pct(0.99)}`);
  console.log(`admitted=${admitted}\ndenied=${denied}\nerrors=${errors}`);
  client.disconnect();
})();
