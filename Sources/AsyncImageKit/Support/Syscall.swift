import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The one wrapper for the POSIX calls the disk cache makes: it retries on
/// EINTR and turns a failure into an error that names the call and errno.
enum Syscall {
    struct Failure: Error, CustomStringConvertible {
        let call: String
        let errno: Int32
        var description: String { "\(call) failed: \(String(cString: strerror(errno))) (errno \(errno))" }
    }

    /// Runs `body` until it does not fail with EINTR; a result of -1 throws.
    @discardableResult
    static func retrying<T: BinaryInteger>(_ call: String, _ body: () -> T) throws(Failure) -> T {
        while true {
            let result = body()
            if result != -1 { return result }
            let code = errno
            if code == EINTR { continue }
            throw Failure(call: call, errno: code)
        }
    }

    /// Writes all of `data` to `fd`.
    static func writeAll(_ fd: Int32, _ data: Data) throws(Failure) {
        let failure = data.withUnsafeBytes { raw -> Failure? in
            var offset = 0
            while offset < raw.count {
                let written = write(fd, raw.baseAddress! + offset, raw.count - offset)
                if written >= 0 {
                    offset += written
                } else if errno != EINTR {
                    return Failure(call: "write", errno: errno)
                }
            }
            return nil
        }
        if let failure { throw failure }
    }
}
