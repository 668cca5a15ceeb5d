/// An optional value kept out of line: its owner holds one pointer (8
/// bytes), not the value's whole size, while the value is nil, which for
/// most of a pending request's life it is.
///
/// For the engine's per-request and per-job records, whose size is the
/// loader's memory per pending request (about 1.1 KB; see BENCHMARKS.md,
/// "Scale"): ``ImageFileProperties`` is 369 bytes inline as an optional,
/// and a request and its job each have one, nil until the file's header is
/// read; out of line, the two cost 16 bytes until then instead of about
/// 740. Reads and writes happen under the loader's lock, like the rest of
/// those records.
@propertyWrapper
struct OutOfLine<Value> {
    private final class Box {
        let value: Value
        init(_ value: Value) { self.value = value }
    }

    private var box: Box?

    init(wrappedValue: Value?) {
        box = wrappedValue.map(Box.init)
    }

    var wrappedValue: Value? {
        get { box?.value }
        set { box = newValue.map(Box.init) }
    }
}
