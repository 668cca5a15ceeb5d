import CGIF
import Foundation

/// Decodes GIF with giflib: every frame with its delay, disposal methods 1-3
/// (none, restore to background, restore to previous), transparency,
/// interlacing, local and global palettes, and the NETSCAPE2.0 loop count.
///
/// Each frame is composited onto the logical screen and stored whole, so
/// every ``ImageFrame`` is ready to show. Frames that reach past the screen
/// are clipped to it. Pixels whose palette index is outside the palette are
/// treated as transparent.
///
/// **Colour:** an `ICCRGBG1012` application extension's profile (before the
/// first image) is applied to each frame's palette with Little CMS,
/// converting to sRGB, unless ``DecodingOptions/colorManagement`` says not to.
///
/// **Damaged frames:** a GIF is all or nothing. If any frame is damaged or
/// truncated, even after earlier frames decoded, the decode fails with an
/// error naming the frame; no partial animation is returned. This is
/// giflib's own rule (`DGifSlurp`) and what the test corpus expects.
///
/// **Delays:** a delay of 0 or 1 hundredths of a second (under 20 ms) is
/// stored as 0.1 s, as browsers show it (``AnimationTimeline/displayDuration(_:)``:
/// 10 ms or less becomes 100 ms in Firefox, Chromium and WebKit). Every other
/// delay is stored as it is, 2 hundredths included.
///
/// **Loop count:** ``Image/loopCount`` is the NETSCAPE2.0 count as written:
/// `nil` without the block (it plays once), 0 for forever, `n` for `n`
/// repeats (`n + 1` plays). ``AnimationTimeline`` describes the playback.
public struct GIFDecoder: ImageDecoding {
    /// Creates a GIF decoder.
    public init() {}

    /// ``ImageFormat/gif``.
    public var format: ImageFormat { .gif }

    /// Decodes every frame of a GIF; see ``ImageDecoding/decode(_:options:)``.
    public func decode(_ data: Data, options: DecodingOptions) throws(AsyncImageError) -> Image {
        // giflib checks only the first three bytes ("GIF"): the version must be 87a or 89a, as sniffing has it.
        guard ImageFormat.sniff(data) == .gif else {
            throw failure(.header, "not a GIF file (no GIF87a or GIF89a signature)")
        }
        // The canvas may show transparency (a transparent index, a frame
        // smaller than the screen, a disposal): the frames are scanned,
        // unless a resize follows, which measures its own result.
        let decoded: Result<Image, AsyncImageError> = data.withBytes { bytes, count in
            Result { () throws(AsyncImageError) -> Image in
                try decodeFrames(
                    bytes, count: count, maxPixels: options.maxPixels, maxFrames: options.maxFrames,
                    colorManagement: options.colorManagement, firstFrameOnly: options.firstFrameOnly, stop: options.stop,
                    resized: { options.targetSize == nil ? nil : options.naturalSize(for: $0) })
            }
        }
        let image = try decoded.get()
        guard options.targetSize != nil else { return image }
        return try ImageResizer.resize(image, to: options.naturalSize(for: image.size), quality: options.resizeQuality)
    }

    /// The least a frame counts against the pixel limit: a frame's own
    /// bookkeeping is worth that much, so a tiny screen cannot carry millions
    /// of frames.
    static let minimumFramePixels = 256

    private func decodeFrames(
        _ bytes: UnsafePointer<UInt8>, count: Int, maxPixels: Int, maxFrames: Int, colorManagement: ColorManagement,
        firstFrameOnly: Bool, stop: DecodeStop?, resized: (PixelSize) -> PixelSize?
    ) throws(AsyncImageError)
        -> Image
    {
        let input = GIFInput(base: bytes, count: count)
        var openError: Int32 = 0
        let gifFile = withExtendedLifetime(input) {
            DGifOpen(Unmanaged.passUnretained(input).toOpaque(), gifRead, &openError)
        }
        guard let gif = gifFile else {
            throw failure(.header, Self.message(openError, fallback: "not a complete GIF header"))
        }
        defer {
            var closeError: Int32 = 0
            DGifCloseFile(gif, &closeError)
            withExtendedLifetime(input) {}
        }

        let width = Int(gif.pointee.SWidth)
        let height = Int(gif.pointee.SHeight)
        guard width > 0, height > 0 else { throw failure(.header, "logical screen is \(width)x\(height)") }
        let screenPixels = width * height
        guard screenPixels <= maxPixels else {
            throw failure(.limits, "\(width)x\(height) is \(screenPixels) pixels, over the limit of \(maxPixels)", pixelLimit: true)
        }

        var canvas = [UInt32](repeating: 0, count: screenPixels)
        var previous: [UInt32] = []
        var frames: [ImageFrame] = []
        var loopCount: Int?
        var control = GraphicsControlBlock(DisposalMode: 0, UserInputFlag: false, DelayTime: 0, TransparentColor: -1)
        var palette = [UInt32](repeating: 0, count: 256)
        var line = [UInt8]()
        // An ICCRGBG1012 application extension's profile (its sub-blocks
        // joined), converting each frame's palette: 256 colours, never the pixels.
        var iccProfile: Data?
        var colorTransform: ColorTransform?
        var colorTransformChosen = false

        func fail(_ what: String) -> AsyncImageError {
            let reason = Self.message(gif.pointee.Error, fallback: "read error")
            if frames.isEmpty { return failure(frames.isEmpty ? .header : .pixels, "\(what): \(reason)") }
            return failure(.pixels, "\(what) after \(frames.count) good frame(s): \(reason)")
        }

        // Pixels decoded so far: each frame counts as the screen it produces
        // or as its own rectangle if that is larger (its LZW data is decoded
        // row by row even where it falls outside the screen), and as at least
        // `minimumFramePixels`.
        var decodedPixels = 0
        var record = UNDEFINED_RECORD_TYPE
        records: repeat {
            guard DGifGetRecordType(gif, &record) == GIF_OK else { throw fail("bad record") }
            switch record {
            case EXTENSION_RECORD_TYPE:
                var code: Int32 = 0
                var block: UnsafeMutablePointer<GifByteType>?
                guard DGifGetExtension(gif, &code, &block) == GIF_OK else { throw fail("bad extension") }
                var netscape = false
                var icc = false
                if let block {
                    if code == GRAPHICS_EXT_FUNC_CODE {
                        var parsed = GraphicsControlBlock()
                        if DGifExtensionToGCB(Int(block[0]), block + 1, &parsed) == GIF_OK { control = parsed }
                    } else if code == APPLICATION_EXT_FUNC_CODE, block[0] == 11 {
                        let id = String(decoding: UnsafeBufferPointer(start: block + 1, count: 11), as: UTF8.self)
                        netscape = id == "NETSCAPE2.0" || id == "ANIMEXTS1.0"
                        icc = id == "ICCRGBG1012" && iccProfile == nil && frames.isEmpty
                        if icc { iccProfile = Data() }
                    }
                }
                while block != nil {
                    guard DGifGetExtensionNext(gif, &block) == GIF_OK else { throw fail("bad extension block") }
                    if icc, let sub = block, sub[0] > 0 { iccProfile?.append(sub + 1, count: Int(sub[0])) }
                    if netscape, let sub = block, sub[0] >= 3, sub[1] == 1 {
                        loopCount = Int(sub[2]) | Int(sub[3]) << 8
                        netscape = false
                    }
                }

            case IMAGE_DESC_RECORD_TYPE:
                guard DGifGetImageDesc(gif) == GIF_OK else { throw fail("bad image descriptor") }
                let index = frames.count
                if stop?.isStopped == true { throw DecodeStop.failure(format) }
                guard index < maxFrames else {
                    throw failure(.limits, "more than \(maxFrames) frames, the limit", pixelLimit: true)
                }
                let desc = gif.pointee.Image
                let frameWidth = Int(desc.Width)
                let frameHeight = Int(desc.Height)
                guard frameWidth > 0, frameHeight > 0 else {
                    throw failure(index == 0 ? .header : .pixels, "frame \(index) is \(frameWidth)x\(frameHeight)")
                }
                let framePixels = max(screenPixels, frameWidth * frameHeight, Self.minimumFramePixels)
                guard decodedPixels + framePixels <= maxPixels else {
                    let what =
                        frameWidth * frameHeight > screenPixels
                        ? "frame \(index) is \(frameWidth)x\(frameHeight) on a \(width)x\(height) screen"
                        : "\(index + 1) frames of \(width)x\(height)"
                    throw failure(
                        .limits,
                        "\(what): \(decodedPixels + framePixels) pixels counted (at least \(Self.minimumFramePixels) a frame), over the limit of \(maxPixels)",
                        pixelLimit: true)
                }
                decodedPixels += framePixels
                guard let colorMap = desc.ColorMap ?? gif.pointee.SColorMap else {
                    throw failure(index == 0 ? .header : .pixels, "frame \(index) has no colour map")
                }
                let colorCount = min(256, Int(colorMap.pointee.ColorCount))
                for i in 0..<256 {
                    if i < colorCount {
                        let c = colorMap.pointee.Colors[i]
                        palette[i] = UInt32(c.Red) | UInt32(c.Green) << 8 | UInt32(c.Blue) << 16 | 0xFF00_0000
                    } else {
                        palette[i] = 0
                    }
                }
                if !colorTransformChosen {
                    colorTransformChosen = true
                    colorTransform = ColorConversion.transform(
                        for: iccProfile.map { $0.isEmpty ? .malformed("an empty ICCRGBG1012 extension") : .icc($0) },
                        layout: .rgba, management: colorManagement)
                }
                if let colorTransform, colorCount > 0 {
                    palette.withUnsafeMutableBytes { raw in
                        colorTransform.apply(
                            raw.bindMemory(to: UInt8.self).baseAddress!, width: colorCount, height: 1,
                            bytesPerRow: colorCount * 4)
                    }
                }
                let transparent = Int(control.TransparentColor)
                if transparent >= 0 && transparent < 256 { palette[transparent] = 0 }
                let disposal = control.DisposalMode
                if disposal == DISPOSE_PREVIOUS { previous = canvas }

                // Rows arrive in file order; interlaced rows come in four passes.
                let rows = desc.Interlace ? Self.interlacedRows(frameHeight) : Array(0..<frameHeight)
                if line.count < frameWidth { line = [UInt8](repeating: 0, count: frameWidth) }
                let left = Int(desc.Left)
                let top = Int(desc.Top)
                let visibleWidth = max(0, min(frameWidth, width - left))
                for row in rows {
                    let status = line.withUnsafeMutableBufferPointer {
                        DGifGetLine(gif, $0.baseAddress, Int32(frameWidth))
                    }
                    guard status == GIF_OK else { throw fail("frame \(index) image data") }
                    let y = top + row
                    guard y < height, visibleWidth > 0 else { continue }
                    canvas.withUnsafeMutableBufferPointer { canvasBuffer in
                        line.withUnsafeBufferPointer { lineBuffer in
                            palette.withUnsafeBufferPointer { colors in
                                let out = canvasBuffer.baseAddress! + y * width + left
                                for x in 0..<visibleWidth {
                                    let color = colors[Int(lineBuffer[x])]
                                    if color != 0 { out[x] = color }
                                }
                            }
                        }
                    }
                }

                let delay = Int(control.DelayTime)
                let pixels = try PixelMemory.make(screenPixels * 4) { out throws(AsyncImageError) in
                    canvas.withUnsafeBytes { out.update(from: $0.bindMemory(to: UInt8.self).baseAddress!, count: $0.count) }
                }
                frames.append(ImageFrame(pixels: pixels, duration: AnimationTimeline.displayDuration(Double(delay) / 100)))

                switch disposal {
                case DISPOSE_BACKGROUND:
                    // Restore the frame's area to transparent, as browsers do.
                    let bottom = min(height, top + frameHeight)
                    if top < bottom && visibleWidth > 0 {
                        for y in top..<bottom {
                            let start = y * width + left
                            canvas.replaceSubrange(start..<(start + visibleWidth), with: repeatElement(0, count: visibleWidth))
                        }
                    }
                case DISPOSE_PREVIOUS:
                    if !previous.isEmpty { canvas = previous }
                default:
                    break
                }
                control = GraphicsControlBlock(DisposalMode: 0, UserInputFlag: false, DelayTime: 0, TransparentColor: -1)
                // A still: the first frame, and not a byte more is read.
                if firstFrameOnly { break records }

            default:
                break
            }
        } while record != TERMINATE_RECORD_TYPE

        guard !frames.isEmpty else { throw failure(.pixels, "the file holds no image") }
        if frames.count == 1 { frames = [ImageFrame(pixels: frames[0].pixels, duration: 0)] }
        var info = DecodeInfo(scaleDenominator: 1, decodedSize: PixelSize(width: width, height: height))
        info.countedPixels = decodedPixels
        let screen = PixelSize(width: width, height: height)
        let resizes = resized(screen).map { $0 != screen } ?? false
        return Image(
            width: width, height: height, bytesPerRow: width * 4, frames: frames, format: .gif,
            loopCount: loopCount, decodeInfo: info, opacity: resizes ? .unmeasured : .unknown)
    }

    /// The file-order row sequence of an interlaced image: rows 0, 8, 16...,
    /// then 4, 12..., then 2, 6..., then 1, 3, 5...
    static func interlacedRows(_ height: Int) -> [Int] {
        var rows: [Int] = []
        rows.reserveCapacity(height)
        for (start, step) in [(0, 8), (4, 8), (2, 4), (1, 2)] {
            rows.append(contentsOf: stride(from: start, to: height, by: step))
        }
        return rows
    }

    static func message(_ code: Int32, fallback: String) -> String {
        if code != 0, let text = GifErrorString(code) { return String(cString: text) }
        return fallback
    }
}

/// The bytes giflib reads from, through ``gifRead``.
private final class GIFInput {
    let base: UnsafePointer<UInt8>
    let count: Int
    var offset = 0

    init(base: UnsafePointer<UInt8>, count: Int) {
        self.base = base
        self.count = count
    }
}

/// giflib's input callback: copies the next bytes of the ``GIFInput``.
private func gifRead(
    _ gif: UnsafeMutablePointer<GifFileType>?, _ buffer: UnsafeMutablePointer<GifByteType>?, _ length: Int32
) -> Int32 {
    guard let gif, let buffer, let user = gif.pointee.UserData, length > 0 else { return 0 }
    let input = Unmanaged<GIFInput>.fromOpaque(user).takeUnretainedValue()
    let n = min(Int(length), input.count - input.offset)
    guard n > 0 else { return 0 }
    buffer.update(from: input.base + input.offset, count: n)
    input.offset += n
    return Int32(n)
}
