import EJSON

/// One change to the cache, as the server's data messages describe it (plus `replaced` for latency compensation).
public enum DataUpdate: Sendable, Equatable {
    /// A document was added (an `added` for an existing document acts as a change, as in Meteor's client store).
    case added(DocumentKey, EJSONObject)
    /// Fields were set and others removed (a change for a missing document acts as an add).
    case changed(DocumentKey, EJSONObject, cleared: [String])
    /// The document becomes exactly `fields`, or is removed when `nil`.
    case replaced(DocumentKey, EJSONObject?)
    /// A document was removed (a removal of a missing document is ignored).
    case removed(DocumentKey)

    /// The document this update is about.
    public var key: DocumentKey {
        switch self {
        case .added(let key, _), .changed(let key, _, _), .replaced(let key, _), .removed(let key): return key
        }
    }

    public static func == (lhs: DataUpdate, rhs: DataUpdate) -> Bool {
        switch (lhs, rhs) {
        case (.added(let a, let fa), .added(let b, let fb)): return a == b && EJSONValue.object(fa) == .object(fb)
        case (.changed(let a, let fa, let ca), .changed(let b, let fb, let cb)):
            return a == b && EJSONValue.object(fa) == .object(fb) && ca == cb
        case (.replaced(let a, let fa), .replaced(let b, let fb)):
            return a == b && fa.map(EJSONValue.object) == fb.map(EJSONValue.object)
        case (.removed(let a), .removed(let b)): return a == b
        default: return false
        }
    }
}
