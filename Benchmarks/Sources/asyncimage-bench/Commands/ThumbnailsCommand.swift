import ArgumentParser

/// `thumbnails`: 12-MP files to 256x256 thumbnails against the thumbnailers and the decode floor (ThumbnailBenchmark.swift).
struct ThumbnailsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "thumbnails",
        abstract: "12-MP files to 256x256 thumbnails through file:// URLs, against vipsthumbnail, ImageMagick, Pillow and the decode floor.")

    @Option(help: "Files in the set (at least 2).")
    var count = 200

    @Option(help: "Rounds.")
    var runs = 3

    @Option(help: ArgumentHelp("Where the set is generated and kept.", valueName: "DIR"))
    var output = "bench-output"

    @Option(help: ArgumentHelp("Some of vips, vips-each, magick, pillow.", valueName: "LIST"))
    var peers = CommaSeparated(["vips", "vips-each", "magick", "pillow"])

    func run() throws {
        var options = ThumbnailOptions()
        options.count = max(2, count)
        options.runs = max(1, runs)
        options.output = output
        options.peers = peers.values
        try runThumbnailBenchmark(options)
    }
}
