/// The job stage's table: one ``LoadJob`` per transfer key (a URL, with
/// the headers and cache policy that shape its transfer), so requests for
/// a URL that is queued or loading join it. Guarded by the loader's lock.
struct JobTable {
    private var jobs: [String: LoadJob] = [:]
    /// The loader's `Accept`: sent by every job whose requests name none
    /// (see ``ImageRequest/transferHeaders(accept:)``).
    let accept: String

    init(accept: String) {
        self.accept = accept
    }

    /// The job `record` joins: its URL's, unless that job had only stored
    /// processed images and none of the record's size, or its transfer
    /// ended at the DC coefficients and the record needs more; then the job
    /// that loads the whole body for such requests (made if needed).
    mutating func job(for record: LoadRequest) -> LoadJob {
        if let existing = jobs[record.jobKey], existing.canServe(record) { return existing }
        let usesStoredImages = jobs[record.jobKey] == nil
        let key = usesStoredImages ? record.jobKey : LoadJob.bodyJobKey(record.jobKey)
        if let existing = jobs[key] { return existing }
        let job = LoadJob(for: record, usesStoredImages: usesStoredImages, accept: accept)
        jobs[job.key] = job
        return job
    }

    /// Whether `job` is still the one requests for its key join.
    func isCurrent(_ job: LoadJob) -> Bool { jobs[job.key] === job }

    /// No request joins `job` any more (it finished, or its transfer is
    /// being cancelled): a later request starts a job of its own.
    mutating func forget(_ job: LoadJob) {
        if jobs[job.key] === job { jobs[job.key] = nil }
    }

    /// Empties the table (the loader's `deinit`); returns what it held.
    mutating func removeAll() -> [LoadJob] {
        defer { jobs = [:] }
        return Array(jobs.values)
    }
}
