/// Meteor's client-side password hashing (accounts-password's `Accounts._hashPassword`): the password leaves the
/// client only as a SHA-256 digest.
///
/// For example:
/// ```swift
/// MeteorPassword.digest("correct horse battery staple") // 64 lowercase hex digits
/// ```
public enum MeteorPassword {
    /// The `algorithm` sent with the digest.
    public static let algorithm = "sha-256"

    /// The SHA-256 of `password` as 64 lowercase hex digits, computed as Meteor's `sha256.js` does: every UTF-16 code
    /// unit is encoded on its own, so a character outside the Basic Multilingual Plane becomes two 3-byte
    /// surrogate sequences (CESU-8) rather than its 4-byte UTF-8 form. Digests of such passwords therefore differ
    /// from SHA-256 of standard UTF-8, and match what Meteor servers expect.
    public static func digest(_ password: String) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(password.utf16.count * 3)
        for unit in password.utf16 {
            switch unit {
            case 0..<0x80:
                bytes.append(UInt8(unit))
            case 0x80..<0x800:
                bytes.append(UInt8(0xC0 | (unit >> 6)))
                bytes.append(UInt8(0x80 | (unit & 0x3F)))
            default:
                bytes.append(UInt8(0xE0 | (unit >> 12)))
                bytes.append(UInt8(0x80 | ((unit >> 6) & 0x3F)))
                bytes.append(UInt8(0x80 | (unit & 0x3F)))
            }
        }
        return SHA256.hexDigest(bytes)
    }
}
