import EJSON

/// The "bench documents" workload of our benchmarks (and of the Meteor JS anchor figures): 100,000 documents of
/// ten mixed fields, one `added` frame ≈ 406 bytes.
public enum BenchDocuments {
    /// The collection's name.
    public static let collection = "bench"

    /// Document `i`'s id: "b" + base36(i), left-padded with "0" to 16 characters.
    public static func id(_ i: Int) -> String {
        let base36 = String(i, radix: 36)
        return "b" + String(repeating: "0", count: max(0, 15 - base36.count)) + base36
    }

    /// Document `i`'s fields.
    public static func fields(_ i: Int) -> EJSONObject {
        [
            "index": .number(Double(i)),
            "name": .string("Document number \(i)"),
            "email": .string("user\(i)@example.com"),
            "score": .number(Double(i) * 1.5 + 0.25),
            "active": .bool(i % 2 == 0),
            "createdAt": .date(millisecondsSince1970: 1_700_000_000_000 + Double(i) * 1000),
            "tags": ["alpha", "beta", .string("tag\(i % 10)")],
            "location": ["city": "Berlin", "zip": .string(String(10000 + i % 90000)), "lat": 52.52, "lng": 13.405],
            "counts": [.number(Double(i % 7)), .number(Double(i % 11)), .number(Double(i % 13))],
            "description": "Lorem ipsum dolor sit amet, consectetur adipiscing elit."
        ]
    }

    /// The `changed` workload for document `i`: new `score` and `name`.
    public static func changedFields(_ i: Int) -> EJSONObject {
        ["score": .number(Double(i) * 2.5 + 0.75), "name": .string("Renamed document \(i)")]
    }

    /// Document `i`'s `added` frame as a Meteor server writes it.
    public static func addedFrame(_ i: Int) -> String {
        EJSON.stringify([
            "msg": "added", "collection": .string(collection), "id": .string(id(i)), "fields": .object(fields(i))
        ])
    }

    /// Document `i`'s `changed` frame.
    public static func changedFrame(_ i: Int) -> String {
        EJSON.stringify([
            "msg": "changed", "collection": .string(collection), "id": .string(id(i)),
            "fields": .object(changedFields(i))
        ])
    }
}
