import EJSON
import Foundation

/// A Mongo update modifier with minimongo's semantics (`LocalCollection._modify`): `$set $unset $inc $mul $min $max
/// $rename $push` (with `$each $slice $sort $position`) `$pushAll $pull $pullAll $addToSet` (with `$each`) `$pop
/// $currentDate $setOnInsert`, or a whole replacement document. Dotted paths create intermediate objects, numeric
/// parts index arrays (padding with `null`), and `$` is the position the update's selector matched.
///
/// For example:
/// ```swift
/// let modifier = try MongoModifier(["$set": ["done": true], "$inc": ["count": 1]])
/// let updated = try modifier.apply(to: ["text": "milk", "count": 1]) // ["text": "milk", "count": 2, "done": true]
/// ```
public struct MongoModifier: Sendable {
    /// The modifier as it travels in `/collection/update` params.
    public let ejsonValue: EJSONValue
    /// Whether this is a replacement document (no operators).
    public let isReplacement: Bool
    private let object: EJSONObject

    static let operators: Set<String> = [
        "$currentDate", "$inc", "$min", "$max", "$mul", "$rename", "$set", "$setOnInsert", "$unset", "$push",
        "$pushAll", "$addToSet", "$pop", "$pull", "$pullAll", "$bit", "$v"
    ]
    /// Operators that never create the path they name (minimongo's `NO_CREATE_MODIFIERS`).
    static let noCreate: Set<String> = ["$pop", "$pull", "$pullAll", "$rename", "$unset"]
    /// Arrays are padded with `null` up to an index a path names, at most this far past their end.
    public static let maximumArrayPadding = 100_000

    /// Reads a modifier: an object of operators, or a replacement document (no key is an operator: none starts with
    /// `$` or is `diff`, minimongo's `isOperatorObject`).
    ///
    /// - Throws: ``QueryError`` with minimongo's message.
    public init(_ value: EJSONValue) throws(QueryError) {
        guard case .object(let object) = value else { throw QueryError("Modifier must be an object") }
        let operatorCount = object.keys.filter(SelectorCompiler.isOperatorKey).count
        if operatorCount > 0, operatorCount < object.count {
            // minimongo's `_modify` (`isOperatorObject`) on the document it changes.
            throw QueryError("Inconsistent operator: \(EJSON.stringify(value))")
        }
        isReplacement = operatorCount == 0
        if !isReplacement {
            for (name, operand) in object {
                guard Self.operators.contains(name) else { throw QueryError("Invalid modifier specified \(name)") }
                // `$v` (the update format's version, sent by MongoDB 3.6+) is a no-op to minimongo, whatever it holds.
                guard case .object = operand else {
                    if name == "$v" { continue }
                    throw QueryError("Modifier \(name) needs an object of fields")
                }
            }
        }
        self.object = object
        ejsonValue = value
    }

    /// The document a selector names by id alone (`"id"`, `{_id: "id"}`, an ObjectID or a number, bare or as
    /// `{_id: …}`: minimongo's `_selectorIsIdPerhapsAsObject`, what untrusted code may update or remove by), as the
    /// cache keys it (``Document/id``, `MongoID.documentID`), or `nil`.
    public static func documentID(inSelector selector: EJSONValue?) -> String? {
        selector.flatMap(MongoID.id(namedBy:)).map(MongoID.documentID)
    }

    /// The document after the modifier (a document given with its `_id` keeps it; changing it is an error).
    ///
    /// - Parameters:
    ///   - document: The document (with or without its `_id`).
    ///   - isInsert: Whether the document is being inserted by an upsert (`$setOnInsert` then sets).
    ///   - arrayIndices: Where the update's selector matched in an array, for the positional `$`.
    /// - Throws: ``QueryError`` with minimongo's message.
    public func apply(to document: EJSONObject, isInsert: Bool = false, arrayIndices: [Int]? = nil) throws(QueryError)
        -> EJSONObject
    {
        if isReplacement {
            if let id = document["_id"], id.isTruthy, let newID = object["_id"], newID.isTruthy,
                !MongoEquality.equal(id, newID)
            {
                throw QueryError(
                    "The _id field cannot be changed from {_id: \"\(Self.templateString(id))\"} "
                        + "to {_id: \"\(Self.templateString(newID))\"}"
                )
            }
            try Self.assertValidFieldNames(.object(object))
            var result: EJSONObject = [:]
            if let id = document["_id"] { result["_id"] = id }
            for (key, value) in object { result[key] = value }
            return result
        }
        var result = EJSONValue.object(document)
        for (name, operand) in object {
            guard case .object(let fields) = operand else { continue }
            let name = isInsert && name == "$setOnInsert" ? "$set" : name
            for (keypath, argument) in fields {
                if keypath.isEmpty { throw QueryError("An empty update path is not valid.") }
                let parts = keypath.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
                if parts.contains("") {
                    throw QueryError("The update path '\(keypath)' contains an empty field name, which is not allowed.")
                }
                let options = ModTarget.Options(
                    arrayIndices: arrayIndices, forbidArray: name == "$rename", noCreate: Self.noCreate.contains(name))
                if name == "$rename" {
                    try ModifierOperators.rename(&result, parts, argument, keypath: keypath, options: options)
                } else {
                    try ModTarget.find(&result, parts, options: options) { target throws(QueryError) in
                        try ModifierOperators.apply(name, to: &target, argument)
                    }
                }
            }
        }
        guard case .object(let modified) = result else { return document }
        // minimongo checks only a truthy `_id` (a document whose `_id` is 0 or "" may have it changed).
        if let id = document["_id"], id.isTruthy, !(modified["_id"].map { MongoEquality.equal(id, $0) } ?? false) {
            let altered = modified["_id"].map(Self.templateString) ?? "undefined"
            throw QueryError(
                "After applying the update to the document {_id: \"\(Self.templateString(id))\", ...}, "
                    + "the (immutable) field '_id' was found to have been altered to _id: \"\(altered)\""
            )
        }
        return modified
    }

    /// A value as a JavaScript template literal writes it (`${value}`), as minimongo's `_id` messages do: an ObjectID
    /// as `ObjectID("…")`, anything else as `String(value)`.
    static func templateString(_ value: EJSONValue) -> String {
        if case .custom(type: "oid", value: .string(let hex)) = value { return "ObjectID(\"\(hex)\")" }
        return MongoSelector.javaScriptString(value)
    }

    /// The fields (without `_id`) of the document with `id` after the modifier; changing the id is an error.
    public func applyKeepingID(_ id: String, to fields: EJSONObject, isInsert: Bool = false, arrayIndices: [Int]? = nil)
        throws(QueryError) -> EJSONObject
    {
        var document: EJSONObject = ["_id": MongoID.parse(id) ?? .string(id)]
        for (key, value) in fields where key != "_id" { document[key] = value }
        var result = try apply(to: document, isInsert: isInsert, arrayIndices: arrayIndices)
        result.removeValue(forKey: "_id")
        return result
    }

    /// minimongo's `assertHasValidFieldNames` (Meteor 3.4.1+): no key, at any depth, starts with `$`, starts or ends
    /// with `.`, holds two dots in a row or a null byte. A key like `api_key.created` is valid (MongoDB 5+ stores it);
    /// no path reaches it (`a.b` in a selector, projection, sort or modifier is always the path).
    static func assertValidFieldNames(_ value: EJSONValue) throws(QueryError) {
        switch value {
        case .object(let object):
            for (key, child) in object {
                try assertValidFieldName(key)
                try assertValidFieldNames(child)
            }
        case .array(let elements):
            for element in elements { try assertValidFieldNames(element) }
        default:
            break
        }
    }

    static func assertValidFieldName(_ key: String) throws(QueryError) {
        // minimongo tests `/^\$|^\.|\.\.|\.$|\0/` and names the first match, scanning from the start.
        let utf8 = key.utf8
        if utf8.first == UInt8(ascii: "$") { throw QueryError("Key \(key) must not start with '$'") }
        if utf8.first == UInt8(ascii: ".") { throw QueryError("Key \(key) must not start or end with '.'") }
        var previous: UInt8 = 0
        for (offset, byte) in utf8.enumerated() {
            if byte == 0 { throw QueryError("Key \(key) must not contain null bytes") }
            if byte == UInt8(ascii: "."), previous == UInt8(ascii: ".") {
                throw QueryError("Key \(key) must not contain consecutive dots")
            }
            if byte == UInt8(ascii: "."), offset == utf8.count - 1 {
                throw QueryError("Key \(key) must not start or end with '.'")
            }
            previous = byte
        }
    }
}

/// The container a modifier's path leads to (minimongo's `findModTarget`), and the field in it.
struct ModTarget {
    struct Options {
        var arrayIndices: [Int]?
        var forbidArray = false
        var noCreate = false
    }

    enum Field {
        case name(String)
        case index(Int)
    }

    enum Container {
        /// The path does not exist and the operator does not create it (JavaScript's `undefined`).
        case missing
        /// The path crosses an array where the operator forbids one (`$rename`; JavaScript's `null`).
        case forbiddenArray
        case value(EJSONValue)
    }

    var container: Container
    let field: Field

    var fieldName: String {
        switch field {
        case .name(let name): return name
        case .index(let index): return String(index)
        }
    }

    /// The field's current value (`nil`: absent).
    var value: EJSONValue? {
        guard case .value(let container) = container else { return nil }
        switch (container, field) {
        case (.object(let object), .name(let name)): return object[name]
        case (.array(let array), .index(let index)): return index < array.count ? array[index] : EJSONValue?.none
        default: return nil
        }
    }

    /// Sets the field (an array index one past the end appends).
    mutating func set(_ value: EJSONValue) {
        guard case .value(let current) = container else { return }
        container = .value(.null)
        switch (current, field) {
        case (.object(var object), .name(let name)):
            object[name] = value
            container = .value(.object(object))
        case (.array(var array), .index(let index)):
            if index < array.count { array[index] = value } else { array.append(value) }
            container = .value(.array(array))
        default:
            container = .value(current)
        }
    }

    /// Removes the field (an array element becomes `null`, as minimongo's `$unset` does).
    mutating func remove() {
        guard case .value(let current) = container else { return }
        container = .value(.null)
        switch (current, field) {
        case (.object(var object), .name(let name)):
            object.removeValue(forKey: name)
            container = .value(.object(object))
        case (.array(var array), .index(let index)):
            if index < array.count { array[index] = .null }
            container = .value(.array(array))
        default:
            container = .value(current)
        }
    }

    /// Follows `parts` in `root`, creating what the operator may create, and calls `body` with the last container.
    static func find(
        _ root: inout EJSONValue, _ parts: [String], options: Options,
        _ body: (inout ModTarget) throws(QueryError) -> Void
    ) throws(QueryError) {
        try find(&root, parts, at: 0, usedArrayIndex: false, options: options, body)
    }

    private static func find(
        _ value: inout EJSONValue, _ parts: [String], at position: Int, usedArrayIndex: Bool, options: Options,
        _ body: (inout ModTarget) throws(QueryError) -> Void
    ) throws(QueryError) {
        let last = position == parts.count - 1
        let part = parts[position]
        func missing() throws(QueryError) {
            var target = ModTarget(container: .missing, field: .name(parts[parts.count - 1]))
            try body(&target)
        }
        switch value {
        case .array(var array):
            if options.forbidArray {
                var target = ModTarget(container: .forbiddenArray, field: .name(parts[parts.count - 1]))
                return try body(&target)
            }
            var index: Int
            var usedIndex = usedArrayIndex
            if part == "$" {
                if usedArrayIndex { throw QueryError("Too many positional (i.e. '$') elements") }
                guard let first = options.arrayIndices?.first else {
                    throw QueryError("The positional operator did not find the match needed from the query")
                }
                index = first
                usedIndex = true
            } else if !part.isEmpty, part.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
                guard let parsed = Int(part), parsed <= array.count + MongoModifier.maximumArrayPadding else {
                    throw QueryError(
                        "The array index \(part) is too large "
                            + "(at most \(MongoModifier.maximumArrayPadding) past the end)"
                    )
                }
                index = parsed
            } else {
                if options.noCreate { return try missing() }
                throw QueryError("can't append to array using string field name [\(part)]")
            }
            if options.noCreate, index >= array.count { return try missing() }
            value = .null
            defer { value = .array(array) }
            while array.count < index { array.append(.null) }
            if last {
                var target = ModTarget(container: .value(.array(array)), field: .index(index))
                array = []
                try body(&target)
                if case .value(.array(let modified)) = target.container { array = modified }
                return
            }
            if array.count == index {
                array.append(.object([:]))
            } else if !array[index].isObjectLike {
                throw QueryError(
                    "can't modify field '\(parts[position + 1])' of list value \(EJSON.stringify(array[index]))")
            }
            var child = array[index]
            array[index] = .null
            defer { array[index] = child }
            try find(&child, parts, at: position + 1, usedArrayIndex: usedIndex, options: options, body)
        case .object(var object):
            try MongoModifier.assertValidFieldName(part)
            if object[part] == nil {
                if options.noCreate { return try missing() }
                if !last { object[part] = .object([:]) }
            }
            value = .null
            defer { value = .object(object) }
            if last {
                var target = ModTarget(container: .value(.object(object)), field: .name(part))
                object = [:]
                try body(&target)
                if case .value(.object(let modified)) = target.container { object = modified }
                return
            }
            var child = object[part]!
            object[part] = .null
            defer { object[part] = child }
            try find(&child, parts, at: position + 1, usedArrayIndex: usedArrayIndex, options: options, body)
        default:
            if options.noCreate { return try missing() }
            throw QueryError("cannot use the part '\(part)' to traverse \(value.javaScriptString)")
        }
    }
}

extension EJSONValue {
    /// JavaScript's `typeof value === 'object'`: objects, arrays, null, dates, binary, regular expressions.
    var isObjectLike: Bool {
        switch self {
        case .bool, .number, .string: return false
        default: return true
        }
    }

    /// How JavaScript shows a value in a template string (minimongo's messages).
    var javaScriptString: String {
        switch self {
        case .string(let text): return text
        case .object, .custom: return "[object Object]"
        default: return EJSON.stringify(self)
        }
    }
}
