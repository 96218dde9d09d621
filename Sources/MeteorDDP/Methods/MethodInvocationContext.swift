import EJSON
import NIOConcurrencyHelpers

/// What a stub sees: the call's name and parameters, and the random streams that make its ids equal the server's.
///
/// ## Concurrency
/// A context is used by its stub on the calling thread, for the duration of the stub. `current` finds the innermost
/// running context (nested calls run inside their enclosing stub).
public final class MethodInvocationContext: @unchecked Sendable {
    // @unchecked because `seed` and `streams` are protected by `lock`.

    /// The method's name.
    public let methodName: String
    /// The call's parameters; one the call did not pass reads as `nil`.
    public let params: MethodParameters
    /// Always `true` on the client: this is a simulation of the server's method.
    public let isSimulation = true
    /// The enclosing invocation for a call made inside a stub.
    public let enclosing: MethodInvocationContext?

    weak let client: DDPClient?
    private let lock = NIOLock()
    /// The seed, made on first use. Protected by `lock`.
    private var seed: String?
    /// The random stream over `seed`. Protected by `lock`.
    private var stream: RandomStream?

    @TaskLocal static var current: MethodInvocationContext?

    /// Whether this run repeats one that already happened (``PendingStubMode/rebase``'s replays, the debug check's
    /// trial run): calls the stub makes run their stubs but complete nothing (their completions ran the first time).
    let isReplay: Bool

    /// - Parameters:
    ///   - randomSeed: The seed of an earlier run of the same call (a replay: its ids are the same); `nil` makes one
    ///     on first use.
    ///   - isReplay: See ``isReplay``; a nested context inherits it from `enclosing`.
    init(
        methodName: String, params: [EJSONValue], enclosing: MethodInvocationContext?, client: DDPClient?,
        randomSeed: String? = nil, isReplay: Bool = false
    ) {
        self.methodName = methodName
        self.params = MethodParameters(params, methodName: methodName)
        self.enclosing = enclosing
        self.client = client
        self.isReplay = isReplay || enclosing?.isReplay == true
        if let randomSeed {
            seed = randomSeed
            stream = RandomStream(seed: randomSeed)
        }
    }

    /// The invocation's random seed: 20 secure random hex characters for a top-level call, Meteor's `makeRpcSeed`
    /// of the enclosing invocation for a nested one. Made on first use; sent as `randomSeed` only if used.
    public var randomSeed: String {
        randomStreamIfMade(create: true)!.seed
    }

    /// Whether the stub used randomness (so `randomSeed` goes on the wire).
    var usedRandomSeed: Bool { lock.withLock { seed != nil } }

    var randomSeedIfUsed: String? { lock.withLock { seed } }

    /// The next id (17 characters) of the named random sequence (Meteor's `DDP.randomStream(name).id()`;
    /// an empty name means `"default"`).
    public func randomID(forSequence name: String) -> String {
        randomStreamIfMade(create: true)!.stream.id(forSequence: name.isEmpty ? "default" : name)
    }

    /// The next `digits` hex digits of the named random sequence (Meteor's `DDP.randomStream(name).hexString(digits)`;
    /// an empty name means `"default"`): an ObjectID's 24 digits, for example.
    public func randomHexString(forSequence name: String, digits: Int) -> String {
        randomStreamIfMade(create: true)!.stream.hexString(forSequence: name.isEmpty ? "default" : name, digits: digits)
    }

    private func randomStreamIfMade(create: Bool) -> (seed: String, stream: RandomStream)? {
        lock.withLock {
            if let seed, let stream { return (seed, stream) }
            guard create else { return nil }
            let made = RandomStream.makeRpcSeed(
                enclosing: enclosing?.randomStreamIfMade(create: true)?.stream, methodName: methodName)
            let stream = RandomStream(seed: made)
            self.seed = made
            self.stream = stream
            return (made, stream)
        }
    }
}
