#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A source of random fractions with Meteor's derived helpers (`Random.id`, `secret`, `hexString`, `choice`),
/// each drawing exactly as Meteor's `AbstractRandomGenerator` does: one fraction per character.
///
/// For example:
/// ```swift
/// let generator = Alea(seeds: ["seed"])
/// generator.id()          // 17 characters of "23456789ABCDEFGHJKLMNPQRSTWXYZabcdefghijkmnopqrstuvwxyz"
/// generator.hexString(20) // 20 lowercase hex digits
/// ```
public protocol RandomGenerator: Sendable {
    /// A fraction in `[0, 1)`.
    func fraction() -> Double

    /// `count` successive fractions, drawn without interleaving with other threads' draws
    /// (so one id is always `count` consecutive fractions of the sequence).
    func fractions(_ count: Int) -> [Double]
}

/// The alphabets Meteor's `Random` draws from.
public enum RandomAlphabet {
    /// Characters of ids: no easily confused ones (`0`, `1`, `I`, `O`, `l`, `U`, `V`).
    public static let unmistakable = Array("23456789ABCDEFGHJKLMNPQRSTWXYZabcdefghijkmnopqrstuvwxyz".utf8)
    /// Characters of secrets (URL-safe base64).
    public static let base64 = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_".utf8)
    /// Hex digits.
    public static let hex = Array("0123456789abcdef".utf8)
}

extension RandomGenerator {
    public func fractions(_ count: Int) -> [Double] {
        (0..<max(0, count)).map { _ in fraction() }
    }

    /// An id of `length` characters (Meteor's `Random.id`, default 17).
    public func id(_ length: Int = 17) -> String {
        string(length, from: RandomAlphabet.unmistakable)
    }

    /// A secret of `length` characters (Meteor's `Random.secret`, default 43: about 256 bits).
    public func secret(_ length: Int = 43) -> String {
        string(length, from: RandomAlphabet.base64)
    }

    /// `digits` lowercase hex digits, one fraction each (Meteor's Alea does not override `hexString`).
    public func hexString(_ digits: Int) -> String {
        string(digits, from: RandomAlphabet.hex)
    }

    /// One element of `array`: `array[floor(fraction() * count)]`.
    public func choice<T>(_ array: [T]) -> T? {
        guard !array.isEmpty else { return nil }
        return array[index(count: array.count)]
    }

    /// One character of `string`, counting UTF-16 code units as JavaScript does.
    public func choice(_ string: String) -> String? {
        let units = Array(string.utf16)
        guard !units.isEmpty else { return nil }
        return String(decoding: [units[index(count: units.count)]], as: UTF16.self)
    }

    private func index(count: Int) -> Int {
        Self.index(fraction(), count: count)
    }

    private static func index(_ fraction: Double, count: Int) -> Int {
        min(count - 1, Int((fraction * Double(count)).rounded(.down)))
    }

    private func string(_ length: Int, from alphabet: [UInt8]) -> String {
        guard length > 0 else { return "" }
        let bytes = fractions(length).map { alphabet[Self.index($0, count: alphabet.count)] }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// Cryptographically secure randomness (the system's generator: `getrandom` on Linux, `arc4random_buf` on Apple
/// platforms), for top-level method seeds, subscription ids and anything not shared with the server.
public struct SecureRandomGenerator: RandomGenerator {
    /// Creates a generator.
    public init() {}

    public func fraction() -> Double {
        var generator = SystemRandomNumberGenerator()
        // 53 random bits scaled into [0, 1).
        return Double(generator.next() >> 11) * 0x1p-53
    }

    /// `count` fractions from one request to the system's secure generator (`getentropy` on Linux, `arc4random_buf`
    /// on Apple platforms): an id or a seed costs one request, not one system call per character.
    public func fractions(_ count: Int) -> [Double] {
        guard count > 0 else { return [] }
        var words = [UInt64](repeating: 0, count: count)
        words.withUnsafeMutableBytes { SystemEntropy.fill($0) }
        return words.map { Double($0 >> 11) * 0x1p-53 }
    }
}

/// The operating system's cryptographically secure random bytes.
enum SystemEntropy {
    /// Fills `buffer` with secure random bytes.
    static func fill(_ buffer: UnsafeMutableRawBufferPointer) {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return }
        #if canImport(Darwin)
            arc4random_buf(base, buffer.count)
        #else
            // getentropy (glibc 2.25, musl 1.1.20) is getrandom(2) without partial reads, at most 256 bytes a call.
            var filled = 0
            while filled < buffer.count {
                let chunk = min(256, buffer.count - filled)
                if getentropy(base + filled, chunk) == 0 {
                    filled += chunk
                } else {
                    // No getrandom in the kernel (before Linux 3.17): the standard library's generator, eight bytes at
                    // a time.
                    var generator = SystemRandomNumberGenerator()
                    while filled < buffer.count {
                        withUnsafeBytes(of: generator.next()) { bytes in
                            let n = min(bytes.count, buffer.count - filled)
                            (base + filled).copyMemory(from: bytes.baseAddress!, byteCount: n)
                            filled += n
                        }
                    }
                }
            }
        #endif
    }
}
