// swift-tools-version:6.1
// The benchmarks live in their own package so that the library's build gains no dependency and no
// build time from them (swift-nio does the same). `make bench` builds and runs them in release mode.
import Foundation
import PackageDescription

// A path dependency's identity is the name of its folder, which is whatever the checkout was
// cloned as; read it from this manifest's location rather than assuming it.
let hanekeIdentity = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent()
    .deletingLastPathComponent()
    .lastPathComponent

let package = Package(
    name: "HanekeBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        // The Metrics trait: workload 15 measures HanekeMetrics (swift-metrics only; no framework).
        .package(path: "..", traits: ["Metrics"]),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
    ],
    targets: [
        .systemLibrary(name: "CLZ4Baseline", pkgConfig: "liblz4", providers: [.apt(["liblz4-dev"])]),
        .systemLibrary(name: "CFileBaseline"),
        // The pthread lock box of the baselines and counters, their own: the library's is not API.
        .target(name: "BaselineLock"),
        // Workload 8's resizing job: the benchmark runs it in process, ThumbnailProbe in a child.
        .target(
            name: "ThumbnailJob",
            dependencies: [
                .product(name: "Images", package: hanekeIdentity),
                .product(name: "HanekeProtocols", package: hanekeIdentity),
            ]
        ),
        .executableTarget(
            name: "HanekeBenchmarks",
            dependencies: [
                "CLZ4Baseline",
                "CFileBaseline",
                "BaselineLock",
                "ThumbnailJob",
                .product(name: "CompressedStore", package: hanekeIdentity),
                .product(name: "FileStore", package: hanekeIdentity),
                .product(name: "MemoryStore", package: hanekeIdentity),
                .product(name: "HanekeProtocols", package: hanekeIdentity),
                .product(name: "RedisStore", package: hanekeIdentity),
                .product(name: "SQLiteStore", package: hanekeIdentity),
                .product(name: "HanekeTesting", package: hanekeIdentity),
                .product(name: "Haneke", package: hanekeIdentity),
                .product(name: "HanekeServer", package: hanekeIdentity),
                .product(name: "HTTPCaching", package: hanekeIdentity),
                .product(name: "Images", package: hanekeIdentity),
                .product(name: "HanekeMetrics", package: hanekeIdentity),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // Workload 8's peak-memory probe, in C: a small parent whose children's ru_maxrss is theirs alone.
        .executableTarget(name: "PeakRSS"),
        // Workload 9's floor: the least a get of an LZ4 frame in a file of its own costs, in C.
        .executableTarget(name: "ReadFloor", linkerSettings: [.linkedLibrary("lz4"), .linkedLibrary("xxhash")]),
        // What making a 2 MiB chunk of new memory ready costs, huge page or small pages (ValueSlabs).
        .executableTarget(name: "PopulateProbe"),
        // Workload 8's child process, whose peak resident size PeakRSS reads (ImageResizer).
        .executableTarget(
            name: "ThumbnailProbe",
            dependencies: [
                "ThumbnailJob",
                .product(name: "Images", package: hanekeIdentity),
                .product(name: "HanekeProtocols", package: hanekeIdentity),
            ]
        ),
        // Workload 10's child: one of several processes writing one SQLiteStore or FileStore folder.
        .executableTarget(
            name: "SharedWriter",
            dependencies: [
                .product(name: "SQLiteStore", package: hanekeIdentity),
                .product(name: "FileStore", package: hanekeIdentity),
            ]
        ),
        .executableTarget(
            name: "FileProbe",
            dependencies: [
                "BaselineLock",
                .product(name: "FileStore", package: hanekeIdentity),
                .product(name: "CompressedStore", package: hanekeIdentity),
                .product(name: "MemoryStore", package: hanekeIdentity),
                .product(name: "HanekeProtocols", package: hanekeIdentity),
                .product(name: "SQLiteStore", package: hanekeIdentity),
            ]
        ),
        .executableTarget(
            name: "MemoryProbe",
            dependencies: [
                "BaselineLock",
                .product(name: "MemoryStore", package: hanekeIdentity),
                .product(name: "HanekeProtocols", package: hanekeIdentity),
                .product(name: "HanekeTesting", package: hanekeIdentity),
                .product(name: "HTTPCaching", package: hanekeIdentity),
            ]
        ),
    ]
)
