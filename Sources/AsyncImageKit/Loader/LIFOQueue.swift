/// The waiting jobs, last in first out: when a slot frees, the most recently
/// requested job starts next (the cells on screen now, not those scrolled past).
///
/// Asking again for a queued job moves it to the top.
struct LIFOQueue {
    private var jobs: [LoadJob] = []

    var count: Int { jobs.count }
    var isEmpty: Bool { jobs.isEmpty }
    var all: [LoadJob] { jobs }

    /// Puts `job` on top (moving it there if it is already queued).
    mutating func push(_ job: LoadJob) {
        remove(job)
        jobs.append(job)
    }

    /// The most recently pushed job.
    mutating func pop() -> LoadJob? {
        jobs.popLast()
    }

    mutating func remove(_ job: LoadJob) {
        if let index = jobs.lastIndex(where: { $0 === job }) { jobs.remove(at: index) }
    }
}
