// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "Haneke",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "HanekeProtocols", targets: ["HanekeProtocols"]),
        .library(name: "MemoryStore", targets: ["MemoryStore"]),
        .library(name: "FileStore", targets: ["FileStore"]),
        .library(name: "CompressedStore", targets: ["CompressedStore"]),
        .library(name: "SQLiteStore", targets: ["SQLiteStore"]),
        .library(name: "Formats", targets: ["Formats"]),
        .library(name: "HTTPCaching", targets: ["HTTPCaching"]),
        .library(name: "RedisStore", targets: ["RedisStore"]),
        .library(name: "Images", targets: ["Images"]),
        .library(name: "HanekeTesting", targets: ["HanekeTesting"]),
        .library(name: "Haneke", targets: ["Haneke"]),
        // A cache of Codable values of any type by string key, each with its own lifetime: what the
        // server drivers below keep their values in.
        .library(name: "HanekeServer", targets: ["HanekeServer"]),
        // The server integrations: each builds its framework only with its trait enabled (see
        // `traits`), so an app that uses only `Haneke` resolves and builds none of them.
        .library(name: "HanekeHummingbird", targets: ["HanekeHummingbird"]),
        .library(name: "HanekeVapor", targets: ["HanekeVapor"]),
        .library(name: "HanekeMetrics", targets: ["HanekeMetrics"]),
        .library(name: "HanekeServiceLifecycle", targets: ["HanekeServiceLifecycle"]),
        .executable(name: "haneke", targets: ["haneke"]),
    ],
    // An app enables the integration it uses, with its product:
    // `.package(url: ..., from: ..., traits: ["Hummingbird"])`. None is on by default: a disabled
    // trait's packages are neither fetched nor built. Hummingbird and Vapor bring the metrics and the
    // service lifecycle with them.
    traits: [
        .trait(name: "Metrics", description: "HanekeMetrics: every layer's counters through swift-metrics."),
        .trait(name: "ServiceLifecycle", description: "HanekeServiceLifecycle: caches closed on a graceful shutdown."),
        .trait(
            name: "Hummingbird", description: "HanekeHummingbird: a PersistDriver and a response cache for Hummingbird 2.",
            enabledTraits: ["Metrics", "ServiceLifecycle"]
        ),
        .trait(name: "Vapor", description: "HanekeVapor: a Vapor 4 cache provider.", enabledTraits: ["Metrics", "ServiceLifecycle"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        // TLS for RedisStore (`rediss://`); only RedisStore depends on it.
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        // `swift package generate-documentation` (scripts/build-docs, `make docs`).
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
        // Only with their traits (above).
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/vapor/vapor.git", from: "4.122.3"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
    ],
    targets: [
        // MARK: - Core

        .target(
            name: "HanekeProtocols",
            dependencies: [.product(name: "Logging", package: "swift-log")]
        ),

        // MARK: - Backends

        .target(name: "MemoryStore", dependencies: ["HanekeProtocols"]),
        // System calls Swift cannot reach directly (`openat2` through `syscall`): a header only.
        .systemLibrary(name: "CFileStoreShims"),
        // What the disk stores share (not a product): descriptor-relative system calls, the store
        // folder and its marker, the grammar of the names a store makes, and key digests.
        .target(
            name: "StoreFolders",
            dependencies: [
                "HanekeProtocols",
                "CFileStoreShims",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .target(
            name: "FileStore",
            dependencies: [
                "HanekeProtocols",
                "StoreFolders",
                "CFileStoreShims",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),

        // The system SQLite and xxHash (Debian: libsqlite3-dev, libxxhash-dev), for small values.
        .systemLibrary(name: "CSQLite", providers: [.apt(["libsqlite3-dev", "libxxhash-dev"])]),
        .target(
            name: "SQLiteStore",
            dependencies: ["HanekeProtocols", "StoreFolders", "CSQLite", "SeededRandom", .product(name: "Logging", package: "swift-log")]
        ),

        .systemLibrary(
            name: "CLZ4",
            pkgConfig: "liblz4",
            providers: [.apt(["liblz4-dev", "libxxhash-dev"]), .brew(["lz4", "xxhash"])]
        ),
        .target(
            name: "CompressedStore",
            dependencies: ["HanekeProtocols", "CLZ4", .product(name: "Logging", package: "swift-log")]
        ),

        .target(
            name: "RedisStore",
            dependencies: [
                "HanekeProtocols",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),

        // MARK: - Values

        .target(name: "Formats", dependencies: ["HanekeProtocols"]),
        // RFC 9111 and RFC 5861 as decisions, and responses kept in any store by them; nothing
        // from Foundation's networking.
        .target(name: "HTTPCaching", dependencies: ["HanekeProtocols", .product(name: "Logging", package: "swift-log")]),
        // `haneke proxy`: a caching reverse proxy on SwiftNIO's HTTP/1 codec. Only the tool and
        // the tests depend on it, so an app that uses Haneke builds none of it.
        .target(
            name: "HanekeProxy",
            dependencies: [
                "HTTPCaching", "HanekeProtocols", "StoreFolders", "CFileStoreShims",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),

        // MARK: - Images

        // libvips (Debian: libvips-dev), seen from Swift through small non-variadic wrappers. No
        // `pkgConfig: "vips"`: SwiftPM reads a target's .pc file on every build of the package and of
        // the packages that depend on it, images or not, and vips.pc (through GLib's) carries
        // `-pthread`, which SwiftPM warns about each time. The shim declares what it calls instead,
        // and scripts/check-vips-shim checks those declarations against <vips/vips.h>.
        .systemLibrary(name: "CVips"),
        // Not in the umbrella: an app that caches no images links no image library (the tool does,
        // for `haneke thumbnail`). It depends on the umbrella (no SwiftNIO) for `Shared.imageCache`
        // and `Format.resizing`.
        .target(name: "Images", dependencies: ["HanekeProtocols", "Haneke", "CVips", .product(name: "Logging", package: "swift-log")]),

        // MARK: - Umbrella

        // The system libcurl, which NetworkFetcher drives itself (FoundationNetworking links it
        // too; its headers come with libcurl4-openssl-dev).
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),

        .target(
            name: "Haneke",
            dependencies: [
                // Not RedisStore: it brings SwiftNIO, a third more to build for every app that
                // only wants a Cache (README, "Use it in your package"); Redis users add its product.
                "HanekeProtocols", "MemoryStore", "FileStore", "SQLiteStore", "StoreFolders", "CompressedStore", "Formats", "HTTPCaching", "CCurl",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),

        // MARK: - Server integrations

        .target(name: "HanekeServer", dependencies: ["Haneke", "HanekeProtocols", .product(name: "Logging", package: "swift-log")]),
        .target(
            name: "HanekeMetrics",
            dependencies: [
                "Haneke", "HanekeProtocols", "HanekeServer",
                .product(name: "CoreMetrics", package: "swift-metrics", condition: .when(traits: ["Metrics"])),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: .when(traits: ["ServiceLifecycle"])),
            ]
        ),
        .target(
            name: "HanekeServiceLifecycle",
            dependencies: [
                "Haneke", "HanekeServer",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: .when(traits: ["ServiceLifecycle"])),
            ]
        ),
        .target(
            name: "HanekeHummingbird",
            dependencies: [
                "HanekeProtocols", "HanekeServer", "HTTPCaching",
                .product(name: "Hummingbird", package: "hummingbird", condition: .when(traits: ["Hummingbird"])),
                .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["Hummingbird"])),
                .product(name: "HTTPTypes", package: "swift-http-types", condition: .when(traits: ["Hummingbird"])),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "HanekeVapor",
            dependencies: [
                "Haneke", "HanekeProtocols", "HanekeServer",
                .product(name: "Vapor", package: "vapor", condition: .when(traits: ["Vapor"])),
            ]
        ),

        // MARK: - Test support executables and helpers (not products)

        // A child process for the reliability tests: writes until killed or until a limit stops it.
        .executableTarget(
            name: "HanekeFaultWorker",
            dependencies: ["FileStore", "CompressedStore", "SQLiteStore", "HanekeProtocols", "SeededRandom"],
            path: "Tests/FaultWorker"
        ),
        // A server's worker process keeping sessions in a KeyValueCache, driven a line at a time.
        .executableTarget(name: "HanekeSessionWorker", dependencies: ["HanekeServer"], path: "Tests/SessionWorker"),
        // Writes many keys through one server driver and prints its resident memory (the benchmark of
        // bounded memory, scripts/bench-server-memory, and its smoke test).
        .executableTarget(
            name: "ServerMemoryProbe",
            dependencies: [
                "HanekeServer", "HanekeHummingbird", "HanekeVapor",
                .product(name: "Hummingbird", package: "hummingbird", condition: .when(traits: ["Hummingbird"])),
                .product(name: "Vapor", package: "vapor", condition: .when(traits: ["Vapor"])),
            ],
            path: "Tests/ServerMemoryProbe"
        ),
        // Runs every job of the test process and fails the run if one sleeps on a cooperative thread.
        .target(name: "BlockingWatchdog", path: "Tests/BlockingWatchdog", exclude: ["README.md"]),
        // Gives each test process a cache home of its own, so no test writes to the real ~/.cache.
        .target(name: "PrivateCacheHome", path: "Tests/PrivateCacheHome"),
        .target(
            name: "TestSupport",
            dependencies: [
                "HanekeProtocols", "BlockingWatchdog", "PrivateCacheHome", .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            path: "Tests/TestSupport"
        ),

        // MARK: - Tool

        .executableTarget(
            name: "haneke",
            // SeededRandom: the demo's documents are the same on every run. Images: `haneke
            // thumbnail` (so the tool links libvips).
            dependencies: [
                "Haneke", "Images", "SeededRandom", "LoopbackHTTPServer", "HTTPCaching", "HanekeProxy",
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),

        // MARK: - Test support

        // A real HTTP server on loopback, for the fetcher tests and `haneke demo` (not a product).
        .target(
            name: "LoopbackHTTPServer",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),

        // SeededRandomNumberGenerator, for HanekeTesting (which names it too) and `haneke demo` (not a product).
        .target(name: "SeededRandom"),

        .target(name: "HanekeTesting", dependencies: ["HanekeProtocols", "SeededRandom"]),

        // A process of its own with memory, disk and Redis tiers, for the test of two machines that
        // share one Redis (not a product).
        .executableTarget(
            name: "RedisStorePeer",
            dependencies: ["Haneke", "RedisStore"],
            path: "Tests/RedisStorePeer"
        ),

        // MARK: - Examples

        .executableTarget(
            name: "QuickStart",
            dependencies: ["HanekeProtocols", "MemoryStore", "Formats"],
            path: "Examples/QuickStart",
            exclude: ["README.md"]
        ),
        .executableTarget(name: "CustomStack", dependencies: ["Haneke"], path: "Examples/CustomStack", exclude: ["README.md"]),
        .executableTarget(name: "CustomType", dependencies: ["Haneke"], path: "Examples/CustomType", exclude: ["README.md"]),
        .executableTarget(name: "SwapBackendsInTests", dependencies: ["Haneke"], path: "Examples/SwapBackendsInTests/Sources"),
        // What the two server examples share: their caches, made once (not a product).
        .target(
            name: "ServerExampleSupport",
            dependencies: ["Haneke", "HanekeServer", "Images", "Formats", "HanekeProtocols"],
            path: "Examples/ServerSupport"
        ),
        // The server examples (each prints how to build it with its trait when built without).
        .executableTarget(
            name: "HummingbirdExample",
            dependencies: [
                "ServerExampleSupport", "HanekeHummingbird", "HanekeServiceLifecycle", "Images", "MemoryStore",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Hummingbird", package: "hummingbird", condition: .when(traits: ["Hummingbird"])),
                .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["Hummingbird"])),
            ],
            path: "Examples/Hummingbird",
            exclude: ["README.md"]
        ),
        .executableTarget(
            name: "VaporExample",
            dependencies: [
                "ServerExampleSupport", "HanekeVapor", "Images",
                .product(name: "Vapor", package: "vapor", condition: .when(traits: ["Vapor"])),
            ],
            path: "Examples/Vapor",
            exclude: ["README.md"]
        ),
        .testTarget(
            name: "SwapBackendsInTestsTests",
            dependencies: ["SwapBackendsInTests", "Haneke", "HanekeTesting"],
            path: "Examples/SwapBackendsInTests/Tests"
        ),

        // MARK: - Tests

        .testTarget(
            name: "HanekeProtocolsTests",
            dependencies: [
                "HanekeProtocols", "HanekeTesting", "MemoryStore", "Formats", "TestSupport",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(name: "MemoryStoreTests", dependencies: ["MemoryStore", "HanekeTesting", "TestSupport"]),
        .testTarget(
            name: "SQLiteStoreTests",
            dependencies: ["SQLiteStore", "CSQLite", "FileStore", "StoreFolders", "HanekeTesting", "HanekeProtocols", "TestSupport", .product(name: "Logging", package: "swift-log")],
            resources: [.copy("Fixtures")]
        ),
        .testTarget(
            name: "FileStoreTests",
            dependencies: ["FileStore", "StoreFolders", "MemoryStore", "HanekeTesting", "HanekeProtocols", "TestSupport"],
            resources: [.copy("Fixtures")]
        ),
        .testTarget(
            name: "HanekeTests",
            dependencies: ["Haneke", "HTTPCaching", "HanekeTesting", "HanekeProtocols", "LoopbackHTTPServer", "TestSupport"]
        ),
        .testTarget(
            name: "HanekeToolTests",
            dependencies: ["haneke", "Haneke", "Images", "HanekeTesting", "TestSupport", "HanekeProxy", "LoopbackHTTPServer", .product(name: "NIOPosix", package: "swift-nio")]
        ),
        .testTarget(
            name: "ReliabilityTests",
            dependencies: [
                "HanekeFaultWorker", "HanekeSessionWorker", "haneke", "Haneke", "HanekeServer", "FileStore", "CompressedStore", "SQLiteStore",
                "MemoryStore", "HanekeProtocols", "HanekeTesting", "TestSupport",
            ]
        ),
        // The stress suite alone: `make tsan` builds it, and only what it depends on, under
        // ThreadSanitizer (HANEKE_ONLY_TESTS, at the end of this file).
        .testTarget(
            name: "StressTests",
            dependencies: ["HanekeFaultWorker", "FileStore", "CompressedStore", "MemoryStore", "HanekeProtocols", "HanekeTesting", "TestSupport"]
        ),
        .testTarget(
            name: "CompressedStoreTests",
            dependencies: ["CompressedStore", "FileStore", "MemoryStore", "HanekeTesting", "HanekeProtocols", "TestSupport"],
            resources: [.copy("Fixtures")]
        ),
        .testTarget(
            name: "RedisStoreTests",
            dependencies: [
                "RedisStore", "RedisStorePeer", "SeededRandom", "HanekeTesting", "HanekeProtocols", "MemoryStore", "FileStore", "CompressedStore",
                "LoopbackHTTPServer", "TestSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "ImagesTests",
            dependencies: [
                "Images", "Haneke", "HanekeProtocols", "HanekeTesting", "MemoryStore", "LoopbackHTTPServer", "TestSupport",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(name: "HTTPCachingTests", dependencies: ["HTTPCaching", "HanekeProtocols", "HanekeTesting", "MemoryStore", "TestSupport"]),
        .testTarget(
            name: "HanekeProxyTests",
            dependencies: [
                "HanekeProxy", "HTTPCaching", "HanekeProtocols", "HanekeTesting", "MemoryStore", "LoopbackHTTPServer", "TestSupport",
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
            ]
        ),
        .testTarget(name: "FormatsTests", dependencies: ["Formats", "HanekeTesting", "MemoryStore", "TestSupport"]),
        .testTarget(name: "HanekeServerTests", dependencies: ["HanekeServer", "Haneke", "HanekeProtocols", "HanekeTesting", "TestSupport"]),
        // The integrations' tests, each in its framework's own testing library (empty without the trait).
        .testTarget(
            name: "HanekeHummingbirdTests",
            dependencies: [
                "HanekeHummingbird", "HanekeServer", "Haneke", "HanekeProtocols", "HTTPCaching", "MemoryStore", "HanekeTesting", "TestSupport",
                // The examples and the memory probe, run by ServerExampleTests.
                "HummingbirdExample", "VaporExample", "ServerMemoryProbe",
                .product(name: "HTTPTypes", package: "swift-http-types", condition: .when(traits: ["Hummingbird"])),
                .product(name: "HummingbirdTesting", package: "hummingbird", condition: .when(traits: ["Hummingbird"])),
                // PersistDriverTests runs a live application in a ServiceGroup of its own.
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: .when(traits: ["Hummingbird"])),
            ]
        ),
        .testTarget(
            name: "HanekeVaporTests",
            dependencies: [
                "HanekeVapor", "HanekeServer", "Haneke", "HanekeProtocols", "HanekeTesting", "TestSupport",
                .product(name: "VaporTesting", package: "vapor", condition: .when(traits: ["Vapor"])),
            ]
        ),
        .testTarget(
            name: "HanekeMetricsTests",
            dependencies: [
                "HanekeMetrics", "HanekeServiceLifecycle", "HanekeServer", "Haneke", "HanekeProtocols", "HanekeTesting", "TestSupport",
                .product(name: "Prometheus", package: "swift-prometheus", condition: .when(traits: ["Metrics"])),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: .when(traits: ["ServiceLifecycle"])),
            ]
        ),
        .testTarget(
            name: "HanekeTestingTests",
            dependencies: ["HanekeTesting", "HanekeProtocols", "MemoryStore", "Formats", "FileStore", "CompressedStore", "Haneke", "RedisStore", "TestSupport"]
        ),
    ]
)

// MARK: - Settings shared by every target

for target in package.targets where target.type != .system {
    var settings = target.swiftSettings ?? []
    settings.append(contentsOf: [
        .enableUpcomingFeature("ExistentialAny"),
        .enableUpcomingFeature("InternalImportsByDefault"),
        .enableUpcomingFeature("MemberImportVisibility"),
    ])
    target.swiftSettings = settings
}

// MARK: - One test target and what it needs

// HANEKE_ONLY_TESTS=StressTests keeps that test target and the targets it depends on, and no product:
// `make tsan` builds the stress suite under ThreadSanitizer without compiling the rest of the package
// and its tests (TLS, HTTP, the tool, the integrations) a third time.
if let only = Context.environment["HANEKE_ONLY_TESTS"] {
    let targets = Dictionary(uniqueKeysWithValues: package.targets.map { ($0.name, $0) })
    var kept: Set<String> = []
    var packagesUsed: Set<String> = []
    var pending = [only]
    while let name = pending.popLast() {
        guard let target = targets[name], kept.insert(name).inserted else { continue }
        for dependency in target.dependencies {
            switch dependency {
            case .targetItem(let name, _), .byNameItem(let name, _): pending.append(name)
            case .productItem(_, let package?, _, _): packagesUsed.insert(package)
            default: break
            }
        }
    }
    precondition(kept.contains(only), "HANEKE_ONLY_TESTS=\(only): no such target")
    package.targets.removeAll { !kept.contains($0.name) }
    package.products = []
    // A package's identity is the last part of its URL, without ".git".
    package.dependencies.removeAll { dependency in
        guard case .sourceControl(_, let location, _) = dependency.kind, let last = location.split(separator: "/").last else { return false }
        let identity = last.hasSuffix(".git") ? String(last.dropLast(4)) : String(last)
        return !packagesUsed.contains(identity)
    }
}
