import AsyncImageKit
/// Everything a run was asked to do (the defaults are the command line's).
package struct DemoSettings: Equatable {
    package var concurrentLoads: Int
    package var timeout: Double
    package var output: String
    package var cells: Int
    package var scrollSpeed: Double
    package var seed: UInt64
    package var images: Int
    package var latency: Int
    package var json: Bool

    package init(
        concurrentLoads: Int = AsyncImageLoader.defaultConcurrentLoads, timeout: Double = 10, output: String = "demo-output", cells: Int = 16,
        scrollSpeed: Double = 25, seed: UInt64 = 1, images: Int = 300, latency: Int = 15, json: Bool = false
    ) {
        self.concurrentLoads = concurrentLoads
        self.timeout = timeout
        self.output = output
        self.cells = cells
        self.scrollSpeed = scrollSpeed
        self.seed = seed
        self.images = images
        self.latency = latency
        self.json = json
    }
}
