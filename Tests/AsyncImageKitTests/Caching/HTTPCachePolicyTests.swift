@testable import AsyncImageKit
import Foundation
import XCTest

/// The HTTP cache component alone, table by table, each test named after
/// the RFC section it checks (RFC 9111 unless named otherwise).
final class HTTPCachePolicyTests: XCTestCase {
    private let policy = HTTPCachePolicy.private
    private let shared = HTTPCachePolicy.shared
    /// 1994-11-06 08:49:37 UTC.
    private let t0 = 784_111_777.0
    private let date0 = "Sun, 06 Nov 1994 08:49:37 GMT"

    private func head(
        _ headers: [String: String], status: Int = 200, request: [String: String] = [:], at time: Double? = nil
    ) -> StoredHTTPHead {
        policy.storedHead(
            status: status, responseHeaders: headers, requestHeaders: request, requestTime: time ?? t0,
            responseTime: time ?? t0)
    }

    func testRFC9110_5_6_7_HTTPDateForms() {
        let cases: [(String, Double?)] = [
            (date0, t0),  // IMF-fixdate
            ("Sunday, 06-Nov-94 08:49:37 GMT", t0),  // RFC 850
            ("Sun Nov  6 08:49:37 1994", t0),  // asctime
            ("sun, 06 nov 1994 08:49:37 gmt", t0),  // names in any case, as browsers
            ("Sun, 06 Nov 1994 25:49:37 GMT", nil),
            ("Sun, 6 Nov 1994 08:49:37 GMT", nil),  // IMF-fixdate has two-digit days
            ("Sun, 06 Nov 1994 08:49:37 UTC", nil),
            ("Sun, 06  Nov  1994 08:49:37 GMT", nil),  // one space between fields, no more
            ("Sun Nov 6 08:49:37 1994", t0),
            ("0", nil), ("", nil), ("yesterday", nil),
        ]
        for (text, expected) in cases {
            XCTAssertEqual(HTTPFieldParsing.date(text, now: t0), expected, text)
        }
        // RFC 850's two-digit year: more than 50 years ahead means the past century.
        let in2026 = 1_795_000_000.0
        XCTAssertEqual(
            HTTPFieldParsing.date("Monday, 01-Jan-90 00:00:00 GMT", now: in2026),
            HTTPFieldParsing.date("Mon, 01 Jan 1990 00:00:00 GMT"))
        XCTAssertEqual(
            HTTPFieldParsing.date("Tuesday, 01-Jan-30 00:00:00 GMT", now: in2026),
            HTTPFieldParsing.date("Tue, 01 Jan 2030 00:00:00 GMT"))
    }

    func testRFC9111_5_1_AgeIsANonNegativeInteger() {
        let cases: [(String?, Double?)] = [
            ("7200", 7200), ("0", 0), ("0, 7200", 0), ("7200, 0", 7200),  // the first line (joined) counts
            ("7200.0", nil), ("-7200", nil), ("abc", nil), (nil, nil),
            ("7200;foo=bar", 7200),
            ("2147483648", 2_147_483_648), ("99999999999999", 2_147_483_648),  // saturates
        ]
        for (text, expected) in cases { XCTAssertEqual(HTTPFieldParsing.age(text), expected, text ?? "nil") }
    }

    func testRFC9111_5_2_CacheControlDirectives() {
        let cases: [(String, [String: String])] = [
            ("max-age=60, public", ["max-age": "60", "public": ""]),
            ("MAX-AGE=60", ["max-age": "60"]),
            ("max-age=1800, max-age=1", ["max-age": "1800"]),  // the first occurrence (§4.2.1)
            ("max-age=\"3600\"", ["max-age": "3600"]),  // quoted-string form
            ("extension=\"max-age=3600, private\", max-age=1", ["extension": "max-age=3600, private", "max-age": "1"]),
            ("max-age =3600", [:]),  // whitespace before '=' makes no max-age
            ("no-cache=\"Set-Cookie, X-A\"", ["no-cache": "Set-Cookie, X-A"]),
            (",, no-store ,", ["no-store": ""]),
        ]
        for (text, expected) in cases { XCTAssertEqual(HTTPFieldParsing.directives(text), expected, text) }
        let deltas: [(String, Double?)] = [
            ("3600", 3600), ("003600", 3600), ("3600.5", 3600), ("3600a", 3600),
            ("a3600", nil), ("'3600'", nil), ("-1", nil), (" 3600", nil),
        ]
        for (text, expected) in deltas { XCTAssertEqual(HTTPFieldParsing.deltaSeconds(text), expected, text) }
    }

    func testRFC9111_3_StoringResponses() {
        let cases: [(status: Int, headers: [String: String], request: [String: String], storable: Bool, why: String)] = [
            (200, [:], [:], true, "heuristically cacheable"),
            (404, [:], [:], true, "heuristically cacheable"),
            (203, ["cache-control": "max-age=60"], [:], true, "explicit freshness"),
            (302, [:], [:], false, "not heuristically cacheable, no freshness"),
            (302, ["cache-control": "max-age=60"], [:], true, "explicit freshness"),
            (307, ["expires": date0], [:], true, "an Expires"),
            (500, ["cache-control": "public"], [:], true, "public"),
            (200, ["cache-control": "no-store"], [:], false, "no-store"),
            (200, [:], ["Cache-Control": "no-store"], false, "the request's no-store"),
            (200, ["vary": "Accept, *"], [:], false, "Vary: *"),
            (206, ["cache-control": "max-age=60"], [:], false, "partial content is not stored"),
            (304, ["cache-control": "max-age=60"], [:], false, "a 304 refreshes, never replaces"),
            (100, [:], [:], false, "not final"),
            (200, ["cache-control": "private, max-age=60"], [:], true, "private: a private cache stores it"),
        ]
        for c in cases {
            XCTAssertEqual(
                policy.isStorable(status: c.status, responseHeaders: c.headers, requestHeaders: c.request), c.storable,
                "\(c.status) \(c.headers) \(c.request): \(c.why)")
        }
    }

    func testRFC9111_3_1_HopByHopFieldsAreNotStored() {
        let stored = head([
            "connection": "close, x-private", "x-private": "1", "keep-alive": "timeout=5", "transfer-encoding": "chunked",
            "etag": "\"a\"", "Content-Type": "image/png",
        ])
        XCTAssertEqual(stored.headers, ["etag": "\"a\"", "content-type": "image/png"])
    }

    func testRFC9111_3_5_SharedCacheRules() {
        XCTAssertFalse(shared.isStorable(status: 200, responseHeaders: ["cache-control": "private, max-age=60"], requestHeaders: [:]))
        let authorized = ["Authorization": "Bearer x"]
        XCTAssertFalse(shared.isStorable(status: 200, responseHeaders: ["cache-control": "max-age=60"], requestHeaders: authorized))
        XCTAssertTrue(shared.isStorable(status: 200, responseHeaders: ["cache-control": "public, max-age=60"], requestHeaders: authorized))
        XCTAssertTrue(shared.isStorable(status: 200, responseHeaders: ["cache-control": "s-maxage=60"], requestHeaders: authorized))
        XCTAssertTrue(policy.isStorable(status: 200, responseHeaders: ["cache-control": "max-age=60"], requestHeaders: authorized))
        // §5.2.2.10: s-maxage over max-age, shared only; and it forbids stale there.
        let both = head(["cache-control": "max-age=10, s-maxage=100"])
        XCTAssertEqual(policy.freshnessLifetime(both), 10)
        XCTAssertEqual(shared.freshnessLifetime(both), 100)
        XCTAssertFalse(policy.forbidsStale(both))
        XCTAssertTrue(shared.forbidsStale(both))
        // §5.2.2.8: proxy-revalidate binds shared caches only.
        XCTAssertFalse(policy.forbidsStale(head(["cache-control": "proxy-revalidate"])))
        XCTAssertTrue(shared.forbidsStale(head(["cache-control": "proxy-revalidate"])))
    }

    func testRFC9111_4_2_1_FreshnessLifetime() {
        let cases: [([String: String], Double, String)] = [
            (["cache-control": "public, max-age=300", "expires": "Sun, 06 Nov 1994 09:49:37 GMT"], 300, "max-age over Expires"),
            (["date": date0, "expires": "Sun, 06 Nov 1994 09:49:37 GMT"], 3600, "Expires - Date"),
            (["expires": "Sunday, 06-Nov-94 09:49:37 GMT"], 3600, "Expires in RFC 850 form, Date from the response time"),
            (["date": date0, "expires": "0"], 0, "an invalid Expires is expired"),
            (["cache-control": "max-age='3600'"], 0, "an invalid max-age is stale"),
            (["date": date0, "last-modified": "Sun, 06 Nov 1994 07:49:37 GMT"], 360, "the heuristic: 10% of an hour"),
            ([:], 0, "nothing"),
        ]
        for (headers, lifetime, why) in cases { XCTAssertEqual(policy.freshnessLifetime(head(headers)), lifetime, why) }
    }

    func testRFC9111_4_2_2_HeuristicFreshnessOnlyForCacheableStatuses() {
        let modified = ["date": date0, "last-modified": "Sun, 06 Nov 1994 07:49:37 GMT"]
        XCTAssertEqual(policy.freshnessLifetime(head(modified, status: 404)), 360)
        XCTAssertEqual(policy.freshnessLifetime(head(modified, status: 302)), 0)
        XCTAssertEqual(policy.freshnessLifetime(head(modified.merging(["cache-control": "public"]) { $1 }, status: 302)), 360)
    }

    func testRFC9111_4_2_3_CurrentAge() {
        // Sent at t0, answered 2 s later with Age: 30, stored 10 s.
        let stored = policy.storedHead(
            status: 200, responseHeaders: ["age": "30", "date": date0, "cache-control": "max-age=100"],
            requestHeaders: [:], requestTime: t0, responseTime: t0 + 2)
        XCTAssertEqual(policy.currentAge(stored, now: t0 + 12), 30 + 2 + 10, "Age + the response delay + resident time")
        // A Date an hour old with no Age: the apparent age.
        let old = head(["date": "Sun, 06 Nov 1994 07:49:37 GMT"])
        XCTAssertEqual(policy.currentAge(old, now: t0), 3600)
        XCTAssertEqual(policy.servedHeaders(stored, now: t0 + 12)["age"], "42")
        XCTAssertEqual(policy.reuse(stored, requestHeaders: [:], now: t0 + 69.5), .fresh)
        XCTAssertNotEqual(policy.reuse(stored, requestHeaders: [:], now: t0 + 70), .fresh)
    }

    func testRFC9111_5_2_1_RequestDirectives() {
        // Fresh for 100 s, stored 50 s ago, with an ETag.
        let stored = head(["cache-control": "max-age=100", "etag": "\"a\""])
        let now = t0 + 50
        let validate = HTTPCachePolicy.Reuse.validate(["If-None-Match": "\"a\""])
        let cases: [([String: String], HTTPCachePolicy.Reuse)] = [
            ([:], .fresh),
            (["Cache-Control": "no-cache"], validate),
            (["Pragma": "no-cache"], validate),
            (["Pragma": "no-cache", "Cache-Control": "max-age=3600"], .fresh),  // Pragma only without Cache-Control
            (["Cache-Control": "max-age=60"], .fresh),
            (["Cache-Control": "max-age=10"], validate),
            (["Cache-Control": "min-fresh=40"], .fresh),
            (["Cache-Control": "min-fresh=60"], validate),
        ]
        for (request, expected) in cases { XCTAssertEqual(policy.reuse(stored, requestHeaders: request, now: now), expected, "\(request)") }
        // Stale by 50 s: max-stale.
        let later = t0 + 150
        XCTAssertEqual(policy.reuse(stored, requestHeaders: ["cache-control": "max-stale"], now: later), .staleAllowed)
        XCTAssertEqual(policy.reuse(stored, requestHeaders: ["cache-control": "max-stale=60"], now: later), .staleAllowed)
        XCTAssertEqual(policy.reuse(stored, requestHeaders: ["cache-control": "max-stale=10"], now: later), validate)
        // Without a validator, a response that needs validation cannot be used.
        XCTAssertEqual(policy.reuse(head(["cache-control": "max-age=100"]), requestHeaders: ["cache-control": "no-cache"], now: now), .unusable)
    }

    func testRFC9111_4_2_4_ServingStaleResponses() {
        let stale = t0 + 150  // 50 s past a max-age of 100
        let plain = head(["cache-control": "max-age=100", "etag": "\"a\""])
        XCTAssertTrue(policy.mayServeStaleOnError(plain, requestHeaders: [:], now: stale, callerAllows: true), "the loader's own policy")
        XCTAssertFalse(policy.mayServeStaleOnError(plain, requestHeaders: [:], now: stale, callerAllows: false), "RFC 9111 exactly")
        for directive in ["must-revalidate", "no-cache"] {
            let strict = head(["cache-control": "max-age=100, \(directive)", "etag": "\"a\""])
            XCTAssertFalse(policy.mayServeStaleOnError(strict, requestHeaders: [:], now: stale, callerAllows: true), directive)
            XCTAssertTrue(policy.forbidsStale(strict), directive)
            XCTAssertEqual(
                policy.reuse(strict, requestHeaders: ["cache-control": "max-stale"], now: stale),
                .validate(["If-None-Match": "\"a\""]), "\(directive) overrides max-stale")
        }
        // RFC 5861: stale-if-error and stale-while-revalidate windows.
        let windows = head(["cache-control": "max-age=100, stale-if-error=60, stale-while-revalidate=30", "etag": "\"a\""])
        XCTAssertTrue(policy.mayServeStaleOnError(windows, requestHeaders: [:], now: stale, callerAllows: false))
        XCTAssertFalse(policy.mayServeStaleOnError(windows, requestHeaders: [:], now: t0 + 161, callerAllows: false))
        XCTAssertEqual(policy.reuse(windows, requestHeaders: [:], now: t0 + 120), .staleWhileRevalidate)
        XCTAssertEqual(policy.reuse(windows, requestHeaders: [:], now: t0 + 131), .validate(["If-None-Match": "\"a\""]))
        XCTAssertTrue(
            policy.mayServeStaleOnError(plain, requestHeaders: ["Cache-Control": "stale-if-error=60"], now: stale, callerAllows: false),
            "the request's stale-if-error")
    }

    func testRFC9111_4_3_1_ConditionalRequests() {
        XCTAssertEqual(
            policy.conditionalHeaders(head(["etag": "\"a\"", "last-modified": date0])),
            ["If-None-Match": "\"a\"", "If-Modified-Since": date0])
        XCTAssertEqual(policy.conditionalHeaders(head(["cache-control": "max-age=1"])), [:])
    }

    func testRFC9111_4_3_4_FreshingWithA304() {
        let stored = policy.storedHead(
            status: 200, responseHeaders: ["etag": "\"a\"", "content-length": "10", "x-a": "1", "cache-control": "max-age=1"],
            requestHeaders: [:], requestTime: t0, responseTime: t0)
        XCTAssertTrue(policy.validates(stored, with: ["etag": "\"a\""]))
        XCTAssertFalse(policy.validates(stored, with: ["etag": "\"b\""]), "another representation's 304")
        XCTAssertTrue(policy.validates(stored, with: [:]))
        let refreshed = policy.refreshed(
            stored, by: ["etag": "\"a\"", "content-length": "0", "x-a": "2", "cache-control": "max-age=60", "connection": "close"],
            requestTime: t0 + 100, responseTime: t0 + 101)
        XCTAssertEqual(refreshed.headers["x-a"], "2", "§3.2: the 304's headers replace the stored ones")
        XCTAssertEqual(refreshed.headers["content-length"], "10", "§3.2: but never Content-Length")
        XCTAssertNil(refreshed.headers["connection"])
        XCTAssertEqual(refreshed.status, 200)
        XCTAssertEqual(policy.reuse(refreshed, requestHeaders: [:], now: t0 + 130), .fresh, "fresh again, counted from the 304")
    }

    func testRFC9111_4_1_VaryMatchesNormalisedValues() {
        let stored = head(["vary": "Accept-Language, X-A"], request: ["Accept-Language": "en,  fr", "x-a": "1"])
        XCTAssertEqual(stored.varyRequestHeaders, ["accept-language": "en, fr", "x-a": "1"])
        XCTAssertTrue(policy.matchesVary(stored, requestHeaders: ["accept-language": "en, fr", "X-A": "1"]))
        XCTAssertTrue(policy.matchesVary(stored, requestHeaders: ["Accept-Language": "en ,fr", "x-a": "1"]))
        XCTAssertFalse(policy.matchesVary(stored, requestHeaders: ["Accept-Language": "fr, en", "x-a": "1"]))
        XCTAssertFalse(policy.matchesVary(stored, requestHeaders: ["Accept-Language": "en, fr"]), "an absent header differs")
        XCTAssertEqual(policy.reuse(stored, requestHeaders: [:], now: t0), .unusable)
    }
}
