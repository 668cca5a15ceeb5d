/// Pending requests by id, for the engine's per-URL and per-job indexes.
///
/// Nearly every URL and job has one request, so one is kept inline and a
/// dictionary is made only for a second. A URL or job with one request
/// costs no table (a dictionary is about 100 bytes, and a request sits in
/// two of these sets: its URL's and its job's), and adding or removing it
/// is one memory access less; those accesses are what adding and
/// cancelling cost at a million pending requests (BENCHMARKS.md, "Scale").
/// Guarded by the loader's lock, like the records it holds.
struct RequestSet: Sequence {
    private enum Storage {
        case empty
        case one(LoadRequest)
        case many([UInt64: LoadRequest])
    }

    private var storage = Storage.empty

    var isEmpty: Bool {
        if case .empty = storage { return true }
        return false
    }

    var count: Int {
        switch storage {
        case .empty: return 0
        case .one: return 1
        case .many(let table): return table.count
        }
    }

    /// Adds `record` (by its id; adding it again changes nothing).
    mutating func insert(_ record: LoadRequest) {
        switch storage {
        case .empty:
            storage = .one(record)
        case .one(let only):
            guard only.id != record.id else { return }
            storage = .many([only.id: only, record.id: record])
        case .many(var table):
            storage = .empty  // the table stays unique: changed in place
            table[record.id] = record
            storage = .many(table)
        }
    }

    /// Removes `record`; false if it was not there.
    @discardableResult
    mutating func remove(_ record: LoadRequest) -> Bool {
        switch storage {
        case .empty:
            return false
        case .one(let only):
            guard only.id == record.id else { return false }
            storage = .empty
            return true
        case .many(var table):
            storage = .empty
            let removed = table.removeValue(forKey: record.id) != nil
            // Back inline at one: a URL asked for twice keeps no table once it is down to one.
            storage = table.count == 1 ? .one(table.values.first!) : .many(table)
            return removed
        }
    }

    var underestimatedCount: Int { count }

    struct Iterator: IteratorProtocol {
        fileprivate var single: LoadRequest?
        fileprivate var rest: Dictionary<UInt64, LoadRequest>.Values.Iterator?

        mutating func next() -> LoadRequest? {
            if let single {
                self.single = nil
                IndexWalk.count()
                return single
            }
            guard let next = rest?.next() else { return nil }
            IndexWalk.count()
            return next
        }
    }

    func makeIterator() -> Iterator {
        switch storage {
        case .empty: return Iterator(single: nil, rest: nil)
        case .one(let only): return Iterator(single: only, rest: nil)
        case .many(let table): return Iterator(single: nil, rest: table.values.makeIterator())
        }
    }
}
