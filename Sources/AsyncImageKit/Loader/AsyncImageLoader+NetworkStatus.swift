import Foundation

extension AsyncImageLoader {
    /// Whether the loader uses the network now.
    ///
    /// The loader is offline while its ``Configuration/reachability`` says
    /// the network cannot be reached (``NetworkStatus/Cause/reachability``),
    /// or after a transfer found no route to it although the reachability
    /// said there was one (``NetworkStatus/Cause/transfer``). While offline:
    ///
    /// - **No transfer starts** for a URL beyond this machine: no timeout
    ///   and no retry is waited for. `file` URLs and hosts on this machine
    ///   (loopback addresses, `localhost`) are never offline.
    /// - **What the disk cache holds is served at once**: fresh, or stale,
    ///   marked stale as any stale response is (``ImageResponse/isStale``,
    ///   ``AsyncImageStaleKey``, ``HTTPCacheResponse/isStale``), as RFC 9111
    ///   §4.2.4 allows a disconnected cache. Never a response marked
    ///   `must-revalidate` or `no-cache` (or, for a shared cache,
    ///   `proxy-revalidate` or `s-maxage`), and nothing stale for a request
    ///   with ``ImageCachePolicy/neverStale``.
    /// - **Anything else fails at once** with ``AsyncImageError/offline(_:)``
    ///   (a request with ``ImageCachePolicy/skipNetwork`` keeps its
    ///   ``AsyncImageError/notCached(_:)``). The memory cache answers as
    ///   always.
    /// - **Queued requests do not wait** behind transfers that started
    ///   before the network went down: while offline, jobs take slots of a
    ///   second set of ``concurrentLoads``, and a request for a URL whose
    ///   transfer is under way gets a job of its own instead of joining it.
    ///   ``concurrentLoads`` still caps the transfers on the network: a job
    ///   of that set that goes there (a local URL, the probe, a job admitted
    ///   once the loader is back online) takes a slot of the first set, or
    ///   waits for one (the probe is answered from the disk instead).
    /// - **No retry is waited for**: going offline ends the waits under way,
    ///   and their requests are answered as offline ones at once.
    /// - **Transfers already in flight are not cancelled**: a brief drop
    ///   (a route that goes and comes back) should not cost them. Each ends
    ///   by itself: it completes if the network comes back in time;
    ///   otherwise it fails (a connection attempt at once, an established
    ///   connection at ``loadingTimeout`` or its requests' deadlines), and
    ///   its requests are then answered as offline requests are, without a
    ///   retry.
    ///
    /// Going back online:
    ///
    /// - the reachability's change notification puts the loader online
    ///   (whatever a transfer found before; and a "no route" from a
    ///   transfer admitted before that notification no longer counts);
    /// - offline by either word, one request tries the network (the probe)
    ///   1 s later, then after waits that double while it keeps finding no
    ///   route (up to 30 s). Any answer from a server (to the probe, or to a
    ///   transfer from before) puts the loader online; offline by a
    ///   transfer's word, so does a probe that fails in another way
    ///   (refused, timed out), since it found a route. A server's answer to
    ///   the probe while the reachability says "unreachable" shows that
    ///   word wrong (routes held only in policy routing tables, a sandbox):
    ///   the loader stays online until the reachability says something new.
    /// - There is no timer: the next request after the wait is the probe,
    ///   so an idle loader stays idle and never spends a transfer nobody
    ///   asked for. A ``networkStatusUpdates()`` consumer sees it come back
    ///   when the reachability says so, or when a request reaches a server;
    ///   to clear an "offline" banner on an idle screen, load something
    ///   (the visible image again) when the user asks or on a timer of your own.
    /// - Once online, a stale response served offline is revalidated by the
    ///   next request that reads it from disk, as usual (the memory cache
    ///   keeps the image meanwhile: see ``ImageCachePolicy/skipMemoryReads``).
    ///
    /// Each change is a line at `notice` in the loader's
    /// ``Configuration/logger`` and a value of ``networkStatusUpdates()``.
    public var networkStatus: NetworkStatus { state.withLock { $0.network.status } }

    /// ``networkStatus`` now, then each change, until the stream's consumer
    /// stops (or the loader is released: the stream then ends). The newest
    /// 16 values are kept for a slow consumer.
    ///
    /// ```swift
    /// for await status in loader.networkStatusUpdates() {
    ///     banner.isHidden = status.isOnline
    /// }
    /// ```
    public func networkStatusUpdates() -> AsyncStream<NetworkStatus> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: NetworkStatus.self, bufferingPolicy: .bufferingNewest(16))
        let id = state.withLock { state -> UInt64 in
            state.network.nextWatcher += 1
            state.network.watchers[state.network.nextWatcher] = continuation
            // Under the lock: no change can come between this value and the next.
            continuation.yield(state.network.status)
            return state.network.nextWatcher
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.network.watchers.removeValue(forKey: id) }
        }
        return stream
    }
}
