import EJSON
import Foundation

/// What each update operator does to the field its path leads to (minimongo's `MODIFIERS`).
enum ModifierOperators {
    static func apply(_ name: String, to target: inout ModTarget, _ argument: EJSONValue) throws(QueryError) {
        let field = target.fieldName
        func error(_ message: String) -> QueryError { QueryError("\(message) for field '\(field)'") }
        switch name {
        case "$set":
            guard case .value = target.container else {
                throw target.container.isForbiddenArray
                    ? error("Cannot set property on null") : error("Cannot set property on non-object field")
            }
            try MongoModifier.assertValidFieldNames(argument)
            target.set(argument)
        case "$setOnInsert", "$v":
            break
        case "$unset":
            target.remove()
        case "$inc", "$mul", "$min", "$max":
            guard case .number(let operand) = argument else { throw error("Modifier \(name) allowed for numbers only") }
            guard let current = target.value else {
                target.set(.number(name == "$mul" ? 0 : operand))
                return
            }
            guard case .number(let number) = current else { throw error("Cannot apply \(name) modifier to non-number") }
            switch name {
            case "$inc": target.set(.number(number + operand))
            case "$mul": target.set(.number(number * operand))
            case "$min": if number > operand { target.set(argument) }
            default: if number < operand { target.set(argument) }
            }
        case "$currentDate":
            if case .object(let spec) = argument, let type = spec["$type"] {
                guard type == "date" else {
                    throw error("Minimongo does currently only support the date type in $currentDate modifiers")
                }
            } else if argument != .bool(true) {
                throw error("Invalid $currentDate modifier")
            }
            target.set(.date(Date()))
        case "$push":
            try push(&target, argument, error: error)
        case "$pushAll":
            guard case .array(let values) = argument else {
                throw QueryError("Modifier $pushAll/pullAll allowed for arrays only")
            }
            try MongoModifier.assertValidFieldNames(argument)
            switch target.value {
            case nil: target.set(argument)
            case .array(let array)?: target.set(.array(array + values))
            default: throw error("Cannot apply $pushAll modifier to non-array")
            }
        case "$addToSet":
            let values: [EJSONValue]
            if case .object(let spec) = argument, spec.keys.first == "$each" {
                guard case .array(let each)? = spec["$each"] else { throw error("$each must be an array") }
                values = each
            } else {
                values = [argument]
            }
            try MongoModifier.assertValidFieldNames(.array(values))
            switch target.value {
            case nil:
                target.set(.array(values))
            case .array(var array)?:
                for value in values where !array.contains(where: { MongoEquality.equal(value, $0) }) {
                    array.append(value)
                }
                target.set(.array(array))
            default:
                throw error("Cannot apply $addToSet modifier to non-array")
            }
        case "$pop":
            guard let current = target.value else { return }
            guard case .array(var array) = current else { throw error("Cannot apply $pop modifier to non-array") }
            if case .number(let end) = argument, end < 0 {
                if !array.isEmpty { array.removeFirst() }
            } else if !array.isEmpty {
                array.removeLast()
            }
            target.set(.array(array))
        case "$pull", "$pullAll":
            if name == "$pullAll", !argument.isArray {
                throw error("Modifier $pushAll/pullAll allowed for arrays only")
            }
            guard let current = target.value else { return }
            guard case .array(let array) = current else {
                throw error("Cannot apply $pull/pullAll modifier to non-array")
            }
            let keep: (EJSONValue) -> Bool
            if case .array(let values) = argument, name == "$pullAll" {
                keep = { element in !values.contains { MongoEquality.equal(element, $0) } }
            } else if case .object = argument {
                // A condition: a selector for object elements, or (Mongo's, beyond minimongo) operators on values.
                if try SelectorCompiler.isValueCondition(argument) {
                    let matcher = try SelectorCompiler().valueSelector(argument)
                    keep = { !matcher(.single($0)) }
                } else {
                    let selector = try MongoSelector(argument)
                    keep = { element in
                        guard case .object(let object) = element else { return true }
                        return !selector.matches(object)
                    }
                }
            } else if case .regularExpression = argument {
                // MongoDB's: a regular expression removes the strings it matches (minimongo's matches every object).
                let matcher = try SelectorCompiler().valueSelector(argument)
                keep = { !matcher(.single($0)) }
            } else {
                keep = { !MongoEquality.equal($0, argument) }
            }
            target.set(.array(array.filter(keep)))
        case "$bit":
            throw error("$bit is not supported")
        default:
            throw QueryError("Invalid modifier specified \(name)")
        }
    }

    private static func push(_ target: inout ModTarget, _ argument: EJSONValue, error: (String) -> QueryError)
        throws(QueryError)
    {
        var array: [EJSONValue]
        switch target.value {
        case nil: array = []
        case .array(let existing)?: array = existing
        default: throw error("Cannot apply $push modifier to non-array")
        }
        guard case .object(let spec) = argument, let each = spec["$each"], each.isTruthy else {
            try MongoModifier.assertValidFieldNames(argument)
            array.append(argument)
            return target.set(.array(array))
        }
        guard case .array(let toPush) = each else { throw error("$each must be an array") }
        try MongoModifier.assertValidFieldNames(each)
        var position: Int?
        if let value = spec["$position"] {
            guard case .number(let number) = value else { throw error("$position must be a numeric value") }
            guard number >= 0 else { throw error("$position in $push must be zero or positive") }
            position = Int(min(number, Double(Int.max / 2)))
        }
        var slice: Double?
        if let value = spec["$slice"] {
            guard case .number(let number) = value, !number.isNaN else { throw error("$slice must be a numeric value") }
            slice = number
        }
        var sort: MongoSort?
        if let specifier = spec["$sort"], specifier.isTruthy {
            guard slice != nil else { throw error("$sort requires $slice to be present") }
            sort = try MongoSort(specifier)
            guard toPush.allSatisfy({ MongoType.code(of: $0) == 3 }) else {
                throw error("$push like modifiers using $sort require all elements to be objects")
            }
        }
        if let position {
            array.insert(contentsOf: toPush, at: min(position, array.count))
        } else {
            array.append(contentsOf: toPush)
        }
        if let sort {
            array = stableSorted(array) { sort.compare(.value($0), .value($1)) < 0 }
        }
        if let slice {
            if slice == 0 {
                array = []
            } else if slice < 0 {
                array = Array(array.suffix(Int(min(-slice, Double(array.count)))))
            } else {
                array = Array(array.prefix(Int(min(slice, Double(array.count)))))
            }
        }
        target.set(.array(array))
    }

    /// JavaScript's `Array.prototype.sort` is stable.
    private static func stableSorted(_ array: [EJSONValue], by areInIncreasingOrder: (EJSONValue, EJSONValue) -> Bool)
        -> [EJSONValue]
    {
        array.enumerated().sorted { a, b in
            if areInIncreasingOrder(a.element, b.element) { return true }
            if areInIncreasingOrder(b.element, a.element) { return false }
            return a.offset < b.offset
        }.map(\.element)
    }

    /// `$rename`: removes the source field and sets the target path to its value.
    static func rename(
        _ document: inout EJSONValue, _ parts: [String], _ argument: EJSONValue, keypath: String,
        options: ModTarget.Options
    ) throws(QueryError) {
        let field = parts[parts.count - 1]
        func error(_ message: String) -> QueryError { QueryError("\(message) for field '\(field)'") }
        if case .string(let destination) = argument, destination == keypath {
            throw error("$rename source must differ from target")
        }
        var moved: EJSONValue?
        try ModTarget.find(&document, parts, options: options) { target throws(QueryError) in
            if case .forbiddenArray = target.container { throw error("$rename source field invalid") }
            guard case .string(let destination) = argument else { throw error("$rename target must be a string") }
            if destination.contains("\0") {
                throw error("The 'to' field for $rename cannot contain an embedded null byte")
            }
            guard case .value = target.container else { return }
            moved = target.value
            target.remove()
        }
        guard let moved, case .string(let destination) = argument else { return }
        let destinationParts = destination.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        try ModTarget.find(&document, destinationParts, options: ModTarget.Options(forbidArray: true)) {
            target throws(QueryError) in
            if case .forbiddenArray = target.container { throw error("$rename target field invalid") }
            target.set(moved)
        }
    }
}

extension ModTarget.Container {
    var isForbiddenArray: Bool {
        if case .forbiddenArray = self { return true }
        return false
    }
}
