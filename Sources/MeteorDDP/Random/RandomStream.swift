import NIOConcurrencyHelpers

/// Named random sequences over a method's `randomSeed` (Meteor's `ddp-common/random_stream.js`): the sequence
/// `name` is `Alea(seeds + [name])`, created on first use, then advanced. The client's stub and the server's method
/// share the seed, so their sequences (for example `/collection/todos` ids) are identical.
///
/// For example:
/// ```swift
/// let stream = RandomStream(seed: "seed1")
/// stream.id(forSequence: "/collection/todos") // "8MFFdG7XaoaSDzCs4"
/// stream.id(forSequence: "/collection/todos") // "oRauNRZokMPLDBLsC"
/// ```
///
/// ## Concurrency
/// Thread-safe: the sequences are protected by a lock.
public final class RandomStream: @unchecked Sendable {
    // @unchecked because `sequences` is protected by `lock`.

    /// The seeds every sequence starts from.
    public let seeds: [String]
    private let lock = NIOLock()
    /// Protected by `lock`.
    private var sequences: [String: Alea] = [:]

    /// Creates a stream over one seed (a method's `randomSeed`).
    public convenience init(seed: String) {
        self.init(seeds: [seed])
    }

    /// Creates a stream over several seeds.
    public init(seeds: [String]) {
        self.seeds = seeds
    }

    /// The named sequence, created once (Meteor's `RandomStream._sequence`: the name is used as given; it is
    /// `DDP.randomStream` that maps an empty name to `"default"`, see
    /// ``MethodInvocationContext/randomID(forSequence:)``).
    public func sequence(_ name: String) -> Alea {
        lock.withLock {
            if let existing = sequences[name] { return existing }
            let created = Alea(seeds: seeds + [name])
            sequences[name] = created
            return created
        }
    }

    /// The next id (17 characters) of the named sequence.
    public func id(forSequence name: String) -> String {
        sequence(name).id()
    }

    /// The next `digits` hex digits of the named sequence.
    public func hexString(forSequence name: String, digits: Int) -> String {
        sequence(name).hexString(digits)
    }

    /// The `randomSeed` of a method call (Meteor's `DDPCommon.makeRpcSeed`): for a call made inside another
    /// invocation, the next 20 hex digits of the enclosing stream's `"/rpc/" + methodName` sequence; for a top-level
    /// call, 20 cryptographically secure random hex digits.
    public static func makeRpcSeed(enclosing: RandomStream?, methodName: String) -> String {
        guard let enclosing else { return SecureRandomGenerator().hexString(20) }
        return enclosing.hexString(forSequence: "/rpc/" + methodName, digits: 20)
    }
}
