import Foundation

/// What a run was asked to do (see ``Options/help``).
struct Options: Equatable {
    /// The relay's cache is a shared one (`--shared`) instead of a private one.
    var shared = false
    /// Play only this test (`--only ID`), with the suite's own request and response log.
    var only: String?
    /// Exit 1 when fewer applicable tests pass (`--min N`).
    var minimum: Int?
    /// Exit 1 when any required test that all three browsers pass fails.
    var requireBrowserCommon = false
    /// Write the per-test results there (`--json FILE`).
    var jsonPath: String?
    /// Also run the suite's own shared-cache client against a shared relay.
    var suiteShared = false
    /// The suite's folder (`--suite DIR`; otherwise `CACHE_TESTS_DIR` or this machine's snapshot).
    var suiteDirectory: String?
    /// Echo the origin's log (on by itself with `--only`).
    var verbose = false

    /// What the command line asks for.
    enum Parsed: Equatable {
        case help
        case run(Options)
    }

    /// A command line that cannot be run: exit status 2 and this message.
    struct UsageError: Error, CustomStringConvertible {
        let description: String
    }

    /// Parses the arguments (without the program name).
    static func parse(_ arguments: [String]) throws(UsageError) -> Parsed {
        var options = Options()
        var rest = arguments[...]
        func value(for flag: String) throws(UsageError) -> String {
            guard let value = rest.popFirst(), !value.hasPrefix("--") else {
                throw UsageError(description: "\(flag) needs a value\n\nRun with --help for usage.\n")
            }
            return value
        }
        while let argument = rest.popFirst() {
            switch argument {
            case "-h", "--help": return .help
            case "--shared": options.shared = true
            case "--only": options.only = try value(for: argument)
            case "--min":
                let text = try value(for: argument)
                guard let minimum = Int(text), minimum >= 0 else {
                    throw UsageError(description: "--min needs a count, not \(text)\n")
                }
                options.minimum = minimum
            case "--require-browser-common": options.requireBrowserCommon = true
            case "--json": options.jsonPath = try value(for: argument)
            case "--suite-shared": options.suiteShared = true
            case "--suite": options.suiteDirectory = try value(for: argument)
            case "-v", "--verbose": options.verbose = true
            default:
                throw UsageError(description: "unknown argument \(argument)\n\nRun with --help for usage.\n")
            }
        }
        return .run(options)
    }

    /// The usage text.
    static let help = """
        asyncimage-conformance: AsyncImageKit's HTTP cache against the public HTTP
        cache test suite (github.com/http-tests/cache-tests, at commit
        \(SuiteLocation.pinnedCommit)).

        It starts the suite's origin server (node, on 127.0.0.1), a relay on
        127.0.0.1 that answers the suite's /test/ requests through
        AsyncImageLoader.data(for:) (disk cache only, in a temporary folder), and
        plays the suite's tests with the suite's own client in browser mode. Tests
        for shared caches or CDNs only, with a method other than GET or with a fetch
        cache mode are N/A. It prints each test's result, then the totals and the
        browsers' published results on the same tests.

        usage: asyncimage-conformance [options]

          --shared                  the relay's cache is a shared one (default: private)
          --only ID                 play one test, with the suite's request/response log
          --min N                   exit 1 when fewer than N applicable tests pass
          --require-browser-common  exit 1 when a required test that Chrome, Firefox
                                    and Safari all pass fails
          --json FILE               write the per-test results as JSON
          --suite-shared            also run the suite's own client (test-engine/cli.mjs,
                                    shared-cache judging) against a shared relay, compared
                                    with the published results of proxies and CDNs
          --suite DIR               the suite's folder (default: $CACHE_TESTS_DIR, else
                                    \(SuiteLocation.machineSnapshot))
          -v, --verbose             echo the origin server's log
          -h, --help                this text

        The suite (needs node 18 or later; nothing from npm):

          git clone https://github.com/http-tests/cache-tests.git
          git -C cache-tests checkout \(SuiteLocation.pinnedCommit)
          export CACHE_TESTS_DIR=$PWD/cache-tests

        Without the suite or node it says how to get them and exits 0 (1 when the
        environment variable CI is set).

        """
}
