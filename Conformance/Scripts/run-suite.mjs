// Plays the suite's tests with the suite's own client in browser mode
// (`runTests(tests, true, base)`: no `cache: 'no-store'`, no header hacks, as a
// page in a browser would fetch), with `/test/` fetches going to the relay,
// whose cache is the one judged (node's fetch has none of its own).
//
//   node run-suite.mjs SUITE_DIR IDS_FILE OUTPUT_FILE [--dump]
//
// IDS_FILE: a JSON array of the test ids to run (the command decides which
// apply). OUTPUT_FILE: a JSON object of test id to the suite's result (`true`,
// or [error name, message]). --dump: the suite's own request and response log.
// CONFORMANCE_ORIGIN (the suite's origin: the base URL) and CONFORMANCE_RELAY
// are read by route-fetch.mjs.
import './route-fetch.mjs' // first: the suite's modules below must only see the routed fetch
import { readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { pathToFileURL } from 'node:url'

const [suiteDir, idsFile, outputFile, ...flags] = process.argv.slice(2)
const load = relative => import(pathToFileURL(path.join(suiteDir, relative)).href)
const { default: suites } = await load('tests/index.mjs')
const { runTests, getResults } = await load('test-engine/client/runner.mjs')

const wanted = new Set(JSON.parse(readFileSync(idsFile, 'utf8')))
const dump = flags.includes('--dump')
const selected = suites
  .map(suite => ({ ...suite, tests: suite.tests.filter(test => wanted.has(test.id)) }))
  .filter(suite => suite.tests.length > 0)
for (const suite of selected) for (const test of suite.tests) if (dump) test.dump = true
const total = selected.reduce((sum, suite) => sum + suite.tests.length, 0)

// A line now and then: the suite pauses 3 s after some requests, so a whole run takes minutes.
const started = Date.now()
const progress = setInterval(() => {
  const done = Object.keys(getResults()).length
  process.stderr.write(`  ${done}/${total} tests done (${Math.round((Date.now() - started) / 1000)} s)\n`)
}, 15000)

await runTests(selected, true, process.env.CONFORMANCE_ORIGIN)
clearInterval(progress)
writeFileSync(outputFile, JSON.stringify(getResults()))
process.exit(0)
