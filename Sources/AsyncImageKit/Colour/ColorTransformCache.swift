import CLCMS2
import Foundation

/// The transforms made so far, keyed by a hash of the profile's bytes (and
/// the pixel layout, intent and black-point setting): a profile is parsed
/// and its transform built once, however many images carry it. Bounded (the
/// least recently used entry goes first) and safe from any thread; a
/// transform is built outside the lock, so two threads that miss at once
/// may both build it (the first stored is kept).
///
/// An entry also remembers an sRGB profile (``Outcome/identity``: nothing to
/// do) and a profile that cannot be used (``Outcome/unusable(_:)``), so
/// neither is looked at twice.
final class ColorTransformCache: Sendable {
    /// The decoders' cache.
    static let shared = ColorTransformCache(capacity: 32)

    /// What a profile comes to.
    enum Outcome: Sendable {
        /// Converting would change no pixel by more than one level: skipped.
        case identity
        case transform(ColorTransform)
        /// Why it cannot be used.
        case unusable(String)

        var transform: ColorTransform? {
            if case .transform(let transform) = self { return transform }
            return nil
        }
    }

    /// Why there is no transform.
    struct Unusable: Error {
        var reason: String
    }

    private struct Key: Hashable {
        var digest: UInt64
        var count: Int
        var layout: ColorPixelLayout
        var management: ColorManagement
    }

    private struct Entry {
        /// The bytes hashed, compared on a hit (a hash is not proof). An
        /// array, not `Data`: LeakSanitizer cannot follow `Data`'s tagged
        /// representation from a global, and reported the cache's profiles
        /// as leaks (Fuzz/run).
        var bytes: [UInt8]
        var outcome: Outcome
        var lastUse: UInt64
    }

    private struct State {
        var entries: [Key: Entry] = [:]
        var clock: UInt64 = 0
        var builds = 0
    }

    let capacity: Int
    private let state = Locked(State())

    init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    /// How many transforms (and verdicts) were built: for tests of the cache.
    var buildCount: Int { state.withLock { $0.builds } }

    /// How many entries are kept.
    var count: Int { state.withLock { $0.entries.count } }

    /// The outcome for an ICC profile.
    func outcome(profile: Data, layout: ColorPixelLayout, management: ColorManagement) -> Outcome {
        outcome(bytes: profile, layout: layout, management: management) {
            guard let handle = LCMS.open(profile) else { return .unusable("Little CMS cannot read the profile") }
            defer { cmsCloseProfile(handle) }
            return Self.verdict(LCMS.transform(from: handle, layout: layout, management: management))
        }
    }

    /// The outcome for PNG `gAMA`/`cHRM` chunks (keyed by their values).
    func outcome(chunks: PNGColorChunks, layout: ColorPixelLayout, management: ColorManagement) -> Outcome {
        var bytes = Data("PNG gAMA cHRM".utf8)
        for value in [chunks.gamma ?? -1] + (chunks.chromaticities ?? []) {
            withUnsafeBytes(of: value.bitPattern) { bytes.append(contentsOf: $0) }
        }
        return outcome(bytes: bytes, layout: layout, management: management) {
            guard let handle = LCMS.profile(for: chunks, layout: layout) else {
                return .unusable("Little CMS cannot build a profile from the chunks \(chunks.summary)")
            }
            defer { cmsCloseProfile(handle) }
            return Self.verdict(LCMS.transform(from: handle, layout: layout, management: management))
        }
    }

    private static func verdict(_ result: Result<ColorTransform, Unusable>) -> Outcome {
        switch result {
        case .success(let transform):
            return transform.layout.isCMYK || !LCMS.isIdentity(transform) ? .transform(transform) : .identity
        case .failure(let unusable):
            return .unusable(unusable.reason)
        }
    }

    private func outcome(
        bytes: Data, layout: ColorPixelLayout, management: ColorManagement, build: () -> Outcome
    ) -> Outcome {
        let key = Key(digest: Self.fnv1a(bytes), count: bytes.count, layout: layout, management: management)
        let hit = state.withLock { state -> Outcome? in
            guard let entry = state.entries[key], entry.bytes.elementsEqual(bytes) else { return nil }
            state.clock += 1
            state.entries[key]?.lastUse = state.clock
            return entry.outcome
        }
        if let hit { return hit }
        let made = build()
        return state.withLock { state in
            state.builds += 1
            state.clock += 1
            if let entry = state.entries[key], entry.bytes.elementsEqual(bytes) { return entry.outcome }  // another thread's
            if state.entries[key] == nil, state.entries.count >= capacity,
                let oldest = state.entries.min(by: { $0.value.lastUse < $1.value.lastUse })?.key
            {
                state.entries[oldest] = nil
            }
            state.entries[key] = Entry(bytes: [UInt8](bytes), outcome: made, lastUse: state.clock)
            return made
        }
    }

    /// 64-bit FNV-1a of `bytes`.
    static func fnv1a(_ bytes: Data) -> UInt64 {
        bytes.withUnsafeBytes { raw in
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            for byte in raw {
                hash ^= UInt64(byte)
                hash &*= 0x0000_0100_0000_01B3
            }
            return hash
        }
    }
}
