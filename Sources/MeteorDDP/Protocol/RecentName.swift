/// A name a connection's frames repeat (their collection), with its UTF-8 bytes kept inline for a comparison without
/// a `String` (the UTF-8 view of a small string has no contiguous storage to compare in place).
struct RecentName {
    /// Names up to this many bytes are kept; longer ones are made into a `String` every time.
    static let maximumBytes = 32

    let name: String
    private var bytes: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
    private let count: Int

    /// `nil` if `utf8` is longer than ``maximumBytes``.
    init?(_ utf8: UnsafeRawBufferPointer, _ name: String) {
        guard utf8.count <= Self.maximumBytes else { return nil }
        self.name = name
        count = utf8.count
        if let source = utf8.baseAddress, !utf8.isEmpty {
            withUnsafeMutableBytes(of: &bytes) { $0.baseAddress!.copyMemory(from: source, byteCount: utf8.count) }
        }
    }

    /// Whether `utf8` are this name's bytes.
    func matches(_ utf8: UnsafeRawBufferPointer) -> Bool {
        guard utf8.count == count else { return false }
        return withUnsafeBytes(of: bytes) {
            PackedFields.bytesEqual(UnsafeRawBufferPointer(rebasing: $0[..<count]), utf8)
        }
    }
}
