import ArgumentParser

/// `cache`: memory-cache hits against NSCache, and a hit's delivery latency (CacheBenchmark.swift).
struct CacheCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cache",
        abstract: "Memory-cache hits per second on 1 and 2 threads against NSCache, and a cache hit's delivery latency.")

    @Flag(help: "Tiny sizes: the harness only.")
    var smoke = false

    func run() { runCacheBenchmark(smoke: smoke) }
}
