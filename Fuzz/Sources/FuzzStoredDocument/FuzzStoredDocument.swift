import EJSON
import FuzzSupport
@_spi(Storage) import MeteorDDP

/// Bytes as a row of the offline store's document table (packed fields): they validate or give a typed error, never
/// trap; what validates reads back completely, and packing its fields again gives an equal document.
@_cdecl("FuzzStoredDocument_main")
func main(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    runFuzzer(fuzzStoredDocument)
}

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzStoredDocument(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    guard let document = try? Document(id: "fuzz", validatingPackedFields: bytes) else { return 0 }
    let fields = document.fields
    _ = EJSON.stringify(.object(fields))
    for name in document.fieldNames { _ = document[name] }
    if Document(id: "fuzz", fields: fields) != document {
        fatalError("a validated document does not survive a round trip")
    }
    return 0
}
