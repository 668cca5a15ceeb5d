// The libFuzzer entry point: `Fuzz/run` builds this product with libFuzzer
// and AddressSanitizer (`swift build --sanitize=fuzzer --sanitize=address`)
// and runs one target at a time, named by the environment:
//
//     FUZZ_TARGET=png .build-fuzz/release/asyncimage-fuzz CORPUS_DIR...
//
// The targets are in Fuzz/Targets (module FuzzTargets, also used by
// FuzzRegressionTests): image, png, jpeg, gif, webp, sniff, probe, exif,
// jpeg-preview, colour, disk-entry, stored-image. In an ordinary build this
// program does nothing.
//
// No top-level code: under `--sanitize=fuzzer` SwiftPM compiles this file as a
// library and libFuzzer supplies `main`.
import Foundation
import FuzzTargets

/// The target `FUZZ_TARGET` names (default `image`); an unknown name stops the run.
let selectedTarget: FuzzTarget = {
    let name = ProcessInfo.processInfo.environment["FUZZ_TARGET"] ?? FuzzTarget.image.rawValue
    guard let target = FuzzTarget(name: name) else {
        let names = FuzzTarget.allCases.map(\.rawValue).joined(separator: ", ")
        fatalError("FUZZ_TARGET=\(name) is not a target; the targets: \(names)")
    }
    return target
}()

/// Before the first input: names the target; with `FUZZ_WRITE_SEEDS=DIR`,
/// writes the disk cache targets' seeds under DIR and exits.
@_cdecl("LLVMFuzzerInitialize")
public func fuzzInitialize(
    _ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>
) -> CInt {
    if let directory = ProcessInfo.processInfo.environment["FUZZ_WRITE_SEEDS"] {
        do {
            try SeedWriter.write(to: URL(fileURLWithPath: directory))
            exit(0)
        } catch {
            fatalError("writing the seeds to \(directory): \(error)")
        }
    }
    FileHandle.standardError.write(Data("asyncimage-fuzz: target \(selectedTarget.rawValue)\n".utf8))
    return 0
}

/// One input through the selected target: a problem it reports stops the run
/// (libFuzzer keeps the input as a crash).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    if let problem = selectedTarget.run(Data(bytes: bytes, count: count)) {
        fatalError("[\(selectedTarget.rawValue)] \(problem)")
    }
    return 0
}
