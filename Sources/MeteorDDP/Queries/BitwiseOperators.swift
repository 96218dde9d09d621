import EJSON
import Foundation

/// minimongo's `$bitsAllSet`, `$bitsAnySet`, `$bitsAllClear` and `$bitsAnyClear`: the operand is a bitmask (a
/// non-negative integer, binary data, or a list of bit positions), the value an integer (as its 64-bit two's
/// complement, little-endian) or binary data; other values never match. minimongo's byte layout is kept exactly,
/// including its sign extension of negative numbers (every byte from the third on set).
enum BitwiseOperators {
    /// The largest mask a list of bit positions may make (minimongo would allocate up to 256 MiB).
    static let maximumMaskBytes = 1 << 20

    /// The element matcher for the operator `name` with `operand`.
    static func matcher(_ name: String, _ operand: EJSONValue) throws(QueryError) -> @Sendable (EJSONValue?) -> Bool {
        let mask = try operandMask(operand, operator: name)
        let test: @Sendable ([UInt8]) -> Bool
        switch name {
        case "$bitsAllSet": test = { bits in mask.indices.allSatisfy { byte(bits, $0) & mask[$0] == mask[$0] } }
        case "$bitsAnySet": test = { bits in mask.indices.contains { ~byte(bits, $0) & mask[$0] != mask[$0] } }
        case "$bitsAllClear": test = { bits in mask.indices.allSatisfy { byte(bits, $0) & mask[$0] == 0 } }
        default: test = { bits in mask.indices.contains { byte(bits, $0) & mask[$0] != mask[$0] } }
        }
        return { value in valueMask(value, length: mask.count).map(test) ?? false }
    }

    /// A byte of a value's bits (0 past its end, as JavaScript's `undefined & byte` is).
    private static func byte(_ bits: [UInt8], _ index: Int) -> UInt8 {
        index < bits.count ? bits[index] : 0
    }

    /// minimongo's `getOperandBitmask`.
    private static func operandMask(_ operand: EJSONValue, operator name: String) throws(QueryError) -> [UInt8] {
        switch operand {
        case .number(let number) where number >= 0 && number.rounded(.towardZero) == number && number.isFinite:
            return littleEndianBytes(UInt32(bitPattern: toInt32(number)))
        case .binary(let bytes):
            return Array(bytes)
        case .array(let positions)
        where positions.allSatisfy({
            if case .number(let n) = $0 { n >= 0 && n.rounded(.towardZero) == n && n.isFinite } else { false }
        }):
            // JavaScript: `new ArrayBuffer((Math.max(...positions) >> 3) + 1)`, `>>` on the position as an Int32;
            // bits past the end are dropped as a typed array drops them.
            let bits = positions.compactMap { $0.doubleValue }.map { Int(toInt32($0)) }
            let count = ((bits.max() ?? 0) >> 3) + 1
            guard count > 0, count <= maximumMaskBytes else {
                throw QueryError("operand to \(name): bit positions up to \(maximumMaskBytes * 8 - 1) are supported")
            }
            var mask = [UInt8](repeating: 0, count: count)
            for bit in bits where bit >= 0 && bit >> 3 < count { mask[bit >> 3] |= 1 << UInt8(bit & 7) }
            return mask
        default:
            throw QueryError(
                "operand to \(name) must be a numeric bitmask (representable as a non-negative 32-bit signed integer), "
                    + "a bindata bitmask or an array with bit positions (non-negative integers)"
            )
        }
    }

    /// minimongo's `getValueBitmask` (`nil`: a value that never matches).
    private static func valueMask(_ value: EJSONValue?, length: Int) -> [UInt8]? {
        switch value {
        case .number(let number)? where number.rounded(.towardZero) == number && abs(number) <= 9_007_199_254_740_991:
            var bytes = [UInt8](repeating: 0, count: max(length, 8))
            let low = UInt32(bitPattern: toInt32(number.truncatingRemainder(dividingBy: 4_294_967_296)))
            let high = UInt32(bitPattern: toInt32((number / 4_294_967_296).rounded(.towardZero)))
            bytes.replaceSubrange(0..<4, with: littleEndianBytes(low))
            bytes.replaceSubrange(4..<8, with: littleEndianBytes(high))
            if number < 0 {
                for index in 2..<bytes.count { bytes[index] = 0xff }
            }
            return bytes
        case .binary(let bytes)?:
            return Array(bytes)
        default:
            return nil
        }
    }

    /// JavaScript's ToInt32.
    private static func toInt32(_ number: Double) -> Int32 {
        guard number.isFinite else { return 0 }
        var wrapped = number.rounded(.towardZero).truncatingRemainder(dividingBy: 4_294_967_296)
        if wrapped < 0 { wrapped += 4_294_967_296 }
        return Int32(bitPattern: UInt32(wrapped))
    }

    private static func littleEndianBytes(_ value: UInt32) -> [UInt8] {
        (0..<4).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) }
    }
}
