import ArgumentParser

/// A comma-separated list, as the benchmark's options are spelled
/// (`--loads 1,2,4`, `--only decode,cache`): every item must parse, and
/// there must be at least one.
struct CommaSeparated<Element: ExpressibleByArgument>: ExpressibleByArgument {
    var values: [Element]

    init(_ values: [Element]) { self.values = values }

    init?(argument: String) {
        let parts = argument.split(separator: ",", omittingEmptySubsequences: false)
        let values = parts.compactMap { Element(argument: String($0)) }
        guard !values.isEmpty, values.count == parts.count else { return nil }
        self.values = values
    }

    var defaultValueDescription: String { values.map(\.defaultValueDescription).joined(separator: ",") }
}
