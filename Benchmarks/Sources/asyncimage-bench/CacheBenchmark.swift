import AsyncImageKit
import BenchmarkSupport
import Foundation
import ImageFixtures
import LoopbackHTTP

// asyncimage-bench cache [--smoke]: the memory cache.
//
// 1. Hits per second: lookups of 1,000 keys made in advance, on one thread
//    and on two threads at once (the same cache), against Foundation's
//    `NSCache` (what Kingfisher builds on, and what a Linux Swift developer
//    would reach for) measured in the same run, rounds alternating. Goal: at
//    least 20 million hits per second on one thread.
// 2. Cache-hit delivery latency through the loader: a loader whose memory
//    cache already holds the image, its delivery queue a private serial
//    queue; the time from the call to the success action, one call at a
//    time, median and p99 over many calls:
//    - `loadImage` called from another thread (the hit is delivered
//      asynchronously on the delivery queue);
//    - `loadImage` called on the delivery queue itself (delivered before
//      `loadImage` returns);
//    - `image(for:)` awaited from a Swift task;
//    - the yardstick: an `NSCache` lookup and a closure dispatched to a
//      private queue, what hand-written code would do.

/// Hits per second, one figure per round (millions).
struct CacheHitRates: Sendable {
    var threads: Int
    var ours: [Double]
    var nsCache: [Double]
}

/// Call-to-action latencies of one way of asking, in seconds, one per call.
struct CacheHitLatency: Sendable {
    var name: String
    var samples: [Double]

    func percentile(_ p: Double) -> Double { Samples(samples).percentile(p) }
}

struct CacheBenchmarkResult: Sendable {
    var hits: [CacheHitRates]
    var latencies: [CacheHitLatency]
}

/// Measures hits per second on 1 and 2 threads (`rounds` rounds of
/// `lookups` per thread) and the delivery latencies (`calls` calls each).
func measureCacheBenchmark(lookups: Int = 4_000_000, rounds: Int = 5, calls: Int = 20_000) -> CacheBenchmarkResult {
    let hits = [1, 2].map { measureCacheHitRates(threads: $0, lookups: lookups, rounds: rounds) }
    return CacheBenchmarkResult(hits: hits, latencies: measureCacheHitLatencies(calls: calls))
}

func measureCacheHitRates(threads: Int, lookups: Int, rounds: Int) -> CacheHitRates {
    let cache = ImageCache()
    let image = SyntheticImage.solid(width: 8, height: 8, color: RGBA(r: 1, g: 2, b: 3))
    let keys = (0..<1000).map { ImageCacheKey(url: URL(string: "http://127.0.0.1/image-\($0).jpg")!) }
    for key in keys { cache[key] = image }
    final class Entry: @unchecked Sendable {
        let image: Image
        init(_ image: Image) { self.image = image }
    }
    let peer = NSCache<NSString, Entry>()
    let peerKeys = keys.map { $0.url as NSString }
    for key in peerKeys { peer.setObject(Entry(image), forKey: key) }
    nonisolated(unsafe) let unsafePeer = peer
    nonisolated(unsafe) let unsafePeerKeys = peerKeys
    var ours: [Double] = []
    var nsCache: [Double] = []
    // NSCache is slower: a quarter of the lookups keeps its rounds as long.
    let peerLookups = max(1, lookups / 4)
    for _ in 0..<rounds {
        let hits = Locked(0)
        var start = now()
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            var mine = 0
            keys.withUnsafeBufferPointer { keys in
                for i in 0..<lookups where cache.image(for: keys[(i &+ thread &* 500) % 1000]) != nil { mine += 1 }
            }
            hits.withLock { $0 += mine }
        }
        precondition(hits.withLock { $0 } == lookups * threads)
        ours.append(Double(lookups * threads) / (now() - start) / 1e6)
        let peerHits = Locked(0)
        start = now()
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            var mine = 0
            unsafePeerKeys.withUnsafeBufferPointer { keys in
                for i in 0..<peerLookups where unsafePeer.object(forKey: keys[(i &+ thread &* 500) % 1000])?.image != nil {
                    mine += 1
                }
            }
            peerHits.withLock { $0 += mine }
        }
        precondition(peerHits.withLock { $0 } == peerLookups * threads)
        nsCache.append(Double(peerLookups * threads) / (now() - start) / 1e6)
    }
    return CacheHitRates(threads: threads, ours: ours, nsCache: nsCache)
}

func measureCacheHitLatencies(calls: Int) -> [CacheHitLatency] {
    let cache = ImageCache()
    let image = SyntheticImage.solid(width: 64, height: 64, color: RGBA(r: 1, g: 2, b: 3))
    let url = URL(string: "http://127.0.0.1:9/cached.jpg")!  // never fetched: a hit
    let request = ImageRequest(url: url)
    cache[request.cacheKey] = image
    let delivery = DispatchQueue(label: "bench delivery")
    let loader = AsyncImageLoader(
        cache: cache, concurrentLoads: 2, deliveryQueue: delivery, notificationCenter: NotificationCenter())
    let failed = Locked(0)
    let failure = ImageFailureAction("bench") { _, _, _ in failed.withLock { $0 += 1 } }
    var results: [CacheHitLatency] = []

    // loadImage from this thread: delivered on the delivery queue.
    do {
        let latencies = Locked([Double]())
        latencies.withLock { $0.reserveCapacity(calls) }
        let delivered = DispatchSemaphore(value: 0)
        let start = Locked(0.0)
        let action = ImageAction("bench") { _, _, _ in
            let end = now()
            latencies.withLock { $0.append(end - start.withLock { $0 }) }
            delivered.signal()
        }
        for _ in 0..<calls {
            start.withLock { $0 = now() }
            _ = loader.loadImage(request, target: nil, success: action, failure: failure)
            delivered.wait()
        }
        results.append(CacheHitLatency(name: "loadImage from another thread, delivered on a private queue", samples: latencies.withLock { $0 }))
    }

    // loadImage on the delivery queue: delivered before it returns.
    do {
        let latencies = Locked([Double]())
        delivery.sync {
            let start = Locked(0.0)
            let action = ImageAction("bench") { _, _, _ in
                let end = now()
                latencies.withLock { $0.append(end - start.withLock { $0 }) }
            }
            for _ in 0..<calls {
                start.withLock { $0 = now() }
                _ = loader.loadImage(request, target: nil, success: action, failure: failure)
            }
        }
        results.append(CacheHitLatency(name: "loadImage on the delivery queue (delivered before it returns)", samples: latencies.withLock { $0 }))
    }

    // image(for:) from a Swift task.
    do {
        let latencies = Locked([Double]())
        let finished = DispatchSemaphore(value: 0)
        Task {
            var mine: [Double] = []
            mine.reserveCapacity(calls)
            for _ in 0..<calls {
                let start = now()
                if (try? await loader.image(for: request)) == nil { failed.withLock { $0 += 1 } }
                mine.append(now() - start)
            }
            latencies.withLock { $0 = mine }
            finished.signal()
        }
        finished.wait()
        results.append(CacheHitLatency(name: "image(for:) awaited in a Task", samples: latencies.withLock { $0 }))
    }

    // The yardstick: NSCache lookup + a closure on a private queue.
    do {
        final class Entry: @unchecked Sendable {
            let image: Image
            init(_ image: Image) { self.image = image }
        }
        let peer = NSCache<NSString, Entry>()
        let key = url.absoluteString as NSString
        peer.setObject(Entry(image), forKey: key)
        nonisolated(unsafe) let unsafePeer = peer
        let queue = DispatchQueue(label: "bench peer delivery")
        let latencies = Locked([Double]())
        let delivered = DispatchSemaphore(value: 0)
        for _ in 0..<calls {
            let start = now()
            guard let entry = unsafePeer.object(forKey: key) else { fatalError("NSCache lost its only entry") }
            queue.async {
                withExtendedLifetime(entry) {}
                let end = now()
                latencies.withLock { $0.append(end - start) }
                delivered.signal()
            }
            delivered.wait()
        }
        results.append(CacheHitLatency(name: "yardstick: NSCache lookup + closure on a private queue", samples: latencies.withLock { $0 }))
    }
    precondition(failed.withLock { $0 } == 0, "a cache hit failed")
    for result in results { precondition(result.samples.count == calls, "\(result.name): \(result.samples.count) of \(calls) delivered") }
    return results
}

/// `cache [--smoke]`.
func runCacheBenchmark(smoke: Bool = false) {
    let result =
        smoke ? measureCacheBenchmark(lookups: 20_000, rounds: 1, calls: 200) : measureCacheBenchmark()
    print(cacheSection(result).markdown, terminator: "")
}
