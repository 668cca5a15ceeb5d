import AsyncImageKit
import Foundation

/// The decoders' targets: through sniffing, each decoder directly, the
/// sniffer, and the progressive JPEG preview decode.
enum DecoderTargets {
    /// ``ImageDecoder``: every input ends in an image or an ``AsyncImageError``.
    static func image(_ data: Data) -> String? {
        for options in ImageCheck.options(for: data) {
            guard let image = try? ImageDecoder().decode(data, options: options) else { continue }
            if let problem = ImageCheck.problem(with: image) ?? ImageCheck.disagreement(image, data) { return problem }
            if let target = options.targetSize, image.size != target {
                return "framed to \(image.size), not the target \(target)"
            }
        }
        return nil
    }

    /// One decoder called directly, whatever the data's signature (a decoder
    /// must refuse what is not its format itself).
    static func direct(_ data: Data, decoder: any ImageDecoding) -> String? {
        for options in ImageCheck.options(for: data) {
            guard let image = try? decoder.decode(data, options: options) else { continue }
            if let problem = ImageCheck.problem(with: image) { return problem }
            guard ImageFormat.sniff(data) == decoder.format else {
                return "\(decoder.format) decoder accepted data that is not \(decoder.format)"
            }
            if let problem = ImageCheck.disagreement(image, data) { return problem }
            if options.targetSize != nil, image.size.width > image.originalSize.width || image.size.height > image.originalSize.height {
                return "a downsampled decode (\(image.size)) larger than the image (\(image.originalSize))"
            }
        }
        return nil
    }

    /// The sniffer, and the registry's error for data it does not recognise.
    static func sniff(_ data: Data) -> String? {
        let format = ImageFormat.sniff(data)
        let viaBuffer = data.withUnsafeBytes { ImageFormat.sniff($0) }
        guard format == viaBuffer else { return "sniff(Data) \(String(describing: format)) != sniff(buffer) \(String(describing: viaBuffer))" }
        // Sniffing reads at most the first 12 bytes.
        if data.count > 12, ImageFormat.sniff(data.prefix(12)) != format { return "sniffing read past byte 12" }
        if format == nil {
            do {
                _ = try ImageDecoderRegistry.default.decode(data)
                return "data in no format decoded"
            } catch {
                guard case .decoding(let failure, _) = error, failure.stage == .sniffing, !error.description.isEmpty else {
                    return "unrecognised data failed with \(error), not at the sniffing stage"
                }
            }
        }
        return nil
    }

    /// The JPEG decoder as the loader's progressive previews use it: the
    /// data is a body that may stop after any scan (not an error then).
    /// Decoded whole and cut at each of its first four scans' starts.
    static func jpegPreview(_ data: Data) -> String? {
        var cuts = [data.count]
        data.withUnsafeBytes { raw in
            var index = 3
            while index < raw.count, cuts.count < 5 {
                if raw[index] == 0xDA, raw[index - 1] == 0xFF { cuts.append(index - 1) }
                index += 1
            }
        }
        for cut in cuts {
            let prefix = Data(data.prefix(cut))
            for var options in ImageCheck.options(for: data) {
                options.isProgressivePreview = true
                guard let image = try? JPEGDecoder().decode(prefix, options: options) else { continue }
                if let problem = ImageCheck.problem(with: image) { return "cut at \(cut): \(problem)" }
                if let problem = ImageCheck.disagreement(image, prefix) { return "cut at \(cut): \(problem)" }
            }
        }
        return nil
    }
}
