extension Array {
    /// Moves every element of `other` to the end of this array, in order, leaving `vacated` in each slot of `other`
    /// (the caller empties it, keeping its capacity). Nothing is copied: no retain and release per element, as
    /// `append(contentsOf:)` followed by `removeAll` would cost (atomic operations on memory another thread wrote).
    mutating func appendMoving(from other: inout [Element], vacating vacated: @autoclosure () -> Element) {
        guard !other.isEmpty else { return }
        if capacity < count + other.count { reserveCapacity(Swift.max(count + other.count, 2 * capacity)) }
        other.withUnsafeMutableBufferPointer { source in
            guard let base = source.baseAddress else { return }
            for index in source.indices {
                append((base + index).move())
                (base + index).initialize(to: vacated())
            }
        }
    }
}
