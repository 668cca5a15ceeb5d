import ArgumentParser

/// asyncimage-bench: speed and memory figures against peers measured in the
/// same run (BENCHMARKS.md records the commands and the figures). One
/// subcommand per workload; `all` runs them together and writes the tables
/// and plots. The hidden subcommands are the child processes the workloads
/// start (BenchChild), not meant to be typed.
@main
struct AsyncImageBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "asyncimage-bench",
        abstract: "AsyncImageKit's speed and memory against peers measured in the same run.",
        discussion: """
            Build in release mode and run from the repository's root (the default output \
            folders, bench-output/..., are relative to the current folder):

                swift build -c release --package-path Benchmarks
                Benchmarks/.build/release/asyncimage-bench all --smoke
            """,
        subcommands: [
            AllCommand.self, DecodeCommand.self, ResizeCommand.self, ColourCommand.self, FormatsCommand.self, EncodeCommand.self,
            LoaderCommand.self, CacheCommand.self, DiskCommand.self, ScaleCommand.self, ThumbnailsCommand.self,
            ProgressiveCommand.self, SoakCommand.self, QualityCommand.self,
            NetCommand.self, NetReportCommand.self, NginxServeCommand.self,
            // The child processes.
            ServeChildCommand.self, RunOneChildCommand.self, DecodeBoundChildCommand.self, ThumbOneChildCommand.self,
            NetOneChildCommand.self,
        ])
}
