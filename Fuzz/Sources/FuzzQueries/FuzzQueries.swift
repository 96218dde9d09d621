import EJSON
import FuzzSupport
import MeteorDDP

/// An EJSON array `[selector, modifier, sort, projection, document]` (any part may be anything): each compiles or
/// throws a `QueryError`, never traps; what compiles applies to the document (and to a few fixed ones) without
/// trapping, and a sort orders any two documents consistently (a before b exactly when b after a).
@_cdecl("FuzzQueries_main")
func main(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt { runFuzzer(fuzzQueries) }

let fixedDocuments: [EJSONObject] = [
    [:],
    ["_id": "x", "a": 1, "b": ["c": [1, 2, ["d": "e"]]], "tags": ["a", "b"]],
    ["_id": "y", "a": [["x": 1, "y": [2, 3]], ["x": 4]], "n": .null, "s": "text", "t": .date(millisecondsSince1970: 5)]
]

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzQueries(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let value = try? EJSON.parse(bytes: UnsafeBufferPointer(start: data, count: size)),
        case .array(let parts) = value
    else { return 0 }
    let part = { (index: Int) -> EJSONValue? in index < parts.count ? parts[index] : nil }
    var documents = fixedDocuments
    if case .object(let document)? = part(4) { documents.append(document) }
    let selector = part(0).flatMap { try? MongoSelector($0) }
    if let selector {
        for document in documents {
            _ = selector.matches(document)
            _ = selector.arrayIndices(in: document)
        }
    }
    if let modifierValue = part(1), let modifier = try? MongoModifier(modifierValue) {
        for document in documents {
            _ = try? modifier.apply(to: document, arrayIndices: selector?.arrayIndices(in: document))
            _ = try? modifier.apply(to: document, isInsert: true)
        }
        if let selector { _ = try? selector.upsertDocument(applying: modifier) }
    }
    if let sortValue = part(2), let query = try? Query([:], FindOptions(sort: sortValue)) {
        let database = Database()
        database.apply(
            documents.enumerated().map {
                .added(DocumentKey(collectionName: "c", documentID: "d\($0.offset)"), $0.element)
            })
        let sorted = database.collection("c").find(query)
        if sorted.count != documents.count { fatalError("sorting lost documents") }
    }
    if let projectionValue = part(3), let projection = try? MongoProjection(projectionValue) {
        for document in documents { _ = projection.apply(document) }
    }
    return 0
}
