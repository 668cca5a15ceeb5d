import CHEIF
import Foundation

/// What a HEIC file says, for ``ImageFileProperties`` and ``HEIFDecoder``:
/// libheif's reading of the boxes (no HEVC data decoded) for the primary
/// image's size (after its transforms), alpha, bit depth, ICC profile and
/// `Exif` item; and, read here, the `irot` and `imir` properties that libheif
/// applies but does not report.
struct HEIFHeader {
    /// The stored size (before `irot`), `nil` when the boxes are missing,
    /// cut off or invalid.
    var size: PixelSize?
    /// The luma bit depth: 8, 10 or 12.
    var bitDepth = 8
    var hasAlpha = false
    var isMonochrome = false
    /// `irot` and `imir` as the EXIF orientation that turns the stored image upright.
    var orientation: ImageOrientation = .up
    var colorSource: ColorSource?
    var exif: EXIFProperties?

    init(_ data: Data) {
        data.withBytes { bytes, count in
            let raw = UnsafeRawBufferPointer(start: bytes, count: count)
            guard ImageFormat.sniff(raw) == .heic else { return }
            HEIFContext.withPrimaryImage(bytes, count: count) { handle in
                read(handle, ByteView(bytes: raw))
            }
        }
    }

    private mutating func read(_ handle: OpaquePointer, _ view: ByteView) {
        let upright = PixelSize(
            width: Int(heif_image_handle_get_width(handle)), height: Int(heif_image_handle_get_height(handle)))
        guard upright.width > 0, upright.height > 0 else { return }
        orientation = Self.orientation(view) ?? .up
        size = orientation.swapsDimensions ? upright.transposed : upright
        bitDepth = max(1, Int(heif_image_handle_get_luma_bits_per_pixel(handle)))
        hasAlpha = heif_image_handle_has_alpha_channel(handle) != 0
        isMonochrome = heif_image_handle_get_chroma_bits_per_pixel(handle) <= 0
        colorSource = Self.colorSource(handle, view)
        exif = Self.exif(handle)
    }

    /// The primary image's ICC profile (`colr` of type `prof` or `rICC`),
    /// else its `nclx` description (with the primary item's `clli` and
    /// `mdcv` from the file's boxes, `view`, for PQ), `nil` without either.
    static func colorSource(_ handle: OpaquePointer, _ view: ByteView) -> ColorSource? {
        let type = heif_image_handle_get_color_profile_type(handle)
        if type == heif_color_profile_type_nclx {
            var nclx: UnsafeMutablePointer<heif_color_profile_nclx>?
            guard heif_image_handle_get_nclx_color_profile(handle, &nclx).code == heif_error_Ok, let nclx else { return nil }
            defer { heif_nclx_color_profile_free(nclx) }
            let transfer = Int(nclx.pointee.transfer_characteristics.rawValue)
            let color = NCLXColor(
                primaries: Int(nclx.pointee.color_primaries.rawValue), transfer: transfer,
                lightLevel: transfer == 16 ? ContentLightLevels.read(view) : nil)
            return color.primaries == 2 && color.transfer == 2 ? nil : .nclx(color)
        }
        guard type == heif_color_profile_type_prof || type == heif_color_profile_type_rICC else { return nil }
        let size = heif_image_handle_get_raw_color_profile_size(handle)
        guard size > 0, size <= ICCPayload.maxProfileSize else { return .malformed("an ICC profile of \(size) bytes") }
        var profile = Data(count: size)
        let error = profile.withUnsafeMutableBytes { heif_image_handle_get_raw_color_profile(handle, $0.baseAddress) }
        return error.code == heif_error_Ok ? .icc(profile) : .malformed(String(cString: error.message))
    }

    /// The first `Exif` item: 4 bytes giving the offset of the TIFF header, then the EXIF data.
    static func exif(_ handle: OpaquePointer) -> EXIFProperties? {
        var id: heif_item_id = 0
        guard heif_image_handle_get_list_of_metadata_block_IDs(handle, "Exif", &id, 1) == 1 else { return nil }
        let size = heif_image_handle_get_metadata_size(handle, id)
        guard size > 4, size <= 16 << 20 else { return nil }
        var data = Data(count: size)
        let error = data.withUnsafeMutableBytes { heif_image_handle_get_metadata(handle, id, $0.baseAddress) }
        guard error.code == heif_error_Ok else { return nil }
        return data.withUnsafeBytes { raw -> EXIFProperties? in
            let view = ByteView(bytes: raw)
            guard let offset = view.u32(0), Int(offset) <= size - 4 else { return nil }
            return EXIFReader.read(view.suffix(from: 4 + Int(offset)))
        }
    }

    // MARK: irot and imir

    /// The EXIF orientation of the primary item's `irot` and `imir`
    /// properties, applied in the order of its `ipma` associations (the
    /// order libheif applies them in), `nil` when the boxes cannot be read.
    static func orientation(_ view: ByteView) -> ImageOrientation? {
        guard let (properties, boxes) = ISOBox.primaryItemProperties(view) else { return nil }
        var transform = Matrix.identity
        for property in boxes {
            guard property.end > property.body, let value = properties.u8(property.body) else { continue }
            if property.type == "irot" {
                for _ in 0..<(value & 3) { transform = Matrix.anticlockwise * transform }
            } else if property.type == "imir" {
                transform = (value & 1 == 0 ? Matrix.topToBottom : Matrix.leftToRight) * transform
            }
        }
        return transform.orientation
    }

    /// A 2x2 integer matrix on pixel coordinates (y down): where a stored
    /// pixel goes, translation aside.
    struct Matrix: Equatable {
        var a: Int, b: Int, c: Int, d: Int

        static let identity = Matrix(a: 1, b: 0, c: 0, d: 1)
        /// A quarter turn anticlockwise: (x, y) to (y, -x).
        static let anticlockwise = Matrix(a: 0, b: 1, c: -1, d: 0)
        /// `imir` mode 0: top to bottom (EXIF 4).
        static let topToBottom = Matrix(a: 1, b: 0, c: 0, d: -1)
        /// `imir` mode 1: left to right (EXIF 2).
        static let leftToRight = Matrix(a: -1, b: 0, c: 0, d: 1)

        static func * (l: Matrix, r: Matrix) -> Matrix {
            Matrix(a: l.a * r.a + l.b * r.c, b: l.a * r.b + l.b * r.d, c: l.c * r.a + l.d * r.c, d: l.c * r.b + l.d * r.d)
        }

        var orientation: ImageOrientation {
            switch (a, b, c, d) {
            case (-1, 0, 0, 1): return .upMirrored
            case (-1, 0, 0, -1): return .down
            case (1, 0, 0, -1): return .downMirrored
            case (0, 1, 1, 0): return .leftMirrored
            case (0, -1, 1, 0): return .right
            case (0, -1, -1, 0): return .rightMirrored
            case (0, 1, -1, 0): return .left
            default: return .up
            }
        }
    }
}

/// libheif's context and primary image, opened on bytes that outlive them.
enum HEIFContext {
    /// `heif_init`, once: it registers libheif's decoders (libde265 for
    /// HEVC) before any context reads a file.
    private static let initialised: Bool = {
        heif_init(nil)
        return true
    }()

    /// Opens `bytes` without copying them and calls `body` with the primary
    /// image's handle; the error libheif reports instead.
    ///
    /// libheif 1.15 refuses a file whose `iloc` extents (the HEVC data in
    /// `mdat`, the `Exif` item) reach past the bytes it is given, so a file
    /// cut short, or a body's first bytes, has no properties until it is
    /// whole. Not worked around with a `heif_reader` that says the rest
    /// will come: libheif then asserts (aborts the process) when a read of
    /// an item past the end fails (`Box_iloc::read_data`).
    ///
    /// A file whose derived images form a cycle is refused before libheif
    /// reads it (``ISOBox/derivationFault(_:)``): libheif 1.15 follows them
    /// by recursion, when it decodes and already when it is asked the
    /// primary image's bit depth (`heif_image_handle_get_luma_bits_per_pixel`
    /// on a grid made of a grid made of the first), and overflows the stack.
    @discardableResult
    static func withPrimaryImage<R>(
        _ bytes: UnsafePointer<UInt8>, count: Int, _ body: (OpaquePointer) -> R
    ) -> Result<R, Failure> {
        if let fault = ISOBox.derivationFault(ByteView(bytes: UnsafeRawBufferPointer(start: bytes, count: count))) {
            return .failure(Failure(isMemory: false, text: fault))
        }
        _ = initialised
        guard let context = heif_context_alloc() else {
            return .failure(Failure(isMemory: true, text: "cannot allocate libheif's context"))
        }
        defer { heif_context_free(context) }
        // Tiles decode on the calling thread (the loader decodes on its own queue).
        heif_context_set_max_decoding_threads(context, 0)
        var error = heif_context_read_from_memory_without_copy(context, bytes, count, nil)
        guard error.code == heif_error_Ok else { return .failure(Failure(error)) }
        var handle: OpaquePointer?
        error = heif_context_get_primary_image_handle(context, &handle)
        guard error.code == heif_error_Ok, let handle else { return .failure(Failure(error)) }
        defer { heif_image_handle_release(handle) }
        return .success(body(handle))
    }

    /// A libheif error, copied out of its `heif_error` (whose message
    /// belongs to libheif).
    struct Failure: Error {
        /// Out of memory (`heif_error_Memory_allocation_error`).
        var isMemory: Bool
        /// Its message and codes.
        var text: String

        init(isMemory: Bool, text: String) {
            self.isMemory = isMemory
            self.text = text
        }

        /// Over one of libheif's own limits (32768 pixels a side and the like).
        var isLimit = false

        init(_ error: heif_error) {
            isLimit = error.subcode == heif_suberror_Security_limit_exceeded
            isMemory = error.code == heif_error_Memory_allocation_error && !isLimit
            let message = error.message.map { String(cString: $0) } ?? ""
            text = "\(message.isEmpty ? "error" : message) (libheif \(error.code.rawValue).\(error.subcode.rawValue))"
        }
    }
}
