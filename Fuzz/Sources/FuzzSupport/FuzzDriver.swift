/// libFuzzer's driver (in the runtime `-sanitize=fuzzer` links).
// swift-format-ignore: AlwaysUseLowerCamelCase
@_silgen_name("LLVMFuzzerRunDriver")
private func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

/// Runs libFuzzer with this process's arguments on `target`. SwiftPM names an executable's entry point after its
/// target (`<Target>_main`), so each fuzz target defines that entry point and calls this (libFuzzer's own `main` is
/// then not linked in).
public func runFuzzer(_ target: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt) -> CInt {
    var argc = CommandLine.argc
    var argv = CommandLine.unsafeArgv
    return LLVMFuzzerRunDriver(&argc, &argv, target)
}
