import Foundation

/// Ending a loader's work in order, for a process that shuts down: stop
/// taking requests (the caller's part: its server stops accepting), let
/// the pending ones finish, then wait for the disk cache's writes.
extension AsyncImageLoader {
    /// Returns once no request is pending (``LoaderActivity/pendingRequests``
    /// is 0): every request made so far was delivered or cancelled.
    /// Requests made while it waits count too. Returns at once when none
    /// is pending, and when the calling task is cancelled.
    ///
    /// A decode whose requests were all cancelled may still be running
    /// (its image goes to the caches), and disk writes may be scheduled:
    /// ``flushDiskWrites()-9oklh`` waits for those.
    public func waitUntilIdle() async {
        let id = state.withLock { state -> UInt64 in
            state.nextIdleWaiter += 1
            return state.nextIdleWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    guard state.requests.pendingCount > 0, !Task.isCancelled else { return true }
                    state.idleWaiters[id] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.idleWaiters.removeValue(forKey: id) }?.resume()
        }
    }

    /// Waits, without blocking a thread of the caller's, until the disk
    /// cache writes scheduled so far are done: the async form of
    /// blocking ``flushDiskWrites()-3jyjs``, for a service's shutdown (the blocking
    /// form would hold one of the few threads of Swift's concurrency pool).
    public func flushDiskWrites() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            DispatchQueue.global(qos: .utility).async {
                self.flushDiskWrites()
                continuation.resume()
            }
        }
    }

    /// ``waitUntilIdle()``, then ``flushDiskWrites()-9oklh``, with a time
    /// limit: what a service runs when it shuts down, after it stopped
    /// taking requests. Requests still pending after `timeout` seconds are
    /// cancelled (each ends once, as any cancel does) before the flush.
    ///
    /// - Returns: true when every request finished by itself, false when
    ///   some were cancelled at the time limit.
    @discardableResult
    public func drain(timeout: Double = 10) async -> Bool {
        let finished = await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                await self.waitUntilIdle()
                return !Task.isCancelled
            }
            group.addTask {
                try? await Task.sleep(nanoseconds: UInt64(max(0, min(timeout, 1e9)) * 1e9))
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
        if !finished { cancelAll() }
        await flushDiskWrites()
        return finished
    }
}
