/// A binary max-heap of elements ordered by a `UInt64` key: the transfer
/// queue's LIFO order within a priority (the key is a lane's stamp).
///
/// Push and pop are O(log n). There is no removal from the middle: the queue
/// leaves stale entries in place and skips them when they reach the top
/// (lazy deletion), which keeps every operation a few comparisons.
struct MaxHeap<Element> {
    private(set) var elements: [Element] = []
    private let key: (Element) -> UInt64

    init(key: @escaping (Element) -> UInt64) { self.key = key }

    var count: Int { elements.count }
    var top: Element? { elements.first }

    mutating func push(_ element: Element) {
        elements.append(element)
        var child = elements.count - 1
        let k = key(element)
        while child > 0 {
            let parent = (child - 1) / 2
            guard key(elements[parent]) < k else { break }
            elements.swapAt(parent, child)
            child = parent
        }
    }

    @discardableResult
    mutating func pop() -> Element? {
        guard !elements.isEmpty else { return nil }
        elements.swapAt(0, elements.count - 1)
        let popped = elements.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1
            guard left < elements.count else { break }
            var largest = left
            let right = left + 1
            if right < elements.count, key(elements[right]) > key(elements[left]) { largest = right }
            guard key(elements[largest]) > key(elements[parent]) else { break }
            elements.swapAt(parent, largest)
            parent = largest
        }
        return popped
    }

    /// Keeps only the elements for which `isIncluded` holds.
    mutating func retain(_ isIncluded: (Element) -> Bool) {
        let kept = elements.filter(isIncluded)
        elements = []
        elements.reserveCapacity(kept.count)
        kept.forEach { push($0) }
    }
}
