import EJSON
import MeteorDDP

/// What a method handler sees (Meteor's `this` in a method): parameters, the user, the random streams derived from
/// the client's `randomSeed`, and the server's collections. Confined to the server queue.
public final class MethodContext: @unchecked Sendable {
    // @unchecked because it is confined to the server queue.

    /// The method's name.
    public let name: String
    /// The method's parameters.
    public let params: [EJSONValue]
    /// The session's user before the call (changed by ``setUserID(_:)``).
    public private(set) var userID: String?
    /// The client's `randomSeed`, or a fresh one when the client sent none (made on first use, as Meteor's server
    /// does: a method that draws no random id costs no secure random bytes).
    public private(set) lazy var randomSeed: String = clientSeed ?? SecureRandomGenerator().hexString(20)
    /// The session's id.
    public let sessionID: String
    private let clientSeed: String?
    private(set) lazy var randomStream = RandomStream(seed: randomSeed)
    weak var session: ServerSession?
    let server: DDPTestServer
    var newUserID: String??

    init(
        name: String, params: [EJSONValue], userID: String?, randomSeed: String?, session: ServerSession,
        server: DDPTestServer
    ) {
        self.name = name
        self.params = params
        self.userID = userID
        self.clientSeed = randomSeed
        self.sessionID = session.sessionID ?? ""
        self.session = session
        self.server = server
    }

    /// The next id of a named random sequence (`"/collection/todos"` gives the ids the client's stub made).
    public func randomID(forSequence name: String) -> String {
        randomStream.id(forSequence: name.isEmpty ? "default" : name)
    }

    /// The next `digits` hex digits of the named random sequence (Meteor's `DDP.randomStream(name).hexString(digits)`).
    public func randomHexString(forSequence name: String, digits: Int) -> String {
        randomStream.hexString(forSequence: name.isEmpty ? "default" : name, digits: digits)
    }

    /// A server collection.
    public func collection(_ name: String) -> ServerCollection {
        server.collection(name)
    }

    /// Logs the session in as `userID` (or out with `nil`); its publications re-run when the method ends.
    public func setUserID(_ userID: String?) {
        self.userID = userID
        newUserID = .some(userID)
    }

    /// Calls another method of this server as part of this one, with a seed derived as Meteor derives it.
    public func call(_ name: String, params: [EJSONValue] = []) throws -> EJSONValue? {
        guard let handler = server.methodHandler(name) else {
            throw MeteorError(error: .number(404), reason: "Method '\(name)' not found")
        }
        let seed = RandomStream.makeRpcSeed(enclosing: randomStream, methodName: name)
        guard let session else { throw MeteorError(error: .number(500), reason: "Internal server error") }
        let nested = MethodContext(
            name: name, params: params, userID: userID, randomSeed: seed, session: session, server: server)
        let result = try handler(nested)
        if let changed = nested.newUserID { setUserID(changed) }
        return result
    }
}

/// A method handler: returns the result (`nil` for none) or throws a `MeteorError` (anything else becomes 500).
public typealias MethodHandler = (MethodContext) throws -> EJSONValue?

extension MethodContext: RandomSequenceSource {}
