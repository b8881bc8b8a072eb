// swift-tools-version:6.0
// libFuzzer targets, in their own package: each target's only file holds LLVMFuzzerTestOneInput, and
// they are built with `swift build -c release --sanitize=fuzzer -Xswiftc -sanitize=fuzzer,address`
// (scripts/fuzz says why both; `make fuzz` runs it). FuzzSeeds writes the seed corpora with the library itself, built without the
// sanitizers (libFuzzer brings its own `main`).
import Foundation
import PackageDescription

// A path dependency's identity is the name of its folder: read it rather than assume it.
let hanekeIdentity = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent()
    .deletingLastPathComponent()
    .lastPathComponent

let package = Package(
    name: "HanekeFuzz",
    platforms: [.macOS(.v15)],
    dependencies: [.package(path: "..")],
    targets: [
        .executableTarget(name: "FuzzEntryFile", dependencies: [.product(name: "FileStore", package: hanekeIdentity)]),
        .executableTarget(name: "FuzzLZ4Frame", dependencies: [.product(name: "CompressedStore", package: hanekeIdentity)]),
        .executableTarget(
            name: "FuzzSQLiteDatabase",
            dependencies: [
                .product(name: "SQLiteStore", package: hanekeIdentity),
                .product(name: "FileStore", package: hanekeIdentity),
                .product(name: "HanekeProtocols", package: hanekeIdentity),
            ]
        ),
        .executableTarget(name: "FuzzJSON", dependencies: [.product(name: "Formats", package: hanekeIdentity), .product(name: "HanekeProtocols", package: hanekeIdentity)]),
        .executableTarget(
            name: "FuzzSeeds",
            dependencies: [
                .product(name: "FileStore", package: hanekeIdentity),
                .product(name: "CompressedStore", package: hanekeIdentity),
                .product(name: "Formats", package: hanekeIdentity),
                .product(name: "HanekeProtocols", package: hanekeIdentity),
                .product(name: "SQLiteStore", package: hanekeIdentity),
            ]
        ),
    ]
)
