import CImageCodecs
import Foundation

/// Reading the C shim's decode result from Swift.
extension aiv_decode_result {
    /// The error message the C side wrote.
    var messageText: String {
        var copy = message
        return withUnsafeBytes(of: &copy) { raw in
            let text = String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            return text.isEmpty ? "unknown error" : text
        }
    }

    /// The failure stage the C side reported.
    var failureStage: DecodingFailure.Stage {
        switch stage {
        case AIV_STAGE_LIMITS, AIV_STAGE_SCANS, AIV_STAGE_INFLATE: return .limits
        case AIV_STAGE_PIXELS: return .pixels
        case AIV_STAGE_TRAILER: return .trailer
        case AIV_STAGE_MEMORY: return .memory
        default: return .header
        }
    }

    /// Whether the pixel limit refused the image (not the scan limit).
    var isPixelLimit: Bool { stage == AIV_STAGE_LIMITS }

    /// The decode's failure, for a decoder of `format`: a stop through the
    /// row sink is ``DecodeStop/failure(_:)``.
    func failure(_ format: ImageFormat) -> AsyncImageError {
        if stage == AIV_STAGE_STOPPED { return DecodeStop.failure(format) }
        return .decoding(
            DecodingFailure(format: format, stage: failureStage, reason: messageText, isPixelLimit: isPixelLimit), url: nil)
    }

    /// Takes ownership of the decoded pixels.
    mutating func takePixels() -> Data {
        let data = PixelMemory.data(taking: pixels, count: pixels_size)
        pixels = nil
        return data
    }

    var decodedSize: PixelSize { PixelSize(width: Int(width), height: Int(height)) }
    var sourceSize: PixelSize { PixelSize(width: Int(source_width), height: Int(source_height)) }
}

extension Data {
    /// Calls `body` with a pointer to the bytes (never `nil`, even when empty).
    func withBytes<R>(_ body: (UnsafePointer<UInt8>, Int) -> R) -> R {
        withUnsafeBytes { raw in
            if let base = raw.baseAddress {
                return body(base.assumingMemoryBound(to: UInt8.self), raw.count)
            }
            var zero: UInt8 = 0
            return body(&zero, 0)
        }
    }
}
