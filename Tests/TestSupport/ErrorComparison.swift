import AsyncImageKit
import Foundation

/// `error` with an HTTP status's response headers left out, for tests that
/// compare the status and URL alone.
public func withoutHeaders(_ error: AsyncImageError?) -> AsyncImageError? {
    guard case .httpStatus(let url, let code, _) = error else { return error }
    return .httpStatus(url, code: code)
}

extension AsyncImageView.State {
    /// The state with an HTTP failure's response headers left out.
    public var withoutHeaders: AsyncImageView.State {
        guard case .failed(let url, let error) = self else { return self }
        return .failed(url, TestSupport.withoutHeaders(error)!)
    }
}
