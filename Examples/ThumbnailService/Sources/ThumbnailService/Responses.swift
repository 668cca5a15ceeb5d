import AsyncImageKit
import Foundation
import HTTPTypes
import Hummingbird

extension Response {
    /// A plain-text answer: `message` and a newline.
    static func text(_ status: Int, _ message: String) -> Response {
        Response(
            status: HTTPResponse.Status(code: status), headers: [.contentType: "text/plain; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(string: message + "\n")))
    }

    /// A JSON object of integers, its keys sorted.
    static func json(_ status: HTTPResponse.Status, _ object: [String: Int]) -> Response {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        return Response(
            status: status, headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}

extension HTTPField.Name {
    /// `X-Image-Source: memory|disk|network`: where a thumbnail came from.
    static let imageSource = HTTPField.Name("X-Image-Source")!
}

extension ImageResponse.Source {
    /// The `X-Image-Source` value: `memory`, `disk` or `network`.
    var name: String {
        switch self {
        case .memoryCache: "memory"
        case .diskCache: "disk"
        case .network: "network"
        }
    }
}
