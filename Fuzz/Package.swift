// swift-tools-version: 6.2
// Fuzz targets for libFuzzer, in a package of their own so that the main package's `swift build` never builds them
// (each target's entry point runs libFuzzer's driver, which links only with `-sanitize=fuzzer`). Build and run with
// `Fuzz/run` (it passes `-sanitize=fuzzer,address -parse-as-library`).
import PackageDescription

let package = Package(
    name: "MeteorDDPFuzz",
    platforms: [.macOS(.v13)],
    dependencies: [.package(name: "MeteorDDP", path: "..")],
    targets: [
        .target(name: "FuzzSupport"),
        .executableTarget(
            name: "FuzzEJSONParse", dependencies: ["FuzzSupport", .product(name: "EJSON", package: "MeteorDDP")]),
        .executableTarget(
            name: "FuzzServerMessage",
            dependencies: [
                "FuzzSupport", .product(name: "EJSON", package: "MeteorDDP"),
                .product(name: "MeteorDDP", package: "MeteorDDP")
            ]),
        .executableTarget(
            name: "FuzzQueries",
            dependencies: [
                "FuzzSupport", .product(name: "EJSON", package: "MeteorDDP"),
                .product(name: "MeteorDDP", package: "MeteorDDP")
            ]),
        .executableTarget(
            name: "FuzzStoredDocument",
            dependencies: [
                "FuzzSupport", .product(name: "EJSON", package: "MeteorDDP"),
                .product(name: "MeteorDDP", package: "MeteorDDP")
            ]),
        .executableTarget(
            name: "FuzzClientSession",
            dependencies: [
                "FuzzSupport", .product(name: "EJSON", package: "MeteorDDP"),
                .product(name: "MeteorDDP", package: "MeteorDDP"),
                .product(name: "MeteorDDPTesting", package: "MeteorDDP")
            ])
    ]
)
