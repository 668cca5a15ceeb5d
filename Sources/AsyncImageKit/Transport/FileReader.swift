import Foundation

import Glibc

/// Reads `file` URLs off the transport thread.
///
/// libcurl reads files with blocking calls on the one thread that drives
/// every transfer, and without its timeout: a FIFO with no writer (or a
/// device) would stop every transfer in the process. Here a file is opened
/// without blocking, must be a regular file no larger than the body limit,
/// and is read on a background queue.
enum FileReader {
    private static let queue = DispatchQueue(label: "AsyncImageKit.files", qos: .userInitiated, attributes: .concurrent)

    /// Reads `transfer`'s file and delivers the body or the failure (unless cancelled first).
    static func start(_ transfer: CurlTransfer) {
        queue.async {
            guard !transfer.isCancelled else { return }
            let result = read(transfer.url, limit: transfer.configuration.maxBodySize)
            if case .success(let response) = result {
                transfer.reportProgress(response.data.count, expected: response.data.count)
            }
            transfer.deliver(result)
        }
    }

    /// The whole file at `url`, or why it cannot be loaded.
    static func read(_ url: URL, limit: Int) -> Result<DataResponse, AsyncImageError> {
        let descriptor = open(url.path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else { return .failure(.fileNotFound(url)) }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            return .failure(.fileNotFound(url))  // a directory, FIFO, socket or device
        }
        guard Int(info.st_size) <= limit else { return .failure(.bodyTooLarge(url, limit: limit)) }
        // Read to the end (the file may have grown since fstat), never past the limit.
        var data = Data(count: Int(info.st_size) + 1)
        var total = 0
        while true {
            if total == data.count {
                guard total <= limit else { return .failure(.bodyTooLarge(url, limit: limit)) }
                // Room for one byte past the limit, to tell "exactly the limit" from "over".
                let (ceiling, overflow) = limit.addingReportingOverflow(1)
                data.count = min(overflow ? limit : ceiling, max(total * 2, 4096))
                guard data.count > total else { return .failure(.bodyTooLarge(url, limit: limit)) }
            }
            let room = data.count - total
            let count = data.withUnsafeMutableBytes { raw in
                Glibc.read(descriptor, raw.baseAddress! + total, room)
            }
            if count < 0 {
                if errno == EINTR { continue }
                return .failure(.fileNotFound(url))
            }
            if count == 0 { break }
            total += count
        }
        guard total <= limit else { return .failure(.bodyTooLarge(url, limit: limit)) }
        data.count = total
        return .success(DataResponse(url: url, finalURL: url, statusCode: 0, contentType: nil, data: data))
    }
}
