import AsyncImageKit
import CGIF
import Foundation

/// One frame for ``GIFWriter``: palette indices for a rectangle of the screen.
public struct GIFFrameSpec: Sendable {
    /// Position and size on the logical screen.
    public var left: Int, top: Int, width: Int, height: Int
    /// `width * height` palette indices, row by row, top to bottom (in display order
    /// even when ``interlaced``: the writer reorders them).
    public var indices: [UInt8]
    /// A local palette (power-of-two count, 2 to 256), or nil to use the global one.
    public var localPalette: [RGBA]?
    /// Delay in hundredths of a second.
    public var delay: Int
    /// Disposal method: 0/1 none, 2 restore to background, 3 restore to previous.
    public var disposal: Int
    /// The palette index that is transparent, if any.
    public var transparentIndex: Int?
    /// Store the rows interlaced.
    public var interlaced: Bool

    /// Creates a frame.
    public init(
        left: Int = 0, top: Int = 0, width: Int, height: Int, indices: [UInt8], localPalette: [RGBA]? = nil,
        delay: Int = 10, disposal: Int = 1, transparentIndex: Int? = nil, interlaced: Bool = false
    ) {
        self.left = left
        self.top = top
        self.width = width
        self.height = height
        self.indices = indices
        self.localPalette = localPalette
        self.delay = delay
        self.disposal = disposal
        self.transparentIndex = transparentIndex
        self.interlaced = interlaced
    }

    /// A frame of one palette index.
    public static func filled(
        _ index: UInt8, left: Int = 0, top: Int = 0, width: Int, height: Int, delay: Int = 10, disposal: Int = 1,
        transparentIndex: Int? = nil
    ) -> GIFFrameSpec {
        GIFFrameSpec(
            left: left, top: top, width: width, height: height,
            indices: [UInt8](repeating: index, count: width * height), delay: delay, disposal: disposal,
            transparentIndex: transparentIndex)
    }
}

/// Writes GIF89a files with giflib's encoder (EGif), for tests and the demo.
public enum GIFWriter {
    /// Errors from giflib's encoder.
    public struct Failure: Error, CustomStringConvertible {
        /// What failed.
        public let description: String
    }

    /// Encodes frames on a `width` x `height` screen.
    public static func encode(
        width: Int, height: Int, globalPalette: [RGBA]?, frames: [GIFFrameSpec], loopCount: Int? = 0
    ) throws -> Data {
        let output = GIFOutput()
        var error: Int32 = 0
        guard let gif = EGifOpen(Unmanaged.passUnretained(output).toOpaque(), gifWrite, &error) else {
            throw Failure(description: "EGifOpen failed: \(error)")
        }
        var closed = false
        defer {
            if !closed { var e: Int32 = 0; EGifCloseFile(gif, &e) }
        }
        func check(_ status: Int32, _ what: String) throws {
            guard status == GIF_OK else { throw Failure(description: "\(what) failed: \(gif.pointee.Error)") }
        }
        EGifSetGifVersion(gif, true)
        let global = globalPalette.map(makeMap)
        defer { if let global { GifFreeMapObject(global) } }
        try check(EGifPutScreenDesc(gif, Int32(width), Int32(height), 8, 0, global), "screen")
        if let loopCount {
            try check(EGifPutExtensionLeader(gif, APPLICATION_EXT_FUNC_CODE), "leader")
            var id = Array("NETSCAPE2.0".utf8)
            try check(EGifPutExtensionBlock(gif, 11, &id), "app id")
            var loop: [UInt8] = [1, UInt8(loopCount & 0xFF), UInt8(loopCount >> 8)]
            try check(EGifPutExtensionBlock(gif, 3, &loop), "loop")
            try check(EGifPutExtensionTrailer(gif), "trailer")
        }
        for frame in frames {
            var control = GraphicsControlBlock(
                DisposalMode: Int32(frame.disposal), UserInputFlag: false, DelayTime: Int32(frame.delay),
                TransparentColor: Int32(frame.transparentIndex ?? -1))
            var extensionBytes = [GifByteType](repeating: 0, count: 4)
            let length = EGifGCBToExtension(&control, &extensionBytes)
            try check(EGifPutExtension(gif, GRAPHICS_EXT_FUNC_CODE, Int32(length), &extensionBytes), "GCB")
            let local = frame.localPalette.map(makeMap)
            defer { if let local { GifFreeMapObject(local) } }
            try check(
                EGifPutImageDesc(
                    gif, Int32(frame.left), Int32(frame.top), Int32(frame.width), Int32(frame.height),
                    frame.interlaced, local), "image descriptor")
            let order =
                frame.interlaced
                ? [(0, 8), (4, 8), (2, 4), (1, 2)].flatMap { stride(from: $0.0, to: frame.height, by: $0.1) }
                : Array(0..<frame.height)
            for row in order {
                var line = Array(frame.indices[(row * frame.width)..<((row + 1) * frame.width)])
                try check(EGifPutLine(gif, &line, Int32(frame.width)), "line")
            }
        }
        closed = true
        guard EGifCloseFile(gif, &error) == GIF_OK else { throw Failure(description: "EGifCloseFile: \(error)") }
        return output.data
    }

    private static func makeMap(_ palette: [RGBA]) -> UnsafeMutablePointer<ColorMapObject> {
        var colors = palette.map { GifColorType(Red: $0.r, Green: $0.g, Blue: $0.b) }
        return GifMakeMapObject(Int32(colors.count), &colors)
    }
}

private final class GIFOutput {
    var data = Data()
}

private func gifWrite(
    _ gif: UnsafeMutablePointer<GifFileType>?, _ bytes: UnsafePointer<GifByteType>?, _ length: Int32
) -> Int32 {
    guard let gif, let bytes, let user = gif.pointee.UserData else { return 0 }
    Unmanaged<GIFOutput>.fromOpaque(user).takeUnretainedValue().data.append(bytes, count: Int(length))
    return length
}
