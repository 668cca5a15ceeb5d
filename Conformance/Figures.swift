import Foundation

/// How a test came out in a run.
enum Outcome: String, Encodable {
    case pass = "PASS"
    case fail = "FAIL"
    case notApplicable = "N/A"
}

/// Published results by name (browsers, or proxies and CDNs), in report order.
typealias PublishedResults = [(name: String, results: [String: SuiteResult])]

/// How many of `tests` pass in `results` (a pass is exactly `true`).
func passCount(_ tests: [SuiteTest], in results: [String: SuiteResult]) -> Int {
    tests.filter { results[$0.id]?.isPass == true }.count
}

/// The browser-mode figure: our results on the applicable tests, next to
/// the browsers' published ones on the same tests.
struct BrowserFigure {
    /// The tests reported on (the whole suite, or the one `--only` names).
    let tests: [SuiteTest]
    /// Our results by test id (from the suite's client).
    let results: [String: SuiteResult]
    /// Each browser's published results (``Catalogue/browsers`` order).
    let browsers: PublishedResults

    var applicable: [SuiteTest] { tests.filter { $0.browserModeExclusion == nil } }
    var required: [SuiteTest] { applicable.filter(\.isRequired) }

    /// The required applicable tests that every browser passes.
    var browserCommon: [SuiteTest] {
        required.filter { test in browsers.allSatisfy { $0.results[test.id]?.isPass == true } }
    }

    func outcome(_ test: SuiteTest) -> Outcome {
        guard test.browserModeExclusion == nil else { return .notApplicable }
        return results[test.id]?.isPass == true ? .pass : .fail
    }

    /// Why a test failed or is N/A, in the suite's words where it has them.
    func reason(_ test: SuiteTest) -> String {
        if let exclusion = test.browserModeExclusion { return exclusion }
        guard let result = results[test.id] else { return "no result (the suite's client did not finish it)" }
        return result.reason
    }

    /// Prints one line per test: outcome, kind, id, and why it failed or is N/A.
    func printTests() {
        for test in tests {
            let outcome = outcome(test)
            let kind = outcome == .notApplicable ? "" : test.kindLabel
            let reason = outcome == .pass ? "" : "  " + reason(test)
            say("\(pad(outcome.rawValue, 5)) \(pad(kind, 9)) \(test.id)\(reason)")
        }
    }

    /// Prints the totals, the browsers' counts and the all-browsers-pass set.
    func printTotals(mode: CacheMode) {
        let applicable = applicable
        let required = required
        let left = summary(of: tests.compactMap(\.browserModeExclusion))
        say("")
        say("== Browser mode: AsyncImageKit's \(mode.rawValue) cache, the suite's client in browser mode ==")
        say("Applicable: \(applicable.count) of \(tests.count) tests\(left.isEmpty ? "" : " (N/A: \(left))")")
        say("Passed: \(passCount(applicable, in: results))/\(applicable.count) applicable, "
            + "\(passCount(required, in: results))/\(required.count) required")
        say("On the same tests (published results; a pass is a result of `true`):")
        printCounts([("AsyncImageKit", results)] + browsers, tests: applicable)
        let common = browserCommon
        let failing = common.filter { results[$0.id]?.isPass != true }
        say("Required tests that \(browsers.map(\.name).joined(separator: ", ")) all pass: "
            + "\(common.count - failing.count)/\(common.count) passed")
        if !failing.isEmpty {
            say("  failing (\(failing.count)):")
            for test in failing { say("    \(test.id)") }
        }
    }

    /// The per-test entries for `--json`.
    func entries() -> [JSONReport.Test] {
        tests.map { test in
            let outcome = outcome(test)
            let browsers = self.browsers.map { ($0.name, $0.results[test.id]?.isPass == true) }
            return JSONReport.Test(
                id: test.id, kind: test.kindLabel, required: test.isRequired, outcome: outcome.rawValue,
                reason: outcome == .pass ? nil : reason(test), result: results[test.id],
                browsers: Dictionary(uniqueKeysWithValues: browsers))
        }
    }

    /// The totals for `--json`.
    func totals() -> JSONReport.Totals {
        JSONReport.Totals(
            counted: applicable, of: tests, results: results, others: browsers, common: browserCommon)
    }
}

/// The shared figure: the suite's own client (shared-cache judging) against
/// a shared relay, next to the proxies' and CDNs' published results on the
/// same tests.
struct SharedFigure {
    let tests: [SuiteTest]
    let results: [String: SuiteResult]
    let caches: PublishedResults

    /// The tests counted: those cli.mjs runs that the data API can play.
    var counted: [SuiteTest] { tests.filter { $0.sharedModeExclusion == nil } }

    func printTotals(sharedSwitch: Bool) {
        let counted = counted
        let left = summary(of: tests.compactMap(\.sharedModeExclusion))
        say("")
        say("== Shared figure: the suite's own client (test-engine/cli.mjs, shared-cache judging) ==")
        if !sharedSwitch { say("(the loader has no shared-cache switch yet: its one behaviour was judged)") }
        say("Counted: \(counted.count) of \(tests.count) tests\(left.isEmpty ? "" : " (left out: \(left))")")
        printCounts([("AsyncImageKit", results)] + caches, tests: counted)
    }

    func totals() -> JSONReport.Totals {
        JSONReport.Totals(counted: counted, of: tests, results: results, others: caches, common: nil)
    }
}

/// Prints each row's passes on `tests`, and on the required ones among them.
private func printCounts(_ rows: PublishedResults, tests: [SuiteTest]) {
    let required = tests.filter(\.isRequired)
    for (name, results) in rows {
        say("  \(pad(name, 14)) \(pad("\(passCount(tests, in: results))/\(tests.count)", 8)) "
            + "\(passCount(required, in: results))/\(required.count) required")
    }
}

/// "46 shared caches only, 24 CDN only, ...": reasons counted, methods and
/// cache modes grouped, most frequent first.
private func summary(of reasons: [String]) -> String {
    let groups = Dictionary(grouping: reasons) { reason -> String in
        if reason.hasPrefix("method ") { return "methods other than GET" }
        if reason.hasPrefix("fetch cache mode ") { return "fetch cache modes" }
        return reason
    }
    return groups.sorted { ($0.value.count, $1.key) > ($1.value.count, $0.key) }
        .map { "\($0.value.count) \($0.key)" }.joined(separator: ", ")
}

/// What `--json` writes.
struct JSONReport: Encodable {
    struct Count: Encodable {
        let passed: Int
        let requiredPassed: Int
    }

    struct Totals: Encodable {
        let tests: Int
        /// The tests counted (applicable ones, for the browser-mode figure).
        let applicable: Int
        let passed: Int
        let required: Int
        let requiredPassed: Int
        /// The browsers' (or the proxies' and CDNs') counts on the same tests.
        let others: [String: Count]
        /// Required tests all three browsers pass, and how many of them we pass.
        let othersCommonRequired: Int?
        let othersCommonRequiredPassed: Int?

        init(
            counted: [SuiteTest], of tests: [SuiteTest], results: [String: SuiteResult], others: PublishedResults,
            common: [SuiteTest]?
        ) {
            let required = counted.filter(\.isRequired)
            self.tests = tests.count
            applicable = counted.count
            passed = passCount(counted, in: results)
            self.required = required.count
            requiredPassed = passCount(required, in: results)
            self.others = Dictionary(
                uniqueKeysWithValues: others.map {
                    ($0.name, Count(
                        passed: passCount(counted, in: $0.results),
                        requiredPassed: passCount(required, in: $0.results)))
                })
            othersCommonRequired = common?.count
            othersCommonRequiredPassed = common.map { passCount($0, in: results) }
        }
    }

    struct Test: Encodable {
        let id: String
        let kind: String
        let required: Bool
        let outcome: String
        let reason: String?
        /// The suite's own result (`true`, or what failed).
        let result: SuiteResult?
        /// Whether each browser passes it (published results).
        let browsers: [String: Bool]
    }

    let suite: String
    let suiteCommit: String?
    let mode: String
    /// Whether the loader had its shared-cache switch (false: `--shared` ran the private behaviour).
    let sharedSwitch: Bool
    let seconds: Double
    let browserMode: Totals
    let tests: [Test]
    let suiteShared: Totals?
    let suiteSharedResults: [String: SuiteResult]?
}

extension SuiteResult: Encodable {
    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .passed: try container.encode(true)
        case .failed(let list): try container.encode(list)
        }
    }
}

/// `text` padded with spaces to `width`.
func pad(_ text: String, _ width: Int) -> String {
    text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
}

/// Writes a line to standard output at once (unbuffered), so the report
/// and node's own output (the suite's log with `--only`) stay in order.
func say(_ text: String = "", terminator: String = "\n") {
    FileHandle.standardOutput.write(Data((text + terminator).utf8))
}
