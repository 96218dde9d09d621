import EJSON

/// How a collection makes the `_id`s of the documents it inserts (Meteor's `idGeneration` option of
/// `new Mongo.Collection(name, {idGeneration})`). Client and server must agree: a stub's id equals the server's only
/// if both make it the same way from the call's random seed.
///
/// For example:
/// ```swift
/// let things = client.collection("things", idGeneration: .objectID)   // Meteor's idGeneration: 'MONGO'
/// let id = try await things.insert(["name": "lamp"])                   // 24 hex digits: an ObjectID's id
/// _ = try await things.update(ObjectID(id)!, ["$set": ["lit": true]])
/// ```
public enum IDGeneration: Sendable, Hashable {
    /// 17-character random strings (Meteor's default, `'STRING'`: `Random.id()`).
    case string
    /// `ObjectID`s of 24 random hex digits (Meteor's `'MONGO'`: `new Mongo.ObjectID(Random.hexString(24))`).
    case objectID

    /// A new `_id` inside a method invocation, from its `/collection/<name>` random sequence, as Meteor's
    /// `Mongo.Collection._makeNewID` makes it (`stream.id()` or `new Mongo.ObjectID(stream.hexString(24))`): the stub
    /// and the server make the same one.
    package func newID(in context: some RandomSequenceSource, collection name: String) -> EJSONValue {
        switch self {
        case .string: return .string(context.randomID(forSequence: "/collection/" + name))
        case .objectID:
            return .custom(
                type: "oid", value: .string(context.randomHexString(forSequence: "/collection/" + name, digits: 24)))
        }
    }

    /// A new `_id` outside any method invocation (an app's own insert): random, from a secure generator.
    func newID() -> EJSONValue {
        switch self {
        case .string: return .string(SecureRandomGenerator().id())
        case .objectID: return ObjectID().ejsonValue
        }
    }
}

/// A method invocation's named random sequences (Meteor's `DDP.randomStream(name)`): a stub's
/// ``MethodInvocationContext`` and DDPTestServer's method context, so both make a collection's ids one way.
package protocol RandomSequenceSource {
    func randomID(forSequence name: String) -> String
    func randomHexString(forSequence name: String, digits: Int) -> String
}

extension MethodInvocationContext: RandomSequenceSource {}
