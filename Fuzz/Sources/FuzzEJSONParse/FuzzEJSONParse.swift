import EJSON
import FuzzSupport

/// Any bytes: `EJSON.parse` returns a value or throws an `EJSONError`, never traps; a value it returns serialises and
/// parses back to an equal value.
@_cdecl("FuzzEJSONParse_main")
func main(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    runFuzzer(fuzzEJSONParse)
}

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzEJSONParse(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    guard let value = try? EJSON.parse(bytes: bytes) else { return 0 }
    let text = EJSON.stringify(value)
    guard let again = try? EJSON.parse(text) else { fatalError("serialised value does not parse: \(text)") }
    guard EJSON.equals(value, again) else { fatalError("round trip changed the value: \(text)") }
    return 0
}
