// The examples of README.md, verbatim, so that they keep compiling and working.

import CompressedStore
import FileStore
import Foundation
import Formats
import HanekeProtocols
import HanekeTesting
import MemoryStore
import Testing

struct ReadmeExamplesTests {
    struct Greeting: Codable, Hashable, Sendable, DataConvertible, DataRepresentable {
        var text: String
        var language: String
    }

    @Test func aCacheStackInAFewLines() async throws {
        let hot = MemoryStore<String, Greeting>(countLimit: 2, name: "hot")
        let warm = MemoryStore<String, Data>(costLimit: 1 << 20, name: "warm")
        let greetings = hot
            .chained(to: warm.coded(as: Greeting.self))
            .fetching { name in
                try await Task.sleep(for: .milliseconds(20))   // a slow source: the network, a database
                return Greeting(text: "Hello, \(name)!", language: "en")
            }

        let greeting = try await greetings.fetch("alice")   // hot → warm → fetcher, then back-filled
        for layer in greetings.layerStatistics { print(layer) }

        #expect(greeting.text == "Hello, alice!")
        #expect(greetings.layerStatistics.map(\.name) == ["hot", "warm", "fetcher"])
    }

    @Test func aStackOnDisk() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path   // "/var/cache/greetings" in the README
        let disk = try FileStore(directory: path, capacity: 200 << 20)
        let greetingsOnDisk = MemoryStore<String, Greeting>(countLimit: 1_000)
            .chained(to: disk.coded(as: Greeting.self))

        try await greetingsOnDisk.setValue(Greeting(text: "Hi", language: "en"), forKey: "bob")
        #expect(disk.keys() == ["bob"])
    }

    @Test func aCompressedDisk() async throws {
        let directory = try TemporaryDirectory()
        let disk = try FileStore(directory: directory.path, capacity: 500 << 20)
            .compressed(.init(level: .fast, decompressionLimit: 16 << 20))
        try await disk.setValue(Data("hello".utf8), forKey: "k")
        #expect(try await disk.value(forKey: "k") == Data("hello".utf8))
    }

    @Test func myStoreBehavesLikeAStore() async throws {
        // Put your own store here; each check gets a new, empty one.
        try await StoreConformanceSuite { MemoryStore<String, Data>(countLimit: 10_000) }.run()
    }

    @Test func testDoubles() throws {
        let disk = FailingStore(wrapping: MemoryStore<String, Data>(), failing: [.read])   // a broken disk
        let spy = RecordingStore(wrapping: MemoryStore<String, Data>())                      // logs every call
        let clock = TestClock()                                                              // TTL without sleeping
        let scratch = try TemporaryStore { try FileStore(directory: $0.path) }             // files, removed after
        #expect(scratch.base.count == 0)
        #expect(disk.failingOperations == [.read])
        #expect(spy.calls.isEmpty)
        #expect(clock.now() == clock.now())
    }
}
