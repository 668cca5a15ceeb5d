#if canImport(Glibc)
    import Glibc
#endif

/// How many deliveries (notification and action) the calling thread is
/// inside. A cache hit is delivered inline only at depth 0: made from a
/// didFinish observer or an action, an inline delivery would run its action
/// before the outer one's, which would then show the older image last.
///
/// A pthread key rather than `Thread.current.threadDictionary`: it is read
/// on every delivery.
enum DeliveryDepth {
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    /// The calling thread's depth.
    static var current: Int { Int(bitPattern: pthread_getspecific(key)) }

    /// Runs `body` one delivery deeper.
    static func inside<T>(_ body: () -> T) -> T {
        let depth = current
        pthread_setspecific(key, UnsafeRawPointer(bitPattern: depth + 1))
        defer { pthread_setspecific(key, UnsafeRawPointer(bitPattern: depth)) }
        return body()
    }
}
