import Foundation
import HanekeProtocols
import MemoryStore
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A `StoreError` says each fact once: the message what failed, the cause why, and its
/// description both on one line.
struct StoreErrorTests {
    /// An error of a codec of our own, with a text that is easy to count.
    struct Breakage: Error, CustomStringConvertible {
        var description: String { "the codec broke at byte 42" }
    }

    /// A codec that fails both ways.
    struct BrokenCodec: DataCodec {
        func encode(_ value: String) throws -> Data { throw Breakage() }
        func decode(_ data: Data) throws -> String { throw Breakage() }
    }

    static func occurrences(of needle: String, in text: String) -> Int {
        text.components(separatedBy: needle).count - 1
    }

    @Test func aWrappedErrorIsTheCauseOnceAndNotInTheMessage() async throws {
        let bytes = MemoryStore<String, Data>()
        bytes.setValue(Data("x".utf8), forKey: "k")
        let coded = bytes.coded(with: BrokenCodec())

        let read = await #expect(throws: StoreError.self) { _ = try await coded.value(forKey: "k") }
        let written = await #expect(throws: StoreError.self) { try await coded.setValue("v", forKey: "k") }
        for (error, code, message) in [(read, StoreError.Code.decoding, "Could not decode the value stored for key k"),
                                       (written, .encoding, "Could not encode the value for key k")] {
            let error = try #require(error)
            #expect(error.code == code)
            #expect(error.message == message)
            #expect(error.cause is Breakage)
            #expect(Self.occurrences(of: Breakage().description, in: "\(error)") == 1, "\(error)")
            #expect("\(error)" == "\(code): \(message) (cause: the codec broke at byte 42)")
        }
    }

    @Test func wrappingAStoreErrorKeepsItsCodeAndCauseAndPutsTheContextInFront() {
        let inner = StoreError(.corrupted, "The frame is damaged", cause: Breakage())
        let outer = StoreError.wrapping(inner, as: .decoding, "Could not decode the value stored for key k")
        #expect(outer.code == .corrupted)
        #expect(outer.message == "Could not decode the value stored for key k: The frame is damaged")
        #expect(outer.cause is Breakage)
        #expect(Self.occurrences(of: Breakage().description, in: "\(outer)") == 1)
    }

    @Test func aSystemErrorIsItsReasonAndNumber() {
        let withoutCause = StoreError(.io, "Could not read /secret", posixCode: .EACCES)
        #expect("\(withoutCause)" == "io: Could not read /secret (cause: Permission denied (errno 13 EACCES))")

        let withCause = StoreError(.io, "Could not read /secret", cause: POSIXError(.EACCES), posixCode: .EACCES)
        #expect("\(withCause)" == "io: Could not read /secret (cause: Permission denied (errno 13 EACCES))")
    }

    @Test func aStoreErrorCauseIsItsOwnDescription() {
        let inner = StoreError(.io, "Could not read /secret", posixCode: .ENOENT)
        let outer = StoreError(.unavailable, "The layer below failed", cause: inner)
        #expect("\(outer)" == "unavailable: The layer below failed (cause: io: Could not read /secret (cause: No such file or directory (errno 2 ENOENT)))")
    }

    @Test func aDecodingErrorIsItsProblemAndCodingPath() throws {
        struct User: Decodable { var id: Int }
        let decodingError = try #require(#expect(throws: DecodingError.self) {
            try JSONDecoder().decode(User.self, from: Data(#"{"id":"one"}"#.utf8))
        })
        let error = StoreError(.decoding, "Could not decode User from 12 bytes of JSON", cause: decodingError)
        let text = "\(error)"
        #expect(text.hasPrefix("decoding: Could not decode User from 12 bytes of JSON (cause: expected Int at id: "), "\(text)")
        #expect(!text.contains("CodingKeys"), "no dump of the DecodingError: \(text)")
        #expect(!text.contains("\n"))
    }

    @Test func anErrorWithNoCauseIsItsCodeAndMessage() {
        #expect("\(StoreError(.notFound, "Nothing for key k"))" == "notFound: Nothing for key k")
    }

    @Test func authenticationIsACodeOfItsOwn() {
        #expect(StoreError.Code.authentication.name == "authentication")
        #expect(StoreError.Code.authentication != .unavailable)
    }
}
