@testable import AsyncImageKit
import Foundation
import ImageFixtures
import Logging
import LoopbackHTTP
import TestSupport
import XCTest

/// Resumable downloads through the loader (issue: disk cache, item 9): a
/// transfer cut off or cancelled mid-body keeps what it received on disk;
/// the next load asks for the rest with `Range` and `If-Range`; a 206 is
/// appended, a 200 starts over, a 416 drops the stored part. Against a real
/// server that cuts and holds connections.
final class ResumeTests: XCTestCase {
    private var folder: URL!
    private static let photo = try! JPEGEncoder(quality: 92).encode(SyntheticImage.photo(width: 400, height: 300, seed: 3))
    private static let other = try! JPEGEncoder(quality: 92).encode(SyntheticImage.photo(width: 400, height: 300, seed: 4))

    override func setUp() {
        folder = temporaryFolder("resume")
    }

    /// The whole photo, decoded, to compare with.
    private static func decoded(_ data: Data) -> Image { try! ImageDecoderRegistry.default.decode(data) }

    private func makeLoader(
        _ h: LoaderHarness, _ disk: DataCache, transport: (any DataLoading)? = nil, logger: Logger? = nil
    ) -> AsyncImageLoader {
        AsyncImageLoader(
            configuration: .init(
                cache: ImageCache(), deliveryQueue: h.queue, notificationCenter: h.center, dataLoader: transport,
                diskCache: disk, logger: logger ?? AsyncImageLoader.silentLogger))
    }

    private func load(_ loader: AsyncImageLoader, _ url: URL, _ h: LoaderHarness, outcomes: Int) {
        loader.loadImage(ImageRequest(url: url), success: h.log.success, failure: h.log.failure)
        wait(for: [h.log.outcomes(outcomes, self)], timeout: 15)
        h.drainDeliveries()
        loader.flushDiskWrites()
    }

    private func partialKey(_ url: URL) -> String {
        ImageDiskStore.partialKey(LoadRequest.diskKey(for: ImageRequest(url: url)))
    }

    func testACutTransferIsResumedWithARange() throws {
        let h = try LoaderHarness()
        let disk = try DataCache(directory: folder)
        let resource = RangeResource(body: Self.photo, contentType: "image/jpeg")
        let url = h.server.serve("/photo.jpg", resource: resource)
        resource.inject(.cut(after: 30_000))
        load(makeLoader(h, disk), url, h, outcomes: 1)
        guard case .transport = h.log.errors["/photo.jpg"] else {
            return XCTFail("a cut transfer fails: \(String(describing: h.log.errors["/photo.jpg"]))")
        }
        XCTAssertEqual(disk.data(for: partialKey(url)), Self.photo.prefix(30_000), "what arrived is kept")

        load(makeLoader(h, disk), url, h, outcomes: 2)
        let answers = resource.answers
        XCTAssertEqual(answers.map(\.status), [200, 206])
        XCTAssertEqual(answers[1].requestHeaders["range"], "bytes=30000-")
        XCTAssertEqual(answers[1].requestHeaders["if-range"], resource.etag)
        XCTAssertEqual(answers[1].bytesSent, Self.photo.count - 30_000, "only the rest was sent")
        let image = try XCTUnwrap(h.log.images["/photo.jpg"])
        XCTAssertEqual(image.pixels, Self.decoded(Self.photo).pixels, "the joined body is the photo")
        XCTAssertFalse(disk.contains(partialKey(url)), "the part is forgotten once resumed")
        XCTAssertTrue(
            disk.contains(
                ImageDiskStore.originalKey(
                    LoadRequest.diskKey(for: ImageRequest(url: url)),
                    generation: disk.entry(for: LoadRequest.diskKey(for: ImageRequest(url: url)))?.metadata.generation ?? "")),
            "and the whole body is stored")
    }

    /// Cut twice: the second part is added to the first, and the third load finishes it.
    func testAResumedTransferCutAgainKeepsBothParts() throws {
        let h = try LoaderHarness()
        let disk = try DataCache(directory: folder)
        let resource = RangeResource(body: Self.photo, contentType: "image/jpeg")
        let url = h.server.serve("/photo.jpg", resource: resource)
        resource.inject(.cut(after: 10_000))
        resource.inject(.cut(after: 15_000))
        load(makeLoader(h, disk), url, h, outcomes: 1)
        load(makeLoader(h, disk), url, h, outcomes: 2)
        XCTAssertEqual(disk.data(for: partialKey(url)), Self.photo.prefix(25_000))
        load(makeLoader(h, disk), url, h, outcomes: 3)
        XCTAssertEqual(resource.answers.map(\.status), [200, 206, 206])
        XCTAssertEqual(resource.answers[2].requestHeaders["range"], "bytes=25000-")
        XCTAssertEqual(h.log.images["/photo.jpg"]?.pixels, Self.decoded(Self.photo).pixels)
    }

    /// The image changed between the two transfers: `If-Range` fails, the
    /// server sends the whole new body, which is what is shown.
    func testAChangedImageStartsOver() throws {
        let h = try LoaderHarness()
        let disk = try DataCache(directory: folder)
        let resource = RangeResource(body: Self.photo, contentType: "image/jpeg")
        let url = h.server.serve("/photo.jpg", resource: resource)
        resource.inject(.cut(after: 30_000))
        load(makeLoader(h, disk), url, h, outcomes: 1)
        resource.replace(body: Self.other)
        load(makeLoader(h, disk), url, h, outcomes: 2)
        XCTAssertEqual(resource.answers.map(\.status), [200, 200])
        XCTAssertEqual(resource.answers[1].requestHeaders["range"], "bytes=30000-", "asked to resume")
        XCTAssertEqual(h.log.images["/photo.jpg"]?.pixels, Self.decoded(Self.other).pixels, "the new image, whole")
        XCTAssertFalse(disk.contains(partialKey(url)))
    }

    /// A stored part the server cannot continue (416): dropped, and the
    /// transfer tried again whole within the same load.
    func testAnUnsatisfiableRangeIsDroppedAndTheBodyLoadedWhole() throws {
        let h = try LoaderHarness()
        let disk = try DataCache(directory: folder)
        let resource = RangeResource(body: Self.photo, contentType: "image/jpeg")
        let url = h.server.serve("/photo.jpg", resource: resource)
        try disk.store(
            Self.photo + Data(count: 10), for: partialKey(url), metadata: DataCacheMetadata(etag: resource.etag))
        load(makeLoader(h, disk), url, h, outcomes: 1)
        XCTAssertEqual(resource.answers.map(\.status), [416, 200])
        XCTAssertNil(resource.answers[1].requestHeaders["range"])
        XCTAssertEqual(h.log.images["/photo.jpg"]?.pixels, Self.decoded(Self.photo).pixels)
        XCTAssertFalse(disk.contains(partialKey(url)))
    }

    /// A load cancelled mid-body (nobody needs the image any more) keeps
    /// what had arrived; the next load resumes it.
    func testACancelledTransferKeepsWhatArrived() throws {
        let h = try LoaderHarness()
        let disk = try DataCache(directory: folder)
        let resource = RangeResource(body: Self.photo, contentType: "image/jpeg")
        let url = h.server.serve("/photo.jpg", resource: resource)
        let gate = Gate()
        defer { gate.open() }
        resource.inject(.hold(after: 20_000, gate: gate))
        let arrived = expectation(description: "20,000 bytes arrived")
        let transport = ProgressWatcher(threshold: 20_000, reached: arrived)
        let logs = LogRecorder(level: .debug)
        let kept = expectation(description: "the part was kept")
        logs.onLog = { message in if message.text.hasPrefix("kept 20000 bytes") { kept.fulfill() } }
        let loader = makeLoader(h, disk, transport: transport, logger: logs.logger)
        let task = loader.loadImage(ImageRequest(url: url), success: h.log.success, failure: h.log.failure)
        wait(for: [arrived], timeout: 15)
        task.cancel()
        wait(for: [kept], timeout: 15)
        XCTAssertEqual(disk.data(for: partialKey(url)), Self.photo.prefix(20_000))
        gate.open()

        load(makeLoader(h, disk), url, h, outcomes: 1)
        XCTAssertEqual(resource.answers.last?.status, 206)
        XCTAssertEqual(resource.answers.last?.requestHeaders["range"], "bytes=20000-")
        XCTAssertEqual(h.log.images["/photo.jpg"]?.pixels, Self.decoded(Self.photo).pixels)
    }
}

/// The real transport, with a test's hook on its progress: fulfils
/// `reached` once a transfer has received `threshold` body bytes.
private final class ProgressWatcher: DataLoading, @unchecked Sendable {
    private let transport = DataLoader()
    private let threshold: Int
    private let reached: XCTestExpectation
    private let done = Box<Bool>(false)

    init(threshold: Int, reached: XCTestExpectation) {
        self.threshold = threshold
        self.reached = reached
    }

    func loadData(
        _ request: DataRequest, completion: @escaping @Sendable (Result<DataResponse, AsyncImageError>) -> Void
    ) -> any DataLoadingTask {
        loadData(request, observer: DataTransferObserver(), completion: completion)
    }

    func loadData(
        _ request: DataRequest, observer: DataTransferObserver,
        completion: @escaping @Sendable (Result<DataResponse, AsyncImageError>) -> Void
    ) -> any DataLoadingTask {
        var watched = observer
        watched.progress = { [self] received, expected in
            observer.progress?(received, expected)
            guard received >= threshold else { return }
            var first = false
            done.update { old in
                first = old != true
                old = true
            }
            guard first else { return }
            reached.fulfill()
        }
        return transport.loadData(request, observer: watched, completion: completion)
    }
}
