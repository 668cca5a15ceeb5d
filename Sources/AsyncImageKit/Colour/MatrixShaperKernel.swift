import CImageCodecs
import CLCMS2
import Foundation

/// The fast path of a colour transform: a source profile made of three tone
/// curves and a 3x3 matrix (Display P3, Adobe RGB, ProPhoto, Rec. 709 and
/// 2020, PNG `cHRM` + `gAMA`, `nclx` SDR) converted to sRGB by a small C
/// kernel (`aiv_matrix_shaper_apply`): an input table to linear light, one
/// matrix to sRGB's linear primaries, then sRGB's curve (evaluated: the
/// inverse of Little CMS's own sRGB curve) to bytes.
///
/// Little CMS stays the parser and the reference: the curves and colorants
/// are read through it, the output curve is the inverse of its sRGB
/// profile's, and a kernel is only made when it agrees with Little CMS's
/// own transform of the same profile to within one level on a grid of
/// test colours (otherwise the transform stays on Little CMS).
///
/// Taken only where it is the same conversion as Little CMS's: RGBA pixels;
/// the perceptual, relative colorimetric and saturation intents, which for
/// a matrix-shaper profile (one without a lookup table for the intent) are
/// one transform; no black-point compensation asked for. Absolute
/// colorimetric, black-point compensation, grey, CMYK and LUT-based
/// profiles stay on Little CMS.
final class MatrixShaperKernel: @unchecked Sendable {
    // Immutable once made: read from any thread.
    private let tables: UnsafeMutablePointer<aiv_matrix_shaper>
    /// The same conversion for a resize in linear light: the input tables
    /// and the matrix (then clipping) run as the resampler reads each pixel,
    /// and sRGB's encoding only on its output (the small image).
    let linearSource: LinearSource

    /// A kernel for `source`, or nil when the profile, intent, settings or
    /// layout are not ones it converts as Little CMS does.
    init?(source: cmsHPROFILE, layout: ColorPixelLayout, management: ColorManagement) {
        guard layout == .rgba, !management.usesBlackPointCompensation, management.intent != .absoluteColorimetric,
            cmsGetColorSpace(source) == cmsSigRgbData, cmsIsMatrixShaper(source) != 0,
            cmsIsCLUT(source, management.intent.lcmsValue, UInt32(LCMS_USED_AS_INPUT)) == 0,
            let matrix = Self.colorants(of: source), let sRGB = LCMS.makeSRGB()
        else { return nil }
        defer { cmsCloseProfile(sRGB) }
        guard let target = Self.colorants(of: sRGB), let inverse = Self.inverse(target),
            let curves = Self.curves(of: source)
        else { return nil }
        let tables = UnsafeMutablePointer<aiv_matrix_shaper>.allocate(capacity: 1)
        let linear = aiv_matrix_shaper_to_linear(tables)!
        for channel in 0..<3 {
            for level in 0..<256 {
                linear[channel * 256 + level] = cmsEvalToneCurveFloat(curves[channel], Float(level) / 255)
            }
        }
        let combined = Self.multiply(inverse, matrix)
        let m = aiv_matrix_shaper_matrix(tables)!
        for index in 0..<9 { m[index] = Float(combined[index]) }
        self.tables = tables
        linearSource = LinearSource(
            decode: Array(UnsafeBufferPointer(start: linear, count: 768)),
            matrix: LinearSource.Matrix(rowMajor: combined.map(Float.init)))
    }

    deinit { tables.deallocate() }

    /// Converts `height` rows of `width` RGBA pixels in place (alpha untouched).
    func apply(_ pixels: UnsafeMutablePointer<UInt8>, width: Int, height: Int, bytesPerRow: Int) {
        guard width > 0, height > 0 else { return }
        aiv_matrix_shaper_apply(tables, pixels, width, height, bytesPerRow)
    }

    // MARK: Reading the profile through Little CMS

    /// The profile's RGB-to-XYZ (D50) matrix, row-major, from its colorant tags.
    private static func colorants(of profile: cmsHPROFILE) -> [Double]? {
        var columns: [cmsCIEXYZ] = []
        for tag in [cmsSigRedColorantTag, cmsSigGreenColorantTag, cmsSigBlueColorantTag] {
            guard let raw = cmsReadTag(profile, tag) else { return nil }
            columns.append(raw.assumingMemoryBound(to: cmsCIEXYZ.self).pointee)
        }
        return [
            columns[0].X, columns[1].X, columns[2].X,
            columns[0].Y, columns[1].Y, columns[2].Y,
            columns[0].Z, columns[1].Z, columns[2].Z,
        ]
    }

    /// The red, green and blue tone curves (owned by the profile).
    private static func curves(of profile: cmsHPROFILE) -> [OpaquePointer]? {
        var curves: [OpaquePointer] = []
        for tag in [cmsSigRedTRCTag, cmsSigGreenTRCTag, cmsSigBlueTRCTag] {
            guard let raw = cmsReadTag(profile, tag) else { return nil }
            curves.append(OpaquePointer(raw))
        }
        return curves
    }

    private static func multiply(_ a: [Double], _ b: [Double]) -> [Double] {
        var result = [Double](repeating: 0, count: 9)
        for row in 0..<3 {
            for column in 0..<3 {
                result[row * 3 + column] = (0..<3).reduce(0) { $0 + a[row * 3 + $1] * b[$1 * 3 + column] }
            }
        }
        return result
    }

    private static func inverse(_ m: [Double]) -> [Double]? {
        let det =
            m[0] * (m[4] * m[8] - m[5] * m[7]) - m[1] * (m[3] * m[8] - m[5] * m[6]) + m[2] * (m[3] * m[7] - m[4] * m[6])
        guard abs(det) > 1e-12 else { return nil }
        let adjugate = [
            m[4] * m[8] - m[5] * m[7], m[2] * m[7] - m[1] * m[8], m[1] * m[5] - m[2] * m[4],
            m[5] * m[6] - m[3] * m[8], m[0] * m[8] - m[2] * m[6], m[2] * m[3] - m[0] * m[5],
            m[3] * m[7] - m[4] * m[6], m[1] * m[6] - m[0] * m[7], m[0] * m[4] - m[1] * m[3],
        ]
        return adjugate.map { $0 / det }
    }
}
