// Prints the suite's tests as JSON, one object per test, with what the
// command's applicability rules and counts need: the suite's own flags
// (`kind`, `browser_only`, `browser_skip`, `cdn_only`, `depends_on`) and, over
// its requests, the methods, the fetch `cache` modes and whether any expects
// interim responses (which the suite's client reads with the npm package undici).
//
//   node catalogue.mjs SUITE_DIR
import path from 'node:path'
import { pathToFileURL } from 'node:url'

const suiteDir = process.argv[2]
const { default: suites } = await import(pathToFileURL(path.join(suiteDir, 'tests/index.mjs')).href)

const catalogue = []
for (const suite of suites) {
  for (const test of suite.tests) {
    catalogue.push({
      id: test.id,
      name: test.name,
      suite: suite.id,
      kind: test.kind ?? null,
      browserOnly: test.browser_only === true,
      browserSkip: test.browser_skip === true,
      cdnOnly: test.cdn_only === true,
      dependsOn: test.depends_on ?? [],
      methods: test.requests.map(request => request.request_method ?? 'GET'),
      cacheModes: test.requests.filter(request => 'cache' in request).map(request => request.cache),
      interimResponses: test.requests.some(request => 'expected_interim_responses' in request)
    })
  }
}
process.stdout.write(JSON.stringify(catalogue))
