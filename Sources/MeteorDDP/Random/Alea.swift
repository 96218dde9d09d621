import NIOConcurrencyHelpers

/// Meteor's seeded generator (Johannes Baagøe's Alea, as `packages/random/AleaRandomGenerator.js` implements it),
/// bit for bit: the same seeds give the same fractions, ids and hex strings as Meteor on the server and the client.
///
/// For example:
/// ```swift
/// let alea = Alea(seeds: ["0"])
/// alea.id() // "cp9hWvhg8GSvuZ9os", as Random.createWithSeeds(0).id() in Meteor
/// ```
/// Seeds are strings: JavaScript turns every seed into a string (`toString()`), so pass numbers as JavaScript
/// prints them. Each seed is mashed over its UTF-16 code units.
///
/// ## Concurrency
/// Thread-safe: the generator's state is protected by a lock, so one generator may be shared (draws are
/// serialised; their order across threads is whatever the threads make it).
public final class Alea: RandomGenerator, @unchecked Sendable {
    // @unchecked because `state` is protected by `lock`.

    struct State {
        var s0: Double
        var s1: Double
        var s2: Double
        var c: Double

        mutating func next() -> Double {
            let t = 2_091_639 * s0 + c * 0x1p-32
            s0 = s1
            s1 = s2
            c = t.rounded(.towardZero) // t | 0; t is in [0, 2^31)
            s2 = t - c
            return s2
        }
    }

    private let lock = NIOLock()
    /// Protected by `lock`.
    private var state: State

    /// Creates a generator from Meteor seeds (`Random.createWithSeeds(...seeds)`).
    /// - Precondition: at least one seed (Meteor throws "No seeds were provided").
    public init(seeds: [String]) {
        precondition(!seeds.isEmpty, "No seeds were provided")
        var mash = Mash()
        var s0 = mash.mash(" ")
        var s1 = mash.mash(" ")
        var s2 = mash.mash(" ")
        for seed in seeds {
            s0 -= mash.mash(seed)
            if s0 < 0 { s0 += 1 }
            s1 -= mash.mash(seed)
            if s1 < 0 { s1 += 1 }
            s2 -= mash.mash(seed)
            if s2 < 0 { s2 += 1 }
        }
        state = State(s0: s0, s1: s1, s2: s2, c: 1)
    }

    /// The next fraction in `[0, 1)` (32 random bits).
    public func fraction() -> Double {
        lock.withLock { state.next() }
    }

    public func fractions(_ count: Int) -> [Double] {
        lock.withLock { (0..<max(0, count)).map { _ in state.next() } }
    }

    /// `fraction() * 2^32` (Alea's `uint32`).
    public func uint32() -> Double {
        fraction() * 0x1p32
    }

    /// A fraction with 53 random bits, from two draws (Alea's `fract53`).
    public func fract53() -> Double {
        lock.withLock {
            let high = state.next()
            let low = (state.next() * 0x200000).rounded(.towardZero)
            return high + low * 0x1p-53
        }
    }
}

/// Alea's string hash, over UTF-16 code units with JavaScript's number arithmetic.
struct Mash {
    private var n: Double = 0xefc8_249d

    mutating func mash(_ data: String) -> Double {
        for unit in data.utf16 {
            n += Double(unit)
            var h = 0.02519603282416938 * n
            n = Self.toUInt32(h)
            h -= n
            h *= n
            n = Self.toUInt32(h)
            h -= n
            n += h * 0x1p32
        }
        return Self.toUInt32(n) * 0x1p-32
    }

    /// JavaScript's `x >>> 0` for the non-negative finite values Mash produces.
    private static func toUInt32(_ x: Double) -> Double {
        let truncated = x.rounded(.towardZero)
        return truncated - (truncated / 0x1p32).rounded(.down) * 0x1p32
    }
}
