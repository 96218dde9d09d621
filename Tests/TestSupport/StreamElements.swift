/// The next `count` elements of `stream`, in order; fails with ``TimedOut`` when they have not all come within
/// `seconds`. The stream can be read again afterwards.
public func next<Element: Sendable>(
    _ count: Int, of stream: some AsyncSequence<Element, Never> & Sendable, within seconds: Double = 10
)
    async throws -> [Element]
{
    try await withTimeout(seconds, "\(count) elements of \(Element.self)") {
        var received: [Element] = []
        for await element in stream {
            received.append(element)
            if received.count == count { break }
        }
        return received
    }
}
