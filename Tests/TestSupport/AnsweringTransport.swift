import AsyncImageKit
import Foundation

/// ``FakeDataLoader``'s transfers (no sockets; it counts and records them,
/// and the test decides when they finish), with the status and headers a
/// test gives each answer: `answer` sees the request (its conditional
/// headers) and the fake's `200` with its PNG, and returns the response the
/// loader gets (a `304` with no body, a `200` with `Cache-Control`, ...).
public struct AnsweringTransport: DataLoading {
    public let fake: FakeDataLoader
    public let answer: @Sendable (_ request: DataRequest, _ response: DataResponse) -> DataResponse

    public init(
        _ fake: FakeDataLoader,
        answer: @escaping @Sendable (_ request: DataRequest, _ response: DataResponse) -> DataResponse
    ) {
        self.fake = fake
        self.answer = answer
    }

    /// Every answer the fake's `200`, with `headers` (names lowercased).
    public init(_ fake: FakeDataLoader, headers: [String: String]) {
        self.init(fake) { _, response in response.with(statusCode: 200, headers: headers) }
    }

    public func loadData(
        _ request: DataRequest, completion: @escaping @Sendable (Result<DataResponse, AsyncImageError>) -> Void
    ) -> any DataLoadingTask {
        let answer = self.answer
        return fake.loadData(request) { result in completion(result.map { answer(request, $0) }) }
    }
}

extension DataResponse {
    /// This response with another status and headers (names lowercased);
    /// `body` replaces its body when given (a `304` has none).
    public func with(statusCode: Int, headers: [String: String], body: Data? = nil) -> DataResponse {
        DataResponse(
            url: url, finalURL: finalURL, statusCode: statusCode, contentType: headers["content-type"] ?? contentType,
            data: body ?? data, headers: headers)
    }
}

extension DataRequest {
    /// The request header `name`, whatever the case of its name.
    public func header(_ name: String) -> String? {
        headers.first { $0.key.lowercased() == name.lowercased() }?.value
    }
}
