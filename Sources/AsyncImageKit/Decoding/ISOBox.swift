import Foundation

/// ISO BMFF boxes (HEIF: AVIF and HEIC), as the header parsers walk them,
/// bounds-checked and without recursion; and the checks `HEIFDecoder` makes
/// before libheif decodes, which libheif 1.15 does not make itself
/// (``derivationFault(_:)``, ``derivedCanvasFault(_:maxPixels:)``).
enum ISOBox {
    struct Box {
        var type: String
        /// Where the box starts (its size field).
        var start: Int
        /// Where the box's body starts (after its size and type, and a 64-bit size).
        var body: Int
        /// Where the box ends.
        var end: Int
    }

    /// The property boxes associated with a HEIF file's primary item, in
    /// the order of its `ipma` associations (the order transforms apply
    /// in), with the view their offsets are in; `nil` when the boxes cannot
    /// be read. A bounds-checked walk: `meta` (its `pitm`, and `iprp`'s
    /// `ipco` and `ipma`).
    static func primaryItemProperties(_ view: ByteView) -> (ByteView, [Box])? {
        guard let meta = children(of: view, from: 0).first(where: { $0.type == "meta" }),
            let metaBody = view.slice(meta.body + 4, meta.end - meta.body - 4)  // a full box
        else { return nil }
        let boxes = children(of: metaBody, from: 0)
        guard let pitm = boxes.first(where: { $0.type == "pitm" }), let version = metaBody.u8(pitm.body),
            let primary = version == 0 ? metaBody.u16(pitm.body + 4).map(UInt32.init) : metaBody.u32(pitm.body + 4),
            let iprp = boxes.first(where: { $0.type == "iprp" }),
            let iprpBody = metaBody.slice(iprp.body, iprp.end - iprp.body)
        else { return nil }
        let parts = children(of: iprpBody, from: 0)
        guard let ipco = parts.first(where: { $0.type == "ipco" }), let ipma = parts.first(where: { $0.type == "ipma" })
        else { return nil }
        let properties = children(of: iprpBody, from: ipco.body, to: ipco.end)
        // ipma: version, flags, entry count, then per item its ID and associations.
        guard let ipmaVersion = iprpBody.u8(ipma.body), let flags = iprpBody.u8(ipma.body + 3),
            let entries = iprpBody.u32(ipma.body + 4)
        else { return nil }
        var offset = ipma.body + 8
        var associated: [Box] = []
        for _ in 0..<min(Int(entries), 1 << 16) {
            let item: UInt32?
            if ipmaVersion < 1 {
                item = iprpBody.u16(offset).map(UInt32.init)
                offset += 2
            } else {
                item = iprpBody.u32(offset)
                offset += 4
            }
            guard let item, let associations = iprpBody.u8(offset) else { return nil }
            offset += 1
            for _ in 0..<associations {
                let index: Int
                if flags & 1 != 0 {
                    guard let value = iprpBody.u16(offset) else { return nil }
                    index = Int(value & 0x7FFF)
                    offset += 2
                } else {
                    guard let value = iprpBody.u8(offset) else { return nil }
                    index = Int(value & 0x7F)
                    offset += 1
                }
                guard item == primary, index >= 1, index <= properties.count else { continue }
                associated.append(properties[index - 1])
            }
            if item == primary { break }
        }
        return (iprpBody, associated)
    }

    /// Why the primary image of a HEIF file cannot be decoded safely, or
    /// nil: its derivation graph (`dimg` references from grids, overlays
    /// and identity items to their inputs, and the `auxl` items, alpha and
    /// depth, that libheif decodes with an image) has a cycle, or is deeper
    /// than ``maxDerivationDepth``. libheif 1.15 follows these references
    /// by recursion without looking for cycles: a grid that lists itself
    /// among its tiles overflows the stack and kills the process (found by
    /// the `heic` fuzz target). Files without these boxes pass (libheif
    /// then finds no references either).
    static func derivationFault(_ view: ByteView) -> String? {
        guard let meta = children(of: view, from: 0).first(where: { $0.type == "meta" }),
            let metaBody = view.slice(meta.body + 4, meta.end - meta.body - 4)
        else { return nil }
        let boxes = children(of: metaBody, from: 0)
        guard let pitm = boxes.first(where: { $0.type == "pitm" }), let pitmVersion = metaBody.u8(pitm.body),
            let primary = pitmVersion == 0 ? metaBody.u16(pitm.body + 4).map(UInt32.init) : metaBody.u32(pitm.body + 4)
        else { return nil }
        // What decoding an item decodes too: its `dimg` inputs, and the
        // items that are `auxl` of it (the reference points the other way).
        var needs: [UInt32: [UInt32]] = [:]
        for iref in boxes where iref.type == "iref" {
            for reference in references(in: metaBody, iref) where reference.type == "dimg" || reference.type == "auxl" {
                for to in reference.to {
                    if reference.type == "dimg" {
                        needs[reference.from, default: []].append(to)
                    } else {
                        needs[to, default: []].append(reference.from)
                    }
                }
            }
        }
        // Depth-first from the primary item, with an explicit stack (this
        // walk must not recurse either): an item met again on the current
        // path is a cycle.
        var onPath: Set<UInt32> = [primary]
        var finished: Set<UInt32> = []
        var stack: [(item: UInt32, next: Int)] = [(primary, 0)]
        while let top = stack.last {
            let inputs = needs[top.item] ?? []
            guard top.next < inputs.count else {
                onPath.remove(top.item)
                finished.insert(top.item)
                stack.removeLast()
                continue
            }
            stack[stack.count - 1].next += 1
            let input = inputs[top.next]
            if onPath.contains(input) {
                return "item \(top.item) refers back to item \(input) (a cycle of derived images)"
            }
            guard !finished.contains(input) else { continue }
            guard stack.count < maxDerivationDepth else {
                return "derived images nested deeper than \(maxDerivationDepth) levels"
            }
            onPath.insert(input)
            stack.append((input, 0))
        }
        return nil
    }

    /// Why a HEIF file's derived images would need more pixels than
    /// `maxPixels`, or nil: the canvas of every grid (`grid`) and overlay
    /// (`iovl`) item, read from the item's own data (`iloc`, in the file or
    /// in `idat`), before libheif allocates it. The size a derived image
    /// declares in `ispe`, which the decoder checks, need not be the size
    /// libheif 1.15 makes its canvas: an overlay's comes from its data (the
    /// fuzzer's overlay asked for 2.5 GB). Every grid and overlay in the
    /// file is checked, used or not.
    static func derivedCanvasFault(_ view: ByteView, maxPixels: Int) -> String? {
        guard let meta = children(of: view, from: 0).first(where: { $0.type == "meta" }),
            let metaBody = view.slice(meta.body + 4, meta.end - meta.body - 4)
        else { return nil }
        let boxes = children(of: metaBody, from: 0)
        var types: [UInt32: String] = [:]
        for iinf in boxes where iinf.type == "iinf" {
            guard let version = metaBody.u8(iinf.body) else { continue }
            for infe in children(of: metaBody, from: iinf.body + (version == 0 ? 6 : 8), to: iinf.end) where infe.type == "infe" {
                guard let infeVersion = metaBody.u8(infe.body), infeVersion >= 2,
                    let id = infeVersion == 2 ? metaBody.u16(infe.body + 4).map(UInt32.init) : metaBody.u32(infe.body + 4)
                else { continue }
                let typeAt = infe.body + 4 + (infeVersion == 2 ? 2 : 4) + 2
                guard typeAt + 4 <= infe.end, let type = metaBody.slice(typeAt, 4) else { continue }
                types[id] = String(decoding: type.bytes, as: UTF8.self)
            }
        }
        let derived = types.filter { $0.value == "grid" || $0.value == "iovl" }
        guard !derived.isEmpty, let iloc = boxes.first(where: { $0.type == "iloc" }) else { return nil }
        let idat = boxes.first { $0.type == "idat" }.flatMap { metaBody.slice($0.body, $0.end - $0.body) }
        for (item, head) in itemHeads(metaBody, iloc, items: Set(derived.keys), file: view, idat: idat) {
            let type = derived[item] ?? ""
            // grid: version, flags, rows - 1, columns - 1, then the size;
            // iovl: version, flags, four 16-bit fill values, then the size.
            let at = type == "grid" ? 4 : 10
            guard head.count >= at + 4 else { continue }
            let wide = head[1] & 1 != 0
            func field(_ offset: Int) -> Int {
                (0..<(wide ? 4 : 2)).reduce(0) { $0 << 8 | Int(head[offset + $1]) }
            }
            guard head.count >= at + (wide ? 8 : 4) else { continue }
            let (width, height) = (field(at), field(at + (wide ? 4 : 2)))
            let (pixels, overflow) = width.multipliedReportingOverflow(by: height)
            if overflow || pixels > maxPixels {
                return "item \(item) (\(type)) has a \(width)x\(height) canvas: \(overflow ? "too many" : "\(pixels)") pixels, over the limit of \(maxPixels)"
            }
        }
        return nil
    }

    /// The first bytes (up to 64) of each of `items`' data, found through
    /// `iloc` (versions 0 to 2): in the file (construction method 0,
    /// offsets from its start) or in `idat` (method 1); extents joined.
    /// Items whose data cannot be found are left out.
    static func itemHeads(_ meta: ByteView, _ iloc: Box, items: Set<UInt32>, file: ByteView, idat: ByteView?)
        -> [(UInt32, [UInt8])]
    {
        var offset = iloc.body
        /// The next `size` bytes (0, 2, 4 or 8) as a number; nil past the box.
        func next(_ size: Int) -> Int? {
            guard offset + size <= iloc.end else { return nil }
            defer { offset += size }
            switch size {
            case 0: return 0
            case 2: return meta.u16(offset).map(Int.init)
            case 4: return meta.u32(offset).map(Int.init)
            case 8:
                guard let high = meta.u32(offset), let low = meta.u32(offset + 4), high < 1 << 20 else { return nil }
                return Int(high) << 32 | Int(low)
            default: return nil
            }
        }
        guard let version = meta.u8(offset), version <= 2, let sizes = meta.u8(offset + 4), let more = meta.u8(offset + 5)
        else { return [] }
        offset += 6
        let (offsetSize, lengthSize, baseSize) = (Int(sizes >> 4), Int(sizes & 15), Int(more >> 4))
        let indexSize = version == 0 ? 0 : Int(more & 15)
        guard let count = next(version < 2 ? 2 : 4) else { return [] }
        var heads: [(UInt32, [UInt8])] = []
        for _ in 0..<min(count, 1 << 16) {
            guard let id = next(version < 2 ? 2 : 4) else { break }
            var method = 0
            if version >= 1 {
                guard let field = next(2) else { break }
                method = field & 15
            }
            guard next(2) != nil, let base = next(baseSize), let extents = next(2) else { break }
            var head: [UInt8] = []
            var readable = method <= 1
            for _ in 0..<extents {
                guard next(indexSize) != nil, let start = next(offsetSize), let length = next(lengthSize) else { return heads }
                guard readable, head.count < 64 else { continue }
                let source = method == 0 ? file : idat
                let (from, overflow) = base.addingReportingOverflow(start)
                // A length of 0 means "to the end of the file" (method 0).
                let want = min(64 - head.count, length == 0 ? Int.max : length)
                guard !overflow, let source, from >= 0, from < source.count,
                    let slice = source.slice(from, min(want, source.count - from))
                else {
                    readable = false
                    continue
                }
                head += slice.bytes
            }
            if readable, items.contains(UInt32(truncatingIfNeeded: id)) { heads.append((UInt32(truncatingIfNeeded: id), head)) }
        }
        return heads
    }

    /// The references an `iref` box holds, read two ways, both kept (a
    /// superset is safe here): box by box as its children's sizes say, and
    /// one after another from where the last one's IDs end, whatever its
    /// size says, as libheif 1.15 reads them (a reference whose size is
    /// garbage is still one to libheif: the fuzzer's second HEIC hid an
    /// `auxl` behind a size of 2 GB).
    static func references(in view: ByteView, _ iref: Box) -> [(type: String, from: UInt32, to: [UInt32])] {
        guard let version = view.u8(iref.body) else { return [] }
        let width = version == 0 ? 2 : 4
        func id(_ offset: Int) -> UInt32? { width == 2 ? view.u16(offset).map(UInt32.init) : view.u32(offset) }
        /// The reference whose header starts at `offset`, and where its IDs end.
        func reference(at offset: Int) -> (reference: (type: String, from: UInt32, to: [UInt32]), end: Int)? {
            guard offset + 8 <= iref.end, let size = view.u32(offset), let type = view.slice(offset + 4, 4) else { return nil }
            let header = size == 1 ? 16 : 8
            guard let from = id(offset + header), let count = view.u16(offset + header + width) else { return nil }
            var to: [UInt32] = []
            var next = offset + header + width + 2
            for _ in 0..<Int(count) {
                guard next + width <= iref.end, let item = id(next) else { break }
                to.append(item)
                next += width
            }
            return ((String(decoding: type.bytes, as: UTF8.self), from, to), next)
        }
        var found = children(of: view, from: iref.body + 4, to: iref.end).compactMap { reference(at: $0.start)?.reference }
        var offset = iref.body + 4
        while let (next, end) = reference(at: offset), found.count < 1 << 16 {
            found.append(next)
            guard end > offset else { break }
            offset = end
        }
        return found
    }

    /// The deepest derivation ``derivationFault(_:)`` lets through: a
    /// phone's HEIC is a grid of tiles (2 levels), with an identity or
    /// overlay item and an alpha grid above it at most 4; 16 leaves room.
    static let maxDerivationDepth = 16

    /// The boxes one after another from `start` to `end` (the view's end by
    /// default), stopping at the first that does not fit: sizes checked, a
    /// 64-bit size read, size 0 taken as "to the end".
    static func children(of view: ByteView, from start: Int, to end: Int? = nil) -> [Box] {
        let end = min(end ?? view.count, view.count)
        var boxes: [Box] = []
        var offset = start
        while offset + 8 <= end, let size32 = view.u32(offset), let typeBytes = view.slice(offset + 4, 4) {
            var size = Int(size32)
            var header = 8
            if size32 == 1 {
                guard let high = view.u32(offset + 8), let low = view.u32(offset + 12), high < 1 << 20 else { break }
                size = Int(high) << 32 | Int(low)
                header = 16
            } else if size32 == 0 {
                size = end - offset
            }
            guard size >= header, size <= end - offset else { break }
            boxes.append(
                Box(type: String(decoding: typeBytes.bytes, as: UTF8.self), start: offset, body: offset + header, end: offset + size))
            offset += size
            if boxes.count >= 4096 { break }
        }
        return boxes
    }
}
