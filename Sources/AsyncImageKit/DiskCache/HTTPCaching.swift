import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// RFC 9111 for a private client cache: what may be stored, for how long it
/// is fresh, whether it matches a request (`Vary`), and how a 304 refreshes
/// it. Times are seconds since 1970.
enum HTTPCaching {
    /// The metadata to store with a `200` body, or nil when it may not be
    /// stored (`no-store`, `Vary: *`, another status).
    static func metadata(
        status: Int, headers: [String: String], requestHeaders: [String: String], contentType: String?, now: Double
    ) -> DataCacheMetadata? {
        guard status == 200 else { return nil }
        let directives = cacheControl(headers["cache-control"])
        guard directives["no-store"] == nil else { return nil }
        var vary: [String: String]?
        if let names = headers["vary"] {
            let list = names.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            guard !list.contains("*") else { return nil }
            let sent = Dictionary(requestHeaders.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { $1 })
            vary = Dictionary(list.filter { !$0.isEmpty }.map { ($0, sent[$0] ?? "") }, uniquingKeysWith: { $1 })
        }
        var metadata = DataCacheMetadata(
            etag: headers["etag"], lastModified: headers["last-modified"],
            freshUntil: now + lifetime(headers, directives, now: now) - age(headers), contentType: contentType)
        metadata.varyHeaders = vary
        metadata.requiresRevalidation = directives["no-cache"] != nil ? true : nil
        return metadata
    }

    /// `stored` refreshed by a `304`'s headers (its validators and
    /// freshness where it sends them; the stored ones otherwise).
    static func refreshed(_ stored: DataCacheMetadata, by headers: [String: String], now: Double) -> DataCacheMetadata {
        var merged = headers
        if merged["etag"] == nil, let etag = stored.etag { merged["etag"] = etag }
        if merged["last-modified"] == nil, let modified = stored.lastModified { merged["last-modified"] = modified }
        let directives = cacheControl(merged["cache-control"])
        var metadata = stored
        metadata.etag = merged["etag"]
        metadata.lastModified = merged["last-modified"]
        metadata.freshUntil = now + lifetime(merged, directives, now: now) - age(merged)
        metadata.requiresRevalidation = directives["no-cache"] != nil ? true : nil
        return metadata
    }

    /// Whether `metadata` may be used without asking the server.
    static func isFresh(_ metadata: DataCacheMetadata, now: Double) -> Bool {
        metadata.requiresRevalidation != true && (metadata.freshUntil ?? 0) > now
    }

    /// Whether the request headers match those the stored response varied on.
    static func matches(_ metadata: DataCacheMetadata, requestHeaders: [String: String]) -> Bool {
        guard let vary = metadata.varyHeaders else { return true }
        let sent = Dictionary(requestHeaders.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { $1 })
        return vary.allSatisfy { sent[$0.key] ?? "" == $0.value }
    }

    /// Whether `metadata` has a validator to revalidate with.
    static func canRevalidate(_ metadata: DataCacheMetadata) -> Bool {
        metadata.etag != nil || metadata.lastModified != nil
    }

    /// The headers of a conditional request for `metadata`.
    static func validators(_ metadata: DataCacheMetadata) -> [String: String] {
        var headers: [String: String] = [:]
        if let etag = metadata.etag { headers["If-None-Match"] = etag }
        if let modified = metadata.lastModified { headers["If-Modified-Since"] = modified }
        return headers
    }

    /// The freshness lifetime: `max-age`, else `Expires - Date`, else 10% of
    /// `Date - Last-Modified` (the heuristic), else 0. `immutable` changes
    /// nothing here (fresh for its max-age, and never revalidated before).
    static func lifetime(_ headers: [String: String], _ directives: [String: String], now: Double) -> Double {
        if let maxAge = directives["max-age"].flatMap({ Double($0) }), maxAge >= 0 { return maxAge }
        let date = date(headers["date"]) ?? now
        if let expiresText = headers["expires"] {
            guard let expires = self.date(expiresText) else { return 0 }  // an invalid Expires means expired
            return max(0, expires - date)
        }
        if let modified = self.date(headers["last-modified"]), modified < date { return (date - modified) / 10 }
        return 0
    }

    private static func age(_ headers: [String: String]) -> Double {
        headers["age"].flatMap { Double($0.trimmingCharacters(in: .whitespaces)) }.map { max(0, $0) } ?? 0
    }

    /// `Cache-Control` directives, names lowercased, values unquoted ("" for none).
    static func cacheControl(_ value: String?) -> [String: String] {
        var directives: [String: String] = [:]
        for part in (value ?? "").split(separator: ",") {
            let pieces = part.split(separator: "=", maxSplits: 1)
            let name = pieces[0].trimmingCharacters(in: .whitespaces).lowercased()
            guard !name.isEmpty else { continue }
            let value = pieces.count > 1 ? pieces[1].trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: "\"")) : ""
            directives[name] = value
        }
        return directives
    }

    /// An HTTP-date in the IMF-fixdate form (`Sun, 06 Nov 1994 08:49:37 GMT`),
    /// or nil. (The obsolete RFC 850 and asctime forms count as invalid.)
    static func date(_ text: String?) -> Double? {
        guard let text else { return nil }
        let parts = text.split(separator: " ")
        guard parts.count == 6, parts[5] == "GMT", let day = Int(parts[1]), let year = Int(parts[3]) else { return nil }
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        guard let month = months.firstIndex(of: String(parts[2])) else { return nil }
        let clock = parts[4].split(separator: ":").compactMap { Int($0) }
        guard clock.count == 3, (1...31).contains(day), (0..<24).contains(clock[0]), (0..<60).contains(clock[1]),
            (0...60).contains(clock[2])
        else { return nil }
        var fields = tm()
        fields.tm_year = Int32(year - 1900)
        fields.tm_mon = Int32(month)
        fields.tm_mday = Int32(day)
        fields.tm_hour = Int32(clock[0])
        fields.tm_min = Int32(clock[1])
        fields.tm_sec = Int32(clock[2])
        return Double(timegm(&fields))
    }
}
