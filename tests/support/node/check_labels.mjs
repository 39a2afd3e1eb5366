// Fails when a ctest test has no label, or a label outside the known list (a typo would hide a
// test from `ctest -L <label>`). Run by ctest itself (the test `labels.every_test_is_labelled`,
// tests/CMakeLists.txt) and usable by hand:
//   node tests/support/node/check_labels.mjs CTEST BUILD_DIR LABEL...
// It reads `CTEST --show-only=json-v1` in BUILD_DIR (CTEST: the ctest program). Exit status 0:
// every test is labelled; 1: the tests at fault are listed on stderr; 2: no listing.
import { execFileSync } from 'node:child_process';

const [ctest, buildDir, ...known] = process.argv.slice(2);
if (!ctest || !buildDir || known.length === 0) {
  console.error('usage: node check_labels.mjs CTEST BUILD_DIR LABEL...');
  process.exit(2);
}
let listing;
try {
  listing = JSON.parse(execFileSync(ctest, ['--show-only=json-v1'], {
    cwd: buildDir, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024,
  }));
} catch (error) {
  console.error(`ctest --show-only=json-v1 in ${buildDir} failed: ${error.message}`);
  process.exit(2);
}
const knownSet = new Set(known);
const faults = [];
for (const test of listing.tests) {
  const labels = (test.properties ?? []).find((p) => p.name === 'LABELS')?.value ?? [];
  if (labels.length === 0) faults.push(`${test.name}: no label`);
  const unknown = labels.filter((label) => !knownSet.has(label));
  if (unknown.length > 0) faults.push(`${test.name}: unknown label(s) ${unknown.join(', ')}`);
  if (labels.includes('unit') && labels.length > 1) {
    faults.push(`${test.name}: 'unit' with other labels (${labels.join(', ')})`);
  }
}
if (faults.length > 0) {
  console.error(`${faults.length} test(s) labelled wrongly (see tests/CMakeLists.txt):`);
  for (const fault of faults) console.error(`  ${fault}`);
  process.exit(1);
}
console.log(`${listing.tests.length} tests, each labelled with known labels`);
