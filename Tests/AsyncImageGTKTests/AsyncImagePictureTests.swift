#if GTKSupport
import AsyncImageGTK
import AsyncImageKit
import Foundation
import LoopbackHTTP
import XCTest

/// AsyncImagePicture under Xvfb: loads from a loopback server, shows the
/// placeholder then the image, as GTK itself renders the window (compared
/// with the expected pixels within 2 levels per channel: GTK's software
/// renderer scales and composites in 8 bits), the cross-fade drawn by GTK
/// on the frame clock, premultiplied pixels, content fit, and the loader's
/// guarantees for GTK targets with every delivery on the main loop.
final class AsyncImagePictureTests: XCTestCase {
    private var server: LoopbackServer?
    private var loader: AsyncImageLoader!
    private let events = EventLog()
    private let gate = Gate()
    private var diskDirectory: URL?

    static let red = RGBA(r: 220, g: 30, b: 40)
    static let grey = RGBA(r: 128, g: 128, b: 128)

    override func setUpWithError() throws {
        try GTKHarness.start()
        let gate = self.gate
        let redPNG = try PNGEncoder().encode(solid(Self.red, width: 128, height: 128))
        let halfRed = try PNGEncoder().encode(solid(RGBA(r: 255, g: 0, b: 0, a: 128), width: 64, height: 32))
        let white = try PNGEncoder().encode(solid(RGBA(r: 255, g: 255, b: 255), width: 64, height: 64))
        server = try LoopbackServer { request, connection in
            let path = request.path
            if path.hasPrefix("/held/") { _ = gate.wait(timeout: 20) }
            if path.hasSuffix("/red.png") {
                connection.respond(
                    status: 200, headers: [("Content-Type", "image/png"), ("Cache-Control", "max-age=3600")], body: redPNG)
            } else if path.hasSuffix("/halfred.png") {
                connection.respond(status: 200, headers: [("Content-Type", "image/png")], body: halfRed)
            } else if path.hasSuffix("/white.png") {
                connection.respond(status: 200, headers: [("Content-Type", "image/png")], body: white)
            } else if path.hasPrefix("/item/"), path.hasSuffix("/thumb.png") || path.hasSuffix("/full.png") {
                // /item/<n>/<thumb|full>.png: a solid picture; the full one arrives later, at random.
                let parts = path.split(separator: "/")
                let index = Int(parts[1]) ?? 0, full = parts[2].hasPrefix("full")
                usleep(useconds_t(Int.random(in: 0...(full ? 40_000 : 20_000))))
                let colour = RGBA(r: UInt8(index * 9 % 256), g: full ? 200 : 50, b: 90)
                let side = full ? 96 : 16
                let body = (try? PNGEncoder().encode(solid(colour, width: side, height: side))) ?? Data()
                connection.respond(status: 200, headers: [("Content-Type", "image/png")], body: body)
            } else {
                connection.respond(status: 404, body: Data("missing".utf8))
            }
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("asyncimage-gtk-\(UUID().uuidString)")
        diskDirectory = directory
        loader = try makeLoader(events)
    }

    /// A loader delivering on the main queue, with its own memory cache and the test's disk cache.
    private func makeLoader(_ log: EventLog) throws -> AsyncImageLoader {
        let loader = AsyncImageLoader(
            configuration: .init(
                cache: ImageCache(), notificationCenter: NotificationCenter(),
                diskCache: try DataCache(directory: diskDirectory!)))
        log.attach(to: loader)
        return loader
    }

    override func tearDown() {
        gate.open()
        server?.stop()
        loader?.eventMonitor = nil
        if let diskDirectory { try? FileManager.default.removeItem(at: diskDirectory) }
    }

    private func url(_ path: String) -> URL { server!.url(path) }

    func testPlaceholderThenImageAsGTKRendersTheWindow() throws {
        let picture = AsyncImagePicture(loader: loader, width: 64, height: 64, contentFit: GTK_CONTENT_FIT_COVER)
        picture.placeholderImage = solid(Self.grey, width: 4, height: 4)
        picture.crossfadeDuration = 0
        let window = GTKHarness.window(picture.widget, width: 64, height: 64)
        defer { GTKHarness.close(window) }
        let held = url("/held/red.png")
        picture.imageURL = held
        GTKHarness.pump(seconds: 0.2)
        XCTAssertEqual(picture.view.state, .loading(held))
        let before = try XCTUnwrap(Rendering(window))
        XCTAssertEqual(before.width, 64)
        XCTAssertTrue(close(before.pixel(32, 32), Self.grey, tolerance: 2), "placeholder: \(before.pixel(32, 32))")
        XCTAssertTrue(close(before.pixel(1, 1), Self.grey, tolerance: 2), "placeholder covers the box: \(before.pixel(1, 1))")

        gate.open()
        XCTAssertTrue(GTKHarness.pump { picture.view.state == .loaded(held) })
        GTKHarness.pump(seconds: 0.1)
        let after = try XCTUnwrap(Rendering(window))
        var wrong = 0
        for y in 0..<after.height {
            for x in 0..<after.width where !close(after.pixel(x, y), Self.red, tolerance: 2) { wrong += 1 }
        }
        if wrong > 0 { after.save("/tmp/asyncimage-gtk-placeholder-then-image.png") }
        XCTAssertEqual(wrong, 0, "pixels off the expected red by more than 2 levels (centre \(after.pixel(32, 32)))")
        // Decoded at the picture's size times the scale factor (COVER: the box itself).
        let scale = Int(gtk_widget_get_scale_factor(picture.widget))
        XCTAssertEqual(picture.image?.size, PixelSize(width: 64 * scale, height: 64 * scale))
        XCTAssertTrue(events.offMainViolations.isEmpty, "\(events.offMainViolations.map(\.event.kind))")
        XCTAssertEqual(events.deliveriesOffMain, 0)
        XCTAssertTrue(events.requestsWithoutOneOutcome.isEmpty)
        XCTAssertGreaterThan(GLibMainQueue.drainCount, 0)
    }

    func testTransparentImageIsPremultipliedAndContainLetterboxes() throws {
        let picture = AsyncImagePicture(loader: loader, width: 64, height: 64, contentFit: GTK_CONTENT_FIT_CONTAIN)
        picture.crossfadeDuration = 0
        let window = GTKHarness.window(picture.widget, width: 64, height: 64)
        defer { GTKHarness.close(window) }
        let background = try XCTUnwrap(Rendering(window)).pixel(32, 32)
        let link = url("/halfred.png")
        picture.imageURL = link
        XCTAssertTrue(GTKHarness.pump { picture.view.state == .loaded(link) })
        GTKHarness.pump(seconds: 0.1)
        let shown = try XCTUnwrap(Rendering(window))
        // CONTAIN asks for an aspect fit without margins: 64x32, centred by GTK.
        XCTAssertEqual(picture.image?.size.height, picture.image.map { $0.width / 2 })
        let alpha = 128.0 / 255
        func over(_ c: UInt8, _ bg: UInt8) -> UInt8 { UInt8((Double(c) * alpha + Double(bg) * (1 - alpha)).rounded()) }
        let expected = RGBA(r: over(255, background.r), g: over(0, background.g), b: over(0, background.b))
        XCTAssertTrue(close(shown.pixel(32, 32), expected, tolerance: 3), "\(shown.pixel(32, 32)) vs \(expected) over \(background)")
        XCTAssertTrue(close(shown.pixel(32, 4), background, tolerance: 2), "letterbox: \(shown.pixel(32, 4))")
        XCTAssertTrue(close(shown.pixel(32, 60), background, tolerance: 2), "letterbox: \(shown.pixel(32, 60))")
    }

    func testCrossFadeIsDrawnByGTKOnTheFrameClockThenStops() throws {
        let picture = AsyncImagePicture(loader: loader, width: 64, height: 64, contentFit: GTK_CONTENT_FIT_COVER)
        picture.placeholderImage = solid(RGBA(r: 0, g: 0, b: 0), width: 2, height: 2)
        picture.crossfadeDuration = 0.6
        let window = GTKHarness.window(picture.widget, width: 64, height: 64)
        defer { GTKHarness.close(window) }
        let link = url("/white.png")
        picture.imageURL = link
        XCTAssertTrue(GTKHarness.pump { picture.view.state == .loaded(link) })
        XCTAssertTrue(picture.isTicking, "the fade runs on the frame clock")
        var levels: [Int] = []
        let deadline = Date().addingTimeInterval(3)
        while Date() < deadline {
            GTKHarness.pump(seconds: 0.05)
            if let frame = Rendering(window) { levels.append(Int(frame.pixel(32, 32).r)) }
            if !picture.isTicking { break }
        }
        XCTAssertFalse(picture.isTicking, "the tick callback ends with the fade")
        XCTAssertTrue(levels.contains { $0 > 20 && $0 < 235 }, "a frame between black and white: \(levels)")
        XCTAssertEqual(levels, levels.sorted(), "the fade only brightens: \(levels)")
        XCTAssertGreaterThanOrEqual(levels.last ?? 0, 253)
        let draws = picture.drawCount
        GTKHarness.pump(seconds: 0.2)
        XCTAssertEqual(picture.drawCount, draws, "nothing is drawn once still")
    }

    func testAnimationAdvancesOnTheFrameClockAndStopsAfterItsLoop() throws {
        let picture = AsyncImagePicture(loader: loader, width: 32, height: 32)
        picture.crossfadeDuration = 0
        let window = GTKHarness.window(picture.widget, width: 32, height: 32)
        defer { GTKHarness.close(window) }
        let colours = [RGBA(r: 255, g: 0, b: 0), RGBA(r: 0, g: 255, b: 0), RGBA(r: 0, g: 0, b: 255)]
        let frames = colours.map { ImageFrame(pixels: solid($0, width: 32, height: 32).pixels, duration: 0.4) }
        // No loop count: played once, the last frame stays (AnimationTimeline's rules).
        picture.image = Image(width: 32, height: 32, bytesPerRow: 128, frames: frames)
        XCTAssertTrue(picture.isTicking)
        var seen: [Int] = []
        let deadline = Date().addingTimeInterval(5)
        while Date() < deadline {
            GTKHarness.pump(seconds: 0.02)
            guard let frame = Rendering(window) else { continue }
            if let index = colours.firstIndex(where: { close($0, frame.pixel(16, 16), tolerance: 2) }), seen.last != index {
                seen.append(index)
            }
            if !picture.isTicking { break }
        }
        XCTAssertEqual(seen, [0, 1, 2], "the frames in order, once")
        XCTAssertFalse(picture.isTicking, "the tick callback ends with the animation")
    }

    func testTinyImagesAreToldApartAndTheirFadeEnds() throws {
        // 1x1: their pixels are stored inline in Data, with no storage address of their own.
        let picture = AsyncImagePicture(loader: loader, width: 16, height: 16)
        picture.crossfadeDuration = 0.1
        picture.placeholderImage = solid(Self.grey, width: 1, height: 1)
        let window = GTKHarness.window(picture.widget, width: 16, height: 16)
        defer { GTKHarness.close(window) }
        GTKHarness.pump(seconds: 0.05)
        XCTAssertTrue(close(try XCTUnwrap(Rendering(window)).pixel(8, 8), Self.grey, tolerance: 2))
        let green = RGBA(r: 10, g: 200, b: 10)
        picture.image = solid(green, width: 1, height: 1)
        XCTAssertTrue(picture.isTicking)
        XCTAssertTrue(GTKHarness.pump(timeout: 3) { !picture.isTicking }, "the fade of a tiny image ends")
        GTKHarness.pump(seconds: 0.05)
        let shown = try XCTUnwrap(Rendering(window)).pixel(8, 8)
        XCTAssertTrue(close(shown, green, tolerance: 2), "\(shown)")
    }

    func testThumbnailThenFullPerTargetOrderAndOneOutcomeEach() throws {
        let count = 24
        let failureImage = solid(RGBA(r: 0, g: 0, b: 255), width: 2, height: 2)
        let pictures = (0..<count).map { _ in
            let picture = AsyncImagePicture(loader: loader, width: 48, height: 48)
            picture.crossfadeDuration = 0
            picture.failureImage = failureImage
            return picture
        }
        for (index, picture) in pictures.enumerated() {
            // Every sixth fails, with no thumbnail first: the failure image shows
            // (with a thumbnail shown, the view keeps it).
            if index % 6 == 5 {
                picture.imageURL = url("/item/\(index)/missing")
            } else {
                picture.imageURL = url("/item/\(index)/thumb.png")
                picture.imageURL = url("/item/\(index)/full.png")
            }
        }
        XCTAssertTrue(GTKHarness.pump { self.loader.activity.pendingRequests == 0 })
        GTKHarness.pump(seconds: 0.05)
        XCTAssertEqual(events.requestsWithoutOneOutcome, [:], "every request ends exactly once")
        XCTAssertEqual(events.deliveriesOffMain, 0, "deliveries run on the main loop")
        XCTAssertTrue(events.offMainViolations.isEmpty, "\(events.offMainViolations.map(\.event.kind))")
        // Per target: deliveries in the order the URLs were set; the thumbnail
        // is never delivered after the full image.
        var delivered: [ObjectIdentifier: [UInt64]] = [:]
        for entry in events.all {
            if case .delivered = entry.event.kind, let target = entry.event.target {
                delivered[target, default: []].append(entry.event.requestID)
            }
        }
        for (index, picture) in pictures.enumerated() {
            let ids = delivered[ObjectIdentifier(picture.view)] ?? []
            XCTAssertEqual(ids, ids.sorted(), "picture \(index): deliveries out of order")
            XCTAssertFalse(ids.isEmpty, "picture \(index): nothing delivered")
            if index % 6 == 5 {
                guard case .failed = picture.view.state else { return XCTFail("picture \(index): \(picture.view.state)") }
                XCTAssertEqual(picture.view.displayedImage?.size, failureImage.size)
            } else {
                XCTAssertEqual(picture.view.state, .loaded(url("/item/\(index)/full.png")), "picture \(index)")
                XCTAssertEqual(picture.image?.pixel(x: 24, y: 24).g, 200, "picture \(index) shows its full image")
            }
        }
    }

    func testADiskHitIsReadOffTheMainLoop() throws {
        let link = url("/red.png")
        let first = AsyncImagePicture(loader: loader, width: 32, height: 32)
        first.imageURL = link
        XCTAssertTrue(GTKHarness.pump { first.view.state == .loaded(link) && self.loader.activity.pendingRequests == 0 })
        // The body is stored in the background after the delivery: written
        // before a second cache opens the folder (otherwise a race the
        // second loader may lose, reading before the write).
        loader.flushDiskWrites()
        // A second loader (an empty memory cache) on the same disk cache.
        let log = EventLog()
        let second = try makeLoader(log)
        let picture = AsyncImagePicture(loader: second, width: 32, height: 32)
        picture.imageURL = link
        XCTAssertTrue(GTKHarness.pump { picture.view.state == .loaded(link) })
        let kinds = log.all.map(\.event.kind)
        XCTAssertTrue(kinds.contains(.diskRead(hit: true)), "\(kinds)")
        XCTAssertTrue(log.offMainViolations.isEmpty, "\(log.offMainViolations.map(\.event.kind))")
        XCTAssertTrue(events.offMainViolations.isEmpty, "\(events.offMainViolations.map(\.event.kind))")
        XCTAssertEqual(log.deliveriesOffMain, 0)
        second.eventMonitor = nil
    }

    func testAReleasedPictureFreesItsWidgetAndPaintable() throws {
        let widgetSlot = UnsafeMutablePointer<gpointer?>.allocate(capacity: 1)
        let paintableSlot = UnsafeMutablePointer<gpointer?>.allocate(capacity: 1)
        defer {
            widgetSlot.deallocate()
            paintableSlot.deallocate()
        }
        do {
            let picture = AsyncImagePicture(loader: loader, width: 16, height: 16)
            picture.placeholderImage = solid(Self.grey, width: 2, height: 2)
            picture.imageURL = url("/red.png")
            widgetSlot.pointee = UnsafeMutableRawPointer(picture.widget)
            paintableSlot.pointee = gtk_picture_get_paintable(aik_picture(picture.widget)).map { UnsafeMutableRawPointer($0) }
            g_object_add_weak_pointer(aik_object(picture.widget), widgetSlot)
            g_object_add_weak_pointer(aik_object(paintableSlot.pointee), paintableSlot)
        }
        GTKHarness.pump { self.loader.activity.pendingRequests == 0 }
        GTKHarness.pump(seconds: 0.05)
        XCTAssertNil(widgetSlot.pointee, "the widget was finalized")
        XCTAssertNil(paintableSlot.pointee, "the paintable was finalized")
    }

    func testUnsetURLCancelsAndClears() throws {
        let picture = AsyncImagePicture(loader: loader, width: 32, height: 32)
        let held = url("/held/red.png")
        picture.imageURL = held
        GTKHarness.pump(seconds: 0.1)
        picture.imageURL = nil
        gate.open()
        XCTAssertTrue(GTKHarness.pump { self.loader.activity.pendingRequests == 0 })
        GTKHarness.pump(seconds: 0.1)
        XCTAssertNil(picture.image)
        XCTAssertEqual(picture.view.state, .empty)
        let kinds = events.all.map(\.event.kind)
        XCTAssertTrue(kinds.contains(.cancelled))
        XCTAssertFalse(kinds.contains(.delivered(success: true)))
    }
}
#endif
