import Foundation

/// asyncimage-bench: speed and memory figures against a peer measured in the same run.
///
///     swift build -c release --product asyncimage-bench
///     .build/release/asyncimage-bench all [--runs R] [--output DIR] [--sets DIR] [--only decode,thumbnails,loader,mixed,cache,disk,scale] [--update FILE] [--smoke]
///     .build/release/asyncimage-bench decode [--seconds S] [--output DIR]
///     .build/release/asyncimage-bench loader [--count N] [--repeats R] [--loads 1,2,4] [--workloads full,display] [--output DIR]
///     .build/release/asyncimage-bench scale [--sizes 1000,10000,100000,1000000] [--targets one,many] [--max-seconds S] [--output DIR]
///     .build/release/asyncimage-bench loader --source builtin|nginx|both --set photos|mixed [--loads 2,8] [--repeats R] [--workloads full,display] [--count N] [--loaders peer,ours,ours-nopool] [--no-curl] [--smoke]
///     .build/release/asyncimage-bench resize | cache [--smoke]
///     .build/release/asyncimage-bench disk [--count N] [--entries N] [--large]
///     .build/release/asyncimage-bench thumbnails [--count N] [--runs R] [--peers vips,vips-each,magick,pillow]
///     .build/release/asyncimage-bench soak [--minutes M] [--loads N] [--output DIR] [--seed S]
///
///     .build/release/asyncimage-bench net [--rtts 20,50,150] [--rates 10,50,200] [--protocols h2,h1] [--workloads cold,scroll] [--clients ours,peer,curl] [--runs R] [--items N] [--loads N] [--output DIR] [--smoke]
///
/// `net`: over emulated links (a round trip and a rate between the client
/// and nginx over TLS, HTTP/2 and HTTP/1.1): a cold screen of 16 thumbnails
/// then full images, and the demo's scroll, against the URLSession peer,
/// `curl --parallel` and the physical limit (NetworkBenchmark.swift).
/// `all`: every workload below with its peers in one run (see AllBenchmark.swift):
/// medians with min-max, the BENCHMARKS.md tables and PNG plots in DIR
/// (default bench-output/all); `--update BENCHMARKS.md` rewrites the
/// generated part of that file; `--smoke` runs tiny sizes in seconds.
/// `decode`: the decoders against tjbench, libpng's simplified API and giflib.
/// `disk`: the disk cache: cold loads, warm disk hits and 304 revalidations
/// at display size, and start-up and lookups with many entries.
/// `loader`: AsyncImageLoader against URLSession + TaskGroup over loopback
/// HTTP, at several concurrency levels, full size and display size, each run
/// in a child process so peak memory is its own; plus memory-cache hits.
/// (`serve` and `run-one` are the child processes `loader` starts.)
/// With `--source` or `--set` (LoaderSourcesBenchmark.swift): the files served
/// by the built-in server and/or nginx (started with its own configuration on
/// 127.0.0.1), on the loader set or the mixed set (1,000 JPEGs, PNGs, GIFs),
/// with the perfect-overlap decode bound and, with nginx, the `curl
/// --parallel` + djpeg/pngtopnm/giftopnm yardstick (`decode-bound` is its
/// child; `nginx-serve FOLDER` serves a folder by hand, for profiling).
/// `cache`: memory-cache hits per second on 1 and 2 threads against NSCache,
/// and cache-hit delivery latency through `loadImage` and `image(for:)`.
/// `thumbnails`: 12-MP files to 256x256 thumbnails through `file://` URLs,
/// against vipsthumbnail, ImageMagick and Pillow, and against libjpeg-turbo's
/// own scaled decode of the same files (the floor). (`thumb-one` is its child.)
/// `soak`: the load test's mix (random cancels by every API, target
/// deallocations, cache purges) for M minutes (default 5) at N concurrent
/// loads (default 8): RSS, descriptors, in-flight and completed requests
/// every second, a table, `soak.csv` and `soak.png` in DIR (default
/// bench-output/soak); exits 1 if a check failed.
/// `scale`: the loader's cost per call against the number of pending requests
/// (N = 1k to 1M, queued behind a transfer the loopback server holds): enqueue,
/// `url(for:)`, cancelling by URL, target and action, on one target or N; ns
/// per call, the largest N against the smallest (goal: at most 2x), and memory
/// per pending request. A phase over `--max-seconds` (default 60) is reported
/// "over time". Sizes may be written 10k, 1M.

let arguments = CommandLine.arguments.dropFirst()
switch arguments.first {
case "all":
    try runAllBenchmarks(arguments.dropFirst())
case "decode":
    try runDecodeBenchmark(parseOptions(arguments.dropFirst()))
case "loader":
    if wantsLoaderSources(Array(arguments.dropFirst())) {
        try runLoaderSourcesCommand(Array(arguments.dropFirst()))  // --source, --set: LoaderSourcesBenchmark.swift
    } else {
        try runLoaderBenchmark(Array(arguments.dropFirst()))
    }
case "cache":
    runCacheBenchmark(arguments.dropFirst())
case "scale":
    try runScaleBenchmark(parseScaleOptions(arguments.dropFirst()))
case "resize":
    runResizeBenchmark(seconds: parseOptions(arguments.dropFirst()).seconds)
case "disk":
    try runDiskBenchmark(parseDiskOptions(arguments.dropFirst()))
case "soak":
    try runSoak(parseSoakOptions(arguments.dropFirst()))
case "progressive":
    try runProgressiveBenchmark(arguments.dropFirst())
case "thumbnails":
    try runThumbnailBenchmark(arguments.dropFirst())
case "thumb-one":
    try thumbnailOne(Array(arguments.dropFirst()))
case "serve":
    try serveFolder(Array(arguments.dropFirst()))
case "run-one":
    try runOne(Array(arguments.dropFirst()))
case "decode-bound":
    try decodeBoundChild(Array(arguments.dropFirst()))
case "net":
    try runNetworkBenchmark(arguments.dropFirst())
case "net-report":
    try rewriteNetReport(Array(arguments.dropFirst()))
case "net-one":
    try netRunChild(Array(arguments.dropFirst()))
case "nginx-serve":
    try nginxServeChild(Array(arguments.dropFirst()))
default:
    print("usage: asyncimage-bench all [--runs R] [--output DIR] [--sets DIR] [--only decode,thumbnails,loader,mixed,cache,disk,scale] [--update FILE] [--smoke] | decode [--seconds S] [--output DIR] | loader [--count N] [--repeats R] [--loads 1,2,4] [--workloads full,display] [--output DIR] | loader --source builtin|nginx|both --set photos|mixed [--loads 2,8] [--no-curl] [--smoke] | scale [--sizes 1000,10000,100000,1000000] [--targets one,many] [--max-seconds S] [--output DIR] | disk [--count N] [--entries N] [--large] | progressive [--count N] | thumbnails [--count N] [--runs R] | soak [--minutes M] [--loads N] [--output DIR] [--seed S] | resize | cache [--smoke]")
    exit(arguments.isEmpty ? 0 : 2)
}
