import EJSON

/// The packed decoding checked against the general path, for the fuzz target, and timed alone, for the benchmarks (the
/// decoder itself is internal).
@_spi(Storage)
public enum DocumentMessageDecoding {
    /// Decodes `frames` one after another as a connection does (one scratch); returns how many the fast path took.
    public static func decodeAll(_ frames: [String]) -> Int {
        let scratch = DocumentMessageDecoder.Scratch()
        var taken = 0
        for frame in frames where DocumentMessageDecoder.decode(frame, scratch: scratch) != nil { taken += 1 }
        return taken
    }

    /// What differs between the fast path's reading of `frame` and the general path's (EJSON.parse, ``ServerMessage``,
    /// packing): `nil` when the fast path declines the frame, or takes it and reads the same message with
    /// byte-identical packed fields.
    public static func disagreement(_ frame: String) -> String? {
        guard let fast = DocumentMessageDecoder.decode(frame) else { return nil }
        guard case .success(let expected) = DDPClient.parseGenerally(frame) else {
            return "the general parser rejects \(frame)"
        }
        guard fast.serverMessage == expected else {
            return "read \(fast.serverMessage), the general parser \(expected)"
        }
        guard case .added(_, _, let fields) = expected.normalizedForPacking else {
            return "not added/changed: \(expected)"
        }
        let packed = Document(id: fast.key.documentID, fields: fields)
        let same =
            fast.fields.fieldCount == packed.fieldCount && fast.fields.hasSameID(as: packed)
            && fast.fields.withBytes { mine in packed.withBytes { PackedFields.bytesEqual(mine, $0) } }
        return same ? nil : "packed fields differ for \(frame)"
    }
}

extension DocumentMessageDecoding {
    /// What is wrong with how a frame that does not parse keeps its waiters: `nil` when the frame parses, or when
    /// its violation names exactly the waiters a plain-JSON reading of it names (a `result`'s or `nosub`'s string
    /// id, the string ids of an `updated`'s `methods` or a `ready`'s `subs`); otherwise the difference.
    public static func lostWaiters(_ frame: String) -> String? {
        guard case .failure(let violation) = DDPClient.parseGenerally(frame) else { return nil }
        guard case .object(let object)? = try? EJSON.parseJSON(frame), case .string(let msg)? = object["msg"] else {
            return violation.unreadable == nil
                ? nil : "waiters read from a frame that is not a JSON object with a msg: \(frame)"
        }
        let ids: [String]
        switch msg {
        case "result", "nosub": ids = object["id"]?.stringValue.map { [$0] } ?? []
        case "updated": ids = object["methods"]?.arrayValue?.compactMap(\.stringValue) ?? []
        case "ready": ids = object["subs"]?.arrayValue?.compactMap(\.stringValue) ?? []
        default: ids = []
        }
        let kept: [String]
        switch violation.unreadable {
        case nil: kept = []
        case .result(let id)?, .nosub(let id)?: kept = [id]
        case .updated(let named)?, .ready(let named)?: kept = named
        }
        return kept == ids ? nil : "the violation keeps \(kept), the frame names \(ids): \(frame)"
    }
}

extension ServerMessage {
    /// `changed` read as `added` (the same collection, id and fields), for comparing packed fields.
    fileprivate var normalizedForPacking: ServerMessage {
        if case .changed(let collection, let id, let fields, _) = self {
            return .added(collection: collection, id: id, fields: fields)
        }
        return self
    }
}
