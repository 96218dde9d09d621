// swift-tools-version: 6.2
import PackageDescription

let package = Package(
    name: "MeteorDDP",
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16)],
    products: [
        .library(name: "MeteorDDP", targets: ["MeteorDDP"]),
        .library(name: "EJSON", targets: ["EJSON"]),
        .library(name: "MeteorDDPTesting", targets: ["MeteorDDPTesting"]),
        .library(name: "DDPTestServer", targets: ["DDPTestServer"]),
        .executable(name: "todos", targets: ["Todos"]),
        .executable(name: "leaderboard", targets: ["Leaderboard"]),
        .executable(name: "getting-started", targets: ["GettingStarted"]),
        .executable(name: "meteor-ddp-benchmarks", targets: ["Benchmarks"]),
        .executable(name: "ddp", targets: ["DDPTool"])
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        // The client's metrics (`Configuration.metricsFactory`); no-op until the app bootstraps a backend.
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-collections.git", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-atomics.git", from: "1.3.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/hummingbird-project/swift-websocket.git", from: "1.6.2"),
        // The upgrade request's extra headers (swift-websocket takes them as `HTTPFields`).
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        // zlib for DDPTestServer's permessage-deflate (the one swift-websocket's client compression uses).
        .package(url: "https://github.com/adam-fowler/compress-nio.git", from: "1.5.0"),
        // `swift package generate-documentation` (DocC catalogs in Sources/MeteorDDP and Sources/EJSON).
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        // The offline store (`Persistence.sqlite(at:)`): SQLite in WAL mode, migrations.
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0")
    ],
    targets: [
        .target(
            name: "EJSON",
            dependencies: [
                .product(name: "OrderedCollections", package: "swift-collections"),
                .product(name: "Logging", package: "swift-log")
            ]
        ),
        .target(
            name: "MeteorDDP",
            dependencies: [
                "EJSON",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                // The modules used, not the `Collections` umbrella (which also builds BitCollections, _RopeModule, …).
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "OrderedCollections", package: "swift-collections"),
                .product(name: "HashTreeCollections", package: "swift-collections"),
                .product(name: "Atomics", package: "swift-atomics"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "WSClient", package: "swift-websocket"),
                .product(name: "WSCompression", package: "swift-websocket"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "GRDB", package: "GRDB.swift")
            ],
            // Collation (`Collator`): the ICU that Foundation itself uses on Linux, shipped with the toolchain.
            linkerSettings: [.linkedLibrary("_FoundationICU", .when(platforms: [.linux]))]
        ),
        .target(
            name: "MeteorDDPTesting",
            dependencies: [
                "EJSON",
                "MeteorDDP",
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio")
            ]
        ),
        .target(
            name: "TestSupport",
            dependencies: [.product(name: "Logging", package: "swift-log")],
            path: "Tests/TestSupport"
        ),
        .target(
            name: "DDPTestServer",
            dependencies: [
                "EJSON",
                "MeteorDDP",
                .product(name: "CompressNIO", package: "compress-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl")
            ]
        ),
        .target(
            name: "DDPCommandLine",
            dependencies: ["MeteorDDP", "EJSON"]
        ),
        .executableTarget(
            name: "DDPTool",
            dependencies: [
                "DDPCommandLine", "MeteorDDP", .product(name: "ArgumentParser", package: "swift-argument-parser")
            ]
        ),
        .executableTarget(
            name: "Todos",
            dependencies: ["MeteorDDP", "DDPTestServer", "EJSON"],
            path: "Examples/Todos",
            exclude: ["demo.txt", "offline"]
        ),
        .executableTarget(
            name: "GettingStarted",
            dependencies: ["MeteorDDP", "DDPTestServer"],
            path: "Examples/GettingStarted"
        ),
        .executableTarget(
            name: "Leaderboard",
            dependencies: ["MeteorDDP", "DDPTestServer", "EJSON"],
            path: "Examples/Leaderboard"
        ),
        // The hostile-server table's rows (IntegrationTests' HostileServerTests runs them at a quick size; the runner,
        // built in release by `.ci/run hostile`, at full size without building the test bundle in release).
        .target(
            name: "HostileTable",
            dependencies: [
                "MeteorDDP", "EJSON", "TestSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio")
            ],
            path: "Tests/HostileTable"
        ),
        .executableTarget(
            name: "HostileTableRunner",
            dependencies: ["HostileTable"],
            path: "Tests/HostileTableRunner"
        ),
        // A client process the offline kill test starts, kills (SIGKILL) and restarts (IntegrationTests/Offline).
        .executableTarget(
            name: "OfflineProbe",
            dependencies: ["MeteorDDP", "EJSON"],
            path: "Tests/OfflineProbe"
        ),
        .executableTarget(
            name: "Benchmarks",
            dependencies: [
                "MeteorDDP", "MeteorDDPTesting", "DDPTestServer", "EJSON",
                .product(name: "WSClient", package: "swift-websocket"),
                .product(name: "WSCompression", package: "swift-websocket"),
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Atomics", package: "swift-atomics")
            ],
            path: "Benchmarks"
        ),
        // The shapes of SwiftUI's API the documentation's examples use, so they compile where SwiftUI does not exist.
        .target(name: "DocExampleSwiftUI", path: "Tests/DocExampleSwiftUI"),
        .testTarget(
            name: "DocExampleTests",
            dependencies: [
                "MeteorDDP", "MeteorDDPTesting", "DDPTestServer", "EJSON", "DocExampleSwiftUI",
                .product(name: "Logging", package: "swift-log"), .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Metrics", package: "swift-metrics")
            ],
            path: "Tests/DocExampleTests",
            exclude: ["update.sh"]
        ),
        .testTarget(
            name: "EJSONTests",
            dependencies: ["EJSON"],
            resources: [.copy("Fixtures")]
        ),
        .testTarget(
            name: "MeteorDDPTests",
            dependencies: [
                "MeteorDDP", "MeteorDDPTesting", "TestSupport", "EJSON",
                .product(name: "MetricsTestKit", package: "swift-metrics")
            ],
            resources: [.copy("Fixtures")]
        ),
        // The test doubles as an app's tests use them: no `@testable` import in this target.
        .testTarget(
            name: "MeteorDDPTestingTests",
            dependencies: ["MeteorDDP", "MeteorDDPTesting", "TestSupport", "EJSON"]
        ),
        .testTarget(
            name: "IntegrationTests",
            dependencies: [
                "MeteorDDP", "MeteorDDPTesting", "TestSupport", "DDPTestServer", "EJSON", "DDPCommandLine",
                "OfflineProbe", "Todos", "GettingStarted", "HostileTable",
                .product(name: "CompressNIO", package: "compress-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "MetricsTestKit", package: "swift-metrics")
            ],
            path: "IntegrationTests",
            exclude: ["Fixtures/README.md"],
            resources: [.copy("Fixtures")]
        )
    ]
)
